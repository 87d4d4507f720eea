# Test helpers.
#
# vshmem_add_unit_test(NAME n SOURCES s... [LIBS l...])
#   A GoogleTest executable linked with the runtime's internals; label "unit".
#
# vshmem_add_mpe_test(NAME n SOURCES s... [NPES 1 2 3 4 8] [LAUNCHERS vshmemrun mpi pmix]
#                     [ENV K=V...] [ARGS a...] [LABELS l...] [TIMEOUT s] [WILL_FAIL_REGEX re]
#                     [OUTPUT_REGEX re] [LAUNCHER_ARGS a...])
#   A multi-PE program (it exits non-zero on failure) run once per PE count and launcher:
#   vshmemrun (socket bootstrap), mpirun with the mpi bootstrap, mpirun with the pmix bootstrap.
#   Tests are named mpe.<n>.<launcher>.<npes>. WILL_FAIL_REGEX: the run must fail AND print a
#   line matching the regex (for bad-input tests). OUTPUT_REGEX: the run must succeed AND print a
#   line matching the regex (which path it took, from its VSHMEM_DEBUG=info log). LAUNCHER_ARGS
#   go to vshmemrun before the program (e.g. --simulate-nodes 2); only the vshmemrun launcher
#   takes them.
#   Unless NO_GPU_RERUN is given, the vshmemrun runs with 2, 4 or 8 PEs are registered a second
#   time as gpu.<n>.<npes> with VSHMEM_BACKEND=cuda and the label "gpu": the host-API suite on
#   the GPU heap (skipped where no GPU is usable). GPU_RERUN_ONLY registers that rerun only (the
#   CPU entries come from other calls, e.g. one per case of a program: tests/mpe/api.cmake).
#
# Tests that need a GPU carry the label "gpu" and exit with 77 (reported as skipped) when no
# usable GPU is present.

set(VSHMEM_DEFAULT_NPES 1 2 3 4 8)
find_program(VSHMEM_MPIRUN_PROGRAM NAMES mpirun)
# The tests start mpirun through a wrapper that gives each mpirun its own session directory (see
# the wrapper for the Open MPI race it avoids).
set(VSHMEM_MPIRUN "")
if(VSHMEM_MPIRUN_PROGRAM)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/mpirun_own_session.sh.in
                 ${PROJECT_BINARY_DIR}/tools/mpirun @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                  WORLD_READ WORLD_EXECUTE)
  set(VSHMEM_MPIRUN ${PROJECT_BINARY_DIR}/tools/mpirun)
endif()
set(VSHMEM_TEST_LAUNCHERS vshmemrun)
if(VSHMEM_MPIRUN AND TARGET vshmem_bootstrap_mpi)
  list(APPEND VSHMEM_TEST_LAUNCHERS mpi)
endif()
if(VSHMEM_MPIRUN AND TARGET vshmem_bootstrap_pmix)
  list(APPEND VSHMEM_TEST_LAUNCHERS pmix)
endif()
# Global, for tests registered outside tests/ (python/tests/tests.cmake): a function sees its
# caller's variables, not those of the file that defined it.
set_property(GLOBAL PROPERTY VSHMEM_TEST_LAUNCHERS ${VSHMEM_TEST_LAUNCHERS})
set_property(GLOBAL PROPERTY VSHMEM_MPIRUN ${VSHMEM_MPIRUN})
set(VSHMEM_GPU_RERUN_NPES 2 4 8)
set(VSHMEM_GPU_OR_SKIP ${PROJECT_SOURCE_DIR}/tests/tools/gpu_or_skip.sh)

add_library(vshmem_internal_for_tests INTERFACE)
target_include_directories(vshmem_internal_for_tests INTERFACE ${PROJECT_SOURCE_DIR})

# GoogleTest's header and the standard headers most unit tests include, parsed once per build tree
# into a precompiled header that every C++-only unit test uses (about 1 s of CPU a test file here,
# where GoogleTest alone takes 1.1 s to parse). Its owner is an executable of the same directory
# scope, so that it compiles with the tests' own flags (GCC ignores a precompiled header made with
# another -O level or -fPIE setting); a test that includes it this way still includes what it uses.
add_executable(vshmem_unit_test_pch ${PROJECT_SOURCE_DIR}/tests/support/unit_test_pch.cpp)
target_link_libraries(vshmem_unit_test_pch PRIVATE GTest::gtest_main pthread)
target_precompile_headers(vshmem_unit_test_pch PRIVATE <gtest/gtest.h> <algorithm> <atomic> <chrono>
                          <functional> <map> <memory> <mutex> <random> <set> <string> <thread>
                          <vector>)

function(vshmem_add_unit_test)
  cmake_parse_arguments(A "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_LIBS} GTest::gtest_main vshmem_internal_for_tests
                        pthread)
  set(not_cpp ${A_SOURCES})
  list(FILTER not_cpp EXCLUDE REGEX "\\.cpp$")
  if(NOT not_cpp)  # C++ only: the header is made for C++
    target_precompile_headers(${A_NAME} REUSE_FROM vshmem_unit_test_pch)
  endif()
  add_test(NAME unit.${A_NAME} COMMAND ${A_NAME})
  set_tests_properties(unit.${A_NAME} PROPERTIES LABELS unit TIMEOUT 300)
endfunction()

