# NVSHMEM programs against vshmem's compatibility headers (include/nvshmem).
vshmem_add_mpe_test(NAME nvshmem_compat SOURCES ${CMAKE_CURRENT_LIST_DIR}/nvshmem_compat.c
                    LIBS vshmem_nvshmem NPES 1 2 3 4 ARGS init TIMEOUT 60)
vshmem_add_mpe_test(NAME nvshmem_compat_attr TARGET mpe_nvshmem_compat NPES 2 4
                    LAUNCHERS vshmemrun ARGS attr TIMEOUT 60)
vshmem_add_mpe_test(NAME nvshmem_compat_uid TARGET mpe_nvshmem_compat NPES 1 3 LAUNCHERS vshmemrun
                    ARGS uid TIMEOUT 60 NO_GPU_RERUN)
vshmem_add_mpe_test(NAME nvshmem_compat_2nodes TARGET mpe_nvshmem_compat NPES 2 4
                    LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 ARGS init 2 TIMEOUT 60
                    NO_GPU_RERUN)
# NVSHMEM_SYMMETRIC_SIZE is honoured, below VSHMEM_SYMMETRIC_SIZE / SHMEM_SYMMETRIC_SIZE.
vshmem_add_mpe_test(NAME nvshmem_compat_size TARGET mpe_nvshmem_compat NPES 2
                    LAUNCHERS vshmemrun ARGS size_small ENV NVSHMEM_SYMMETRIC_SIZE=64M TIMEOUT 60
                    NO_GPU_RERUN)
vshmem_add_mpe_test(NAME nvshmem_compat_size_precedence TARGET mpe_nvshmem_compat NPES 2
                    LAUNCHERS vshmemrun ARGS size_vshmem_wins
                    ENV NVSHMEM_SYMMETRIC_SIZE=64M VSHMEM_SYMMETRIC_SIZE=256M TIMEOUT 60
                    NO_GPU_RERUN)
# The generated list of NVSHMEM names is current with vshmem's headers (needs nvcc: the device
# names come from its device pass).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_FOUND AND CMAKE_CUDA_COMPILER)
  add_test(NAME unit.nvshmem_names_current
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/cmake/gen_nvshmem_names.py --check
                   --cc ${CMAKE_C_COMPILER} --nvcc ${CMAKE_CUDA_COMPILER})
  set_tests_properties(unit.nvshmem_names_current PROPERTIES LABELS unit TIMEOUT 60)
endif()
