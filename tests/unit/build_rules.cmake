# What the build keeps (cmake/VshmemBuildRules.cmake): libvshmem exports its C API only, and a
# runtime file that includes a higher layer is rejected.
add_test(NAME build.exports_only_the_c_api
         COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIB=$<TARGET_FILE:vshmem>
                 -P ${PROJECT_SOURCE_DIR}/cmake/check_exports.cmake)
set_tests_properties(build.exports_only_the_c_api PROPERTIES LABELS "unit" TIMEOUT 60)

# The per-operation functions (VSHMEM_HOT, runtime/common/hot.hpp) lie together in libvshmem and
# the UCX plugin. GCC groups them from -O2 (-freorder-functions); other compilers and unoptimized
# builds are not held to it.
string(TOUPPER "${CMAKE_BUILD_TYPE}" vshmem_build_type)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND vshmem_build_type MATCHES "^(RELEASE|RELWITHDEBINFO)$")
  set(vshmem_hot_objects $<TARGET_FILE:vshmem>)
  if(TARGET vshmem_transport_ucx)
    list(APPEND vshmem_hot_objects $<TARGET_FILE:vshmem_transport_ucx>)
  endif()
  add_test(NAME build.hot_path_layout
           COMMAND ${CMAKE_COMMAND} -E env NM=${CMAKE_NM}
                   ${PROJECT_SOURCE_DIR}/tests/tools/hot_path_layout.sh ${vshmem_hot_objects})
  set_tests_properties(build.hot_path_layout PROPERTIES LABELS "unit" TIMEOUT 60)
endif()

# The fixture tree holds runtime/memory/provider_that_reaches_up.cpp, which includes
# runtime/api/runtime.hpp: the check the build runs before libvshmem must refuse it.
add_test(NAME build.layer_violation_rejected
         COMMAND ${CMAKE_COMMAND}
                 "-DREGEX=runtime/memory/provider_that_reaches_up.cpp includes \"runtime/api/runtime.hpp\": the memory layer may include only"
                 -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake --
                 ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/layer_violation
                 -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake)
set_tests_properties(build.layer_violation_rejected PROPERTIES LABELS "unit" TIMEOUT 60)

# The same rule at link level (cmake/VshmemLayers.cmake): a fixture runtime of seven one-file
# layers built with the real build's layer rules. Its memory layer calling the api layer's C API
# through a declaration of its own (no include: the include check passes it) must fail the build
# at the memory layer's link check, naming the symbol; the fixture without that call builds.
set(_links_fixture ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/layer_links)
set(_links_build ${CMAKE_CURRENT_BINARY_DIR}/layer_links_fixture)
foreach(_plant OFF ON)
  set(_build_cmd sh -c "rm -rf '${_links_build}-${_plant}' && '${CMAKE_COMMAND}' -S '${_links_fixture}' -B '${_links_build}-${_plant}' -G '${CMAKE_GENERATOR}' -DCMAKE_CXX_COMPILER='${CMAKE_CXX_COMPILER}' -DVSHMEM_SOURCE_DIR='${PROJECT_SOURCE_DIR}' -DPLANT_VIOLATION=${_plant} >/dev/null && '${CMAKE_COMMAND}' --build '${_links_build}-${_plant}' 2>&1")
  if(_plant)
    add_test(NAME build.layer_link_violation_rejected
             COMMAND ${CMAKE_COMMAND}
                     "-DREGEX=libvshmem_links_memory\\.so.*memory\\.cpp\\.o: in function .vshmem::fixture::memory\\(\\).*undefined reference to .shmem_fixture_my_pe"
                     -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake -- ${_build_cmd})
    set_tests_properties(build.layer_link_violation_rejected PROPERTIES LABELS "unit" TIMEOUT 120)
  else()
    add_test(NAME build.layer_links_fixture_builds COMMAND ${_build_cmd})
    set_tests_properties(build.layer_links_fixture_builds PROPERTIES LABELS "unit" TIMEOUT 120)
  endif()
endforeach()
# ... and the include check does not see that call: only the link check does.
add_test(NAME build.layer_link_violation_invisible_to_includes
         COMMAND ${CMAKE_COMMAND} -DROOT=${_links_fixture} -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake)
set_tests_properties(build.layer_link_violation_invisible_to_includes PROPERTIES LABELS "unit" TIMEOUT 60)
