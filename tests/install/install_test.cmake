# Installs the build tree into a scratch prefix, builds the consumer against it with
# find_package(vshmem) and with pkg-config, and runs both under the installed vshmemrun and the
# compiler wrapper.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f bin/vshmemrun bin/vshmemcc include/shmem.h include/shmemx.h include/nvshmem/nvshmem.h
          include/nvshmem/nvshmemx.h include/nvshmem/nvshmem_names.h lib/cmake/vshmem/vshmemConfig.cmake
          lib/pkgconfig/vshmem.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${prefix} -DVSHMEM_WITH_CUDA=OFF)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
foreach(exe consumer_cmake consumer_pkgconfig)
  run(${prefix}/bin/vshmemrun -n 3 ${WORK_DIR}/consumer/${exe})
  if(NOT last_output MATCHES "consumer: OK")
    message(FATAL_ERROR "${exe} printed: ${last_output}")
  endif()
endforeach()
run(${prefix}/bin/vshmemcc -O1 -o ${WORK_DIR}/consumer_wrapper ${SOURCE_DIR}/tests/install/consumer/main.c)
run(${prefix}/bin/vshmemrun -n 2 ${WORK_DIR}/consumer_wrapper)
if(NOT last_output MATCHES "consumer: OK")
  message(FATAL_ERROR "vshmemcc build printed: ${last_output}")
endif()
message("install: find_package, pkg-config and vshmemcc consumers OK")
