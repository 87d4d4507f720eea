# Rules the build keeps for the whole tree (included once, after libvshmem's target is made and
# before the layers add to it):
# - libvshmem exports its C API only (-fvisibility=hidden; runtime/common/export.hpp). Code
#   that uses the runtime's internals (unit tests, vshmem-info) links vshmem_internal, a static
#   library of the same objects, instead of libvshmem.
# - VSHMEM_WERROR: warnings fail the build of the library, its plugins and its commands.
# - VSHMEM_SANITIZE=address|thread: everything built with that sanitizer
#   (tests/tools/sanitize.sh runs the multi-PE suite so).
# - The layering rule: includes checked (cmake/CheckLayers.cmake) before a runtime file is
#   compiled, links checked layer by layer (cmake/VshmemLayers.cmake) before libvshmem is linked.
option(VSHMEM_WERROR "Treat warnings as errors in the library, its plugins and commands" OFF)
set(VSHMEM_SANITIZE "" CACHE STRING "Build with a sanitizer: address, thread or empty")
set_property(CACHE VSHMEM_SANITIZE PROPERTY STRINGS "" address thread)

if(VSHMEM_SANITIZE)
  if(NOT VSHMEM_SANITIZE MATCHES "^(address|thread)$")
    message(FATAL_ERROR "VSHMEM_SANITIZE=${VSHMEM_SANITIZE}: expected address or thread")
  endif()
  set(_vshmem_san -fsanitize=${VSHMEM_SANITIZE} -fno-omit-frame-pointer)
  if(VSHMEM_SANITIZE STREQUAL "address")
    list(APPEND _vshmem_san -fsanitize=undefined)
  endif()
  # Host code only: nvcc does not take these flags.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_vshmem_san}>")
  # Clang links its sanitizer runtimes statically into executables and leaves shared objects to
  # find them there, which the shared objects' --no-undefined refuses: the shared runtime, as GCC
  # does, found by an rpath to Clang's runtime folder (-frtlib-add-rpath adds none where the
  # folder has the older layout, as Debian's clang 22 has).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir
                    OUTPUT_VARIABLE _vshmem_san_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND _vshmem_san -shared-libsan "LINKER:-rpath,${_vshmem_san_rt}")
  endif()
  add_link_options(${_vshmem_san})
  target_link_options(vshmem PRIVATE ${_vshmem_san})
  message(STATUS "vshmem: sanitizer ${VSHMEM_SANITIZE}")
endif()

# (The layers' object libraries are compiled with hidden visibility: cmake/VshmemLayers.cmake.)
target_compile_options(vshmem_runtime_settings INTERFACE
  "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${PROJECT_SOURCE_DIR}/runtime/common/export.hpp>")

# The same objects as a static library, for code that calls the runtime's internals. A program
# links it or libvshmem, never both (two copies of the runtime's state).
add_library(vshmem_internal STATIC)
foreach(_layer IN LISTS VSHMEM_LAYERS)
  target_sources(vshmem_internal PRIVATE $<TARGET_OBJECTS:vshmem_layer_${_layer}>)
endforeach()
set_target_properties(vshmem_internal PROPERTIES LINKER_LANGUAGE CXX)
target_include_directories(vshmem_internal PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}
                                                  ${PROJECT_BINARY_DIR}/pshmem/include)
target_link_libraries(vshmem_internal PUBLIC ${CMAKE_DL_LIBS} pthread rt)
set_target_properties(vshmem_internal PROPERTIES ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)

# The layering rule, checked whenever a runtime file changes.
file(GLOB_RECURSE _vshmem_layer_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/runtime/*.cpp
     ${PROJECT_SOURCE_DIR}/runtime/*.hpp ${PROJECT_SOURCE_DIR}/runtime/*.h)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/layering.ok
  COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DSTAMP=${PROJECT_BINARY_DIR}/layering.ok
          -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake
  DEPENDS ${_vshmem_layer_files} ${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake
  COMMENT "Checking the layering rule (cmake/CheckLayers.cmake)" VERBATIM)
add_custom_target(vshmem_layering DEPENDS ${PROJECT_BINARY_DIR}/layering.ok)
add_dependencies(vshmem vshmem_layering)

# At the end of the configuration, when every target exists:
# - a program that links the tests' internal interface (vshmem_internal_for_tests, or the fake
#   CUDA driver, which is built on the internals) gets vshmem_internal in place of libvshmem,
#   unless it also links the device library (which links libvshmem): such a test uses the
#   public API only and keeps libvshmem;
# - VSHMEM_WERROR applies to the library, its plugins and its commands.
function(_vshmem_targets_of dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _vshmem_targets_of(${sub} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()
function(_vshmem_finish_build_rules)
  _vshmem_targets_of(${PROJECT_SOURCE_DIR} targets)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type STREQUAL "EXECUTABLE")
      continue()
    endif()
    get_target_property(libs ${t} LINK_LIBRARIES)
    if(NOT libs)
      continue()
    endif()
    if(("vshmem_internal_for_tests" IN_LIST libs OR "vshmem_fake_cuda_driver" IN_LIST libs)
       AND NOT "vshmem_device" IN_LIST libs)
      list(REMOVE_ITEM libs vshmem vshmem::vshmem)
      list(APPEND libs vshmem_internal)
      set_property(TARGET ${t} PROPERTY LINK_LIBRARIES ${libs})
    endif()
  endforeach()
  # One target that builds those named in VSHMEM_SELECTED_TARGETS (tests/tools/sanitize.sh):
  # `cmake --build --target a b c` builds one target after another, this builds them in parallel.
  if(VSHMEM_SELECTED_TARGETS)
    add_custom_target(vshmem_selected)
    add_dependencies(vshmem_selected ${VSHMEM_SELECTED_TARGETS})
  endif()
  if(VSHMEM_WERROR)
    foreach(t vshmem_runtime_settings vshmem_bootstrap_mpi vshmem_bootstrap_pmix vshmem_transport_ucx vshmemrun
              vshmem-info)
      if(TARGET ${t})
        get_target_property(type ${t} TYPE)
        set(scope PRIVATE)
        if(type STREQUAL "INTERFACE_LIBRARY")
          set(scope INTERFACE)  # every layer of the runtime
        endif()
        target_compile_options(${t} ${scope} "$<$<COMPILE_LANGUAGE:C,CXX>:-Werror>")
      endif()
    endforeach()
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _vshmem_finish_build_rules)
