# The configuration table (runtime/common/config.hpp): the README's table is generated from it,
# a variable outside it does not compile, shmem_init checks every variable in it, SHMEM_INFO and
# vshmem-info print it.
add_test(NAME docs.readme_variables
         COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/readme_variables.sh $<TARGET_FILE:vshmem-info>
                 ${PROJECT_SOURCE_DIR}/README.md)
set_tests_properties(docs.readme_variables PROPERTIES LABELS "unit" TIMEOUT 30)

add_test(NAME build.unknown_variable_rejected
         COMMAND ${CMAKE_COMMAND} "-DREGEX=missing from the table"
                 -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake --
                 ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -I${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/unknown_variable.cpp)
set_tests_properties(build.unknown_variable_rejected PROPERTIES LABELS "unit" TIMEOUT 60)

# Runs where there is no GPU and no libcuda (CI): prints every variable with its value.
add_test(NAME unit.vshmem_info COMMAND vshmem-info)
set_tests_properties(unit.vshmem_info PROPERTIES LABELS "unit" TIMEOUT 30
  ENVIRONMENT "VSHMEM_HEAP_INITIAL=3k"
  PASS_REGULAR_EXPRESSION "vshmem [0-9.]+.*build:.*GPUs:.*remote path.*environment variables:.*VSHMEM_HEAP_INITIAL='3k'.*VSHMEM_ENABLE_MULTICAST unset \\(default: 0\\).*PATH=")

# shmem_init checks every variable, also those this run would not have read (no remote peer
# here, so VSHMEM_UCX_RMA was never looked at before the table).
add_test(NAME unit.init_rejects_malformed_variable
         COMMAND ${CMAKE_COMMAND}
                 "-DREGEX=VSHMEM_UCX_RMA='sideways' is not one of network\\|target"
                 -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake -- $<TARGET_FILE:mpe_cpu_access>)
set_tests_properties(unit.init_rejects_malformed_variable PROPERTIES LABELS "unit" TIMEOUT 60
  ENVIRONMENT "VSHMEM_UCX_RMA=sideways;VSHMEM_BACKEND=host")

# SHMEM_INFO prints every user variable of the table (it missed five before).
add_test(NAME unit.shmem_info_lists_the_table COMMAND $<TARGET_FILE:mpe_cpu_access>)
set_tests_properties(unit.shmem_info_lists_the_table PROPERTIES LABELS "unit" TIMEOUT 60
  ENVIRONMENT "SHMEM_INFO=1;VSHMEM_BACKEND=host;VSHMEM_WAIT=spin"
  PASS_REGULAR_EXPRESSION "VSHMEM_BACKEND='host'.*VSHMEM_WAIT='spin'.*VSHMEM_UCX_RMA unset.*VSHMEM_DEVICE_SCOPE unset.*VSHMEM_ENABLE_MULTICAST unset.*symmetric heap is in host memory")

# Nothing but the table reads the environment (the UCX plugin read five variables itself until
# session 7: a second parse with its own messages).
add_test(NAME build.one_getenv
         COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/one_getenv.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(build.one_getenv PROPERTIES LABELS "unit" TIMEOUT 30)
