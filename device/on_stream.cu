// On-stream host calls: each enqueues a small kernel on the application's stream, so the
// operation is ordered with the stream's other work and can be captured into a CUDA graph. The
// kernels use the same device functions as application kernels (barriers share their counter
// sequence with in-kernel barriers).
#include <cuda_runtime.h>

#include "device/device_runtime.hpp"
#include "shmem.h"
#include "shmemx.h"

namespace vshmem::device {
namespace {

constexpr int kCopyThreads = 512;
constexpr int kMaxCopyBlocks = 32;
constexpr int kCollThreads = 1024;

__global__ void copy_kernel(void* dest, const void* source, size_t bytes) {
  copy_bytes(dest, source, bytes, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

__global__ void signal_kernel(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  // Stream order puts the preceding copy kernel's stores before this kernel; the fence in
  // signal_op orders them before the signal at system scope.
  signal_op("shmemx_putmem_signal_on_stream", sig_addr, signal, sig_op, pe);
}

__global__ void wait_kernel(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  wait_value("shmemx_signal_wait_until_on_stream", sig_addr, cmp, cmp_value);
}

template <class T>
__global__ void typed_wait_kernel(T* ivar, int cmp, T cmp_value) {
  wait_value("shmemx_wait_until_on_stream", ivar, cmp, cmp_value);
}

template <class T>
__global__ void p_kernel(T* translated_dest, T value) {
  *translated_dest = value;
}

__global__ void quiet_kernel() {
  fence_sys();
  if (vshmemi_device_state.proxy.slots != nullptr) vshmemi_proxy_order(1);
}

// To a PE behind the device proxy (impl/proxy.cuh): one request from one thread, in stream order.
__global__ void proxy_put_kernel(void* dest, const void* source, size_t bytes, int pe) {
  vshmemi_proxy_rma("shmemx_putmem_on_stream", 0, dest, source, bytes, pe);
}
__global__ void proxy_get_kernel(void* dest, const void* source, size_t bytes, int pe) {
  vshmemi_proxy_rma("shmemx_getmem_on_stream", 1, dest, source, bytes, pe);
}
template <class T>
__global__ void proxy_p_kernel(T* dest, T value, int pe) {
  p_value("shmemx_p_on_stream", dest, value, pe);
}

__global__ void sync_kernel(bool quiet) {
  sync_group<ThreadGroup>(quiet ? "shmemx_barrier_all_on_stream" : "shmemx_sync_all_on_stream",
                          quiet);
}

__global__ void team_sync_kernel(shmem_team_t team, bool quiet) {
  team_sync_group<ThreadGroup>(quiet ? "shmemx_barrier_on_stream" : "shmemx_team_sync_on_stream",
                               team, quiet);
}

__global__ void __launch_bounds__(kCollThreads)
    broadcast_kernel(shmem_team_t team, void* dest, const void* source, size_t bytes, int root) {
  broadcast_group<BlockGroup>("shmemx_broadcastmem_on_stream", team, dest, source, bytes, root);
}

__global__ void __launch_bounds__(kCollThreads)
    exchange_kernel(shmem_team_t team, void* dest, const void* source, size_t bytes,
                    bool all_same) {
  exchange_group<BlockGroup>(
      all_same ? "shmemx_fcollectmem_on_stream" : "shmemx_alltoallmem_on_stream", team, dest,
      source, bytes, all_same);
}

template <class Op, class T>
__global__ void __launch_bounds__(kCollThreads)
    reduce_kernel(shmem_team_t team, T* dest, const T* source, size_t nreduce) {
  reduce_group<BlockGroup, Op>("shmemx_reduce_on_stream", team, dest, source, nreduce);
}

template <class Op, class T>
__global__ void __launch_bounds__(kCollThreads)
    reducescatter_kernel(shmem_team_t team, T* dest, const T* source, size_t nreduce) {
  reducescatter_group<BlockGroup, Op>("shmemx_reducescatter_on_stream", team, dest, source,
                                      nreduce);
}

// Large on-stream collectives ("wide"): one block per PE caps a collective at what one SM moves
// (a 16 MiB bf16 all-reduce ran at 2.4 GB/s on the H200, bench/RESULTS.md run 12). From
// kWideBytes on, the work is spread over a grid, and the team barriers that frame it become
// kernels of their own on the stream (stream order stands in for the grid-wide sync):
//   reduce:        barrier; each member combines its 1/n share of the elements from every
//                  member's source into its own dest (a reduce-scatter); barrier; each member
//                  copies the other shares from their owners' dest (an all-gather); barrier.
//                  Every element is combined once, in team order, so every PE has the same bits;
//                  each member writes only its share of dest while the others read only theirs
//                  of the sources, so dest == source (in place) needs no scratch.
//   reduce-scatter: barrier; combine this member's block from every member; barrier.
//   broadcast:     barrier; copy root's source; barrier.
//   fcollect/alltoall: barrier; store this member's blocks into every member's dest; barrier.
//
// The kernels of a chain run one after the other in plain stream order. (Launching the later ones
// with programmatic dependent launch, so that they wait on the device instead, hung with 4 and 8
// PEs sharing the H200: blocks launched early and waiting hold SMs that another PE's barrier
// kernel needs. The wide kernels never wait on other PEs, which is what keeps them safe.)
constexpr size_t kWideBytes = 128 << 10;
constexpr unsigned kWideThreads = 512;
constexpr unsigned kMaxWideBlocks = 132;

unsigned wide_blocks(size_t bytes) {
  size_t blocks = bytes / (static_cast<size_t>(kWideThreads) * 64);
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxWideBlocks) blocks = kMaxWideBlocks;
  return static_cast<unsigned>(blocks);
}

__device__ __forceinline__ size_t grid_rank() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ size_t grid_size() { return gridDim.x * blockDim.x; }

// Member q's share [*lo, *hi) of n elements of `elem` bytes: equal shares rounded up to whole
// 16 bytes, so that every share starts where the source's vectors do.
__host__ __device__ __forceinline__ void wide_share(size_t n, size_t elem, int members, int q,
                                                    size_t* lo, size_t* hi) {
  const size_t align = elem < 16 && 16 % elem == 0 ? 16 / elem : 1;
  size_t share = (n + static_cast<size_t>(members) - 1) / static_cast<size_t>(members);
  share = (share + align - 1) / align * align;
  const size_t begin = share * static_cast<size_t>(q);
  *lo = begin < n ? begin : n;
  *hi = begin + share < n ? begin + share : n;
}

template <class Op, class T>
__global__ void __launch_bounds__(kWideThreads)
    wide_reduce_kernel(shmem_team_t team, T* dest, const T* source, size_t nreduce) {
  const char* call = "shmemx_reduce_on_stream";
  const TeamView v = team_view(call, team);
  size_t lo, hi;
  wide_share(nreduce, sizeof(T), v.size, v.my_index, &lo, &hi);
  combine_range<Op>(call, v, dest + lo, source + lo, hi - lo, grid_rank(), grid_size());
}

// Every other member's share of dest, copied from that member's dest.
__global__ void __launch_bounds__(kWideThreads)
    wide_gather_kernel(shmem_team_t team, char* dest, size_t nreduce, size_t elem) {
  const char* call = "shmemx_reduce_on_stream";
  const TeamView v = team_view(call, team);
  for (int q = 1; q < v.size; ++q) {
    const int j = (v.my_index + q) % v.size;
    size_t lo, hi;
    wide_share(nreduce, elem, v.size, j, &lo, &hi);
    if (hi == lo) continue;
    char* to = dest + lo * elem;
    const int64_t d = peer_delta(v.world_pe(j));
    check_symmetric(call, to, (hi - lo) * elem);
    if (unmapped(d)) {  // cold: a member behind the device proxy
      if (grid_rank() == 0) vshmemi_proxy_rma(call, 1, to, to, (hi - lo) * elem, v.world_pe(j));
      continue;
    }
    copy_bytes(to, at_delta(to, d), (hi - lo) * elem, static_cast<unsigned>(grid_rank()),
               static_cast<unsigned>(grid_size()));
  }
}

template <class Op, class T>
__global__ void __launch_bounds__(kWideThreads)
    wide_reducescatter_kernel(shmem_team_t team, T* dest, const T* source, size_t nreduce) {
  const char* call = "shmemx_reducescatter_on_stream";
  const TeamView v = team_view(call, team);
  combine_range<Op>(call, v, dest, source + static_cast<size_t>(v.my_index) * nreduce, nreduce,
                    grid_rank(), grid_size());
}

__global__ void __launch_bounds__(kWideThreads)
    wide_broadcast_kernel(shmem_team_t team, void* dest, const void* source, size_t bytes,
                          int root) {
  const char* call = "shmemx_broadcastmem_on_stream";
  const TeamView v = team_view(call, team);
  const int64_t d = peer_delta(v.world_pe(root));
  check_symmetric(call, source, bytes);
  if (unmapped(d)) {  // cold: a root behind the device proxy
    if (grid_rank() == 0) vshmemi_proxy_rma(call, 1, dest, source, bytes, v.world_pe(root));
    return;
  }
  const char* from = at_delta(static_cast<const char*>(source), d);
  if (from != dest) {
    copy_bytes(dest, from, bytes, static_cast<unsigned>(grid_rank()),
               static_cast<unsigned>(grid_size()));
  }
}

__global__ void __launch_bounds__(kWideThreads)
    wide_exchange_kernel(shmem_team_t team, void* dest, const void* source, size_t block_bytes,
                         bool all_same) {
  const char* call = all_same ? "shmemx_fcollectmem_on_stream" : "shmemx_alltoallmem_on_stream";
  const TeamView v = team_view(call, team);
  for (int q = 1; q <= v.size; ++q) {
    const int j = (v.my_index + q) % v.size;
    char* mine = static_cast<char*>(dest) + static_cast<size_t>(v.my_index) * block_bytes;
    const char* from =
        static_cast<const char*>(source) + (all_same ? 0 : static_cast<size_t>(j) * block_bytes);
    const int64_t d = peer_delta(v.world_pe(j));
    check_symmetric(call, mine, block_bytes);
    if (unmapped(d)) {  // cold: a member behind the device proxy
      if (grid_rank() == 0) vshmemi_proxy_rma(call, 0, mine, from, block_bytes, v.world_pe(j));
      continue;
    }
    copy_bytes(at_delta(mine, d), from, block_bytes, static_cast<unsigned>(grid_rank()),
               static_cast<unsigned>(grid_size()));
  }
}

// Launches kernel<<<grid, block, 0, stream>>>(args...) and judges the launch by its own result:
// cudaGetLastError would also return (and clear) an earlier error of the application's, which is
// not ours to report or to swallow.
template <class... Params, class... Args>
int launch(const char* call, void (*kernel)(Params...), unsigned grid, unsigned block,
           cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = stream;
  cudaError_t e;
  if constexpr (sizeof...(Params) == 0) {
    e = cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel), nullptr);
  } else {
    e = cudaLaunchKernelEx(&config, kernel, args...);
  }
  if (e != cudaSuccess) {
    report(call, "kernel launch failed: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

int enqueue_copy(const char* call, void* to, const void* from, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return 0;
  size_t blocks = (bytes / 16 + kCopyThreads - 1) / kCopyThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxCopyBlocks) blocks = kMaxCopyBlocks;
  return launch(call, copy_kernel, static_cast<unsigned>(blocks), kCopyThreads, stream, to, from,
                bytes);
}

// A barrier of the team on the stream (completes and publishes the stores before it).
int team_barrier(const char* call, shmem_team_t team, cudaStream_t stream) {
  return launch(call, team_sync_kernel, 1, 1, stream, team, true);
}

// Whether a collective of `bytes` a member goes wide: large enough, and the team has no
// multicast region (the world's or its own: then the one-block form stores to every member at
// once and is kept as it is). `dest` is a heap address of the call, checked before.
bool go_wide(shmem_team_t team, const void* dest, size_t bytes) {
  return bytes >= kWideBytes && host_mirror().state.mc_base == 0 &&
         shmemx_mc_ptr(team, dest) == nullptr;
}

// A team the device library knows (the world, or a team of this PE in the table it holds).
bool valid_team(const char* call, shmem_team_t team) {
  const GpuState& s = host_mirror().state;
  if (team == nullptr) {
    report(call, "the team is SHMEM_TEAM_INVALID");
    return false;
  }
  if (team == s.world_handle || s.world_handle == nullptr) return true;
  // The state's team table is in device memory: membership is the runtime's to say.
  if (team_slot(s, team) < 0 || shmem_team_n_pes(team) < 1) {
    report(call, "%p is not a team this PE belongs to", static_cast<void*>(team));
    return false;
  }
  return true;
}

// The dest of fcollect/alltoall: one block of `nelems` bytes per team member, in our heap.
bool exchange_dest_ok(const char* call, shmem_team_t team, void* dest, size_t nelems) {
  const size_t bytes = nelems * static_cast<size_t>(shmem_team_n_pes(team));
  return nelems == 0 || host_peer_ptr(call, dest, bytes, host_mirror().state.my_pe) != nullptr;
}

bool valid_cmp(const char* call, int cmp) {
  if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE) {
    report(call, "invalid comparison operator %d", cmp);
    return false;
  }
  return true;
}

bool valid_sig_op(const char* call, int sig_op) {
  if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD) {
    report(call, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
    return false;
  }
  return true;
}

template <class Op, class T>
int reduce_on_stream(const char* call, shmem_team_t team, T* dest, const T* source, size_t nreduce,
                     cudaStream_t stream) {
  if (!require_state(call) || !valid_team(call, team)) return 1;
  if (nreduce > 0 &&
      (host_peer_ptr(call, dest, nreduce * sizeof(T), host_mirror().state.my_pe) == nullptr ||
       host_peer_ptr(call, source, nreduce * sizeof(T), host_mirror().state.my_pe) == nullptr)) {
    return 1;
  }
  const uintptr_t d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(source);
  const size_t bytes = nreduce * sizeof(T);
  const bool partial_overlap = d != s && d < s + bytes && s < d + bytes;
  if (go_wide(team, dest, bytes) && !partial_overlap) {
    const unsigned blocks = wide_blocks(bytes / static_cast<size_t>(shmem_team_n_pes(team)));
    return team_barrier(call, team, stream) ||
           launch(call, wide_reduce_kernel<Op, T>, blocks, kWideThreads, stream, team, dest, source,
                  nreduce) ||
           team_barrier(call, team, stream) ||
           launch(call, wide_gather_kernel, wide_blocks(bytes), kWideThreads, stream, team,
                  reinterpret_cast<char*>(dest), nreduce, sizeof(T)) ||
           team_barrier(call, team, stream);
  }
  return launch(call, reduce_kernel<Op, T>, 1, kCollThreads, stream, team, dest, source, nreduce);
}

template <class Op, class T>
int reducescatter_on_stream(const char* call, shmem_team_t team, T* dest, const T* source,
                            size_t nreduce, cudaStream_t stream) {
  if (!require_state(call) || !valid_team(call, team)) return 1;
  const int me = host_mirror().state.my_pe;
  const size_t bytes = nreduce * sizeof(T);
  const size_t n = static_cast<size_t>(shmem_team_n_pes(team));
  if (nreduce > 0 && (host_peer_ptr(call, dest, bytes, me) == nullptr ||
                      host_peer_ptr(call, source, bytes * n, me) == nullptr)) {
    return 1;
  }
  const uintptr_t d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(source);
  if (nreduce > 0 && d < s + bytes * n && s < d + bytes) {
    report(call, "dest and source overlap");
    return 1;
  }
  if (go_wide(team, dest, bytes)) {
    return team_barrier(call, team, stream) ||
           launch(call, wide_reducescatter_kernel<Op, T>, wide_blocks(bytes), kWideThreads, stream,
                  team, dest, source, nreduce) ||
           team_barrier(call, team, stream);
  }
  return launch(call, reducescatter_kernel<Op, T>, 1, kCollThreads, stream, team, dest, source,
                nreduce);
}

int exchange_on_stream(const char* call, shmem_team_t team, void* dest, const void* source,
                       size_t nelems, bool all_same, cudaStream_t stream) {
  const size_t total = nelems * static_cast<size_t>(shmem_team_n_pes(team));
  if (go_wide(team, dest, total)) {
    return team_barrier(call, team, stream) ||
           launch(call, wide_exchange_kernel, wide_blocks(total), kWideThreads, stream, team, dest,
                  source, nelems, all_same) ||
           team_barrier(call, team, stream);
  }
  return launch(call, exchange_kernel, 1, kCollThreads, stream, team, dest, source, nelems,
                all_same);
}

// Put and get of bytes on a stream (the blocking and _nbi forms are the same: stream order
// completes them): through the device proxy for a PE behind it, else a copy kernel.
int putmem_on_stream(const char* call, void* dest, const void* source, size_t nelems, int pe,
                     cudaStream_t stream) {
  if (host_proxy_peer(call, dest, nelems, pe)) {
    return nelems == 0 ? 0 : launch(call, proxy_put_kernel, 1, 1, stream, dest, source, nelems, pe);
  }
  void* to = host_peer_ptr(call, dest, nelems, pe);
  if (to == nullptr) return 1;
  return enqueue_copy(call, to, source, nelems, stream);
}

int getmem_on_stream(const char* call, void* dest, const void* source, size_t nelems, int pe,
                     cudaStream_t stream) {
  if (host_proxy_peer(call, source, nelems, pe)) {
    return nelems == 0 ? 0 : launch(call, proxy_get_kernel, 1, 1, stream, dest, source, nelems, pe);
  }
  void* from = host_peer_ptr(call, source, nelems, pe);
  if (from == nullptr) return 1;
  return enqueue_copy(call, dest, from, nelems, stream);
}

}  // namespace
}  // namespace vshmem::device

