# The layering rule, kept by the build: a file of a runtime layer includes headers of its own
# layer and of lower ones only (runtime/common < memory < ipc < bootstrap < heap < transport < api;
# device/ and launcher/ sit above them all, and nothing under runtime/ includes device/ or
# launcher/: the device state that the api layer builds and the device code reads is a public
# header, vshmem/device/impl/state.h). Run as a build step of libvshmem; a violation fails the
# build, naming the file, the line and the rule.
#   cmake -DROOT=<source tree> [-DSTAMP=<file to touch on success>] -P CheckLayers.cmake
if(NOT ROOT)
  message(FATAL_ERROR "CheckLayers.cmake: -DROOT=<source tree> is required")
endif()
set(_layers common memory ipc bootstrap heap transport api)
set(_above device launcher)
set(_allowed "")
set(_violations "")
list(LENGTH _layers _count)
math(EXPR _last "${_count} - 1")
foreach(_i RANGE ${_last})
  list(GET _layers ${_i} _layer)
  file(GLOB _files ${ROOT}/runtime/${_layer}/*.cpp ${ROOT}/runtime/${_layer}/*.hpp
       ${ROOT}/runtime/${_layer}/*.h ${ROOT}/runtime/${_layer}/*.c ${ROOT}/runtime/${_layer}/*.cu
       ${ROOT}/runtime/${_layer}/*.cuh)
  foreach(_file IN LISTS _files)
    file(STRINGS ${_file} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"(runtime|device|launcher)/")
    foreach(_line IN LISTS _includes)
      string(REGEX MATCH "\"(runtime/([a-z_]+)|device|launcher)/[^\"]*\"" _what "${_line}")
      set(_target "${CMAKE_MATCH_2}")
      if(NOT _target)
        set(_target "${CMAKE_MATCH_1}")
      endif()
      list(FIND _layers "${_target}" _j)
      list(FIND _above "${_target}" _k)
      list(FIND _allowed "${_layer}:${_what}" _ok)
      if((_j GREATER _i OR _k GREATER -1) AND _ok EQUAL -1)
        file(RELATIVE_PATH _rel ${ROOT} ${_file})
        string(APPEND _violations
               "\n  ${_rel} includes ${_what}: the ${_layer} layer may include only "
               "runtime/{${_layer} and the layers below it}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(_violations)
  message(FATAL_ERROR "layering violation (the order is ${_layers}; see CONVENTIONS.md):"
                      "${_violations}")
endif()
if(STAMP)
  file(TOUCH ${STAMP})
endif()
