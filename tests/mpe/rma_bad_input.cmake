# Bad RMA arguments (strides that wrap, addresses past the committed heap, NULL buffers): the job
# ends with a message naming the PE, the call and the cause, never a crash or silent corruption.
add_executable(mpe_rma_bad_input rma_bad_input.c)
target_link_libraries(mpe_rma_bad_input PRIVATE vshmem)
target_include_directories(mpe_rma_bad_input PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
function(_rma_bad_input name regex)
  vshmem_add_mpe_test(NAME rma_bad_input_${name} TARGET mpe_rma_bad_input ARGS ${name} NPES 2
                      LAUNCHERS vshmemrun NO_GPU_RERUN WILL_FAIL_REGEX "${regex}")
endfunction()
_rma_bad_input(iput_stride_wraps "PE 0: shmem_long_iput: .*overflow")
_rma_bad_input(iget_stride_wraps "PE 0: shmem_long_iget: .*overflow")
_rma_bad_input(put_past_committed
               "PE 0: shmem_long_p: dest .* reaches past the [0-9]+ bytes of the symmetric heap")
_rma_bad_input(get_past_committed_self
               "PE 0: shmem_long_g: source .* reaches past the [0-9]+ bytes of the symmetric heap")

# Past the committed heap no PE's copy is accessible (shmem_ptr NULL, not accessible).
vshmem_add_mpe_test(NAME rma_ptr_past_committed_is_null TARGET mpe_rma_bad_input
                    ARGS ptr_past_committed NPES 1 2 3 LAUNCHERS vshmemrun NO_GPU_RERUN)
_rma_bad_input(put_null_source "PE 0: shmem_long_put: source is NULL")
_rma_bad_input(get_null_dest "PE 0: shmem_getmem: dest is NULL")