using namespace vshmem::device;

extern "C" {

int shmemx_putmem_on_stream(void* dest, const void* source, size_t nelems, int pe,
                            cudaStream_t stream) {
  return putmem_on_stream("shmemx_putmem_on_stream", dest, source, nelems, pe, stream);
}

int shmemx_getmem_on_stream(void* dest, const void* source, size_t nelems, int pe,
                            cudaStream_t stream) {
  return getmem_on_stream("shmemx_getmem_on_stream", dest, source, nelems, pe, stream);
}

int shmemx_putmem_signal_on_stream(void* dest, const void* source, size_t nelems,
                                   uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                   cudaStream_t stream) {
  const char* call = "shmemx_putmem_signal_on_stream";
  if (host_proxy_peer(call, dest, nelems, pe) &&
      host_proxy_peer(call, sig_addr, sizeof(uint64_t), pe) && valid_sig_op(call, sig_op)) {
    if (nelems > 0 && launch(call, proxy_put_kernel, 1, 1, stream, dest, source, nelems, pe) != 0) {
      return 1;
    }
    return launch(call, signal_kernel, 1, 1, stream, sig_addr, signal, sig_op, pe);
  }
  void* to = host_peer_ptr(call, dest, nelems, pe);
  if (to == nullptr || host_peer_ptr(call, sig_addr, sizeof(uint64_t), pe) == nullptr ||
      !valid_sig_op(call, sig_op)) {
    return 1;
  }
  if (enqueue_copy(call, to, source, nelems, stream) != 0) return 1;
  return launch(call, signal_kernel, 1, 1, stream, sig_addr, signal, sig_op, pe);
}

int shmemx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                               cudaStream_t stream) {
  const char* call = "shmemx_signal_op_on_stream";
  if (host_proxy_peer(call, sig_addr, sizeof(uint64_t), pe)) {
    if (!valid_sig_op(call, sig_op)) return 1;
    return launch(call, signal_kernel, 1, 1, stream, sig_addr, signal, sig_op, pe);
  }
  if (host_peer_ptr(call, sig_addr, sizeof(uint64_t), pe) == nullptr ||
      !valid_sig_op(call, sig_op)) {
    return 1;
  }
  return launch(call, signal_kernel, 1, 1, stream, sig_addr, signal, sig_op, pe);
}

