# The unique-ID start: the ID travels by file under vshmemrun and by MPI_Bcast under mpirun, on
# one node and on two simulated nodes (peers on the other "node" take the staged transport).
vshmem_add_mpe_test(NAME uniqueid SOURCES ${CMAKE_CURRENT_LIST_DIR}/uniqueid.c NPES 1 2 3 4
                    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN)
vshmem_add_mpe_test(NAME uniqueid_2nodes TARGET mpe_uniqueid NPES 2 4 LAUNCHERS vshmemrun
                    ARGS nodes 2 TIMEOUT 60 NO_GPU_RERUN)
if(TARGET vshmem_bootstrap_mpi)
  find_package(MPI COMPONENTS C QUIET)
  add_executable(mpe_uniqueid_mpi ${CMAKE_CURRENT_LIST_DIR}/uniqueid.c)
  target_compile_definitions(mpe_uniqueid_mpi PRIVATE UID_WITH_MPI=1 OMPI_SKIP_MPICXX=1)
  target_link_libraries(mpe_uniqueid_mpi PRIVATE vshmem MPI::MPI_C)
  target_include_directories(mpe_uniqueid_mpi PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  vshmem_add_mpe_test(NAME uniqueid_mpi TARGET mpe_uniqueid_mpi NPES 2 4 LAUNCHERS mpi
                      TIMEOUT 60)
  vshmem_add_mpe_test(NAME uniqueid_mpi_2nodes TARGET mpe_uniqueid_mpi NPES 4 LAUNCHERS mpi
                      ARGS nodes 2 TIMEOUT 60)
endif()
# A zero ID, an out-of-range rank, and an ID made by rank 1: refused at once with a message.
vshmem_add_mpe_test(NAME uniqueid_bad TARGET mpe_uniqueid NPES 1 2 LAUNCHERS vshmemrun ARGS bad
                    TIMEOUT 60 NO_GPU_RERUN)
