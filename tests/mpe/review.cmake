# Bad input found in review: the job ends with a message naming the PE, the call and the cause.
add_executable(mpe_review review.c)
target_link_libraries(mpe_review PRIVATE vshmem)
target_include_directories(mpe_review PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
function(_review_error name regex)
  vshmem_add_mpe_test(NAME review_${name} TARGET mpe_review ARGS ${name} NPES 2
                      LAUNCHERS vshmemrun NO_GPU_RERUN WILL_FAIL_REGEX "${regex}")
endfunction()
_review_error(iput_stride_wraps "PE 0: shmem_long_iput: .*overflow")
_review_error(iget_stride_wraps "PE 0: shmem_long_iget: .*overflow")
_review_error(put_past_committed
              "PE 0: shmem_long_p: dest .* reaches past the [0-9]+ bytes of the symmetric heap")
_review_error(get_past_committed_self
              "PE 0: shmem_long_g: source .* reaches past the [0-9]+ bytes of the symmetric heap")

# shmem_barrier_all must not inherit the bootstrap's time limit when peers are remote.
add_executable(mpe_review_barrier_slow_pe review_barrier.c)
target_link_libraries(mpe_review_barrier_slow_pe PRIVATE vshmem)
target_include_directories(mpe_review_barrier_slow_pe PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
if(VSHMEM_HAVE_UCX)
  vshmem_add_mpe_test(NAME review_barrier_slow_pe_remote TARGET mpe_review_barrier_slow_pe
                      NPES 2 3 4 LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 TIMEOUT 60
                      NO_GPU_RERUN ENV VSHMEM_BOOTSTRAP_TIMEOUT=2)
  vshmem_add_mpe_test(NAME review_barrier_slow_pe_no_p2p TARGET mpe_review_barrier_slow_pe
                      NPES 3 LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
                      ENV VSHMEM_BOOTSTRAP_TIMEOUT=2 VSHMEM_DISABLE_P2P=1)
endif()
vshmem_add_mpe_test(NAME review_barrier_slow_pe_mapped TARGET mpe_review_barrier_slow_pe
                    NPES 2 3 4 LAUNCHERS vshmemrun TIMEOUT 60
                    ENV VSHMEM_BOOTSTRAP_TIMEOUT=2)
vshmem_add_mpe_test(NAME review_ptr_past_committed TARGET mpe_review ARGS ptr_past_committed
                    NPES 1 2 3 LAUNCHERS vshmemrun NO_GPU_RERUN)
_review_error(put_null_source "PE 0: shmem_long_put: source is NULL")
_review_error(get_null_dest "PE 0: shmem_getmem: dest is NULL")
