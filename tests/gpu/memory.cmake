# The cuda memory provider on a real device (label gpu). Without a usable device every test
# reports SKIPPED, and CTest shows the whole program as skipped.
if(VSHMEM_CUDA_PROVIDER)
  if(NOT CUDAToolkit_FOUND)
    find_package(CUDAToolkit QUIET)
  endif()
  vshmem_add_unit_test(NAME memory_cuda_gpu_test
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/memory_cuda_gpu_test.cpp LIBS vshmem)
  target_include_directories(memory_cuda_gpu_test SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  set_tests_properties(unit.memory_cuda_gpu_test PROPERTIES
    LABELS gpu RESOURCE_LOCK gpu TIMEOUT 300
    SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\] [0-9]+ tests?, listed below")
endif()
