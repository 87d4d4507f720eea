# vshmemrun tests: the gtest binary runs vshmemrun on a helper program that plays the PEs.
add_executable(launcher_helper launcher_helper.cpp)
vshmem_add_unit_test(NAME launcher_test SOURCES launcher_test.cpp)
add_dependencies(launcher_test vshmemrun launcher_helper)
target_compile_definitions(launcher_test PRIVATE
  VSHMEMRUN_PATH="$<TARGET_FILE:vshmemrun>"
  LAUNCHER_HELPER_PATH="$<TARGET_FILE:launcher_helper>")
# A real vshmem PE, for the cases that need the runtime's side of the launcher protocol.
add_executable(launcher_pe launcher_pe.c)
target_link_libraries(launcher_pe PRIVATE vshmem)
add_dependencies(launcher_test launcher_pe)
target_compile_definitions(launcher_test PRIVATE LAUNCHER_PE_PATH="$<TARGET_FILE:launcher_pe>")
