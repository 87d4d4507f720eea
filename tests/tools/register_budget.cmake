# cmake -DNVCC=... -DSOURCE=... -DINCLUDES=a;b -DFLAGS=... -DLIMIT=64 -DWORK_DIR=...
#       [-DDEVICE_LIB=libvshmem_device.a] -P this
# Compiles SOURCE for sm_90 with -Xptxas -v and fails when any kernel uses more than LIMIT
# registers a thread (see tests/unit/device.cmake). With DEVICE_LIB it also runs the device link
# against it and checks the counts nvlink gives: a kernel that may call an out-of-line function
# of the library gets that function's registers when it needs more than the kernel.
set(_inc)
foreach(_d ${INCLUDES})
  list(APPEND _inc -I${_d})
endforeach()
get_filename_component(_stem ${SOURCE} NAME_WE)
execute_process(
  COMMAND ${NVCC} -rdc=true -arch=sm_90 -O3 -std=c++17 ${FLAGS} ${_inc} -c ${SOURCE}
          -o ${WORK_DIR}/${_stem}_budget.o -Xptxas -v
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed (${_rc}):\n${_err}")
endif()
# Reads a tool's report of register counts: a line matching `header` names a function (group 1),
# the next "used N registers" line is its count. Functions whose raw name matches `only` are
# counted, by their kernel name when it is one; those above LIMIT are added to _over. Fails when
# the report names no counted function.
function(check_counts text header only what)
  string(REPLACE "\n" ";" lines "${text}")
  set(fn "")
  set(count 0)
  set(over "${_over}")
  foreach(l IN LISTS lines)
    if(l MATCHES "${header}")
      set(name ${CMAKE_MATCH_1})
      set(fn "")
      if(name MATCHES "${only}")
        set(fn ${name})
        # The kernel's own name out of the mangled one (anonymous namespaces add a long prefix).
        if(name MATCHES "[0-9]+([A-Za-z][A-Za-z_0-9]*_kernel)E[A-Za-z0-9_]*$")
          set(fn ${CMAKE_MATCH_1})
        endif()
      endif()
    elseif(l MATCHES "[Uu]sed ([0-9]+) registers" AND NOT fn STREQUAL "")
      math(EXPR count "${count} + 1")
      message(STATUS "${CMAKE_MATCH_1} registers${what}: ${fn}")
      if(CMAKE_MATCH_1 GREATER LIMIT)
        string(APPEND over "  ${fn}: ${CMAKE_MATCH_1} registers${what}\n")
      endif()
      set(fn "")
    endif()
  endforeach()
  if(count EQUAL 0)
    message(FATAL_ERROR "no kernel's register count found${what}:\n${text}")
  endif()
  set(_over "${over}" PARENT_SCOPE)
  set(_count ${count} PARENT_SCOPE)
endfunction()

set(_over "")
check_counts("${_out}${_err}" "Compiling entry function '([^']+)'" "." "")
if(DEFINED DEVICE_LIB)
  set(_compiled ${_count})
  execute_process(
    COMMAND ${NVCC} -arch=sm_90 -dlink ${WORK_DIR}/${_stem}_budget.o ${DEVICE_LIB}
            -o ${WORK_DIR}/${_stem}_budget_dlink.o -Xnvlink -v
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "device link failed (${_rc}):\n${_err}")
  endif()
  # Only this source's kernels (the library's own kernels are not the test's business).
  check_counts("${_out}${_err}" "Function properties for '([^']+)'" "${_stem}"
               " after the device link")
  set(_count ${_compiled})
endif()
if(NOT _over STREQUAL "")
  message(FATAL_ERROR "kernels above ${LIMIT} registers a thread (a 1024-thread block cannot "
                      "launch):\n${_over}")
endif()
message(STATUS "${_count} kernels, each within ${LIMIT} registers a thread")
