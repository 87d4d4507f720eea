// Compiled (not run) by tests/tools/multimem_ptx.cmake: for sm_90 the team barrier, broadcast and
// reductions must contain the multicast path (multimem.ld_reduce / multimem.st / multimem.red,
// fenced with fence.proxy.alias) and ptxas must accept it; for sm_80 none of it may appear (the
// hardware has no multimem: the unicast algorithms only).
#include <shmem.h>
#include <shmemx.h>

__global__ void barrier_kernel() { shmemx_barrier_all_block(); }
__global__ void team_sync_kernel(shmem_team_t team) { shmemx_team_sync_warp(team); }
// A team barrier alone: the world's multicast barrier for SHMEM_TEAM_WORLD, else the team's on its
// slot's counter through the team's region (impl/sync.cuh, mc_team_barrier); the check looks at
// this kernel's own PTX.
__global__ void team_barrier_only_kernel(shmem_team_t team) { shmemx_barrier_block(team); }
__global__ void broadcast_kernel(shmem_team_t team, float* dest, const float* source, size_t n) {
  shmemx_float_broadcast_block(team, dest, source, n, 0);
}
__global__ void sum_kernel(shmem_team_t team, float* dest, const float* source, size_t n) {
  shmemx_float_sum_reduce_block(team, dest, source, n);
}
__global__ void max_kernel(shmem_team_t team, long* dest, const long* source, size_t n) {
  shmem_long_max_reduce(team, dest, source, n);
}
__global__ void xor_kernel(shmem_team_t team, unsigned* dest, const unsigned* source, size_t n) {
  shmemx_uint_xor_reduce_warp(team, dest, source, n);
}
// The device reduce-scatter (min.s32 appears nowhere else; and.b64 neither).
__global__ void reduce_scatter_kernel(shmem_team_t team, int* dest, const int* source, size_t n) {
  shmemx_int_min_reducescatter_block(team, dest, source, n);
}
__global__ void reduce_scatter_and_kernel(shmem_team_t team, unsigned long* dest,
                                          const unsigned long* source, size_t n) {
  shmemx_ulong_and_reducescatter_warp(team, dest, source, n);
}
__global__ void mc_ptr_kernel(shmem_team_t team, const void* p, void** out) {
  *out = shmemx_mc_ptr(team, p);
}
