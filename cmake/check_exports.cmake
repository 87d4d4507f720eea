# Passes when libvshmem exports its C API and none of the runtime's C++ internals.
#   cmake -DNM=<nm> -DLIB=<libvshmem.so> -P check_exports.cmake
execute_process(COMMAND ${NM} -D -C --defined-only ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D ${LIB} failed")
endif()
string(REGEX MATCHALL "[^\n]* [A-Za-z] vshmem::[^\n]*" internal "${out}")
list(LENGTH internal n_internal)
if(n_internal GREATER 0)
  list(SUBLIST internal 0 10 shown)
  string(REPLACE ";" "\n  " shown "${shown}")
  message(FATAL_ERROR "libvshmem exports ${n_internal} internal C++ symbols, e.g.:\n  ${shown}")
endif()
foreach(name shmem_init shmem_malloc shmem_long_put pshmem_long_put shmemx_last_error
             SHMEM_TEAM_WORLD vshmemi_register_device_library
             vshmemi_device_state_built)
  if(NOT out MATCHES "[A-Za-z] ${name}\n")
    message(FATAL_ERROR "libvshmem does not export ${name}")
  endif()
endforeach()
string(REGEX MATCHALL "\n[0-9a-f]* [A-Za-z] " all "${out}")
list(LENGTH all n_all)
message(STATUS "libvshmem exports ${n_all} symbols, no internal C++ symbol")
