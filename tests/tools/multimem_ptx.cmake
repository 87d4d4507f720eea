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
execute_process(
  COMMAND ${NVCC} -rdc=true -arch=sm_90 -O3 -std=c++17 -I${INCLUDE} -cubin ${SOURCE}
          -o ${WORK_DIR}/multimem_sm90.cubin
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
string(FIND "${_p80}" "multimem." _at)
if(NOT _at EQUAL -1)
  message(FATAL_ERROR "sm_80 PTX contains multimem instructions")
endif()
string(FIND "${_p80}" "fence.proxy.alias" _at)
if(NOT _at EQUAL -1)
  message(FATAL_ERROR "sm_80 PTX contains fence.proxy.alias")
endif()
message(STATUS "sm_80 PTX has no multimem instruction")
