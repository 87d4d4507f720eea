# What the build keeps (cmake/VshmemBuildRules.cmake): libvshmem exports its C API only, and a
# runtime file that includes a higher layer is rejected.
add_test(NAME build.exports_only_the_c_api
         COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIB=$<TARGET_FILE:vshmem>
                 -P ${PROJECT_SOURCE_DIR}/cmake/check_exports.cmake)
set_tests_properties(build.exports_only_the_c_api PROPERTIES LABELS "unit" TIMEOUT 60)

# The fixture tree holds runtime/memory/provider_that_reaches_up.cpp, which includes
# runtime/api/runtime.hpp: the check the build runs before libvshmem must refuse it.
add_test(NAME build.layer_violation_rejected
         COMMAND ${CMAKE_COMMAND}
                 "-DREGEX=runtime/memory/provider_that_reaches_up.cpp includes \"runtime/api/runtime.hpp\": the memory layer may include only"
                 -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake --
                 ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/layer_violation
                 -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake)
set_tests_properties(build.layer_violation_rejected PROPERTIES LABELS "unit" TIMEOUT 60)
