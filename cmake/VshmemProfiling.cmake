# The OpenSHMEM profiling interface: every shmem_X routine of libvshmem is also pshmem_X, so that
# a tool can define shmem_X itself (in the program or a library loaded before libvshmem) and
# forward to pshmem_X. The names come from the library's own objects when it is linked
# (cmake/pshmem_names.cmake): nothing is listed by hand. The library binds its own calls to its
# own routines (-Bsymbolic-functions), so a tool sees the program's calls only, not the calls the
# library makes internally (shmem_finalize's barrier, for instance).
set(_pshmem_dir ${PROJECT_BINARY_DIR}/pshmem)
file(MAKE_DIRECTORY ${_pshmem_dir}/include/vshmem)
vshmem_layer_objects(_vshmem_objects "|")
add_custom_command(TARGET vshmem PRE_LINK
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DOUT_DIR=${_pshmem_dir}
          "-DOBJECTS=${_vshmem_objects}"
          -P ${PROJECT_SOURCE_DIR}/cmake/pshmem_names.cmake
  VERBATIM)
# -Wl,@file and not -Xlinker @file: Clang's driver reads an argument that starts with @ as its own
# response file (the sanitizer trees build with Clang: tests/tools/sanitize.sh).
target_link_options(vshmem PRIVATE "-Wl,@${_pshmem_dir}/pshmem.rsp" "LINKER:-Bsymbolic-functions")
target_include_directories(vshmem PUBLIC $<BUILD_INTERFACE:${_pshmem_dir}/include>)
install(FILES ${_pshmem_dir}/include/vshmem/pshmem_names.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vshmem)