int shmemx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value,
                                       cudaStream_t stream) {
  const char* call = "shmemx_signal_wait_until_on_stream";
  if (!require_state(call) ||
      host_peer_ptr(call, sig_addr, sizeof(uint64_t), host_mirror().state.my_pe) == nullptr ||
      !valid_cmp(call, cmp)) {
    return 1;
  }
  return launch(call, wait_kernel, 1, 1, stream, sig_addr, cmp, cmp_value);
}

int shmemx_quiet_on_stream(cudaStream_t stream) {
  const char* call = "shmemx_quiet_on_stream";
  if (!require_state(call)) return 1;
  return launch(call, quiet_kernel, 1, 1, stream);
}

int shmemx_barrier_all_on_stream(cudaStream_t stream) {
  const char* call = "shmemx_barrier_all_on_stream";
  if (!require_state(call)) return 1;
  return launch(call, sync_kernel, 1, 1, stream, true);
}

int shmemx_sync_all_on_stream(cudaStream_t stream) {
  const char* call = "shmemx_sync_all_on_stream";
  if (!require_state(call)) return 1;
  return launch(call, sync_kernel, 1, 1, stream, false);
}

int shmemx_team_sync_on_stream(shmem_team_t team, cudaStream_t stream) {
  const char* call = "shmemx_team_sync_on_stream";
  if (!require_state(call) || !valid_team(call, team)) return 1;
  return launch(call, team_sync_kernel, 1, 1, stream, team, false);
}

