# Device calls to PEs that the GPU cannot map (issue #14): kernels post them to the device proxy,
# which drains them into the remote path (UCX). The PEs run as two simulated nodes
# (vshmemrun --simulate-nodes 2): every PE has peers behind the proxy, and with 4 PEs every node
# also has a mapped peer, so teams mix mapped and remote PEs. Without a GPU they are skipped.
if(NOT TARGET vshmem_device OR NOT VSHMEM_HAVE_UCX)
  return()
endif()
set(_remote_env VSHMEM_BACKEND=cuda UCX_TLS=sm,self VSHMEM_PROXY_TIMEOUT=60)
vshmem_add_mpe_test(NAME device_proxy SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_proxy.cu
                    NPES 2 4 LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 LABELS gpu
                    TIMEOUT 240 ENV ${_remote_env})
vshmem_device_link(mpe_device_proxy)
# A PE with kernels queued behind kernels that wait for a remote PE still serves that PE.
vshmem_add_mpe_test(NAME device_remote_queued
                    SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_remote_queued.cu NPES 2 4
                    LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 LABELS gpu TIMEOUT 120
                    ENV ${_remote_env})
vshmem_device_link(mpe_device_remote_queued)
set(_remote_tests device_proxy device_remote_queued)
# The device suite and the examples with remote peers.
foreach(_t rma amo sync stream team)
  vshmem_add_mpe_test(NAME device_remote_${_t} TARGET mpe_device_${_t} NPES 2 4
                      LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 LABELS gpu TIMEOUT 300
                      ENV ${_remote_env})
  list(APPEND _remote_tests device_remote_${_t})
endforeach()
foreach(_ex ring_kernel jacobi)
  if(TARGET ${_ex})
    vshmem_add_mpe_test(NAME example_remote_${_ex} TARGET ${_ex} NPES 2 4 LAUNCHERS vshmemrun
                        LAUNCHER_ARGS --simulate-nodes 2 LABELS gpu TIMEOUT 300
                        ENV ${_remote_env})
    list(APPEND _remote_tests example_remote_${_ex})
  endif()
endforeach()
foreach(_t IN LISTS _remote_tests)
  foreach(_n 2 4)
    set_tests_properties(mpe.${_t}.vshmemrun.${_n} PROPERTIES FIXTURES_REQUIRED device_mps)
  endforeach()
endforeach()
