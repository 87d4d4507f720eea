# The staged transport (runtime/transport/staged_transport.cpp): multi-PE programs of the other
# fragments re-run as two simulated nodes (vshmemrun --simulate-nodes 2), so that every PE has
# peers reached through the proxies over loopback TCP instead of the mapping.
set(_staged_args LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 NPES 2 3 4 8 TIMEOUT 60)
# The GPU machines re-run RMA and atomics on the GPU heap: the proxy stages through host memory.
vshmem_add_mpe_test(NAME staged_rma TARGET mpe_rma ${_staged_args} ENV VSHMEM_HEAP_CHUNK_SIZE=1M)
vshmem_add_mpe_test(NAME staged_api_amo TARGET mpe_api_amo ${_staged_args})
vshmem_add_mpe_test(NAME staged_heap TARGET mpe_heap ${_staged_args} NO_GPU_RERUN
  ENV VSHMEM_HEAP_CHUNK_SIZE=1M SHMEM_SYMMETRIC_SIZE=64M)
foreach(_t api_signal_wait api_team_coll api_reduce api_lock teardown)
  vshmem_add_mpe_test(NAME staged_${_t} TARGET mpe_${_t} ${_staged_args} NO_GPU_RERUN)
endforeach()

# A peer that dies or hangs mid-job: the next staged call fails with a message naming it,
# within the time limit, instead of hanging.
vshmem_add_mpe_test(NAME staged_peer_dies TARGET mpe_staged ARGS peer_dies NPES 2 4
  LAUNCHERS vshmemrun ENV VSHMEM_STAGED_ADDR=127.0.0.1 TIMEOUT 60 NO_GPU_RERUN
  WILL_FAIL_REGEX "shmem_long_p: put to PE [0-9]+: its proxy closed the connection")
vshmem_add_mpe_test(NAME staged_peer_hangs TARGET mpe_staged ARGS peer_hangs NPES 2
  LAUNCHERS vshmemrun LAUNCHER_ARGS --grace 0 ENV VSHMEM_STAGED_ADDR=127.0.0.1
  VSHMEM_BOOTSTRAP_TIMEOUT=2 TIMEOUT 60 NO_GPU_RERUN
  WILL_FAIL_REGEX "shmem_long_p: put to PE 1: no progress for 2 s")