int shmemx_barrier_on_stream(shmem_team_t team, cudaStream_t stream) {
  const char* call = "shmemx_barrier_on_stream";
  if (!require_state(call) || !valid_team(call, team)) return 1;
  return launch(call, team_sync_kernel, 1, 1, stream, team, true);
}

int shmemx_putmem_nbi_on_stream(void* dest, const void* source, size_t nelems, int pe,
                                cudaStream_t stream) {
  return putmem_on_stream("shmemx_putmem_nbi_on_stream", dest, source, nelems, pe, stream);
}

int shmemx_getmem_nbi_on_stream(void* dest, const void* source, size_t nelems, int pe,
                                cudaStream_t stream) {
  return getmem_on_stream("shmemx_getmem_nbi_on_stream", dest, source, nelems, pe, stream);
}

int shmemx_putmem_signal_nbi_on_stream(void* dest, const void* source, size_t nelems,
                                       uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                       cudaStream_t stream) {
  return shmemx_putmem_signal_on_stream(dest, source, nelems, sig_addr, signal, sig_op, pe, stream);
}

#define VSHMEMI_RMA_ON_STREAM(NAME, TYPE)                                                          \
  int shmemx_##NAME##_put_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe,         \
                                    cudaStream_t stream) {                                         \
    return putmem_on_stream("shmemx_" #NAME "_put_on_stream", dest, source, nelems * sizeof(TYPE), \
                            pe, stream);                                                           \
  }                                                                                                \
  int shmemx_##NAME##_get_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe,         \
                                    cudaStream_t stream) {                                         \
    return getmem_on_stream("shmemx_" #NAME "_get_on_stream", dest, source, nelems * sizeof(TYPE), \
                            pe, stream);                                                           \
  }                                                                                                \
  int shmemx_##NAME##_put_nbi_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe,     \
                                        cudaStream_t stream) {                                     \
    return shmemx_##NAME##_put_on_stream(dest, source, nelems, pe, stream);                        \
  }                                                                                                \
  int shmemx_##NAME##_get_nbi_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe,     \
                                        cudaStream_t stream) {                                     \
    return shmemx_##NAME##_get_on_stream(dest, source, nelems, pe, stream);                        \
  }                                                                                                \
  int shmemx_##NAME##_p_on_stream(TYPE* dest, TYPE value, int pe, cudaStream_t stream) {           \
    const char* call = "shmemx_" #NAME "_p_on_stream";                                             \
    if (host_proxy_peer(call, dest, sizeof(TYPE), pe)) {                                           \
      return launch(call, proxy_p_kernel<TYPE>, 1, 1, stream, dest, value, pe);                    \
    }                                                                                              \
    TYPE* to = static_cast<TYPE*>(host_peer_ptr(call, dest, sizeof(TYPE), pe));                    \
    return to == nullptr ? 1 : launch(call, p_kernel<TYPE>, 1, 1, stream, to, value);              \
  }
