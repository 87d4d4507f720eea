# Global and static variables are symmetric (runtime/heap/data_segment.hpp, transport/static_path):
# one behaviour per run on one node (mapped heap peers; statics through UCX's shared memory), then
# all of them at once on 1 PE, on simulated nodes, and under mpirun. A PIE executable, so every
# PE's copy is at another address.
add_executable(mpe_statics statics.c)
target_link_libraries(mpe_statics PRIVATE vshmem)
target_include_directories(mpe_statics PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
set_target_properties(mpe_statics PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_compile_options(mpe_statics PRIVATE -fPIE)
target_link_options(mpe_statics PRIVATE -pie)
vshmem_add_mpe_test(NAME statics_all TARGET mpe_statics ARGS all NPES 1 LAUNCHERS vshmemrun
  TIMEOUT 60)
if(NOT VSHMEM_HAVE_UCX)
  return()
endif()
foreach(_b rma amo signal wait lock coll ptr)
  vshmem_add_mpe_test(NAME statics_${_b} TARGET mpe_statics ARGS ${_b} NPES 2 3 4
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN)
endforeach()
# Endpoints made in a fixed order (PE 1 reaches PE 2, then PE 0, then PE 0 reaches PE 1): every
# PE must ask UCX for the same error handling, or UCX 1.13 breaks the pairing of the endpoints
# (the 1-in-100 assertion of statics_ptr.4 in ucp_rma_cmpl_handler, every time in this order).
# Shared memory (no peer failure handling) and TCP (with it).
vshmem_add_mpe_test(NAME statics_order TARGET mpe_statics ARGS order NPES 3 4
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN)
vshmem_add_mpe_test(NAME statics_order_tcp TARGET mpe_statics ARGS order NPES 3
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV UCX_TLS=tcp UCX_NET_DEVICES=lo)
# Shared memory with peer failure handling (what the plugin asks for on UCX 1.16 and later).
vshmem_add_mpe_test(NAME statics_order_sm_errors TARGET mpe_statics ARGS order NPES 3
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV UCX_MM_ERROR_HANDLING=y)
# PEs on two simulated nodes: heap and statics both through UCX (sm and tcp).
vshmem_add_mpe_test(NAME statics_2nodes_sm TARGET mpe_statics ARGS all NPES 2 4
  LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 TIMEOUT 60
  ENV UCX_TLS=sm,self)
vshmem_add_mpe_test(NAME statics_2nodes_tcp TARGET mpe_statics ARGS all NPES 2
  LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo)
# Every transfer to another PE's statics performed by its progress thread (target ops).
vshmem_add_mpe_test(NAME statics_target_ops TARGET mpe_statics ARGS all NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV UCX_TLS=sm,self VSHMEM_UCX_RMA=target)
# mpirun (both bootstraps).
vshmem_add_mpe_test(NAME statics_mpirun TARGET mpe_statics ARGS all NPES 2 LAUNCHERS mpi pmix
  TIMEOUT 60)
# All at once on one node; also re-run on the GPU heap on GPU machines (gpu.statics_one_node.2):
# the statics stay host memory there.
vshmem_add_mpe_test(NAME statics_one_node TARGET mpe_statics ARGS all NPES 2 LAUNCHERS vshmemrun
  TIMEOUT 60)
# Without UCX another PE's statics cannot be reached: the first such call fails naming the PE, the
# call and what to install (a broken plugin first on the search path stands for UCX missing);
# the job itself starts, and its own statics work (statics_all on 1 PE above).
set(_bogus_statics ${CMAKE_CURRENT_BINARY_DIR}/bogus_plugins_statics)
file(WRITE ${_bogus_statics}/libvshmem_transport_ucx.so "not a shared library\n")
vshmem_add_mpe_test(NAME statics_without_ucx TARGET mpe_statics ARGS rma NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV VSHMEM_PLUGIN_PATH=${_bogus_statics}
  WILL_FAIL_REGEX "PE [01]: shmem_[a-z_]+: the global or static variable at 0x[0-9a-f]+ cannot be reached on PE [01]: .*UCX transport plugin, which is not available .*Install UCX")
# UCX that does not start (a transport list naming nothing that exists) never fails a one-node
# job: init succeeds, the heap and our own statics work, another PE's global is not accessible;
# and the first call on another PE's global says why.
vshmem_add_mpe_test(NAME statics_bad_tls TARGET mpe_statics ARGS no_ucx NPES 2 3
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV UCX_TLS=no_such_transport)
vshmem_add_mpe_test(NAME statics_bad_tls_call TARGET mpe_statics ARGS rma NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV UCX_TLS=no_such_transport
  WILL_FAIL_REGEX "PE [01]: shmem_[a-z_]+: the global or static variable at 0x[0-9a-f]+ cannot be reached on PE [01]: .*not available \\(UCX did not start")
# In a one-node job UCX serves only the statics: it gets host shared memory and loopback
# (UCX_TLS=posix,cma,self), not every transport it knows, unless the user set UCX_TLS.
if("vshmemrun" IN_LIST VSHMEM_TEST_LAUNCHERS)
  vshmem_launch_command(_cmd vshmemrun 2)
  add_test(NAME mpe.statics_one_node_tls.vshmemrun.2 COMMAND ${CMAKE_COMMAND}
    "-DREGEX=ucx: worker ready \\(UCX [0-9.]+; transports posix,cma,self \\(only global and static"
    "-DALSO=OK statics ptr on 2 PEs"
    -P ${PROJECT_SOURCE_DIR}/cmake/expect_output.cmake -- ${_cmd} $<TARGET_FILE:mpe_statics> ptr)
  add_test(NAME mpe.statics_user_tls.vshmemrun.2 COMMAND ${CMAKE_COMMAND}
    "-DREGEX=ucx: worker ready \\(UCX [0-9.]+; transports UCX_TLS=self,sm,tcp;"
    "-DALSO=OK statics ptr on 2 PEs"
    -P ${PROJECT_SOURCE_DIR}/cmake/expect_output.cmake -- ${_cmd} $<TARGET_FILE:mpe_statics> ptr)
  set_tests_properties(mpe.statics_one_node_tls.vshmemrun.2 PROPERTIES LABELS "mpe;vshmemrun"
    TIMEOUT 60 ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_DEBUG=info;UCX_TLS=")
  set_tests_properties(mpe.statics_user_tls.vshmemrun.2 PROPERTIES LABELS "mpe;vshmemrun"
    TIMEOUT 60 ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_DEBUG=info;UCX_TLS=self,sm,tcp")
endif()
