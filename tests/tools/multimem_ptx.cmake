# cmake -DNVCC=... -DSOURCE=... -DINCLUDE=... -DWORK_DIR=... -P this
# The multicast device code (include/vshmem/device/impl/multimem.cuh) in the collectives that
# choose it: its instructions are in the sm_90 PTX, ptxas assembles them, and sm_80 has none.
set(_ptx90 ${WORK_DIR}/multimem_sm90.ptx)
set(_ptx80 ${WORK_DIR}/multimem_sm80.ptx)
foreach(_arch 90 80)
  execute_process(
    COMMAND ${NVCC} -rdc=true -arch=sm_${_arch} -O3 -std=c++17 -I${INCLUDE} -ptx ${SOURCE}
            -o ${WORK_DIR}/multimem_sm${_arch}.ptx
    RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "nvcc -ptx for sm_${_arch} failed (${_rc}):\n${_err}")
  endif()
endforeach()
# ptxas on the sm_90 PTX above (nvcc takes a .ptx file through ptxas alone: the source is not
# compiled a third time).
execute_process(
  COMMAND ${NVCC} -rdc=true -arch=sm_90 -O3 -cubin ${_ptx90} -o ${WORK_DIR}/multimem_sm90.cubin
  RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "ptxas rejected the sm_90 multicast code (${_rc}):\n${_err}")
endif()
file(READ ${_ptx90} _p90)
file(READ ${_ptx80} _p80)
foreach(_want "multimem.ld_reduce.relaxed.sys.global.add.f32"
              "multimem.ld_reduce.relaxed.sys.global.max.s64"
              "multimem.ld_reduce.relaxed.sys.global.xor.b32"
              "multimem.ld_reduce.relaxed.sys.global.min.s32"
              "multimem.ld_reduce.relaxed.sys.global.and.b64"
              "multimem.st.relaxed.sys.global.v4.f32" "multimem.st.relaxed.sys.global.b32"
              "multimem.red.release.sys.global.add.u64" "fence.proxy.alias")
  string(FIND "${_p90}" "${_want}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "sm_90 PTX lacks '${_want}'")
  endif()
  message(STATUS "sm_90 PTX has ${_want}")
endforeach()
# The team barrier's kernel by itself: two multicast barriers (the world's and the team's), each
# a multimem.red between fence.proxy.alias, then acquire polls of the counter.
string(REGEX MATCH "\\.entry [^ (]*team_barrier_only_kernel[^\n]*" _entry "${_p90}")
if(NOT _entry)
  message(FATAL_ERROR "sm_90 PTX has no team_barrier_only_kernel entry")
endif()
string(FIND "${_p90}" "${_entry}" _at)
math(EXPR _at "${_at} + 8")
string(SUBSTRING "${_p90}" ${_at} -1 _body)
string(FIND "${_body}" ".entry " _end)
if(NOT _end EQUAL -1)
  string(SUBSTRING "${_body}" 0 ${_end} _body)
endif()
string(REGEX MATCHALL "multimem\\.red\\.release\\.sys\\.global\\.add\\.u64" _reds "${_body}")
list(LENGTH _reds _n_reds)
string(REGEX MATCHALL "fence\\.proxy\\.alias" _alias "${_body}")
list(LENGTH _alias _n_alias)
string(FIND "${_body}" "ld.acquire" _acq)
if(_n_reds LESS 2 OR _n_alias LESS 4 OR _acq EQUAL -1)
  message(FATAL_ERROR "the team barrier's sm_90 PTX has ${_n_reds} multimem.red (want 2: the "
                      "world's and the team's), ${_n_alias} fence.proxy.alias (want 4), acquire "
                      "polls: ${_acq}")
endif()
message(STATUS "team barrier: ${_n_reds} multimem.red, ${_n_alias} fence.proxy.alias")
string(FIND "${_p80}" "multimem." _at)
if(NOT _at EQUAL -1)
  message(FATAL_ERROR "sm_80 PTX contains multimem instructions")
endif()
string(FIND "${_p80}" "fence.proxy.alias" _at)
if(NOT _at EQUAL -1)
  message(FATAL_ERROR "sm_80 PTX contains fence.proxy.alias")
endif()
message(STATUS "sm_80 PTX has no multimem instruction")
