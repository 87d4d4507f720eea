# Device API tests (issue #5): kernels calling the device API with 2, 4 and 8 PEs sharing the
# GPU, under MPS started by a fixture. Without a GPU every program exits 77 (SKIPPED).
if(NOT TARGET vshmem_device)
  return()
endif()

# The tests and the fixture inherit CUDA_MPS_PIPE_DIRECTORY from ctest's environment.
set(_mps_env)
add_test(NAME gpu.device_mps_start COMMAND ${CMAKE_CURRENT_LIST_DIR}/device_mps.sh start)
add_test(NAME gpu.device_mps_stop COMMAND ${CMAKE_CURRENT_LIST_DIR}/device_mps.sh stop)
set_tests_properties(gpu.device_mps_start PROPERTIES FIXTURES_SETUP device_mps LABELS gpu)
set_tests_properties(gpu.device_mps_stop PROPERTIES FIXTURES_CLEANUP device_mps LABELS gpu)

foreach(_t rma amo sync stream)
  vshmem_add_mpe_test(NAME device_${_t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_${_t}.cu
                      NPES 2 4 8 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 240
                      ENV VSHMEM_BACKEND=cuda ${_mps_env})
  vshmem_device_link(mpe_device_${_t})
  foreach(_n 2 4 8)
    set_tests_properties(mpe.device_${_t}.vshmemrun.${_n} PROPERTIES FIXTURES_REQUIRED device_mps)
  endforeach()
endforeach()

# The examples, checked against their single-PE references.
foreach(_ex ring_kernel jacobi)
  if(TARGET ${_ex})
    vshmem_add_mpe_test(NAME example_${_ex} TARGET ${_ex} NPES 1 2 4 8 LAUNCHERS vshmemrun
                        LABELS gpu TIMEOUT 240 ENV VSHMEM_BACKEND=cuda ${_mps_env})
    foreach(_n 1 2 4 8)
      set_tests_properties(mpe.example_${_ex}.vshmemrun.${_n} PROPERTIES
                           FIXTURES_REQUIRED device_mps)
    endforeach()
  endif()
endforeach()
