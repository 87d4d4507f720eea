# Multi-process tests of the bootstrap layer and the launcher, run under vshmemrun (socket
# bootstrap) and mpirun (mpi and pmix plugins).
vshmem_add_mpe_test(NAME bootstrap_collectives NO_GPU_RERUN SOURCES launcher_bootstrap_collectives.cpp
                    NPES 1 2 3 4 8 TIMEOUT 60 LIBS vshmem_internal_for_tests)

# A PE that does not arrive: the others fail within VSHMEM_BOOTSTRAP_TIMEOUT, naming it where the
# bootstrap can (PMIx cannot tell who is missing from a fence).
vshmem_add_mpe_test(NAME bootstrap_timeout SOURCES launcher_bootstrap_timeout.cpp NPES 3
                    LAUNCHERS vshmemrun mpi ENV VSHMEM_BOOTSTRAP_TIMEOUT=2 TIMEOUT 30
                    LIBS vshmem_internal_for_tests
                    WILL_FAIL_REGEX "PE [01]: barrier: timed out after 2 s waiting for PE 2")
vshmem_add_mpe_test(NAME bootstrap_timeout_pmix TARGET mpe_bootstrap_timeout NPES 3
                    LAUNCHERS pmix ENV VSHMEM_BOOTSTRAP_TIMEOUT=2 TIMEOUT 30
                    WILL_FAIL_REGEX "PE [01]: barrier: timed out after 2 s")

# The PMIx plugin prints at libvshmem's message level, which libvshmem parses (VSHMEM_DEBUG=2 is
# info, as for libvshmem itself): the plugin reads no variable of its own.
vshmem_add_mpe_test(NAME bootstrap_pmix_debug_level TARGET mpe_bootstrap_collectives NPES 2
                    LAUNCHERS pmix ENV VSHMEM_DEBUG=2 TIMEOUT 60)
if(TEST mpe.bootstrap_pmix_debug_level.pmix.2)
  set_tests_properties(mpe.bootstrap_pmix_debug_level.pmix.2 PROPERTIES
                       PASS_REGULAR_EXPRESSION "vshmem: PE 0: PMIx bootstrap \\(")
endif()

# Under Open MPI's mpirun, auto must pick the PMIx plugin when it exists, else the MPI one.
if(VSHMEM_MPIRUN AND (TARGET vshmem_bootstrap_pmix OR TARGET vshmem_bootstrap_mpi))
  if(TARGET vshmem_bootstrap_pmix)
    set(_expect pmix)
  else()
    set(_expect mpi)
  endif()
  add_test(NAME mpe.bootstrap_auto.mpirun.2
           COMMAND ${VSHMEM_MPIRUN} --allow-run-as-root --oversubscribe --bind-to none
                   --mca btl self,vader -np 2 -x EXPECT_BOOTSTRAP=${_expect}
                   $<TARGET_FILE:mpe_bootstrap_collectives>)
  set_tests_properties(mpe.bootstrap_auto.mpirun.2 PROPERTIES LABELS "mpe;${_expect}" TIMEOUT 60
                       ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_BOOTSTRAP=auto")
endif()
# Without any launcher the program runs as a single PE.
add_test(NAME mpe.bootstrap_collectives.singleton.1 COMMAND mpe_bootstrap_collectives)
set_tests_properties(mpe.bootstrap_collectives.singleton.1 PROPERTIES LABELS mpe TIMEOUT 30
                     ENVIRONMENT "EXPECT_BOOTSTRAP=singleton;VSHMEM_BOOTSTRAP=auto")

# An application's own MPI communicator (BootstrapOptions::mpi_comm).
if(TARGET vshmem_bootstrap_mpi)
  find_package(MPI COMPONENTS C QUIET)
  vshmem_add_mpe_test(NAME bootstrap_mpi_comm SOURCES launcher_bootstrap_mpi_comm.cpp
                      NPES 1 4 LAUNCHERS mpi TIMEOUT 60
                      LIBS vshmem_internal_for_tests MPI::MPI_C)
  target_compile_definitions(mpe_bootstrap_mpi_comm PRIVATE OMPI_SKIP_MPICXX=1
                             MPICH_SKIP_MPICXX=1)
endif()
