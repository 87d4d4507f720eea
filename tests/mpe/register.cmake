# shmemx_buffer_register_symmetric (issue #16 item 4) on the FAKE driver: the application's own
# cuMemCreate memory joins the heap. Logic only (the fake's memory is host memory); the same calls
# on a real GPU are tests/gpu/register_symmetric.cu.
if(TARGET vshmem_fake_cuda_driver)
  add_executable(mpe_register_fake register_fake.cpp)
  target_link_libraries(mpe_register_fake PRIVATE vshmem vshmem_fake_cuda_driver
                                                  vshmem_internal_for_tests)
  vshmem_add_mpe_test(NAME register_fake_ok TARGET mpe_register_fake ARGS ok NPES 1 2 3 4
                      LAUNCHERS vshmemrun NO_GPU_RERUN TIMEOUT 60)
  foreach(_mode not_vmm partial unshareable host)
    vshmem_add_mpe_test(NAME register_fake_${_mode} TARGET mpe_register_fake ARGS ${_mode}
                        NPES 1 3 LAUNCHERS vshmemrun NO_GPU_RERUN TIMEOUT 60)
  endforeach()
  vshmem_add_mpe_test(NAME register_fake_mismatch TARGET mpe_register_fake ARGS mismatch NPES 2
                      LAUNCHERS vshmemrun NO_GPU_RERUN TIMEOUT 60)
endif()
