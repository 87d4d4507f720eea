# shmem_barrier_all waits for a PE that computes longer than the bootstrap's time limit (it must
# not inherit that limit), whichever path reaches the peers.
set(_exe mpe_barrier_outlasts_bootstrap_timeout)
add_executable(${_exe} barrier_outlasts_bootstrap_timeout.c)
target_link_libraries(${_exe} PRIVATE vshmem)
target_include_directories(${_exe} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
if(VSHMEM_HAVE_UCX)
  vshmem_add_mpe_test(NAME barrier_outlasts_bootstrap_timeout_remote TARGET ${_exe}
                      NPES 2 3 4 LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 TIMEOUT 60
                      NO_GPU_RERUN ENV VSHMEM_BOOTSTRAP_TIMEOUT=2)
  vshmem_add_mpe_test(NAME barrier_outlasts_bootstrap_timeout_no_p2p TARGET ${_exe}
                      NPES 3 LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
                      ENV VSHMEM_BOOTSTRAP_TIMEOUT=2 VSHMEM_DISABLE_P2P=1)
endif()
vshmem_add_mpe_test(NAME barrier_outlasts_bootstrap_timeout_mapped TARGET ${_exe}
                    NPES 2 3 4 LAUNCHERS vshmemrun TIMEOUT 60
                    ENV VSHMEM_BOOTSTRAP_TIMEOUT=2)
