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
