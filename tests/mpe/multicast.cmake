# Multicast regions and NVLink fabric domains against the FAKE driver only (issue #17): the
# program builds its provider on tests/support/fake_cuda_driver, checks that libcuda was never
# loaded, and sets VSHMEM_ENABLE_MULTICAST=1 in its own process only. No GPU rerun: these tests
# prove logic, and nothing here may reach a real driver's multicast calls.
if(TARGET vshmem_fake_cuda_driver)
  add_executable(mpe_multicast_fake multicast_fake.cpp)
  target_link_libraries(mpe_multicast_fake PRIVATE vshmem vshmem_fake_cuda_driver
                                                   vshmem_internal_for_tests)
  foreach(_mode ok ok_fabric bind_fails grow_bind_fails no_attribute disabled runtime runtime_off
                runtime_bind_fails runtime_team_partial)
    vshmem_add_mpe_test(NAME multicast_fake_${_mode} TARGET mpe_multicast_fake ARGS ${_mode}
                        NPES 2 3 4 LAUNCHERS vshmemrun NO_GPU_RERUN TIMEOUT 60)
  endforeach()
  vshmem_add_mpe_test(NAME multicast_fake_runtime_team_bind_fails TARGET mpe_multicast_fake
                      ARGS runtime_team_bind_fails NPES 3 4 LAUNCHERS vshmemrun NO_GPU_RERUN
                      TIMEOUT 60)
  vshmem_add_mpe_test(NAME multicast_fake_runtime_disagree TARGET mpe_multicast_fake
                      ARGS runtime_disagree NPES 2 3 LAUNCHERS vshmemrun NO_GPU_RERUN TIMEOUT 60
                      WILL_FAIL_REGEX "VSHMEM_ENABLE_MULTICAST differs between PEs")
  # The device state on a (fake) GPU heap: given whole to the device library, written into the
  # copies of code loaded at run time (shmemx_cumodule_init / shmemx_culibrary_init).
  add_executable(mpe_device_state_fake device_state_fake.cpp)
  target_link_libraries(mpe_device_state_fake PRIVATE vshmem vshmem_fake_cuda_driver
                                                      vshmem_internal_for_tests)
  vshmem_add_mpe_test(NAME device_state_fake TARGET mpe_device_state_fake NPES 1 2 4
                      LAUNCHERS vshmemrun NO_GPU_RERUN TIMEOUT 60)
  # The device proxy's ring, made by libvshmem through the driver when peers are not mapped (two
  # simulated nodes: the other node's PEs are reached through UCX), and its failures.
  if(VSHMEM_HAVE_UCX)
    foreach(_mode ring ring_fails ring_no_uva)
      vshmem_add_mpe_test(NAME device_state_fake_${_mode} TARGET mpe_device_state_fake
                          ARGS ${_mode} NPES 2 4 LAUNCHERS vshmemrun LAUNCHER_ARGS
                          --simulate-nodes 2 NO_GPU_RERUN TIMEOUT 60 ENV UCX_TLS=sm,self)
    endforeach()
  endif()
  foreach(_mode fabric_same fabric_diff imex_missing runtime_fabric runtime_shared)
    vshmem_add_mpe_test(NAME multicast_fake_${_mode} TARGET mpe_multicast_fake ARGS ${_mode}
                        NPES 4 LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 NO_GPU_RERUN
                        TIMEOUT 60)
  endforeach()
endif()