VSHMEM_RMA_DEVICE_TYPES(VSHMEMI_RMA_ON_STREAM)

#define VSHMEMI_WAIT_ON_STREAM(NAME, TYPE)                                               \
  int shmemx_##NAME##_wait_until_on_stream(TYPE* ivar, int cmp, TYPE cmp_value,          \
                                           cudaStream_t stream) {                        \
    const char* call = "shmemx_" #NAME "_wait_until_on_stream";                          \
    if (!require_state(call) ||                                                          \
        host_peer_ptr(call, ivar, sizeof(TYPE), host_mirror().state.my_pe) == nullptr || \
        !valid_cmp(call, cmp)) {                                                         \
      return 1;                                                                          \
    }                                                                                    \
    return launch(call, typed_wait_kernel<TYPE>, 1, 1, stream, ivar, cmp, cmp_value);    \
  }
VSHMEM_P2P_TYPES(VSHMEMI_WAIT_ON_STREAM)

int shmemx_broadcastmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                  int PE_root, cudaStream_t stream) {
  const char* call = "shmemx_broadcastmem_on_stream";
  if (!require_state(call) || !valid_team(call, team)) return 1;
  // PE_root is a team number; checked here, where a bad one is an error return on every PE
  // rather than a trap in one PE's kernel while the others wait for it.
  const int root = shmem_team_translate_pe(team, PE_root, SHMEM_TEAM_WORLD);
  if (root < 0) {
    report(call, "PE_root %d is not a PE of the team (%d PEs)", PE_root, shmem_team_n_pes(team));
    return 1;
  }
  // The root's memory: mapped, or behind the device proxy (the kernel pulls through it).
  auto reachable = [&](const void* p) {
    return host_proxy_peer(call, p, nelems, root) ||
           host_peer_ptr(call, p, nelems, root) != nullptr;
  };
  if (nelems > 0 && (!reachable(dest) || !reachable(source))) return 1;
  if (go_wide(team, dest, nelems)) {
    return team_barrier(call, team, stream) ||
           launch(call, wide_broadcast_kernel, wide_blocks(nelems), kWideThreads, stream, team,
                  dest, source, nelems, PE_root) ||
           team_barrier(call, team, stream);
  }
  return launch(call, broadcast_kernel, 1, kCollThreads, stream, team, dest, source, nelems,
                PE_root);
}

