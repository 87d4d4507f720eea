# Device API tests (issue #5): kernels calling the device API with 2, 4 and 8 PEs sharing the
# GPU, under MPS started by a fixture. Without a GPU every program exits 77 (SKIPPED).
if(NOT TARGET vshmem_device)
  return()
endif()

# The tests and the fixture inherit CUDA_MPS_PIPE_DIRECTORY from ctest's environment.
set(_mps_env)
add_test(NAME gpu.device_mps_start COMMAND ${CMAKE_CURRENT_LIST_DIR}/device_mps.sh start)
add_test(NAME gpu.device_mps_stop COMMAND ${CMAKE_CURRENT_LIST_DIR}/device_mps.sh stop)
set_tests_properties(gpu.device_mps_start PROPERTIES FIXTURES_SETUP device_mps LABELS gpu)
set_tests_properties(gpu.device_mps_stop PROPERTIES FIXTURES_CLEANUP device_mps LABELS gpu)

foreach(_t rma amo sync stream stream_wide block1024)
  vshmem_add_mpe_test(NAME device_${_t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_${_t}.cu
                      NPES 2 4 8 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 90
                      ENV VSHMEM_BACKEND=cuda ${_mps_env})
  vshmem_device_link(mpe_device_${_t})
  foreach(_n 2 4 8)
    set_tests_properties(mpe.device_${_t}.vshmemrun.${_n} PROPERTIES FIXTURES_REQUIRED device_mps)
  endforeach()
endforeach()

# 12 PEs: the flat barrier's waits poll 8 peers per pass, so the thread form needs two passes.
vshmem_add_mpe_test(NAME device_sync_12 TARGET mpe_device_sync NPES 12 LAUNCHERS vshmemrun
                    LABELS gpu TIMEOUT 90 ENV VSHMEM_BACKEND=cuda)
set_tests_properties(mpe.device_sync_12.vshmemrun.12 PROPERTIES FIXTURES_REQUIRED device_mps)

# The examples, checked against their single-PE references.
foreach(_ex ring_kernel jacobi)
  if(TARGET ${_ex})
    vshmem_add_mpe_test(NAME example_${_ex} TARGET ${_ex} NPES 1 2 4 8 LAUNCHERS vshmemrun
                        LABELS gpu TIMEOUT 90 ENV VSHMEM_BACKEND=cuda ${_mps_env})
    foreach(_n 1 2 4 8)
      set_tests_properties(mpe.example_${_ex}.vshmemrun.${_n} PROPERTIES
                           FIXTURES_REQUIRED device_mps)
    endforeach()
  endif()
endforeach()

# Bad input in device code traps with a message naming the call, the block and the thread.
vshmem_add_mpe_test(NAME device_errors_pe SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_errors.cu
                    NPES 1 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS pe
                    ENV VSHMEM_BACKEND=cuda CUDA_MPS_PIPE_DIRECTORY=/nonexistent-no-mps
                    WILL_FAIL_REGEX "shmem_int_p \\(block 0,0,0 thread 0,0,0\\): PE 1 is not a valid PE")
vshmem_device_link(mpe_device_errors_pe)
vshmem_add_mpe_test(NAME device_errors_addr TARGET mpe_device_errors_pe NPES 1
                    LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS addr
                    ENV VSHMEM_BACKEND=cuda VSHMEM_DEBUG_DEVICE=1
                        CUDA_MPS_PIPE_DIRECTORY=/nonexistent-no-mps
                    WILL_FAIL_REGEX "shmem_int_p \\(block 0,0,0 thread 0,0,0\\): address 0x[0-9a-f]+ \\(\\+4 bytes\\) is not inside the symmetric heap")
vshmem_add_mpe_test(NAME device_errors_test_addr TARGET mpe_device_errors_pe NPES 1
                    LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS test_addr
                    ENV VSHMEM_BACKEND=cuda VSHMEM_DEBUG_DEVICE=1
                        CUDA_MPS_PIPE_DIRECTORY=/nonexistent-no-mps
                    WILL_FAIL_REGEX "shmem_int_test_any \\(block 0,0,0 thread 0,0,0\\): address 0x[0-9a-f]+ \\(\\+4 bytes\\) is not inside the symmetric heap")
set_tests_properties(mpe.device_errors_pe.vshmemrun.1 mpe.device_errors_addr.vshmemrun.1
                     mpe.device_errors_test_addr.vshmemrun.1
                     PROPERTIES SKIP_REGULAR_EXPRESSION "no CUDA device: skipped")

# Issue 19 item 9: a trap on PE 1 while the others wait inside a kernel: PE 1 ends naming its GPU
# (vshmemrun then stops the job); under mpirun --enable-recovery the others end naming PE 1.
vshmem_add_mpe_test(NAME device_trap SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_trap.cu
                    NPES 2 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120
                    ENV VSHMEM_BACKEND=cuda CUDA_MPS_PIPE_DIRECTORY=/nonexistent-no-mps
                    WILL_FAIL_REGEX "PE 1: job watch: this PE's GPU can run no more work: GPU [0-9]+: CUDA_ERROR_(ILLEGAL_INSTRUCTION|LAUNCH_FAILED)")
vshmem_device_link(mpe_device_trap)
set_tests_properties(mpe.device_trap.vshmemrun.2 PROPERTIES
                     SKIP_REGULAR_EXPRESSION "no CUDA device: skipped")
if(VSHMEM_MPIRUN AND "pmix" IN_LIST VSHMEM_TEST_LAUNCHERS)
  # mpirun --enable-recovery exits 0 whatever its processes do: the output decides.
  add_test(NAME gpu.device_trap.recovery.2
           COMMAND ${VSHMEM_MPIRUN} --allow-run-as-root --oversubscribe --bind-to none
                   --mca btl self,vader --enable-recovery -np 2 -x VSHMEM_BOOTSTRAP=pmix
                   -x VSHMEM_BACKEND=cuda -x CUDA_MPS_PIPE_DIRECTORY=/nonexistent-no-mps
                   $<TARGET_FILE:mpe_device_trap>)
  set_tests_properties(gpu.device_trap.recovery.2 PROPERTIES LABELS "gpu;mpe;pmix" TIMEOUT 120
                       RESOURCE_LOCK gpu SKIP_REGULAR_EXPRESSION "no CUDA device: skipped"
                       PASS_REGULAR_EXPRESSION "PE 0: job watch: PE 1 \\(pid [0-9]+, on this node\\) exited without shmem_finalize"
                       FAIL_REGULAR_EXPRESSION "device_trap: PE [0-9]+: FAIL")
endif()

# The address translation of device calls on a hand-written 70-PE state (one process, no
# shmem_init): constant-memory and global peer tables, mapped and unmapped peers.
vshmem_add_mpe_test(NAME device_translate SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_translate.cu
                    NPES 1 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 60
                    ENV CUDA_MPS_PIPE_DIRECTORY=/nonexistent-no-mps)
vshmem_device_link(mpe_device_translate)
# A call to an unmapped peer, or to an invalid PE (-63 would alias PE 1 if the constant table's
# index were only masked), traps naming it.
foreach(_case "2;2's memory is not mapped here" "66;66's memory is not mapped here"
        "70;70 is not a valid PE" "-63;-63 is not a valid PE")
  list(GET _case 0 _pe)
  list(GET _case 1 _cause)
  vshmem_add_mpe_test(NAME device_translate_bad_pe_${_pe} TARGET mpe_device_translate NPES 1
                      LAUNCHERS vshmemrun LABELS gpu TIMEOUT 60 ARGS bad_pe ${_pe}
                      ENV CUDA_MPS_PIPE_DIRECTORY=/nonexistent-no-mps
                      WILL_FAIL_REGEX "PE 3: shmem_int_p \\(block 0,0,0 thread 0,0,0\\): PE ${_cause}")
  set_tests_properties(mpe.device_translate_bad_pe_${_pe}.vshmemrun.1 PROPERTIES
                       SKIP_REGULAR_EXPRESSION "no CUDA device: skipped")
endforeach()
set_tests_properties(mpe.device_translate.vshmemrun.1 PROPERTIES
                     SKIP_REGULAR_EXPRESSION "no CUDA device: skipped")

# shmem_finalize gives the GPU heap back (device memory and addresses) over init/finalize cycles;
# several-GiB host-API puts and gets on the GPU heap, aligned and at odd byte offsets.
vshmem_add_mpe_test(NAME gpu_heap_leak SOURCES ${CMAKE_CURRENT_LIST_DIR}/heap_leak.cu
                    NPES 2 4 8 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120
                    ENV VSHMEM_BACKEND=cuda SHMEM_SYMMETRIC_SIZE=2G ${_mps_env})
vshmem_device_link(mpe_gpu_heap_leak)
foreach(_n 2 4 8)
  set_tests_properties(mpe.gpu_heap_leak.vshmemrun.${_n} PROPERTIES FIXTURES_REQUIRED device_mps)
endforeach()
vshmem_add_mpe_test(NAME gpu_large_transfer SOURCES ${CMAKE_CURRENT_LIST_DIR}/large_transfer.cu
                    NPES 2 4 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 240
                    ENV VSHMEM_BACKEND=cuda SHMEM_SYMMETRIC_SIZE=7G ${_mps_env})
vshmem_device_link(mpe_gpu_large_transfer)
foreach(_n 2 4)
  set_tests_properties(mpe.gpu_large_transfer.vshmemrun.${_n} PROPERTIES
                       FIXTURES_REQUIRED device_mps)
endforeach()

# NVSHMEM programs on the GPU (nvshmem.h): kernels with NVSHMEM's names and constants, the default
# heap budget (2 x 512 MiB + 1 GiB), and an application's earlier CUDA error left alone.
vshmem_add_mpe_test(NAME nvshmem_device SOURCES ${CMAKE_CURRENT_LIST_DIR}/nvshmem_device.cu
                    NPES 2 4 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS device
                    LIBS vshmem_nvshmem ENV VSHMEM_BACKEND=cuda)
vshmem_device_link(mpe_nvshmem_device)
vshmem_add_mpe_test(NAME nvshmem_device_heap TARGET mpe_nvshmem_device NPES 2
                    LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS heap ENV VSHMEM_BACKEND=cuda)
vshmem_add_mpe_test(NAME nvshmem_device_app_error TARGET mpe_nvshmem_device NPES 1 2
                    LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS app_error
                    ENV VSHMEM_BACKEND=cuda)
foreach(_t nvshmem_device.vshmemrun.2 nvshmem_device.vshmemrun.4 nvshmem_device_heap.vshmemrun.2
        nvshmem_device_app_error.vshmemrun.1 nvshmem_device_app_error.vshmemrun.2)
  set_tests_properties(mpe.${_t} PROPERTIES FIXTURES_REQUIRED device_mps)
endforeach()
# half / bfloat16 RMA and reductions, reduce-scatter (device and on stream), bit-exact.
vshmem_add_mpe_test(NAME nvshmem_half SOURCES ${CMAKE_CURRENT_LIST_DIR}/nvshmem_half.cu
                    NPES 1 2 4 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120
                    LIBS vshmem_nvshmem ENV VSHMEM_BACKEND=cuda)
vshmem_device_link(mpe_nvshmem_half)
foreach(_n 1 2 4)
  set_tests_properties(mpe.nvshmem_half.vshmemrun.${_n} PROPERTIES FIXTURES_REQUIRED device_mps)
endforeach()
# A cubin loaded with the driver API sees the device state after nvshmemx_cumodule_init.
list(GET CMAKE_CUDA_ARCHITECTURES 0 _cubin_arch)
string(REGEX REPLACE "[^0-9]" "" _cubin_arch "${_cubin_arch}")
if(_cubin_arch)
  set(_cubin ${CMAKE_CURRENT_BINARY_DIR}/cubin_kernel.cubin)
  add_custom_command(
    OUTPUT ${_cubin}
    COMMAND ${CMAKE_CUDA_COMPILER} -arch=sm_${_cubin_arch} -std=c++17 -rdc=true -dc
            -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/include/nvshmem
            -o ${CMAKE_CURRENT_BINARY_DIR}/cubin_kernel.o ${CMAKE_CURRENT_LIST_DIR}/cubin_kernel.cu
    # -ignore-host-info: libvshmem_device's objects carry nvcc's table of the kernels their host
    # code launches; given one, nvlink drops every kernel no host code of the link launches,
    # which is every kernel of a cubin loaded at run time (cubin_ring vanished without it).
    COMMAND ${CMAKE_CUDA_COMPILER} -arch=sm_${_cubin_arch} -dlink -cubin -Xnvlink -ignore-host-info
            -o ${_cubin} ${CMAKE_CURRENT_BINARY_DIR}/cubin_kernel.o $<TARGET_FILE:vshmem_device>
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cubin_kernel.cu vshmem_device
    COMMENT "cubin_kernel.cubin (device-linked with libvshmem_device)")
  add_custom_target(cubin_kernel ALL DEPENDS ${_cubin})
  # No GPU needed: the cubin must hold the kernels that nvshmem_cubin asks the driver for.
  add_test(NAME unit.cubin_kernels_present
           COMMAND ${CMAKE_COMMAND} -DCUBIN=${_cubin} "-DKERNELS=cubin_ring;cubin_query"
                   -P ${PROJECT_SOURCE_DIR}/tests/tools/check_cubin_kernels.cmake)
  vshmem_add_mpe_test(NAME nvshmem_cubin SOURCES ${CMAKE_CURRENT_LIST_DIR}/nvshmem_cubin.cu
                      NPES 1 2 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS ${_cubin}
                      LIBS vshmem_nvshmem ENV VSHMEM_BACKEND=cuda)
  vshmem_device_link(mpe_nvshmem_cubin)
  add_dependencies(mpe_nvshmem_cubin cubin_kernel)
  foreach(_n 1 2)
    set_tests_properties(mpe.nvshmem_cubin.vshmemrun.${_n} PROPERTIES FIXTURES_REQUIRED device_mps)
  endforeach()
endif()

# The application's own cuMemCreate memory joins the heap (nvshmemx_buffer_register_symmetric),
# and a synchronous cudaMemcpy into the heap has landed when it returns (SYNC_MEMOPS).
vshmem_add_mpe_test(NAME nvshmem_register SOURCES ${CMAKE_CURRENT_LIST_DIR}/nvshmem_register.cu
                    NPES 1 2 4 LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS register
                    LIBS vshmem_nvshmem ENV VSHMEM_BACKEND=cuda)
vshmem_device_link(mpe_nvshmem_register)
vshmem_add_mpe_test(NAME nvshmem_sync_memops TARGET mpe_nvshmem_register NPES 2 4
                    LAUNCHERS vshmemrun LABELS gpu TIMEOUT 120 ARGS sync_memops
                    ENV VSHMEM_BACKEND=cuda)
foreach(_t nvshmem_register.vshmemrun.1 nvshmem_register.vshmemrun.2
        nvshmem_register.vshmemrun.4 nvshmem_sync_memops.vshmemrun.2
        nvshmem_sync_memops.vshmemrun.4)
  set_tests_properties(mpe.${_t} PROPERTIES FIXTURES_REQUIRED device_mps)
endforeach()
