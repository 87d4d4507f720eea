# `python3 -m pip install .` from the source tree's root (issue #20: offline, no index), into a
# scratch folder, reusing this build tree (VSHMEM_BUILD_DIR) so that CMake has nothing to redo;
# then the installed package runs the ring example under its bundled vshmemrun.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, PYTHON.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(site ${WORK_DIR}/site)
set(ENV{VSHMEM_BUILD_DIR} ${BUILD_DIR})
execute_process(COMMAND ${PYTHON} -m pip install --no-index --no-deps --no-cache-dir
                        --disable-pip-version-check --target ${site} ${SOURCE_DIR}
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pip install . failed (${rc}): ${out}\n${err}")
endif()
foreach(f vshmem/__init__.py vshmem/bin/vshmemrun)
  if(NOT EXISTS ${site}/${f})
    message(FATAL_ERROR "pip installed no ${f}")
  endif()
endforeach()
file(GLOB ext ${site}/vshmem/_vshmem*.so)
file(GLOB lib ${site}/vshmem/libvshmem.so*)
if(NOT ext OR NOT lib)
  message(FATAL_ERROR "pip installed no extension or no libvshmem: ${ext} ${lib}")
endif()
set(ENV{PYTHONPATH} ${site})
set(ENV{VSHMEM_BACKEND} host)
execute_process(COMMAND ${site}/vshmem/bin/vshmemrun -n 3 ${PYTHON}
                        ${SOURCE_DIR}/examples/python/ring_numpy.py
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "3 of 3 blocks came back intact: OK")
  message(FATAL_ERROR "the pip-installed package failed (${rc}): ${out}\n${err}")
endif()
execute_process(COMMAND ${PYTHON} -c "import vshmem\nprint(vshmem.__file__)"
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "${site}/" at)
if(NOT rc EQUAL 0 OR NOT at EQUAL 0)
  message(FATAL_ERROR "vshmem was not imported from ${site}: ${out} ${err}")
endif()
message("pip install .: OK")
