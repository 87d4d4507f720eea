// Kernels whose hot loops tests/tools/device_loops_ptx.py checks in the sm_90 PTX (issue #18 and
// issue #21 item 3; no GPU needed): built as the benchmarks are (VSHMEM_DEVICE_DEBUG=0).
//  - scope_*: the polling and flag loops of waits, signals and barriers carry one memory scope
//    (the operation chose .gpu or .sys once), not a branch between both at every instruction;
//  - copy_*: every loop of a group copy issues two or more 16-byte loads before its first store
//    (a one-load loop leaves one round trip of latency per word: 16 KiB by 512 threads took two
//    round trips instead of one), and takes its alignment from the untranslated symmetric address
//    (a put's destination, a get's source), not from the peer's copy, which waits for the delta.
#include <shmem.h>
#include <shmemx.h>

__global__ void scope_wait_kernel(long* flag, long value) {
  shmem_long_wait_until(flag, SHMEM_CMP_GE, value);
}
__global__ void scope_wait_any_kernel(int* flags, size_t n, int value, size_t* out) {
  *out = shmem_int_wait_until_any(flags, n, nullptr, SHMEM_CMP_EQ, value);
}
__global__ void scope_wait_some_kernel(int* flags, size_t n, size_t* idx, int value, size_t* out) {
  *out = shmem_int_wait_until_some(flags, n, idx, nullptr, SHMEM_CMP_EQ, value);
}
// A single test_any / test_some walks its n variables in a loop: one scope for the whole call.
__global__ void scope_test_any_kernel(int* flags, size_t n, int value, size_t* out) {
  *out = shmem_int_test_any(flags, n, nullptr, SHMEM_CMP_EQ, value);
}
__global__ void scope_test_some_kernel(int* flags, size_t n, size_t* idx, int value, size_t* out) {
  *out = shmem_int_test_some(flags, n, idx, nullptr, SHMEM_CMP_EQ, value);
}
__global__ void scope_broadcast_kernel(shmem_team_t team, long* dest, const long* source,
                                       size_t n) {
  shmem_long_broadcast(team, dest, source, n, 0);
}
__global__ void scope_barrier_thread_kernel(int iters) {
  for (int i = 0; i < iters; ++i) shmem_barrier_all();
}
__global__ void scope_barrier_block_kernel(int iters) {
  for (int i = 0; i < iters; ++i) shmemx_barrier_all_block();
}
__global__ void scope_team_sync_kernel(shmem_team_t team, int iters) {
  for (int i = 0; i < iters; ++i) shmemx_team_sync_block(team);
}
__global__ void copy_put_block_kernel(char* remote, const char* local, size_t bytes, int pe) {
  shmemx_putmem_block(remote, local, bytes, pe);
}
__global__ void copy_get_warp_kernel(char* local, const char* remote, size_t bytes, int pe) {
  shmemx_getmem_warp(local, remote, bytes, pe);
}
__global__ void copy_get_block_kernel(char* local, const char* remote, size_t bytes, int pe) {
  shmemx_getmem_block(local, remote, bytes, pe);
}
__global__ void copy_put_warp_kernel(char* remote, const char* local, size_t bytes, int pe) {
  shmemx_putmem_warp(remote, local, bytes, pe);
}
__global__ void copy_put_signal_block_kernel(char* remote, const char* local, size_t bytes,
                                             uint64_t* sig, int pe) {
  shmemx_putmem_signal_block(remote, local, bytes, sig, 1, SHMEM_SIGNAL_SET, pe);
}
