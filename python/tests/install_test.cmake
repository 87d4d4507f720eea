# `cmake --install` into a scratch prefix, then the installed package runs the ring example under
# the installed vshmemrun: the extension must find the installed libvshmem (not the build tree's).
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, PYTHON, SITE (the package folder, relative to prefix).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed: ${err}")
endif()
file(GLOB ext ${prefix}/${SITE}/vshmem/_vshmem*.so)
if(NOT ext)
  message(FATAL_ERROR "not installed: ${SITE}/vshmem/_vshmem*.so")
endif()
set(ENV{PYTHONPATH} ${prefix}/${SITE})
set(ENV{VSHMEM_BACKEND} host)
execute_process(COMMAND ${prefix}/bin/vshmemrun -n 3 ${PYTHON} ${SOURCE_DIR}/examples/python/ring_numpy.py
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "3 of 3 blocks came back intact: OK")
  message(FATAL_ERROR "installed package failed (${rc}): ${out}\n${err}")
endif()
# Not from the build tree's folder (ctest runs this in <build>/python, which holds one).
execute_process(COMMAND ${PYTHON} -c "import vshmem\nprint(vshmem.__file__)"
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "${prefix}/" at)
if(NOT rc EQUAL 0 OR NOT at EQUAL 0)
  message(FATAL_ERROR "vshmem was not imported from ${prefix}: ${out} ${err}")
endif()
message("python install: OK")
