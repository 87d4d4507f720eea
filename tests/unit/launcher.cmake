# vshmemrun tests: the gtest binary runs vshmemrun on a helper program that plays the PEs.
add_executable(launcher_helper launcher_helper.cpp)
vshmem_add_unit_test(NAME launcher_test SOURCES launcher_test.cpp)
add_dependencies(launcher_test vshmemrun launcher_helper)
target_compile_definitions(launcher_test PRIVATE
  VSHMEMRUN_PATH="$<TARGET_FILE:vshmemrun>"
  LAUNCHER_HELPER_PATH="$<TARGET_FILE:launcher_helper>")