# The command line that starts `npes` PEs of a program with the given launcher.
function(vshmem_launch_command out launcher npes)
  if(launcher STREQUAL "vshmemrun")
    set(cmd $<TARGET_FILE:vshmemrun> -n ${npes} ${ARGN} --)
  elseif(launcher STREQUAL "mpi" OR launcher STREQUAL "pmix")
    get_property(mpirun GLOBAL PROPERTY VSHMEM_MPIRUN)
    if(NOT mpirun)
      message(FATAL_ERROR "vshmem_launch_command: launcher ${launcher} needs mpirun, not found")
    endif()
    set(cmd ${mpirun} --allow-run-as-root --oversubscribe --bind-to none
            --mca btl self,vader -np ${npes} -x VSHMEM_BOOTSTRAP=${launcher})
  else()
    message(FATAL_ERROR "unknown launcher ${launcher}")
  endif()
  set(${out} ${cmd} PARENT_SCOPE)
endfunction()

function(vshmem_add_mpe_test)
  cmake_parse_arguments(A "NO_GPU_RERUN;GPU_RERUN_ONLY"
                        "NAME;TIMEOUT;WILL_FAIL_REGEX;OUTPUT_REGEX;TARGET"
                        "SOURCES;NPES;LAUNCHERS;ENV;ARGS;LABELS;LIBS;LAUNCHER_ARGS" ${ARGN})
  if(NOT A_NPES)
    set(A_NPES ${VSHMEM_DEFAULT_NPES})
  endif()
  if(NOT A_LAUNCHERS)
    set(A_LAUNCHERS ${VSHMEM_TEST_LAUNCHERS})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  set(exe mpe_${A_NAME})
  if(A_TARGET)
    set(exe ${A_TARGET})
  else()
    add_executable(${exe} ${A_SOURCES})
    target_link_libraries(${exe} PRIVATE vshmem ${A_LIBS})
    target_include_directories(${exe} PRIVATE ${PROJECT_SOURCE_DIR}/tests/mpe ${PROJECT_SOURCE_DIR})
  endif()
  foreach(launcher IN LISTS A_LAUNCHERS)
    if(NOT launcher IN_LIST VSHMEM_TEST_LAUNCHERS)
      continue()
    endif()
    foreach(n IN LISTS A_NPES)
      set(tname mpe.${A_NAME}.${launcher}.${n})
      if(A_LAUNCHER_ARGS AND NOT launcher STREQUAL "vshmemrun")
        message(FATAL_ERROR "${A_NAME}: LAUNCHER_ARGS are for the vshmemrun launcher only")
      endif()
      vshmem_launch_command(cmd ${launcher} ${n} ${A_LAUNCHER_ARGS})
      if(A_GPU_RERUN_ONLY)
        # Only the GPU machines' rerun (CPU entries come from other calls, e.g. one per case).
      elseif(A_WILL_FAIL_REGEX)
        add_test(NAME ${tname} COMMAND ${CMAKE_COMMAND} -DREGEX=${A_WILL_FAIL_REGEX}
                 -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake -- ${cmd}
                 $<TARGET_FILE:${exe}> ${A_ARGS})
      elseif(A_OUTPUT_REGEX)
        add_test(NAME ${tname} COMMAND ${CMAKE_COMMAND} -DREGEX=${A_OUTPUT_REGEX}
                 -P ${PROJECT_SOURCE_DIR}/cmake/expect_output.cmake -- ${cmd}
                 $<TARGET_FILE:${exe}> ${A_ARGS})
      else()
        add_test(NAME ${tname} COMMAND ${cmd} $<TARGET_FILE:${exe}> ${A_ARGS})
      endif()
      set(labels mpe ${launcher} ${A_LABELS})
      if(NOT A_GPU_RERUN_ONLY)
        set_tests_properties(${tname} PROPERTIES LABELS "${labels}" TIMEOUT ${A_TIMEOUT}
                             SKIP_RETURN_CODE 77
                             ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;${A_ENV}")
      endif()
      if("gpu" IN_LIST A_LABELS AND NOT A_GPU_RERUN_ONLY)
        set_tests_properties(${tname} PROPERTIES RESOURCE_LOCK gpu)
      endif()
      if(NOT A_NO_GPU_RERUN AND NOT "gpu" IN_LIST A_LABELS AND launcher STREQUAL "vshmemrun"
         AND n IN_LIST VSHMEM_GPU_RERUN_NPES)
        set(gname gpu.${A_NAME}.${n})
        if(A_WILL_FAIL_REGEX)
          add_test(NAME ${gname} COMMAND ${VSHMEM_GPU_OR_SKIP} ${CMAKE_COMMAND}
                   -DREGEX=${A_WILL_FAIL_REGEX} -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake
                   -- ${cmd} $<TARGET_FILE:${exe}> ${A_ARGS})
        elseif(A_OUTPUT_REGEX)
          add_test(NAME ${gname} COMMAND ${VSHMEM_GPU_OR_SKIP} ${CMAKE_COMMAND}
                   -DREGEX=${A_OUTPUT_REGEX} -P ${PROJECT_SOURCE_DIR}/cmake/expect_output.cmake
                   -- ${cmd} $<TARGET_FILE:${exe}> ${A_ARGS})
        else()
          add_test(NAME ${gname} COMMAND ${VSHMEM_GPU_OR_SKIP} ${cmd} $<TARGET_FILE:${exe}>
                   ${A_ARGS})
        endif()
        set_tests_properties(${gname} PROPERTIES LABELS "gpu;mpe" TIMEOUT ${A_TIMEOUT}
                             SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu
                             ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_BACKEND=cuda;${A_ENV}")
      endif()
    endforeach()
  endforeach()
endfunction()