int shmemx_fcollectmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                 cudaStream_t stream) {
  const char* call = "shmemx_fcollectmem_on_stream";
  if (!require_state(call) || !valid_team(call, team)) return 1;
  if (!exchange_dest_ok(call, team, dest, nelems)) return 1;
  return exchange_on_stream(call, team, dest, source, nelems, true, stream);
}

int shmemx_alltoallmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                 cudaStream_t stream) {
  const char* call = "shmemx_alltoallmem_on_stream";
  if (!require_state(call) || !valid_team(call, team)) return 1;
  if (!exchange_dest_ok(call, team, dest, nelems)) return 1;
  return exchange_on_stream(call, team, dest, source, nelems, false, stream);
}

#define VSHMEMI_COLL_ON_STREAM(NAME, TYPE)                                                   \
  int shmemx_##NAME##_broadcast_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                          size_t nelems, int PE_root, cudaStream_t stream) { \
    return shmemx_broadcastmem_on_stream(team, dest, source, nelems * sizeof(TYPE), PE_root, \
                                         stream);                                            \
  }                                                                                          \
  int shmemx_##NAME##_fcollect_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source,  \
                                         size_t nelems, cudaStream_t stream) {               \
    return shmemx_fcollectmem_on_stream(team, dest, source, nelems * sizeof(TYPE), stream);  \
  }                                                                                          \
  int shmemx_##NAME##_alltoall_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source,  \
                                         size_t nelems, cudaStream_t stream) {               \
    return shmemx_alltoallmem_on_stream(team, dest, source, nelems * sizeof(TYPE), stream);  \
  }
