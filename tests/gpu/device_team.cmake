# Teams in device code (issue #5): split teams' queries, barriers and collectives in kernels.
if(NOT TARGET vshmem_device)
  return()
endif()
vshmem_add_mpe_test(NAME device_team SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_team.cu
                    NPES 2 4 8 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 90
                    ENV VSHMEM_BACKEND=cuda)
vshmem_device_link(mpe_device_team)
foreach(_n 2 4 8)
  set_tests_properties(mpe.device_team.vshmemrun.${_n} PROPERTIES FIXTURES_REQUIRED device_mps)
endforeach()
