# cmake -DNVCC=... -DSOURCE=... -DINCLUDES=a;b -DFLAGS=... -DLIMIT=64 -DWORK_DIR=... -P this
# Compiles SOURCE for sm_90 with -Xptxas -v and fails when any kernel uses more than LIMIT
# registers a thread (see tests/unit/device.cmake).
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
string(REPLACE "\n" ";" _lines "${_out}${_err}")
set(_fn "")
set(_count 0)
set(_over "")
foreach(_l IN LISTS _lines)
  if(_l MATCHES "Compiling entry function '([^']+)'")
    set(_fn ${CMAKE_MATCH_1})
    # The kernel's own name out of the mangled one (anonymous namespaces add a long prefix).
    if(_fn MATCHES "[0-9]+([A-Za-z][A-Za-z_0-9]*_kernel)E[A-Za-z0-9_]*$")
      set(_fn ${CMAKE_MATCH_1})
    endif()
  elseif(_l MATCHES "Used ([0-9]+) registers" AND NOT _fn STREQUAL "")
    math(EXPR _count "${_count} + 1")
    message(STATUS "${CMAKE_MATCH_1} registers: ${_fn}")
    if(CMAKE_MATCH_1 GREATER LIMIT)
      string(APPEND _over "  ${_fn}: ${CMAKE_MATCH_1} registers\n")
    endif()
    set(_fn "")
  endif()
endforeach()
if(_count EQUAL 0)
  message(FATAL_ERROR "no kernel's register count found in the ptxas output:\n${_out}${_err}")
endif()
if(NOT _over STREQUAL "")
  message(FATAL_ERROR "kernels above ${LIMIT} registers a thread (a 1024-thread block cannot "
                      "launch):\n${_over}")
endif()
message(STATUS "${_count} kernels, each within ${LIMIT} registers a thread")