VSHMEM_RMA_DEVICE_TYPES(VSHMEMI_COLL_ON_STREAM)

#define VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, OP, OPTYPE)                                         \
  int shmemx_##NAME##_##OP##_reduce_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                              size_t nreduce, cudaStream_t stream) {             \
    return reduce_on_stream<OPTYPE>("shmemx_" #NAME "_" #OP "_reduce_on_stream", team, dest,     \
                                    source, nreduce, stream);                                    \
  }
#define VSHMEMI_REDUCE_ON_STREAM_ALL(NAME, TYPE)     \
  VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, sum, OpSum)   \
  VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, prod, OpProd) \
  VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, min, OpMin)   \
  VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, max, OpMax)
#define VSHMEMI_REDUCE_ON_STREAM_BITWISE(NAME, TYPE) \
  VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, and, OpAnd)   \
  VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, or, OpOr)     \
  VSHMEMI_REDUCE_ON_STREAM(NAME, TYPE, xor, OpXor)
VSHMEMX_REDUCE_ON_STREAM_TYPES(VSHMEMI_REDUCE_ON_STREAM_ALL)
VSHMEMX_REDUCE_ON_STREAM_BITWISE_TYPES(VSHMEMI_REDUCE_ON_STREAM_BITWISE)
VSHMEMX_HALF_ON_STREAM_TYPES(VSHMEMI_REDUCE_ON_STREAM_ALL)

