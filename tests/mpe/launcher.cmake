# Multi-process tests of the bootstrap layer and the launcher, run under vshmemrun (socket
# bootstrap) and mpirun (mpi and pmix plugins).
vshmem_add_mpe_test(NAME bootstrap_collectives SOURCES launcher_bootstrap_collectives.cpp
                    NPES 1 2 3 4 8 TIMEOUT 60 LIBS vshmem_internal_for_tests)
