# Issue 19: failures that are agreed by every PE and named.

# Item 3: a heap growth that fails on one PE (here: its open-file limit) fails on all, naming
# the cause; growths keep no descriptor per peer per chunk.
vshmem_add_mpe_test(NAME heap_growth_agree SOURCES heap_growth_agree.c NPES 2 4 NO_GPU_RERUN
                    ENV VSHMEM_BACKEND=host VSHMEM_HEAP_CHUNK_SIZE=64K SHMEM_SYMMETRIC_SIZE=64M
                        VSHMEM_BOOTSTRAP_TIMEOUT=20
                    TIMEOUT 60)
foreach(_t mpe.heap_growth_agree.vshmemrun.2 mpe.heap_growth_agree.vshmemrun.4
           mpe.heap_growth_agree.mpi.2 mpe.heap_growth_agree.mpi.4
           mpe.heap_growth_agree.pmix.2 mpe.heap_growth_agree.pmix.4)
  if(TEST ${_t})
    set_tests_properties(${_t} PROPERTIES PASS_REGULAR_EXPRESSION "open descriptors"
                         FAIL_REGULAR_EXPRESSION "DIVERGED;FAIL PE")
  endif()
endforeach()
