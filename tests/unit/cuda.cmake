# Tests of the cuda memory provider's host-side logic; they run without a GPU or a driver.
vshmem_add_unit_test(NAME cuda_provider_unit_test
                     SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_provider_unit_test.cpp LIBS vshmem)
if(NOT CUDAToolkit_FOUND)
  find_package(CUDAToolkit QUIET)
endif()
if(VSHMEM_CUDA_PROVIDER)
  target_compile_definitions(cuda_provider_unit_test PRIVATE VSHMEM_CUDA_PROVIDER=1)
endif()
# ptxas checks the embedded atomic PTX, so that a typo fails here rather than at JIT time on a GPU.
find_program(VSHMEM_PTXAS ptxas HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
if(VSHMEM_PTXAS)
  target_compile_definitions(cuda_provider_unit_test PRIVATE VSHMEM_PTXAS="${VSHMEM_PTXAS}")
endif()

# The cuda provider on the FAKE driver (never loads libcuda):
# - multicast_unit_test: multicast and fabric logic (issue #17);
# - staging_buffer_test: the remote path's staging buffers, page-locked through the driver;
# - cuda_quiet_test: shmem_quiet waits for the calling thread's default streams (a pageable
#   cudaMemcpy returns before its data lands, and VMM memory refuses SYNC_MEMOPS on the H200);
# - cuda_capture_test: the provider's driver calls run in the relaxed capture mode (a graph
#   capture in another thread does not forbid them, and they do not end it);
# - proxy_ring_test: the device proxy's ring memory, made by libvshmem through the driver;
# - cuda_host_copy_test: small copies between host buffers are CPU copies (no stream copy);
# - inbound_mailbox_test: target-side atomics on the GPU heap performed by waiting kernels while
#   the GPU's queue is held, the fallback kernel otherwise, each exactly once (issue #14).
if(TARGET vshmem_fake_cuda_driver)
  foreach(_test multicast_unit_test staging_buffer_test cuda_quiet_test cuda_capture_test
                proxy_ring_test cuda_host_copy_test inbound_mailbox_test)
    vshmem_add_unit_test(NAME ${_test} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${_test}.cpp
                         LIBS vshmem vshmem_fake_cuda_driver)
  endforeach()
endif()
# Which device collectives choose the multicast path (include/vshmem/device/impl/mc_select.h):
# plain C++, so it runs here, where multimem cannot.
vshmem_add_unit_test(NAME mc_select_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/mc_select_test.cpp
                     LIBS vshmem)
# The multicast barrier's counting (include/vshmem/device/impl/mc_barrier.h), threads as PEs.
vshmem_add_unit_test(NAME mc_barrier_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/mc_barrier_test.cpp
                     LIBS vshmem)