#define VSHMEMI_RS_ON_STREAM(NAME, TYPE, OP, OPTYPE)                                            \
  int shmemx_##NAME##_##OP##_reducescatter_on_stream(                                           \
      shmem_team_t team, TYPE* dest, const TYPE* source, size_t nreduce, cudaStream_t stream) { \
    return reducescatter_on_stream<OPTYPE>("shmemx_" #NAME "_" #OP "_reducescatter_on_stream",  \
                                           team, dest, source, nreduce, stream);                \
  }
#define VSHMEMI_RS_ON_STREAM_ALL(NAME, TYPE)     \
  VSHMEMI_RS_ON_STREAM(NAME, TYPE, sum, OpSum)   \
  VSHMEMI_RS_ON_STREAM(NAME, TYPE, prod, OpProd) \
  VSHMEMI_RS_ON_STREAM(NAME, TYPE, min, OpMin)   \
  VSHMEMI_RS_ON_STREAM(NAME, TYPE, max, OpMax)
#define VSHMEMI_RS_ON_STREAM_BITWISE(NAME, TYPE) \
  VSHMEMI_RS_ON_STREAM(NAME, TYPE, and, OpAnd)   \
  VSHMEMI_RS_ON_STREAM(NAME, TYPE, or, OpOr)     \
  VSHMEMI_RS_ON_STREAM(NAME, TYPE, xor, OpXor)
VSHMEMX_REDUCE_ON_STREAM_TYPES(VSHMEMI_RS_ON_STREAM_ALL)
VSHMEMX_REDUCE_ON_STREAM_BITWISE_TYPES(VSHMEMI_RS_ON_STREAM_BITWISE)
VSHMEMX_HALF_ON_STREAM_TYPES(VSHMEMI_RS_ON_STREAM_ALL)

}  // extern "C"
