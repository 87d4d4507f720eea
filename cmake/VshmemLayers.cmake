# The runtime's layers as the build sees them (CONVENTIONS.md "Layers"):
#   common < memory < ipc < bootstrap < heap < transport < api
# Each layer is an OBJECT library, vshmem_layer_<name>, made by vshmem_add_layer() from its
# folder's CMakeLists.txt; libvshmem and vshmem_internal are assembled from the seven.
#
# Two checks keep the order, both run by every build of libvshmem:
# - includes (cmake/CheckLayers.cmake): a file includes headers of its own layer and lower ones;
# - links (here): for every layer below api, its objects and those of the layers below it are
#   linked into a shared object with --no-undefined (vshmem_links_<name>, under
#   <build>/layer_links/), and libvshmem itself (api and everything below) is linked so too.
#   Only the system's libraries may supply what they leave undefined: libc, libstdc++, libdl,
#   libpthread, librt (the CUDA driver is opened with dlopen, never linked). So a lower layer that
#   calls a higher one, even through a declaration it wrote itself instead of an include, fails
#   the build with the linker's "undefined reference to <the higher layer's function>".
# tests/unit/build_rules.cmake shows both checks refusing a violation (build.layer_*).
#
# Used by the main build and, with VSHMEM_LAYERS_FIXTURE, by the fixture project of that test
# (tests/unit/compile_fail/layer_links), which has the same layers and a planted violation.
set(VSHMEM_LAYERS common memory ipc bootstrap heap transport api)

# What every runtime file is compiled with (the settings libvshmem's sources had when they were
# one target): each layer links it privately.
if(NOT TARGET vshmem_runtime_settings)
  add_library(vshmem_runtime_settings INTERFACE)
endif()

# vshmem_add_layer(<name> <sources>...): the layer's OBJECT library, its link check, and its
# objects into libvshmem (target VSHMEM_LAYERS_INTO, default vshmem). A layer's folder may add
# sources later with target_sources(vshmem_layer_<name> PRIVATE ...).
function(vshmem_add_layer name)
  list(FIND VSHMEM_LAYERS ${name} index)
  if(index EQUAL -1)
    message(FATAL_ERROR "vshmem_add_layer(${name}): not a layer (${VSHMEM_LAYERS})")
  endif()
  set(target vshmem_layer_${name})
  add_library(${target} OBJECT ${ARGN})
  target_link_libraries(${target} PRIVATE vshmem_runtime_settings)
  if(TARGET vshmem_layering)
    add_dependencies(${target} vshmem_layering)  # the include check, before any compile
  endif()
  set_target_properties(${target} PROPERTIES C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden
                                             VISIBILITY_INLINES_HIDDEN ON)
  # The layers below this one must exist already (runtime/CMakeLists.txt adds them in order).
  set(objects "")
  set(deps "")
  if(index GREATER 0)
    math(EXPR below "${index} - 1")
    foreach(i RANGE ${below})
      list(GET VSHMEM_LAYERS ${i} lower)
      if(NOT TARGET vshmem_layer_${lower})
        message(FATAL_ERROR "layer ${name} is added before the layer below it, ${lower}")
      endif()
      list(APPEND objects $<TARGET_OBJECTS:vshmem_layer_${lower}>)
    endforeach()
  endif()
  list(APPEND objects $<TARGET_OBJECTS:${target}>)
  set(into vshmem)
  if(VSHMEM_LAYERS_INTO)
    set(into ${VSHMEM_LAYERS_INTO})
  endif()
  target_sources(${into} PRIVATE $<TARGET_OBJECTS:${target}>)
  # api's objects with everything below them are libvshmem: it is linked with --no-undefined.
  list(LENGTH VSHMEM_LAYERS count)
  math(EXPR top "${count} - 1")
  if(index EQUAL top)
    return()
  endif()
  set(check vshmem_links_${name})
  add_library(${check} SHARED ${objects})
  target_link_libraries(${check} PRIVATE ${CMAKE_DL_LIBS} pthread rt)
  # Debug information is not needed in a check (and writing it would cost time).
  target_link_options(${check} PRIVATE LINKER:--no-undefined LINKER:--strip-debug)
  set_target_properties(${check} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/layer_links
                                            LINKER_LANGUAGE CXX)
  # Every build of libvshmem runs every layer's check first, from the bottom up: the first check
  # that fails names the lowest layer that reaches up (vshmem_links_<layer>).
  add_dependencies(${into} ${check})
  if(index GREATER 0)
    math(EXPR below "${index} - 1")
    list(GET VSHMEM_LAYERS ${below} lower)
    add_dependencies(${check} vshmem_links_${lower})
  endif()
endfunction()

# The objects of every layer, as a generator expression joined with `sep`.
function(vshmem_layer_objects out sep)
  set(parts "")
  foreach(layer IN LISTS VSHMEM_LAYERS)
    list(APPEND parts "$<JOIN:$<TARGET_OBJECTS:vshmem_layer_${layer}>,${sep}>")
  endforeach()
  list(JOIN parts "${sep}" joined)
  set(${out} "${joined}" PARENT_SCOPE)
endfunction()
