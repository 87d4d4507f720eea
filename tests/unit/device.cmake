# The device library's registration with the host runtime (no GPU needed).
if(TARGET vshmem_device)
  vshmem_add_unit_test(NAME device_registration_test
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_registration_test.cu
                       LIBS vshmem ${CMAKE_DL_LIBS})
  vshmem_device_link(device_registration_test)
  # The library's write counter is found with dlsym in the executable.
  set_target_properties(device_registration_test PROPERTIES ENABLE_EXPORTS ON)
endif()

# Register budget of the block-wide device calls (issue #18): a block of 1024 threads has 64
# registers a thread, so a call whose inline code needs more makes the user's kernel fail at
# launch. The kernels of tests/gpu/device_block1024.cu are compiled with -Xptxas -v for sm_90,
# with address checks compiled out (release, NDEBUG) and always on (VSHMEM_DEVICE_DEBUG=1, as in
# debug builds); any kernel above 64 registers fails the test, before and after the device link
# with libvshmem_device (which gives a kernel the registers of the library functions it may
# call). Runs wherever nvcc is, no GPU. COST (here and on the other nvcc-driven tests and
# python.pip_install): these take one to four minutes of a core each, so a parallel ctest without
# timing history (CI's fresh checkout) starts them first instead of finishing on one of them alone.
if(TARGET vshmem_device)
  foreach(_mode release:-DNDEBUG checked:-DVSHMEM_DEVICE_DEBUG=1)
    string(REPLACE ":" ";" _mode "${_mode}")
    list(GET _mode 0 _name)
    list(GET _mode 1 _flag)
    add_test(NAME unit.register_budget_${_name}
             COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER}
                     -DSOURCE=${PROJECT_SOURCE_DIR}/tests/gpu/device_block1024.cu
                     -DINCLUDES=${PROJECT_SOURCE_DIR}/include$<SEMICOLON>${PROJECT_SOURCE_DIR}/tests/gpu
                     -DFLAGS=${_flag} -DLIMIT=64 -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}
                     -DDEVICE_LIB=$<TARGET_FILE:vshmem_device>
                     -P ${PROJECT_SOURCE_DIR}/tests/tools/register_budget.cmake)
    set_tests_properties(unit.register_budget_${_name} PROPERTIES LABELS "unit" TIMEOUT 300
                         COST 900)
  endforeach()
  # The same budget for bench/copy_shapes.cu (a loop over pieces around the library's group copy,
  # built as the benchmarks are: VSHMEM_DEVICE_DEBUG=0): at 66 registers its 1024-thread launch
  # failed on the H200.
  add_test(NAME unit.register_budget_copy_shapes
           COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER}
                   -DSOURCE=${PROJECT_SOURCE_DIR}/bench/copy_shapes.cu
                   -DINCLUDES=${PROJECT_SOURCE_DIR}/include$<SEMICOLON>${PROJECT_SOURCE_DIR}
                   -DFLAGS=-DVSHMEM_DEVICE_DEBUG=0 -DLIMIT=64
                   -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}
                   -P ${PROJECT_SOURCE_DIR}/tests/tools/register_budget.cmake)
  set_tests_properties(unit.register_budget_copy_shapes PROPERTIES LABELS "unit" TIMEOUT 300
                       COST 500)
endif()

# The hot loops of the device calls in sm_90 PTX (issue #18, issue #21 item 3; no GPU needed):
# waits, signals and barriers choose their memory scope once, not at every instruction of a
# polling loop, and no group-copy loop keeps a single 16-byte load in flight.
if(TARGET vshmem_device)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    add_test(NAME unit.device_loops_ptx
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/device_loops_ptx.py
                     ${CMAKE_CUDA_COMPILER} ${PROJECT_SOURCE_DIR}/include
                     ${CMAKE_CURRENT_LIST_DIR}/device_loops_ptx.cu ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(unit.device_loops_ptx PROPERTIES LABELS "unit" TIMEOUT 300
                         COST 400)
  endif()
endif()

# The group copy's index arithmetic on the host (no nvcc, no GPU): copy_bytes_at as put and get
# call it, every byte checked, 16-byte accesses checked for alignment by the sanitizer, and a
# delta that breaks kDeltaAlign must be caught (issue #18).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME unit.copy_emulation
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/copy_emulation.py
                   ${CMAKE_CXX_COMPILER} ${PROJECT_SOURCE_DIR}/include/vshmem/device/impl/memory.cuh
                   ${CMAKE_CURRENT_BINARY_DIR}/copy_emulation)
  set_tests_properties(unit.copy_emulation PROPERTIES LABELS "unit" TIMEOUT 300)
endif()

# The multicast device code compiled for sm_90 and its PTX checked (issue #17); no GPU needed.
if(TARGET vshmem_device)
  add_test(NAME unit.multimem_ptx
           COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER}
                   -DSOURCE=${CMAKE_CURRENT_LIST_DIR}/multimem_ptx.cu
                   -DINCLUDE=${PROJECT_SOURCE_DIR}/include -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}
                   -P ${PROJECT_SOURCE_DIR}/tests/tools/multimem_ptx.cmake)
  set_tests_properties(unit.multimem_ptx PROPERTIES LABELS "unit" TIMEOUT 300 COST 600)
endif()
