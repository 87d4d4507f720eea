# The package's tests: pytest run by every PE of a job (the tests are collective and run in the
# same order everywhere). Host-heap tests with NumPy need numpy and pytest for the package's
# Python; GPU tests (label gpu) need torch with CUDA and are skipped (exit 77) without them.
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, pytest"
                RESULT_VARIABLE _vshmem_py_deps OUTPUT_QUIET ERROR_QUIET)
if(NOT _vshmem_py_deps EQUAL 0)
  message(STATUS "vshmem: Python tests off (${Python3_EXECUTABLE} lacks numpy or pytest)")
  return()
endif()
# The launchers cmake/VshmemTesting.cmake found (mpi only with mpirun and the MPI bootstrap).
get_property(VSHMEM_TEST_LAUNCHERS GLOBAL PROPERTY VSHMEM_TEST_LAUNCHERS)
set(VSHMEM_GPU_OR_SKIP ${PROJECT_SOURCE_DIR}/tests/tools/gpu_or_skip.sh)
set(_pytest ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider -x)
set(_tests ${CMAKE_CURRENT_SOURCE_DIR}/tests)
set(_env "PYTHONPATH=${VSHMEM_PYTHON_DIR};VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_BACKEND=host")

# python.<suite>.<launcher>.<npes>
function(vshmem_add_python_test suite file launcher npes)
  cmake_parse_arguments(A "" "" "ENV;LABELS;LAUNCHER_ARGS" ${ARGN})
  if(NOT launcher IN_LIST VSHMEM_TEST_LAUNCHERS)
    return()
  endif()
  vshmem_launch_command(cmd ${launcher} ${npes} ${A_LAUNCHER_ARGS})
  set(name python.${suite}.${launcher}.${npes})
  add_test(NAME ${name} COMMAND ${cmd} ${_pytest} ${_tests}/${file})
  set_tests_properties(${name} PROPERTIES LABELS "python;mpe;${launcher};${A_LABELS}"
                       TIMEOUT 120 SKIP_RETURN_CODE 77 ENVIRONMENT "${_env};${A_ENV}")
  if("gpu" IN_LIST A_LABELS)
    set_tests_properties(${name} PROPERTIES RESOURCE_LOCK gpu)
  endif()
endfunction()

foreach(n 1 2 4)
  vshmem_add_python_test(host test_host.py vshmemrun ${n})
endforeach()
vshmem_add_python_test(host test_host.py mpi 2)
vshmem_add_python_test(host_2nodes test_host.py vshmemrun 4 LAUNCHER_ARGS --simulate-nodes 2)
foreach(n 2 4)
  vshmem_add_python_test(errors test_errors.py vshmemrun ${n})
  vshmem_add_python_test(uniqueid test_uniqueid.py vshmemrun ${n})
endforeach()
# One process: the package imports, reports versions and refuses calls before init.
add_test(NAME python.import COMMAND ${_pytest} ${_tests}/test_import.py)
set_tests_properties(python.import PROPERTIES LABELS "python;unit" TIMEOUT 60
                     ENVIRONMENT "${_env}")

# GPU: tensors on the GPU heap, on-stream collectives against torch's own results.
foreach(n 2 4)
  set(name python.gpu.vshmemrun.${n})
  vshmem_launch_command(cmd vshmemrun ${n})
  add_test(NAME ${name} COMMAND ${VSHMEM_GPU_OR_SKIP} ${Python3_EXECUTABLE} ${_tests}/torch_or_skip.py
           ${cmd} ${_pytest} ${_tests}/test_gpu.py)
  set_tests_properties(${name} PROPERTIES LABELS "python;gpu;mpe" TIMEOUT 300
                       SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu
                       ENVIRONMENT "PYTHONPATH=${VSHMEM_PYTHON_DIR};VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_BACKEND=cuda")
endforeach()
# A torchrun start (the unique ID through torch.distributed's store).
add_test(NAME python.gpu.torchrun.2 COMMAND ${VSHMEM_GPU_OR_SKIP} ${Python3_EXECUTABLE}
         ${_tests}/run_torchrun.py 2 ${_tests}/test_gpu.py)
set_tests_properties(python.gpu.torchrun.2 PROPERTIES LABELS "python;gpu;mpe" TIMEOUT 300
                     SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu
                     ENVIRONMENT "PYTHONPATH=${VSHMEM_PYTHON_DIR};VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_BACKEND=cuda")

# The host-heap example.
vshmem_launch_command(_cmd vshmemrun 4)
add_test(NAME python.example_ring.vshmemrun.4 COMMAND ${_cmd} ${Python3_EXECUTABLE}
         ${PROJECT_SOURCE_DIR}/examples/python/ring_numpy.py)
set_tests_properties(python.example_ring.vshmemrun.4 PROPERTIES LABELS "python;mpe;vshmemrun"
                     TIMEOUT 60 ENVIRONMENT "${_env}" PASS_REGULAR_EXPRESSION "4 of 4 blocks came back intact: OK")

# The package as `cmake --install` lays it out.
add_test(NAME python.install COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
         -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PROJECT_BINARY_DIR}/python-install-test
         -DPYTHON=${Python3_EXECUTABLE} -DSITE=${VSHMEM_PYTHON_INSTALL_DIR}
         -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/install_test.cmake)
set_tests_properties(python.install PROPERTIES LABELS "python;install" TIMEOUT 300)

# `python3 -m pip install .` from the source tree (needs pip: python3-pip, with setuptools and wheel).
execute_process(COMMAND ${Python3_EXECUTABLE} -m pip --version RESULT_VARIABLE _vshmem_no_pip
                OUTPUT_QUIET ERROR_QUIET)
if(_vshmem_no_pip EQUAL 0)
  add_test(NAME python.pip_install COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
           -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PROJECT_BINARY_DIR}/python-pip-test
           -DPYTHON=${Python3_EXECUTABLE} -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/pip_install_test.cmake)
  set_tests_properties(python.pip_install PROPERTIES LABELS "python;install" TIMEOUT 300
                   COST 1000)
else()
  message(STATUS "vshmem: python.pip_install off (${Python3_EXECUTABLE} has no pip)")
endif()

# The GPU example: a bf16 all-reduce of torch tensors.
vshmem_launch_command(_cmd vshmemrun 2)
add_test(NAME python.gpu.example_allreduce.vshmemrun.2 COMMAND ${VSHMEM_GPU_OR_SKIP}
         ${Python3_EXECUTABLE} ${_tests}/torch_or_skip.py ${_cmd} ${Python3_EXECUTABLE}
         ${PROJECT_SOURCE_DIR}/examples/python/allreduce_torch.py)
set_tests_properties(python.gpu.example_allreduce.vshmemrun.2 PROPERTIES
                     LABELS "python;gpu;mpe" TIMEOUT 120 SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu
                     FAIL_REGULAR_EXPRESSION "FAILED"
                     ENVIRONMENT "PYTHONPATH=${VSHMEM_PYTHON_DIR};VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_BACKEND=cuda")
