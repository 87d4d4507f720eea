# The OpenSHMEM API groups of runtime/api beyond RMA (issue #3): atomics, signals and waits,
# locks, teams and contexts, collectives, reductions, C11 generic forms, and bad input.
# Every PE count runs under vshmemrun; mpirun (mpi and pmix bootstraps) runs 2 and 3 PEs.
set(_api_launchers vshmemrun)
foreach(_t amo signal_wait lock)
  vshmem_add_mpe_test(NAME api_${_t} SOURCES api_${_t}.c NPES 1 2 3 4 8 LAUNCHERS vshmemrun)
  vshmem_add_mpe_test(NAME api_${_t}_mpirun TARGET mpe_api_${_t} NPES 2 3 LAUNCHERS mpi pmix
                      NO_GPU_RERUN)
endforeach()
