// Device-API benchmarks on the GPU heap, in one source for two libraries:
//   - vshmem (built by CMake, linked with vshmem::device, started with vshmemrun);
//   - NVSHMEM (-DVSHMEM_BENCH_NVSHMEM, built by bench/run.sh with nvcc on a machine where the
//     NVSHMEM package is found, started with mpirun), so that both run the same kernels.
// The two APIs differ only in their prefixes (shmem_/nvshmem_, shmemx_/nvshmemx_), a few
// constants and the start-up, which the macros below hide.
//
// Figures (one JSON line each, bench_util.hpp): device put/get bandwidth (thread, warp, block;
// blocking and nbi) as fractions of cudaMemcpy D2D and of a plain copy kernel measured in the
// same run on the same sizes; p/g latency; p and put_signal ping-pong; atomic fetch_add latency
// and throughput under contention; device barrier_all (thread, warp, block); alltoall and reduce
// (block); on-stream call latency; bf16 sum reduce and reduce-scatter on a stream; host-API put/get
// bandwidth between GPU buffers; shmem_init and shmem_malloc (with and without heap growth); and
// (group "ab", vshmem only) the library's internal alternatives next to its defaults.
//
// Timing: CUDA events around kernels that loop many times, or %globaltimer inside a kernel after
// a first synchronizing round where PEs must meet (so that launch skew between processes is not
// counted); a warm-up repetition first, then the median of the repetitions.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "bench/bench_util.hpp"

#ifdef VSHMEM_BENCH_NVSHMEM
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#define S(name) nvshmem_##name
#define SX(name) nvshmemx_##name
#define B_CMP_GE NVSHMEM_CMP_GE
#define B_SIGNAL_SET NVSHMEM_SIGNAL_SET
using team_t = nvshmem_team_t;
static team_t world_team() { return NVSHMEM_TEAM_WORLD; }
static constexpr char kImpl[] = "nvshmem";
#else
#include <shmem.h>
#include <shmemx.h>
#define S(name) shmem_##name
#define SX(name) shmemx_##name
#define B_CMP_GE SHMEM_CMP_GE
#define B_SIGNAL_SET SHMEM_SIGNAL_SET
using team_t = shmem_team_t;
static team_t world_team() { return SHMEM_TEAM_WORLD; }
static constexpr char kImpl[] = "vshmem";
#endif

namespace vshmem::bench {
namespace {

constexpr char kGroups[] =
    "init,malloc,rma_bw,one_block,host_bw,p_lat,pingpong,amo,barrier,coll,on_stream,bf16,ab,"
    "ab_put";

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "bench(%s): PE %d: %s:%d: %s: %s\n", kImpl, S(my_pe)(), __FILE__, __LINE__, \
              #call, cudaGetErrorString(e_));                                                     \
      S(global_exit)(1);                                                                          \
    }                                                                                             \
  } while (0)
#define CK_LAUNCH() CK(cudaGetLastError())

__device__ __forceinline__ uint64_t gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- ceilings ------------------------------------------------------------------------------

// The plain copy kernel: 16-byte loads and stores, grid-stride, the tail bytewise.
__global__ void copy_kernel(char* __restrict__ dst, const char* __restrict__ src, size_t bytes) {
  size_t n16 = bytes / 16;
  size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  auto* d = reinterpret_cast<int4*>(dst);
  auto* s = reinterpret_cast<const int4*>(src);
  for (size_t i = tid; i < n16; i += stride) d[i] = s[i];
  for (size_t i = n16 * 16 + tid; i < bytes; i += stride) dst[i] = src[i];
}

// ---- device RMA bandwidth ------------------------------------------------------------------

enum Scope { kThread = 0, kWarp = 1, kBlock = 2 };
const char* const kScopeName[] = {"thread", "warp", "block"};

// One piece of the message, moved once by its unit.
template <int kScope, bool kNbi, bool kPut>
__device__ __forceinline__ void rma_piece(char* r, char* l, size_t len, int pe) {
  if (kScope == kBlock) {
    if (kPut) {
      kNbi ? SX(putmem_nbi_block)(r, l, len, pe) : SX(putmem_block)(r, l, len, pe);
    } else {
      kNbi ? SX(getmem_nbi_block)(l, r, len, pe) : SX(getmem_block)(l, r, len, pe);
    }
  } else if (kScope == kWarp) {
    if (kPut) {
      kNbi ? SX(putmem_nbi_warp)(r, l, len, pe) : SX(putmem_warp)(r, l, len, pe);
    } else {
      kNbi ? SX(getmem_nbi_warp)(l, r, len, pe) : SX(getmem_warp)(l, r, len, pe);
    }
  } else {
    if (kPut) {
      kNbi ? S(putmem_nbi)(r, l, len, pe) : S(putmem)(r, l, len, pe);
    } else {
      kNbi ? S(getmem_nbi)(l, r, len, pe) : S(getmem)(l, r, len, pe);
    }
  }
}

// The message is cut into `chunk`-byte pieces, each moved `iters` times by its unit (thread, warp
// or block). A thread or warp unit has one piece; block b takes pieces b, b + gridDim.x, ... (one
// each when the grid covers the message, the "block" shape; many smaller ones in the
// "block,interleaved" shape, where the blocks advance through the message side by side). remote
// is symmetric (on pe), local is this PE's buffer.
template <int kScope, bool kNbi, bool kPut>
__global__ void rma_bw_kernel(char* remote, char* local, size_t bytes, size_t chunk, int iters,
                              int pe) {
  size_t unit;
  if (kScope == kBlock) {
    unit = blockIdx.x;
  } else if (kScope == kWarp) {
    unit = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  } else {
    unit = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  }
  const size_t pieces = (bytes + chunk - 1) / chunk;
  const size_t stride = kScope == kBlock ? gridDim.x : pieces;  // one piece per thread or warp
  for (int i = 0; i < iters; ++i) {
    for (size_t piece = unit; piece < pieces; piece += stride) {  // uniform across the unit
      const size_t off = piece * chunk;
      const size_t len = bytes - off < chunk ? bytes - off : chunk;
      rma_piece<kScope, kNbi, kPut>(remote + off, local + off, len, pe);
    }
  }
  if (kNbi) S(quiet)();
}

using RmaKernel = void (*)(char*, char*, size_t, size_t, int, int);

RmaKernel rma_kernel(int scope, bool nbi, bool put) {
#define PICK(SC)                                                                          \
  if (scope == SC) {                                                                      \
    if (put) return nbi ? rma_bw_kernel<SC, true, true> : rma_bw_kernel<SC, false, true>; \
    return nbi ? rma_bw_kernel<SC, true, false> : rma_bw_kernel<SC, false, false>;        \
  }
  PICK(kThread)
  PICK(kWarp)
  PICK(kBlock)
#undef PICK
  return nullptr;
}

// ---- latency kernels (one thread) ------------------------------------------------------------

__global__ void p_lat_kernel(long* var, int iters, int pe) {
  for (int i = 0; i < iters; ++i) {
    S(long_p)(var, (long)i + 1, pe);
    S(quiet)();
  }
}

// g and fetch_add latencies are dependent chains: each call's address depends on the value the
// previous one returned (the offset is always 0: the values stay far below 2^62, which the
// compiler cannot know), so neither library's calls can overlap and each iteration is one full
// round trip, whatever the compiler does with independent calls.
__global__ void g_lat_kernel(long* var, int iters, int pe, long* out) {
  long acc = 0, v = 0;
  for (int i = 0; i < iters; ++i) {
    v = S(long_g)(var + (static_cast<unsigned long>(v) >> 62), pe);
    acc += v;
  }
  *out = acc;
}

__global__ void fetch_add_lat_kernel(uint64_t* ctr, int iters, int pe, uint64_t* out) {
  uint64_t acc = 0, v = 0;
  for (int i = 0; i < iters; ++i) {
    v = S(uint64_atomic_fetch_add)(ctr + (v >> 62), 1, pe);
    acc += v;
  }
  *out = acc;
}

// fetch_add calls that do not depend on each other (the shape of a loop that only sums the
// values): the compiler and the hardware may overlap them, so this is issue cost, not a round trip.
__global__ void fetch_add_indep_kernel(uint64_t* ctr, int iters, int pe, uint64_t* out) {
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) acc += S(uint64_atomic_fetch_add)(ctr, 1, pe);
  *out = acc;
}

// The same chain with CUDA's own atomicAdd (device scope) on the pointer given: the hardware's
// figure for one fetch-and-add round trip, without a library (diagnostic: see bench_amo).
template <bool kSystem>
__global__ void atomic_add_lat_kernel(unsigned long long* ctr, int iters, uint64_t* out) {
  unsigned long long acc = 0, v = 0;
  for (int i = 0; i < iters; ++i) {
    v = kSystem ? atomicAdd_system(ctr + (v >> 62), 1ull) : atomicAdd(ctr + (v >> 62), 1ull);
    acc += v;
  }
  *out = acc;
}

#ifndef VSHMEM_BENCH_NVSHMEM
// peer_delta (impl/state.cuh) and two variants of it, for the A/B rows: kFar 0 the library's (a
// predicated ld.global.nc of the global table for PEs >= 64, the constant-memory entry below);
// 1 the same with a plain (L1-cached, coherent) ld.global; 2 constant memory only (PEs < 64, no
// global load at all): whether the predicated non-coherent load costs a pass or a chain anything.
template <int kFar>
__device__ __forceinline__ int64_t ab_peer_delta(int pe) {
  namespace d = vshmem::device;
  if constexpr (kFar == 0) {
    return d::peer_delta(pe);
  } else {
    const d::GpuState& st = vshmemi_device_state;
    const unsigned u = static_cast<unsigned>(pe);
    const int64_t inline_d = st.inline_delta[u & (d::kInlinePeers - 1)];
    if constexpr (kFar == 2) {
      return u < static_cast<unsigned>(d::kInlinePeers) ? inline_d : d::kUnmappedDelta;
    } else {
      const bool far =
          u >= static_cast<unsigned>(d::kInlinePeers) && u < static_cast<unsigned>(st.n_pes);
      int64_t v;
      asm("{\n\t.reg .pred f;\n\tsetp.ne.u32 f, %2, 0;\n\tmov.b64 %0, %3;\n\t"
          "@f ld.global.b64 %0, [%1];\n\t}"
          : "=l"(v)
          : "l"(static_cast<uint64_t>(__cvta_generic_to_global(st.peer_delta + u))),
            "r"(far ? 1u : 0u), "l"(d::kUnmappedDelta));
      return u < static_cast<unsigned>(d::kInlinePeers) ? inline_d : v;
    }
  }
}

// The library's fetch_add (predicated atomic, then the unmapped test) with the translation of
// ab_peer_delta<kFar>: rows "thread,far_ld_global" (1) and "thread,const_only" (2).
template <int kFar>
__global__ void fetch_add_far_lat_kernel(uint64_t* ctr, int iters, int pe, uint64_t* out) {
  namespace d = vshmem::device;
  uint64_t acc = 0, v = 0;
  for (int i = 0; i < iters; ++i) {
    uint64_t* p = ctr + (v >> 62);
    const int64_t delta = ab_peer_delta<kFar>(pe);
    v = d::atom_add_if(d::at_delta(p, delta), uint64_t{1}, !d::unmapped(delta));
    if (d::unmapped(delta)) {
      v = d::amo_proxy("fetch_add_far", vshmem::proxy::kAmoFetchAdd, p, uint64_t{1}, uint64_t{0},
                       true, pe);
    }
    acc += v;
  }
  *out = acc;
}

// The same chain through the library's fetch_add as it was before session 8 (vshmem only, A/B):
// the peer's delta tested by a branch, then the scope by another, then the atomic; the library's
// own form issues the atomic first, predicated, and tests an unmapped peer after it.
__global__ void fetch_add_prev_lat_kernel(uint64_t* ctr, int iters, int pe, uint64_t* out) {
  namespace d = vshmem::device;
  uint64_t acc = 0, v = 0;
  for (int i = 0; i < iters; ++i) {
    uint64_t* p = ctr + (v >> 62);
    const int64_t delta = d::peer_delta(pe);
    if (d::unmapped(delta)) {
      v = d::amo_proxy("fetch_add_prev", vshmem::proxy::kAmoFetchAdd, p, uint64_t{1}, uint64_t{0},
                       true, pe);
    } else {
      v = d::atom_add(d::at_delta(p, delta), uint64_t{1});
    }
    acc += v;
  }
  *out = acc;
}
#endif

// Every thread of every PE adds to PE 0's counter.
template <bool kFetch>
__global__ void amo_contention_kernel(uint64_t* ctr, int iters, uint64_t* out) {
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) {
    if (kFetch) {
      acc += S(uint64_atomic_fetch_add)(ctr, 1, 0);
    } else {
      S(uint64_atomic_add)(ctr, 1, 0);
    }
  }
  if (acc == 42) *out = acc;  // keeps the fetches; practically never taken
}

// PE 0 and PE 1 bounce a sequence number; `seq0` continues the sequence across launches, so the
// flags never need resetting. The first exchange lines the two PEs up; the rest is timed.
__global__ void pingpong_p_kernel(long* flag, int iters, int me, long seq0, uint64_t* ns) {
  int peer = 1 - me;
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1) t0 = gtimer();
    long v = seq0 + i + 1;
    if (me == 0) {
      S(long_p)(flag, v, peer);
      S(long_wait_until)(flag, B_CMP_GE, v);
    } else {
      S(long_wait_until)(flag, B_CMP_GE, v);
      S(long_p)(flag, v, peer);
    }
  }
  *ns = gtimer() - t0;
}

__global__ void pingpong_signal_kernel(char* data, const char* src, size_t bytes, uint64_t* sig,
                                       int iters, int me, uint64_t seq0, uint64_t* ns) {
  int peer = 1 - me;
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1) t0 = gtimer();
    uint64_t v = seq0 + i + 1;
    if (me == 0) {
      S(putmem_signal)(data, src, bytes, sig, v, B_SIGNAL_SET, peer);
      S(signal_wait_until)(sig, B_CMP_GE, v);
    } else {
      S(signal_wait_until)(sig, B_CMP_GE, v);
      S(putmem_signal)(data, src, bytes, sig, v, B_SIGNAL_SET, peer);
    }
  }
  *ns = gtimer() - t0;
}

// ---- barriers and collectives (launched collectively; the first call lines the PEs up) ------

__global__ void barrier_kernel(int scope, int iters, uint64_t* ns) {
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1 && threadIdx.x == 0) t0 = gtimer();
    if (scope == kBlock) {
      SX(barrier_all_block)();
    } else if (scope == kWarp) {
      if (threadIdx.x < 32) SX(barrier_all_warp)();
    } else {
      if (threadIdx.x == 0) S(barrier_all)();
    }
  }
  if (threadIdx.x == 0) *ns = gtimer() - t0;
}

__global__ void alltoall_kernel(team_t team, char* dst, const char* src, size_t bytes, int iters,
                                uint64_t* ns) {
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1 && threadIdx.x == 0) t0 = gtimer();
    SX(alltoallmem_block)(team, dst, src, bytes);
  }
  if (threadIdx.x == 0) *ns = gtimer() - t0;
}

// Broadcast from PE 0 by one thread, one warp or the block (NVSHMEM's perftest shape).
__global__ void broadcast_kernel(int scope, team_t team, char* dst, const char* src, size_t bytes,
                                 int iters, uint64_t* ns) {
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1 && threadIdx.x == 0) t0 = gtimer();
    if (scope == kBlock) {
      SX(char_broadcast_block)(team, dst, src, bytes, 0);
    } else if (scope == kWarp) {
      if (threadIdx.x < 32) SX(char_broadcast_warp)(team, dst, src, bytes, 0);
    } else {
      if (threadIdx.x == 0) S(char_broadcast)(team, dst, src, bytes, 0);
    }
  }
  if (threadIdx.x == 0) *ns = gtimer() - t0;
}

__global__ void reduce_kernel(team_t team, long* dst, const long* src, size_t n, int iters,
                              uint64_t* ns) {
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1 && threadIdx.x == 0) t0 = gtimer();
    SX(long_sum_reduce_block)(team, dst, src, n);
  }
  if (threadIdx.x == 0) *ns = gtimer() - t0;
}

// ---- the harness ---------------------------------------------------------------------------

struct Gpu {
  int sms = 0;
  int dev = 0;       // this PE's GPU
  int peer_dev = 0;  // PE 1's GPU (known on PE 0): a put to PE 1 crosses NVLink when it differs
  char* peer_buf = nullptr;  // on PE 0, a buffer on peer_dev for the cudaMemcpyPeer ceiling
  uint64_t peer_buf_bytes = 0;
  cudaStream_t st{};
  cudaEvent_t a{}, b{};
  uint64_t* d_out = nullptr;  // kernels' results (elapsed ns, sinks)
};

struct Ctx {
  const Options& opt;
  Reporter& rep;
  Gpu& g;
  int me, npes, reps;
};

double event_ms(Gpu& g) {
  float ms = 0;
  CK(cudaEventSynchronize(g.b));
  CK(cudaEventElapsedTime(&ms, g.a, g.b));
  return ms;
}

uint64_t read_out(Gpu& g, int idx = 0) {
  uint64_t v = 0;
  CK(cudaMemcpy(&v, g.d_out + idx, sizeof(v), cudaMemcpyDeviceToHost));
  return v;
}

// Every PE's value of `x`, on every PE (through a symmetric scratch array of at least npes
// doubles and the host API for vshmem, through MPI for NVSHMEM, whose host-side p/g we do not
// rely on). Every PE gets the same answer, so decisions taken from it agree across PEs.
std::vector<double> gather(const Ctx& c, double* scratch, double x) {
  std::vector<double> all(c.npes);
#ifdef VSHMEM_BENCH_NVSHMEM
  (void)scratch;
  MPI_Allgather(&x, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
#else
  S(double_p)(&scratch[c.me], x, 0);
  S(barrier_all)();
  S(getmem)(all.data(), scratch, sizeof(double) * c.npes, 0);
  S(barrier_all)();
#endif
  return all;
}

double max_over_pes(const Ctx& c, double* scratch, double x) {
  std::vector<double> all = gather(c, scratch, x);
  return *std::max_element(all.begin(), all.end());
}

void fill_device(char* dptr, size_t bytes, uint64_t seed) {
  // Random, never zero: times on zeros can differ and hide unwritten data (METHOD.md).
  std::vector<uint64_t> h((bytes + 7) / 8);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& w : h) {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    w = (s * 2685821657736338717ull) | 1;
  }
  CK(cudaMemcpy(dptr, h.data(), bytes, cudaMemcpyHostToDevice));
}

std::vector<uint64_t> bw_sizes(uint64_t max, bool quick) {
  std::vector<uint64_t> v;
  for (uint64_t s = 8; s <= max; s <<= (quick ? 8 : 2)) v.push_back(s);
  for (uint64_t extra : {uint64_t{16} << 20, uint64_t{512} << 20, max}) {
    if (extra <= max) v.push_back(extra);
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// How a message of `bytes` is cut into units, and the launch shape that covers them.
struct Shape {
  size_t chunk;
  unsigned grid, block;
};

Shape shape_for(int scope, uint64_t bytes, int sms) {
  uint64_t min_chunk = scope == kBlock ? (64u << 10) : scope == kWarp ? 4096 : 512;
  uint64_t max_units = scope == kBlock ? 2ull * sms : scope == kWarp ? 16ull * sms : 256ull * sms;
  uint64_t units = std::clamp<uint64_t>(bytes / min_chunk, 1, max_units);
  size_t chunk = (bytes + units - 1) / units;
  chunk = (chunk + 15) / 16 * 16;  // keep every piece 16-byte aligned
  units = (bytes + chunk - 1) / chunk;
  if (scope == kBlock) return {chunk, (unsigned)units, 1024};
  uint64_t threads = scope == kWarp ? units * 32 : units;
  unsigned block = (unsigned)std::min<uint64_t>(256, (threads + 31) / 32 * 32);
  return {chunk, (unsigned)((threads + block - 1) / block), block};
}

// Bandwidth of one way of moving `bytes` `iters` times, timed on PE 0 only (the other PEs wait
// in the barriers): GB/s, median over the repetitions.
template <class F>
double bw_on_pe0(const Ctx& c, uint64_t bytes, int iters, F&& launch) {
  std::vector<double> gbs;
  for (int r = -1; r < c.reps; ++r) {
    S(barrier_all)();
    if (c.me == 0) {
      CK(cudaEventRecord(c.g.a, c.g.st));
      launch();
      CK(cudaEventRecord(c.g.b, c.g.st));
      double ms = event_ms(c.g);
      if (r >= 0) gbs.push_back((double)bytes * iters / (ms * 1e-3) / 1e9);
    }
  }
  S(barrier_all)();
  return median(gbs);
}

struct Ceilings {
  double memcpy_gbs, kernel_gbs;
  // Device RMA between two PEs: the ceiling its bandwidth is measured against: cudaMemcpy
  // device-to-device when PE 1 shares PE 0's GPU, cudaMemcpyPeer to PE 1's GPU otherwise.
  const char* rma_name = "cudaMemcpy_d2d";
  double rma_gbs = 0;
};

Ceilings measure_ceilings(const Ctx& c, char* a, char* b, uint64_t bytes, int iters,
                          char* sym_dst = nullptr) {
  Ceilings k{};
  k.memcpy_gbs = bw_on_pe0(c, bytes, iters, [&] {
    for (int i = 0; i < iters; ++i) {
      CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c.g.st));
    }
  });
  k.kernel_gbs = bw_on_pe0(c, bytes, iters, [&] {
    unsigned grid = (unsigned)std::clamp<uint64_t>(bytes / (16 * 256), 1, 4ull * c.g.sms);
    for (int i = 0; i < iters; ++i) {
      copy_kernel<<<grid, 256, 0, c.g.st>>>(b, a, bytes);
    }
    CK_LAUNCH();
  });
  if (c.me == 0) {
    c.rep.emit(
        {"ceiling_bw", "cudaMemcpy_d2d", bytes, k.memcpy_gbs, "GB/s", "", NAN, iters, c.reps});
    c.rep.emit({"ceiling_bw", "copy_kernel", bytes, k.kernel_gbs, "GB/s", "", NAN, iters, c.reps});
  }
  k.rma_gbs = k.memcpy_gbs;
  // Diagnostics (no target): the same copy kernel and cudaMemcpy writing into PE 1's copy of
  // sym_dst through this process's mapping of it (shmem_ptr): they separate what the mapping
  // costs from what the library's copy loop costs.
  char* peer = sym_dst != nullptr && c.npes > 1 ? static_cast<char*>(S(ptr)(sym_dst, 1)) : nullptr;
  if (peer != nullptr) {
    double kernel_peer = bw_on_pe0(c, bytes, iters, [&] {
      unsigned grid = (unsigned)std::clamp<uint64_t>(bytes / (16 * 256), 1, 4ull * c.g.sms);
      for (int i = 0; i < iters; ++i) copy_kernel<<<grid, 256, 0, c.g.st>>>(peer, a, bytes);
      CK_LAUNCH();
    });
    double memcpy_peer = bw_on_pe0(c, bytes, iters, [&] {
      for (int i = 0; i < iters; ++i) {
        CK(cudaMemcpyAsync(peer, a, bytes, cudaMemcpyDeviceToDevice, c.g.st));
      }
    });
    if (c.me == 0) {
      c.rep.emit(
          {"ceiling_bw", "copy_kernel_to_pe1", bytes, kernel_peer, "GB/s", "", NAN, iters, c.reps});
      c.rep.emit(
          {"ceiling_bw", "cudaMemcpy_to_pe1", bytes, memcpy_peer, "GB/s", "", NAN, iters, c.reps});
    }
  }
  if (c.g.peer_dev != c.g.dev) {
    if (c.me == 0 && c.g.peer_buf_bytes < bytes) {
      Gpu& g = c.g;
      CK(cudaSetDevice(g.peer_dev));
      if (g.peer_buf != nullptr) CK(cudaFree(g.peer_buf));
      CK(cudaMalloc(&g.peer_buf, bytes));
      CK(cudaSetDevice(g.dev));
      g.peer_buf_bytes = bytes;
    }
    k.rma_name = "cudaMemcpyPeer";
    k.rma_gbs = bw_on_pe0(c, bytes, iters, [&] {
      for (int i = 0; i < iters; ++i) {
        CK(cudaMemcpyPeerAsync(c.g.peer_buf, c.g.peer_dev, a, c.g.dev, bytes, c.g.st));
      }
    });
    if (c.me == 0) {
      c.rep.emit(
          {"ceiling_bw", "cudaMemcpyPeer", bytes, k.rma_gbs, "GB/s", "", NAN, iters, c.reps});
    }
  }
  return k;
}

void bench_rma_bw(const Ctx& c, char* sym_a, char* sym_b, char* priv_a, char* priv_b,
                  uint64_t max) {
  if (c.npes < 2) return;
  // The whole sweep once (2 PEs); with more PEs only the sizes the targets name, block scope.
  const bool full = c.npes == 2;
  std::vector<uint64_t> sizes = bw_sizes(max, c.opt.quick);
  if (!full) {
    sizes.clear();
    for (uint64_t s : {uint64_t{16} << 20, uint64_t{512} << 20}) {
      if (s <= max) sizes.push_back(s);
    }
    if (sizes.empty()) sizes.push_back(max);
  }
  for (uint64_t s : sizes) {
    // About 256 MiB per timing (at least one pass): ~0.1 s at HBM speed, far above launch and
    // event overheads, and the whole sweep stays within a few minutes of device time.
    const int iters =
        iters_for(s, c.opt.quick ? (64u << 20) : (256u << 20), 1, c.opt.quick ? 100 : 1000);
    c.rep.progress("device RMA bandwidth %s (%d iterations)", size_str(s).c_str(), iters);
    Ceilings k = measure_ceilings(c, priv_a, priv_b, s, iters, sym_b);
    for (int scope : {kThread, kWarp, kBlock}) {
      // Thread and warp forms are for small messages; past 64 MiB only the block form is run.
      if (scope != kBlock && (!full || s > (64u << 20))) continue;
      Shape sh = shape_for(scope, s, c.g.sms);
      for (int put = 1; put >= 0; --put) {
        for (int nbi = 0; nbi <= 1; ++nbi) {
          RmaKernel kern = rma_kernel(scope, nbi, put);
          // put: PE 0's sym_a -> PE 1's sym_b; get: PE 1's sym_b -> PE 0's sym_a.
          double gbs = bw_on_pe0(c, s, iters, [&] {
            kern<<<sh.grid, sh.block, 0, c.g.st>>>(sym_b, sym_a, s, sh.chunk, iters, 1);
            CK_LAUNCH();
          });
          std::string variant = std::string(kScopeName[scope]) + (nbi ? ",nbi" : "");
          const char* bench = put ? "put_bw" : "get_bw";
          c.rep.emit({bench, variant, s, gbs, "GB/s", k.rma_name, k.rma_gbs, iters, c.reps});
          c.rep.emit({std::string(bench) + "_vs_kernel", variant, s, gbs, "GB/s", "copy_kernel",
                      k.kernel_gbs, iters, c.reps});
        }
      }
    }
    // The block form again on large messages, with the pieces dealt round-robin to the blocks
    // (256 KiB each, two 1024-thread blocks per SM): how the same call does when the blocks
    // sweep the message together instead of each streaming its own distant chunk.
    if (s >= (16u << 20)) {
      const Shape sh{256u << 10, 2u * static_cast<unsigned>(c.g.sms), 1024};
      for (int put = 1; put >= 0; --put) {
        RmaKernel kern = rma_kernel(kBlock, false, put);
        double gbs = bw_on_pe0(c, s, iters, [&] {
          kern<<<sh.grid, sh.block, 0, c.g.st>>>(sym_b, sym_a, s, sh.chunk, iters, 1);
          CK_LAUNCH();
        });
        const char* bench = put ? "put_bw" : "get_bw";
        c.rep.emit(
            {bench, "block,interleaved", s, gbs, "GB/s", k.rma_name, k.rma_gbs, iters, c.reps});
      }
      // One piece per block again, with an odd piece size: every piece but the first starts at
      // another alignment, and none is a multiple of 16 bytes long.
      const size_t odd = ((s + 2u * c.g.sms - 1) / (2u * c.g.sms)) | 1;
      const Shape un{odd, static_cast<unsigned>((s + odd - 1) / odd), 1024};
      for (int put = 1; put >= 0; --put) {
        RmaKernel kern = rma_kernel(kBlock, false, put);
        double gbs = bw_on_pe0(c, s, iters, [&] {
          kern<<<un.grid, un.block, 0, c.g.st>>>(sym_b, sym_a, s, un.chunk, iters, 1);
          CK_LAUNCH();
        });
        const char* bench = put ? "put_bw" : "get_bw";
        c.rep.emit(
            {bench, "block,odd-chunks", s, gbs, "GB/s", k.rma_name, k.rma_gbs, iters, c.reps});
      }
    }
  }
}

#ifndef VSHMEM_BENCH_NVSHMEM
// ---- "ab": the library's internal variants side by side, vshmem only (issue #18) -------------
// Each is one template argument of the library's own code path, so that one GPU run picks the
// default: the block put with 2, 4 or 8 words a thread in flight, with and without the aligned
// copy path; the flag, counting and central barriers; alltoall with the whole block serving one
// member after another instead of warps serving members side by side.

// The block put of rma_bw_kernel's "block" shape (one piece per block here), with the library's
// copy choices as template arguments: kUnroll words a thread in flight, kFast the aligned path.
template <unsigned kUnroll, bool kFast>
__global__ void ab_put_kernel(char* remote, char* local, size_t bytes, size_t chunk, int iters,
                              int pe) {
  const size_t pieces = (bytes + chunk - 1) / chunk;
  for (int i = 0; i < iters; ++i) {
    for (size_t piece = blockIdx.x; piece < pieces; piece += gridDim.x) {
      const size_t off = piece * chunk;
      const size_t len = bytes - off < chunk ? bytes - off : chunk;
      vshmem::device::put_group<vshmem::device::BlockGroup, kUnroll, kFast>("ab_put", remote + off,
                                                                            local + off, len, pe);
    }
  }
}

// Not the library: a bare loop over 16-byte words through restrict-qualified pointers, with the
// block synchronized before and after as the library's put is (diagnostic: what the plain loop
// gets on this machine; the compiler may read a restrict const source through the read-only
// path, which the library cannot assume: a kernel may write the source before putting it).
__global__ void ab_put_plain_kernel(char* remote, char* local, size_t bytes, size_t chunk,
                                    int iters, int pe) {
  (void)chunk;
  int4* __restrict__ d = static_cast<int4*>(shmem_ptr(remote, pe));
  const int4* __restrict__ s = reinterpret_cast<const int4*>(local);
  const size_t n = bytes / 16;
  for (int it = 0; it < iters; ++it) {
    __syncthreads();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
    __syncthreads();
  }
}

// The same bare loop without restrict (plain LDG loads, generic stores: kStg false), or with the
// stores made global-space (st.global, kStg true): which of the two differences from the
// library's copy (the read-only load path, the generic store) makes the restrict loop fast.
template <bool kStg>
__global__ void ab_put_plain_ldg_kernel(char* remote, char* local, size_t bytes, size_t chunk,
                                        int iters, int pe) {
  (void)chunk;
  int4* d = static_cast<int4*>(shmem_ptr(remote, pe));
  const int4* s = reinterpret_cast<const int4*>(local);
  const size_t n = bytes / 16;
  for (int it = 0; it < iters; ++it) {
    __syncthreads();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
      if (kStg) {
        __stwb(d + i, s[i]);
      } else {
        d[i] = s[i];
      }
    }
    __syncthreads();
  }
}

// Session 8's group copy (rung 12, for A/B against the library's copy_run16 in the same run): the
// destination's 512-byte head copied first (in 16-byte words, one per thread, when both addresses
// are 16-byte aligned), then the words by copy_words16, then the bytes after the last word.
__device__ __forceinline__ void ab_copy_s8(char* d, const char* s, size_t n, unsigned rank,
                                           unsigned size) {
  namespace dv = vshmem::device;
  const uintptr_t a = reinterpret_cast<uintptr_t>(d);
  if (((a | reinterpret_cast<uintptr_t>(s) | n) & 15) == 0 && (a % 512 == 0 || n < 1024)) {
    dv::copy_words16<dv::kCopyUnroll>(reinterpret_cast<uint4*>(d),
                                      reinterpret_cast<const uint4*>(s),
                                      static_cast<uint32_t>(n / 16), rank, size);
    return;
  }
  const size_t head = n >= 1024 ? (512 - a % 512) % 512 : 0;
  if (((a | reinterpret_cast<uintptr_t>(s)) & 15) == 0) {
    if (rank < head / 16)
      reinterpret_cast<uint4*>(d)[rank] = reinterpret_cast<const uint4*>(s)[rank];
  } else {
    for (size_t i = rank; i < head; i += size) d[i] = s[i];
  }
  d += head;
  s += head;
  n -= head;
  if (((reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s)) & 15) != 0) __trap();
  const size_t first = (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16;
  const size_t words = (n - first) / 16;
  for (size_t i = rank; i < first; i += size) d[i] = s[i];
  for (size_t i = first + words * 16 + rank; i < n; i += size) d[i] = s[i];
  dv::copy_words16<dv::kCopyUnroll>(reinterpret_cast<uint4*>(d + first),
                                    reinterpret_cast<const uint4*>(s + first),
                                    static_cast<uint32_t>(words), rank, size);
}

// The block put taken apart (group "ab_put", issue #18 item 2): one block moving the whole message
// `iters` times, the block synchronized before and after each pass as the library's put is, with
// one more of the library's steps at each rung, so that the rung where the time appears names the
// step: 0 the bare loop, one 16-byte word in flight, on pointers translated once (= plain_loop);
// 1 the same reading through the L2 only (ld.global.cg): whether the bare loop's speed comes from
// L1 hits on the source it reads again and again; 2 the library's word loop (copy_words16, 4 in
// flight) on pointers translated once; 3 the library's whole copy (copy_bytes: alignment tests and
// word count) on pointers translated once; 4 = 3 with the translation (peer_delta, unmapped
// check) in every pass, after the entry synchronization; 5 = 4 with the translation before it;
// 6 the library's put (put_group with its proxy cold path); 7 = 0 with the translation in every
// pass; 8 = 6 with one word in flight (the bare loop's order inside the library's put); 9 = 7 with
// ab_peer_delta<1> (plain ld.global for far PEs), 10 = 7 with ab_peer_delta<2> (constant only);
// 11 = 6 with a 512-byte-aligned destination (the heap aligns to 64 bytes: no 512-byte head);
// 12 = 6 with session 8's copy (ab_copy_s8: a separate head pass) in place of the library's;
// 13 and 14 = 6 with 2 and 8 words a thread in flight (ab_put_kernel); 15 = 6 with the copy's
// alignment arithmetic on the untranslated address (copy_run16_low; the bench's messages are
// 16-byte aligned and agree modulo 16), so that it need not wait for the peer's delta; the
// library's put does this since session 10 (copy_bytes_at), so 15 = 6 and 16 = session 9's put
// (the copy's alignment from the translated address), the A/B of that change in one run.
template <int kWhat>
__global__ void ab_put_ladder_kernel(char* remote, char* local, size_t bytes, size_t chunk,
                                     int iters, int pe) {
  namespace d = vshmem::device;
  (void)chunk;
  using G = d::BlockGroup;
  char* const dst = static_cast<char*>(shmem_ptr(remote, pe));
  const size_t n = bytes / 16;
  for (int it = 0; it < iters; ++it) {
    if constexpr (kWhat == 6 || kWhat == 8) {
      d::put_group<G, kWhat == 8 ? 1 : d::kCopyUnroll>("ab_put_ladder", remote, local, bytes, pe);
      continue;
    }
    if constexpr (kWhat == 12) {  // put_group's steps around session 8's copy
      const int64_t delta = d::peer_delta(pe);
      G::sync();
      if (d::unmapped(delta)) __trap();
      ab_copy_s8(d::at_delta(remote, delta), local, bytes, G::rank(), G::size());
      G::sync();
      continue;
    }
    if constexpr (kWhat == 16) {  // session 9's put_group: alignment from the translated address
      const int64_t delta = d::peer_delta(pe);
      G::sync();
      if (d::unmapped(delta)) __trap();
      d::copy_bytes(d::at_delta(remote, delta), local, bytes, G::rank(), G::size());
      G::sync();
      continue;
    }
    if constexpr (kWhat == 15) {  // = 6 with the copy's alignment taken from the symmetric address
      const int64_t delta = d::peer_delta(pe);
      G::sync();
      if (d::unmapped(delta)) __trap();
      d::copy_run16_low<d::kCopyUnroll>(d::at_delta(remote, delta), local, bytes, G::rank(),
                                        G::size(), reinterpret_cast<uintptr_t>(remote));
      G::sync();
      continue;
    }
    if constexpr (kWhat == 11) {  // both moved forward so that the destination is 512-aligned
      const size_t k = (512 - reinterpret_cast<uintptr_t>(dst) % 512) % 512;
      d::put_group<G>("ab_put_ladder", remote + k, local + k, bytes, pe);
      continue;
    }
    char* to = dst;
    int64_t delta = 0;
    if constexpr (kWhat == 5) delta = d::peer_delta(pe);
    G::sync();
    if constexpr (kWhat == 4 || kWhat == 7) delta = d::peer_delta(pe);
    if constexpr (kWhat == 9) delta = ab_peer_delta<1>(pe);
    if constexpr (kWhat == 10) delta = ab_peer_delta<2>(pe);
    if constexpr (kWhat == 4 || kWhat == 5 || kWhat >= 7) {
      if (d::unmapped(delta)) __trap();
      to = d::at_delta(remote, delta);
    }
    if constexpr (kWhat == 0 || kWhat == 1 || kWhat == 7 || kWhat == 9 || kWhat == 10) {
      auto* dw = reinterpret_cast<int4*>(to);
      const auto* sw = reinterpret_cast<const int4*>(local);
      for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        dw[i] = kWhat == 1 ? __ldcg(sw + i) : sw[i];
    } else if constexpr (kWhat == 2) {
      d::copy_words16<d::kCopyUnroll>(reinterpret_cast<uint4*>(to),
                                      reinterpret_cast<const uint4*>(local),
                                      static_cast<uint32_t>(n), G::rank(), G::size());
    } else {
      d::copy_bytes(to, local, bytes, G::rank(), G::size());
    }
    G::sync();
  }
}

// The pieces a thread-form barrier is made of, timed alone by one thread on this PE's own words
// (gpu scope: every PE on this GPU): what = 0 fence.sc, 1 fence.acq_rel, 2 a volatile load and
// store of one word (the epoch's read-modify-write), 3 a relaxed add then acquire loads until
// they see it (one round trip to the L2), 4 seven relaxed stores to seven words then fence.sc
// (the flag barrier's stores), 5 seven relaxed loads of seven words then fence.acq_rel (one
// pass of its poll).
__global__ void ab_parts_kernel(int what, int iters, uint64_t* word, uint64_t* ns) {
  using vshmem::device::GpuScope;
  namespace d = vshmem::device;
  volatile uint64_t* v = word;
  uint64_t t0 = 0, sum = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1) t0 = gtimer();
    if (what == 0) {
      d::fence_sys<GpuScope>();
    } else if (what == 1) {
      d::fence_acquire<GpuScope>();
    } else if (what == 2) {
      *v = *v + 1;
    } else if (what == 3) {
      const uint64_t want = d::ld_relaxed<GpuScope>(word) + 1;
      d::red_add<GpuScope>(word, uint64_t{1});
      while (d::ld_acquire<GpuScope>(word) < want) {
      }
    } else if (what == 4) {
#pragma unroll
      for (int j = 1; j < 8; ++j) d::st_relaxed<GpuScope>(word + 16 * j, uint64_t(i));
      d::fence_sys<GpuScope>();
    } else {
#pragma unroll
      for (int j = 1; j < 8; ++j) sum += d::ld_relaxed<GpuScope>(word + 16 * j);
      d::fence_acquire<GpuScope>();
    }
  }
  *ns = gtimer() - t0;
  if (sum == 1) *word = sum;  // keeps the loads
}

template <vshmem::device::BarrierKind kKind>
__global__ void ab_barrier_kernel(int scope, int iters, uint64_t* ns) {
  using vshmem::device::sync_group;
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1 && threadIdx.x == 0) t0 = gtimer();
    if (scope == kBlock) {
      sync_group<vshmem::device::BlockGroup, kKind>("ab_barrier", true);
    } else if (scope == kWarp) {
      if (threadIdx.x < 32) sync_group<vshmem::device::WarpGroup, kKind>("ab_barrier", true);
    } else if (threadIdx.x == 0) {
      sync_group<vshmem::device::ThreadGroup, kKind>("ab_barrier", true);
    }
  }
  if (threadIdx.x == 0) *ns = gtimer() - t0;
}

__global__ void ab_alltoall_serial_kernel(team_t team, char* dst, const char* src, size_t bytes,
                                          int iters, uint64_t* ns) {
  uint64_t t0 = 0;
  for (int i = 0; i <= iters; ++i) {
    if (i == 1 && threadIdx.x == 0) t0 = gtimer();
    vshmem::device::exchange_group<vshmem::device::BlockGroup, false>("ab_alltoall", team, dst, src,
                                                                      bytes, false);
  }
  if (threadIdx.x == 0) *ns = gtimer() - t0;
}
#endif

#ifndef VSHMEM_BENCH_NVSHMEM
// A table of block-put kernels (one block of 512 threads, PE 0 to PE 1, the whole message `iters`
// times), each at 16, 64 and 256 KiB, in two rounds (a slow stretch of the machine shows as a
// difference between rounds): rows "block512,<tag>,<name>[,2]".
struct AbPutRow {
  const char* name;
  void (*kernel)(char*, char*, size_t, size_t, int, int);
};
template <size_t N>
void ab_put_rows(const Ctx& c, char* sym_a, char* sym_b, const char* tag,
                 const AbPutRow (&rows)[N]) {
  const int iters = c.opt.quick ? 200 : 2000;
  for (int round = 0; round < 2; ++round) {
    for (uint64_t s : {uint64_t{16} << 10, uint64_t{64} << 10, uint64_t{256} << 10}) {
      for (const AbPutRow& r : rows) {
        double gbs = bw_on_pe0(c, s, iters, [&] {
          r.kernel<<<1, 512, 0, c.g.st>>>(sym_b, sym_a, s, s, iters, 1);
          CK_LAUNCH();
        });
        c.rep.emit({"put_bw", std::string("block512,") + tag + "," + r.name + (round ? ",2" : ""),
                    s, gbs, "GB/s", "", NAN, iters, c.reps});
      }
    }
  }
}
#endif

// The "ab_put" group (vshmem only): the rungs of ab_put_ladder_kernel.
void bench_ab_put(const Ctx& c, char* sym_a, char* sym_b) {
#ifndef VSHMEM_BENCH_NVSHMEM
  if (c.npes < 2) return;
  c.rep.progress("A/B: the block put taken apart");
  const AbPutRow rungs[] = {{"0,bare_loop", ab_put_ladder_kernel<0>},
                            {"1,bare_loop_l2_only", ab_put_ladder_kernel<1>},
                            {"2,word_loop", ab_put_ladder_kernel<2>},
                            {"3,copy_bytes", ab_put_ladder_kernel<3>},
                            {"4,copy_bytes_translate_after_sync", ab_put_ladder_kernel<4>},
                            {"5,copy_bytes_translate_before_sync", ab_put_ladder_kernel<5>},
                            {"6,library_put", ab_put_ladder_kernel<6>},
                            {"7,bare_loop_translate", ab_put_ladder_kernel<7>},
                            {"8,library_put_one_in_flight", ab_put_ladder_kernel<8>},
                            {"9,bare_loop_translate_far_ld_global", ab_put_ladder_kernel<9>},
                            {"10,bare_loop_translate_const_only", ab_put_ladder_kernel<10>},
                            {"11,library_put_dest_512_aligned", ab_put_ladder_kernel<11>},
                            {"12,session8_copy_put", ab_put_ladder_kernel<12>},
                            {"13,library_put_2_in_flight", ab_put_kernel<2, true>},
                            {"14,library_put_8_in_flight", ab_put_kernel<8, true>},
                            {"15,put_alignment_from_symmetric_address", ab_put_ladder_kernel<15>},
                            {"16,session9_put_translated_alignment", ab_put_ladder_kernel<16>}};
  ab_put_rows(c, sym_a, sym_b, "ladder", rungs);
#else
  (void)c, (void)sym_a, (void)sym_b;
#endif
}

// One block of 512 threads moving the whole message in a loop (the shape of NVSHMEM's perftest
// put/get bandwidth programs): latency-bound, so it shows how many loads a thread keeps in flight.
void bench_one_block(const Ctx& c, char* sym_a, char* sym_b) {
  if (c.npes < 2) return;
  c.rep.progress("device RMA bandwidth, one block of 512 threads");
  const int iters = c.opt.quick ? 200 : 2000;
  for (uint64_t s : {uint64_t{16} << 10, uint64_t{64} << 10, uint64_t{256} << 10}) {
    const Shape one{s, 1, 512};
    for (int put = 1; put >= 0; --put) {
      RmaKernel kern = rma_kernel(kBlock, false, put);
      double gbs = bw_on_pe0(c, s, iters, [&] {
        kern<<<one.grid, one.block, 0, c.g.st>>>(sym_b, sym_a, s, one.chunk, iters, 1);
        CK_LAUNCH();
      });
      c.rep.emit({put ? "put_bw" : "get_bw", "block512,one_block", s, gbs, "GB/s", "", NAN, iters,
                  c.reps});
    }
  }
}

// Host-initiated put/get between GPU buffers (both symmetric), against cudaMemcpy D2D.
void bench_host_bw(const Ctx& c, char* sym_a, char* sym_b, char* priv_a, char* priv_b,
                   uint64_t max) {
  if (c.npes < 2) return;
  std::vector<uint64_t> sizes;
  for (uint64_t s = 8; s <= max; s <<= (c.opt.quick ? 10 : 4)) sizes.push_back(s);
  for (uint64_t s : sizes) {
    const int iters =
        iters_for(s, c.opt.quick ? (64u << 20) : (256u << 20), 1, c.opt.quick ? 50 : 500);
    c.rep.progress("host-API bandwidth on GPU memory %s", size_str(s).c_str());
    Ceilings k = measure_ceilings(c, priv_a, priv_b, s, iters);
    for (int put = 1; put >= 0; --put) {
      // Host calls: timed by the host clock, until the last transfer is complete.
      std::vector<double> samples;
      for (int r = -1; r < c.reps; ++r) {
        S(barrier_all)();
        if (c.me != 0) continue;
        double t0 = now_s();
        for (int i = 0; i < iters; ++i) {
          put ? S(putmem)(sym_b, sym_a, s, 1) : S(getmem)(sym_a, sym_b, s, 1);
        }
        S(quiet)();
        if (r >= 0) samples.push_back((double)s * iters / (now_s() - t0) / 1e9);
      }
      S(barrier_all)();
      double gbs = median(samples);
      c.rep.emit({put ? "host_put_bw" : "host_get_bw", "blocking", s, gbs, "GB/s", "cudaMemcpy_d2d",
                  k.memcpy_gbs, iters, c.reps});
    }
  }
}

// Median of per-iteration times (us) of a kernel on PE 0 timed with events.
template <class F>
double lat_on_pe0(const Ctx& c, int iters, F&& launch) {
  std::vector<double> us;
  for (int r = -1; r < c.reps; ++r) {
    S(barrier_all)();
    if (c.me == 0) {
      CK(cudaEventRecord(c.g.a, c.g.st));
      launch();
      CK_LAUNCH();
      CK(cudaEventRecord(c.g.b, c.g.st));
      double ms = event_ms(c.g);
      if (r >= 0) us.push_back(ms * 1e3 / iters);
    }
  }
  S(barrier_all)();
  return median(us);
}

void bench_p_lat(const Ctx& c, long* var) {
  if (c.npes < 2) return;
  const int iters = c.opt.quick ? 1000 : 20000;
  c.rep.progress("device p / g / fetch_add latency");
  double p = lat_on_pe0(c, iters, [&] { p_lat_kernel<<<1, 1, 0, c.g.st>>>(var, iters, 1); });
  c.rep.emit({"p_lat", "thread", 8, p, "us", "", NAN, iters, c.reps});
  double g = lat_on_pe0(c, iters, [&] {
    g_lat_kernel<<<1, 1, 0, c.g.st>>>(var, iters, 1, reinterpret_cast<long*>(c.g.d_out));
  });
  c.rep.emit({"g_lat", "thread", 8, g, "us", "", NAN, iters, c.reps});
}

// fetch_add latency depends on where the counter is: which L2 slice (near or far partition of the
// H200's L2) its physical address hashes to, a bimodal spread of about 0.15 to 0.30 us for the same
// instructions. One counter gave 0.17 us in one run and 0.29 us in the next, and the medians over
// 16 counters still moved from 0.22 to 0.17 us between two runs (RESULTS runs 22-23), so the
// latency is measured on kLocations counters spread over some MiB of symmetric memory (both
// libraries get the same offsets, not the same physical places): "thread" is the median over the
// locations, "thread,p25"/"thread,p75" the spread, "thread,best"/"thread,worst" the extremes. At
// every location CUDA's atomicAdd chain runs on the same counter through this process's mapping
// of PE 1 (shmem_ptr): "thread,over_atomicAdd" is the median over the locations of the library's
// time divided by the hardware's on that counter, a figure the placement does not move.
void bench_fetch_add_lat(const Ctx& c) {
  const int locations = c.opt.quick ? 8 : 64;
  constexpr size_t kSpacing = (256u << 10) + 4096 + 128;  // across granules, pages and lines
  auto* area = static_cast<char*>(S(malloc)(locations * kSpacing));
  if (area == nullptr) {
    fprintf(stderr, "bench(%s): PE %d: shmem_malloc for the fetch_add counters failed\n", kImpl,
            c.me);
    S(global_exit)(1);
  }
  CK(cudaMemset(area, 0, locations * kSpacing));  // the chains need counters below 2^62
  CK(cudaDeviceSynchronize());
  const int iters = c.opt.quick ? 1000 : 20000;
  std::vector<double> at, raw_at, over, prev_at, far_ld_at, const_at;
  for (int l = 0; l < locations; ++l) {
    auto* ctr = reinterpret_cast<uint64_t*>(area + l * kSpacing);
    at.push_back(lat_on_pe0(
        c, iters, [&] { fetch_add_lat_kernel<<<1, 1, 0, c.g.st>>>(ctr, iters, 1, c.g.d_out); }));
#ifndef VSHMEM_BENCH_NVSHMEM
    if (l < 16) {  // the A/B forms (vshmem only) at the first 16 locations
      prev_at.push_back(lat_on_pe0(c, iters, [&] {
        fetch_add_prev_lat_kernel<<<1, 1, 0, c.g.st>>>(ctr, iters, 1, c.g.d_out);
      }));
      far_ld_at.push_back(lat_on_pe0(c, iters, [&] {
        fetch_add_far_lat_kernel<1><<<1, 1, 0, c.g.st>>>(ctr, iters, 1, c.g.d_out);
      }));
      const_at.push_back(lat_on_pe0(c, iters, [&] {
        fetch_add_far_lat_kernel<2><<<1, 1, 0, c.g.st>>>(ctr, iters, 1, c.g.d_out);
      }));
    }
#endif
    auto* m = static_cast<unsigned long long*>(S(ptr)(ctr, 1));
    raw_at.push_back(lat_on_pe0(c, iters, [&] {
      if (m != nullptr) atomic_add_lat_kernel<false><<<1, 1, 0, c.g.st>>>(m, iters, c.g.d_out);
    }));
    if (m != nullptr && c.me == 0) over.push_back(at.back() / raw_at.back());
  }
  const double indep = lat_on_pe0(c, iters, [&] {
    fetch_add_indep_kernel<<<1, 1, 0, c.g.st>>>(reinterpret_cast<uint64_t*>(area), iters, 1,
                                                c.g.d_out);
  });
  // Diagnostics at the first location: the library's call on this PE's own copy (no window), and
  // CUDA's atomicAdd on PE 1's copy through this process's mapping (shmem_ptr) and on private
  // cudaMalloc memory. They tell the library's instructions from the mapping and the memory.
  auto* ctr0 = reinterpret_cast<uint64_t*>(area);
  const double own = lat_on_pe0(
      c, iters, [&] { fetch_add_lat_kernel<<<1, 1, 0, c.g.st>>>(ctr0, iters, 0, c.g.d_out); });
  auto* mapped = static_cast<unsigned long long*>(S(ptr)(ctr0, 1));
  // lat_on_pe0 is collective: every PE takes part; PE 0 launches only where it has a mapping.
  const double raw_mapped_sys = lat_on_pe0(c, iters, [&] {
    if (mapped != nullptr) {
      atomic_add_lat_kernel<true><<<1, 1, 0, c.g.st>>>(mapped, iters, c.g.d_out);
    }
  });
  unsigned long long* priv = nullptr;
  CK(cudaMalloc(&priv, 64));
  CK(cudaMemset(priv, 0, 64));
  const double raw_private = lat_on_pe0(
      c, iters, [&] { atomic_add_lat_kernel<false><<<1, 1, 0, c.g.st>>>(priv, iters, c.g.d_out); });
  CK(cudaFree(priv));
  S(barrier_all)();
  S(free)(area);
  if (c.me != 0) return;
  auto emit = [&](const char* variant, double v, const char* unit = "us") {
    c.rep.emit({"fetch_add_lat", variant, 8, v, unit, "", NAN, iters, c.reps});
  };
  emit("thread,own_pe", own);
  if (mapped != nullptr) emit("atomicAdd_system,pe1_mapped", raw_mapped_sys);
  emit("atomicAdd,private", raw_private);
  emit("thread", median(at));
  emit("thread,p25", quantile(at, 0.25));
  emit("thread,p75", quantile(at, 0.75));
  emit("thread,best", *std::min_element(at.begin(), at.end()));
  emit("thread,worst", *std::max_element(at.begin(), at.end()));
  if (!prev_at.empty()) {
    emit("thread,session7_form,first16", median(prev_at));
    emit("thread,far_ld_global,first16", median(far_ld_at));
    emit("thread,const_only,first16", median(const_at));
    emit("thread,first16", median(std::vector<double>(at.begin(), at.begin() + prev_at.size())));
  }
  emit("thread,independent", indep);
  if (mapped != nullptr) {
    emit("atomicAdd,pe1_mapped,median", median(raw_at));
    emit("atomicAdd,pe1_mapped,p25", quantile(raw_at, 0.25));
    emit("atomicAdd,pe1_mapped,p75", quantile(raw_at, 0.75));
    emit("atomicAdd,pe1_mapped,best", *std::min_element(raw_at.begin(), raw_at.end()));
    emit("thread,over_atomicAdd", median(over), "x");
    emit("thread,over_atomicAdd,p25", quantile(over, 0.25), "x");
    emit("thread,over_atomicAdd,p75", quantile(over, 0.75), "x");
  }
}

void bench_amo(const Ctx& c, uint64_t* ctr, double* scratch) {
  if (c.npes >= 2) bench_fetch_add_lat(c);
  // Contention: every thread of every PE on PE 0's counter; the total is checked.
  c.rep.progress("device atomics under contention");
  const unsigned blocks = 4, threads = 256;
  const int iters = c.opt.quick ? 10 : 100;
  // Our own copy of a symmetric object is ordinary device memory at the same address.
  CK(cudaMemset(ctr, 0, sizeof(*ctr)));
  CK(cudaDeviceSynchronize());
  S(barrier_all)();
  uint64_t expected = 0;
  for (int fetch = 1; fetch >= 0; --fetch) {
    std::vector<double> rates;
    for (int r = -1; r < c.reps; ++r) {
      S(barrier_all)();
      CK(cudaEventRecord(c.g.a, c.g.st));
      if (fetch) {
        amo_contention_kernel<true><<<blocks, threads, 0, c.g.st>>>(ctr, iters, c.g.d_out);
      } else {
        amo_contention_kernel<false><<<blocks, threads, 0, c.g.st>>>(ctr, iters, c.g.d_out);
      }
      CK_LAUNCH();
      CK(cudaEventRecord(c.g.b, c.g.st));
      double worst_ms = max_over_pes(c, scratch, event_ms(c.g));
      expected += (uint64_t)blocks * threads * iters * c.npes;
      if (r >= 0) rates.push_back((double)blocks * threads * iters * c.npes / (worst_ms * 1e3));
    }
    c.rep.emit({fetch ? "fetch_add_rate" : "add_rate", "all_pes_to_pe0", 8, median(rates), "Mops/s",
                "", NAN, iters, c.reps});
  }
  S(barrier_all)();
  if (c.me == 0) {
    uint64_t got = 0;
    CK(cudaMemcpy(&got, ctr, sizeof(got), cudaMemcpyDeviceToHost));
    if (got != expected) {
      fprintf(stderr, "bench(%s): atomic contention: counter %llu, expected %llu\n", kImpl,
              (unsigned long long)got, (unsigned long long)expected);
      S(global_exit)(1);
    }
  }
  S(barrier_all)();
}

void bench_pingpong(const Ctx& c, long* flag, uint64_t* sig, char* data, const char* src) {
  if (c.npes < 2) return;
  c.rep.progress("device ping-pong (p, put_signal)");
  const int iters = c.opt.quick ? 1000 : 10000;
  long seq = 0;
  uint64_t sseq = 0;
  for (int kind = 0; kind < 2; ++kind) {
    std::vector<double> us;
    for (int r = -1; r < c.reps; ++r) {
      S(barrier_all)();
      if (c.me < 2) {
        if (kind == 0) {
          pingpong_p_kernel<<<1, 1, 0, c.g.st>>>(flag, iters, c.me, seq, c.g.d_out);
        } else {
          pingpong_signal_kernel<<<1, 1, 0, c.g.st>>>(data, src, 8, sig, iters, c.me, sseq,
                                                      c.g.d_out);
        }
        CK_LAUNCH();
        CK(cudaStreamSynchronize(c.g.st));
        if (r >= 0) us.push_back((double)read_out(c.g) / 1e3 / iters / 2);
      }
      seq += iters + 1;
      sseq += iters + 1;
    }
    c.rep.emit({"pingpong_lat", kind == 0 ? "p" : "put_signal", 8, median(us), "us", "", NAN, iters,
                c.reps});
  }
  S(barrier_all)();
}

// Launches a kernel on every PE with SX(collective_launch): the kernels wait on each other.
void collective(const Ctx& c, const void* fn, unsigned threads, void** args) {
  int rc = SX(collective_launch)(fn, dim3(1), dim3(threads), args, 0, c.g.st);
  if (rc != 0) {
    fprintf(stderr, "bench(%s): PE %d: collective launch failed (%d)\n", kImpl, c.me, rc);
    S(global_exit)(1);
  }
  CK(cudaStreamSynchronize(c.g.st));
}

void bench_barrier(const Ctx& c) {
  c.rep.progress("device barrier_all");
  const int iters = c.opt.quick ? 200 : 5000;
  for (int scope : {kThread, kWarp, kBlock}) {
    std::vector<double> us;
    for (int r = -1; r < c.reps; ++r) {
      S(barrier_all)();
      int sc = scope, it = iters;
      uint64_t* out = c.g.d_out;
      void* args[] = {&sc, &it, &out};
      collective(c, (const void*)barrier_kernel, 128, args);
      if (r >= 0) us.push_back((double)read_out(c.g) / 1e3 / iters);
    }
    c.rep.emit({"barrier_all_lat", kScopeName[scope], 0, median(us), "us", "", NAN, iters, c.reps});
  }
}

// The "ab" group (vshmem only): each variant next to the default it would replace, in one run.
void bench_ab(const Ctx& c, char* sym_a, char* sym_b) {
#ifndef VSHMEM_BENCH_NVSHMEM
  if (c.npes < 2) return;
  c.rep.progress("A/B: block put, words in flight and the aligned path");
  const AbPutRow puts[] = {{"u4,general", ab_put_kernel<4, false>},
                           {"u8,general", ab_put_kernel<8, false>},
                           {"u4,aligned", ab_put_kernel<4, true>},
                           {"u8,aligned", ab_put_kernel<8, true>},
                           {"u2,aligned", ab_put_kernel<2, true>},
                           {"plain_loop,not_library", ab_put_plain_kernel},
                           {"plain_loop_ldg,not_library", ab_put_plain_ldg_kernel<false>},
                           {"plain_loop_ldg_stg,not_library", ab_put_plain_ldg_kernel<true>}};
  ab_put_rows(c, sym_a, sym_b, "one_block", puts);
  c.rep.progress("A/B: counting and central barriers");
  const int bar_iters = c.opt.quick ? 200 : 5000;
  using vshmem::device::BarrierKind;
  const struct {
    const char* name;
    const void* kernel;
  } kinds[] = {{"flags", (const void*)ab_barrier_kernel<BarrierKind::kFlags>},
               {"counter", (const void*)ab_barrier_kernel<BarrierKind::kCounter>},
               {"central", (const void*)ab_barrier_kernel<BarrierKind::kCentral>}};
  // Two rounds over the kinds, so that a slow stretch of the machine shows as a difference
  // between rounds rather than between kinds.
  for (int round = 0; round < 2; ++round) {
    for (const auto& k : kinds) {
      for (int scope : {kThread, kWarp, kBlock}) {
        std::vector<double> us;
        for (int r = -1; r < c.reps; ++r) {
          S(barrier_all)();
          int sc = scope, it = bar_iters;
          uint64_t* out = c.g.d_out;
          void* args[] = {&sc, &it, &out};
          collective(c, k.kernel, 128, args);
          if (r >= 0) us.push_back((double)read_out(c.g) / 1e3 / bar_iters);
        }
        c.rep.emit({"barrier_all_lat",
                    std::string(kScopeName[scope]) + "," + k.name + (round ? ",2" : ""), 0,
                    median(us), "us", "", NAN, bar_iters, c.reps});
      }
    }
  }
  c.rep.progress("A/B: the parts of a thread-form barrier");
  {
    static const char* const kParts[] = {"fence_sc",     "fence_acq_rel",  "volatile_rmw",
                                         "add_and_poll", "7_stores_fence", "7_loads_fence"};
    uint64_t* word = reinterpret_cast<uint64_t*>(sym_a);
    for (int what = 0; what < 6; ++what) {
      std::vector<double> us;
      for (int r = -1; r < c.reps; ++r) {
        S(barrier_all)();
        if (c.me == 0) {
          CK(cudaMemset(word, 0, 1024));
          ab_parts_kernel<<<1, 32, 0, c.g.st>>>(what, bar_iters, word, c.g.d_out);
          CK_LAUNCH();
          CK(cudaStreamSynchronize(c.g.st));
          if (r >= 0) us.push_back((double)read_out(c.g) / 1e3 / bar_iters);
        }
      }
      S(barrier_all)();
      if (c.me == 0) {
        c.rep.emit(
            {"barrier_part_lat", kParts[what], 0, median(us), "us", "", NAN, bar_iters, c.reps});
      }
    }
  }
  c.rep.progress("A/B: alltoall, one member after another");
  const int a2a_iters = c.opt.quick ? 50 : 1000;
  team_t team = world_team();
  for (uint64_t s : {uint64_t{8}, uint64_t{512}, uint64_t{4} << 10, uint64_t{32} << 10}) {
    std::vector<double> us;
    for (int r = -1; r < c.reps; ++r) {
      S(barrier_all)();
      size_t bytes = s;
      int it = a2a_iters;
      uint64_t* out = c.g.d_out;
      void* args[] = {&team, &sym_b, &sym_a, &bytes, &it, &out};
      collective(c, (const void*)ab_alltoall_serial_kernel, 256, args);
      if (r >= 0) us.push_back((double)read_out(c.g) / 1e3 / a2a_iters);
    }
    c.rep.emit({"alltoall_lat", "block,serial", s, median(us), "us", "", NAN, a2a_iters, c.reps});
  }
#else
  (void)c, (void)sym_a, (void)sym_b;
#endif
}

void bench_coll(const Ctx& c, char* a, char* b, uint64_t max_per_pe) {
  c.rep.progress("device alltoall / reduce / broadcast");
  const int iters = c.opt.quick ? 50 : 1000;
  team_t team = world_team();
  for (uint64_t s = 8; s <= max_per_pe; s <<= (c.opt.quick ? 7 : 3)) {
    for (int kind = 0; kind < 2; ++kind) {
      std::vector<double> us;
      for (int r = -1; r < c.reps; ++r) {
        S(barrier_all)();
        size_t bytes = s, n = s / sizeof(long);
        int it = iters;
        uint64_t* out = c.g.d_out;
        if (kind == 0) {
          void* args[] = {&team, &b, &a, &bytes, &it, &out};
          collective(c, (const void*)alltoall_kernel, 256, args);
        } else {
          void* args[] = {&team, &b, &a, &n, &it, &out};
          collective(c, (const void*)reduce_kernel, 256, args);
        }
        if (r >= 0) us.push_back((double)read_out(c.g) / 1e3 / iters);
      }
      c.rep.emit({kind == 0 ? "alltoall_lat" : "reduce_lat", kind == 0 ? "block" : "block,long_sum",
                  s, median(us), "us", "", NAN, iters, c.reps});
    }
    for (int scope : {kThread, kWarp, kBlock}) {
      std::vector<double> us;
      for (int r = -1; r < c.reps; ++r) {
        S(barrier_all)();
        size_t bytes = s;
        int sc = scope, it = iters;
        uint64_t* out = c.g.d_out;
        void* args[] = {&sc, &team, &b, &a, &bytes, &it, &out};
        collective(c, (const void*)broadcast_kernel, 256, args);
        if (r >= 0) us.push_back((double)read_out(c.g) / 1e3 / iters);
      }
      c.rep.emit({"broadcast_lat", kScopeName[scope], s, median(us), "us", "", NAN, iters, c.reps});
    }
  }
}

// Host thread enqueuing calls on a stream: the time per call until the stream has run them.
void bench_on_stream(const Ctx& c, char* a, char* b) {
  c.rep.progress("on-stream calls");
  const int iters = c.opt.quick ? 100 : 2000;
  if (c.npes >= 2) {
    std::vector<double> us;
    for (int r = -1; r < c.reps; ++r) {
      S(barrier_all)();
      if (c.me == 0) {
        double t0 = now_s();
        for (int i = 0; i < iters; ++i) SX(putmem_on_stream)(b, a, 8, 1, c.g.st);
        CK(cudaStreamSynchronize(c.g.st));
        if (r >= 0) us.push_back((now_s() - t0) * 1e6 / iters);
      }
    }
    c.rep.emit({"on_stream_lat", "putmem", 8, median(us), "us", "", NAN, iters, c.reps});
  }
  std::vector<double> us;
  for (int r = -1; r < c.reps; ++r) {
    S(barrier_all)();
    double t0 = now_s();
    for (int i = 0; i < iters; ++i) SX(barrier_all_on_stream)(c.g.st);
    CK(cudaStreamSynchronize(c.g.st));
    if (r >= 0) us.push_back((now_s() - t0) * 1e6 / iters);
  }
  c.rep.emit({"on_stream_lat", "barrier_all", 0, median(us), "us", "", NAN, iters, c.reps});
  S(barrier_all)();
}

// bf16 sum reduce and reduce-scatter on a stream (issue #16's comparison with NVSHMEM): calls
// enqueued back to back (200, fewer for large sizes), then one synchronize; the time per call and
// the bytes of one PE's result per microsecond, against the ceiling of a cudaMemcpyAsync
// device-to-device of the same size that every PE runs at the same time on the same stream (the
// PEs share the GPU's memory bandwidth as the reductions do). a holds the sources (npes blocks for
// the reduce-scatter), b the results.
void bench_bf16(const Ctx& c, char* a, char* b, uint64_t max_per_pe) {
  c.rep.progress("bf16 reduce / reducescatter on stream");
  team_t team = world_team();
  auto* src = reinterpret_cast<__nv_bfloat16*>(a);
  auto* dst = reinterpret_cast<__nv_bfloat16*>(b);
  for (uint64_t s = 4096; s <= max_per_pe; s <<= (c.opt.quick ? 4 : 2)) {
    const size_t n = s / sizeof(__nv_bfloat16);
    const uint64_t budget = c.opt.quick ? (256u << 20) : (4ull << 30);
    const int cap = c.opt.quick ? 20 : 200;
    const int iters = static_cast<int>(std::max<uint64_t>(3, std::min<uint64_t>(cap, budget / s)));
    std::vector<double> copy_us;
    for (int r = -1; r < c.reps; ++r) {
      S(barrier_all)();
      double t0 = now_s();
      for (int i = 0; i < iters; ++i) {
        CK(cudaMemcpyAsync(dst, src, s, cudaMemcpyDeviceToDevice, c.g.st));
      }
      CK(cudaStreamSynchronize(c.g.st));
      if (r >= 0) copy_us.push_back((now_s() - t0) * 1e6 / iters);
    }
    const double copy_gbs = (double)s / median(copy_us) / 1e3;
    for (int kind = 0; kind < 2; ++kind) {
      std::vector<double> us;
      for (int r = -1; r < c.reps; ++r) {
        S(barrier_all)();
        double t0 = now_s();
        for (int i = 0; i < iters; ++i) {
          int rc = kind == 0 ? SX(bfloat16_sum_reduce_on_stream)(team, dst, src, n, c.g.st)
                             : SX(bfloat16_sum_reducescatter_on_stream)(team, dst, src, n, c.g.st);
          if (rc != 0) {
            fprintf(stderr, "bench(%s): PE %d: bf16 %s on stream failed\n", kImpl, c.me,
                    kind == 0 ? "reduce" : "reducescatter");
            S(global_exit)(1);
          }
        }
        CK(cudaStreamSynchronize(c.g.st));
        if (r >= 0) us.push_back((now_s() - t0) * 1e6 / iters);
      }
      const double t = median(us);
      const char* name = kind == 0 ? "bf16_reduce_on_stream" : "bf16_reducescatter_on_stream";
      c.rep.emit({name, "sum", s, t, "us", "", NAN, iters, c.reps});
      c.rep.emit({name, "sum,result_bw", s, (double)s / t / 1e3, "GB/s", "cudaMemcpyAsync_d2d",
                  copy_gbs, iters, c.reps});
    }
  }
  S(barrier_all)();
}

void bench_malloc(const Ctx& c) {
  c.rep.progress("shmem_malloc");
  const int n = c.opt.quick ? 20 : 200;
  std::vector<void*> ptrs(n);
  std::vector<double> t(n);
  for (int i = 0; i < n; ++i) {
    double t0 = now_s();
    ptrs[i] = S(malloc)(4096);
    t[i] = now_s() - t0;
  }
  for (int i = n - 1; i >= 0; --i) S(free)(ptrs[i]);
  c.rep.emit({"malloc", "no_growth", 4096, median(t) * 1e6, "us", "", NAN, n, 1});
  // Each allocation needs memory beyond what is committed: the heap grows every time.
  const uint64_t grow = 256ull << 20;
  const int steps = c.opt.quick ? 1 : 3;
  std::vector<void*> big;
  t.clear();
  for (int i = 0; i < steps; ++i) {
    double t0 = now_s();
    void* p = S(malloc)(grow);
    t.push_back(now_s() - t0);
    if (!p) {
      c.rep.progress("malloc growth: allocation of %s failed", size_str(grow).c_str());
      t.pop_back();
      break;
    }
    big.push_back(p);
  }
  if (!t.empty()) {
    c.rep.emit({"malloc", "with_growth", grow, median(t) * 1e3, "ms", "", NAN, (int)t.size(), 1});
  }
  for (auto it = big.rbegin(); it != big.rend(); ++it) S(free)(*it);
}

int pick_device() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return -1;
  for (const char* var : {"VSHMEM_DEVICE", "VSHMEM_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const char* v = getenv(var);
    if (v && *v) return atoi(v) % n;
  }
  return 0;
}

}  // namespace
}  // namespace vshmem::bench

int main(int argc, char** argv) {
  using namespace vshmem::bench;
  Options opt = parse_options(argc, argv, kGroups);
#ifdef VSHMEM_BENCH_NVSHMEM
  MPI_Init(&argc, &argv);
#endif
  // The CUDA context exists before the clock starts, for both libraries: shmem_init is timed,
  // not the driver's start-up. A second figure starts the clock before the context is made
  // (after MPI_Init for NVSHMEM, which vshmem does not need): the start-up a user waits for.
  double t_start = wall_now();
  int dev = pick_device();
  if (dev < 0) {
    fprintf(stderr, "bench(%s): no usable GPU\n", kImpl);
    return 77;
  }
  if (cudaSetDevice(dev) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    fprintf(stderr, "bench(%s): cannot start a context on GPU %d\n", kImpl, dev);
    return 1;
  }
#ifdef VSHMEM_BENCH_NVSHMEM
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Barrier(MPI_COMM_WORLD);
  double t_in = wall_now();
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) nvshmemx_get_uniqueid(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
#else
  double t_in = wall_now();
  shmem_init();
#endif
  double t_out = wall_now();
  const int me = S(my_pe)(), npes = S(n_pes)();
  Reporter rep(opt, "gpu", kImpl, me, npes);
  opt.tags.emplace_back("backend", "cuda");
  Gpu g;
  CK(cudaDeviceGetAttribute(&g.sms, cudaDevAttrMultiProcessorCount, dev));
  g.dev = dev;
  CK(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
  CK(cudaEventCreate(&g.a));
  CK(cudaEventCreate(&g.b));
  CK(cudaMalloc(&g.d_out, 64));
  Ctx c{opt, rep, g, me, npes, opt.reps ? opt.reps : (opt.quick ? 2 : 3)};

  auto* scratch = static_cast<double*>(S(malloc)(sizeof(double) * 2 * npes));
  // PE 1's GPU, known to every PE: the peer ceiling below is measured collectively.
  g.peer_dev = npes > 1 ? static_cast<int>(gather(c, scratch, dev)[1]) : dev;
  if (me == 0 && g.peer_dev != dev) {
    // cudaMemcpyPeer over NVLink needs peer access (the ceiling); "already enabled" is fine.
    cudaError_t e = cudaDeviceEnablePeerAccess(g.peer_dev, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
    cudaGetLastError();
  }
  if (opt.wants("init")) {
    // From the last PE entering to the last PE leaving (one clock on one node): start-up skew
    // between the processes is not counted.
    double last_in = max_over_pes(c, scratch, t_in);
    double last_out = max_over_pes(c, scratch, t_out);
    rep.emit({"init", "last_in_to_last_out", 0, (last_out - last_in) * 1e3, "ms", "", NAN, 1, 1});
    double last_start = max_over_pes(c, scratch, t_start);
    rep.emit({"init", "with_context", 0, (last_out - last_start) * 1e3, "ms", "", NAN, 1, 1});
  }
  if (opt.wants("malloc")) bench_malloc(c);

  const uint64_t max = opt.max_bytes ? opt.max_bytes : (opt.quick ? (64u << 20) : (1u << 30));
  const bool need_big = opt.wants("rma_bw") || opt.wants("host_bw") || opt.wants("bf16");
  const uint64_t sym_bytes = need_big ? max : (1u << 20);
  auto* sym_a = static_cast<char*>(S(malloc)(sym_bytes));
  auto* sym_b = static_cast<char*>(S(malloc)(sym_bytes));
  auto* small = static_cast<char*>(S(malloc)(4096));
  if (!sym_a || !sym_b || !small || !scratch) {
    fprintf(stderr, "bench(%s): PE %d: symmetric allocation of 2 x %s failed\n", kImpl, me,
            size_str(sym_bytes).c_str());
    S(global_exit)(1);
  }
  fill_device(sym_a, sym_bytes, 100 + me);
  fill_device(sym_b, sym_bytes, 200 + me);
  CK(cudaMemset(small, 0, 4096));  // flags and counters start at zero
  char *priv_a = nullptr, *priv_b = nullptr;
  if (need_big && me == 0) {
    CK(cudaMalloc(&priv_a, max));
    CK(cudaMalloc(&priv_b, max));
    fill_device(priv_a, max, 300);
  }
  CK(cudaDeviceSynchronize());
  S(barrier_all)();

  long* flag = reinterpret_cast<long*>(small);
  uint64_t* sig = reinterpret_cast<uint64_t*>(small + 64);
  uint64_t* ctr = reinterpret_cast<uint64_t*>(small + 128);
  long* var = reinterpret_cast<long*>(small + 192);
  char* data = small + 256;

  if (opt.wants("rma_bw")) bench_rma_bw(c, sym_a, sym_b, priv_a, priv_b, max);
  if (opt.wants("rma_bw") || opt.wants("one_block")) bench_one_block(c, sym_a, sym_b);
  if (opt.wants("host_bw")) bench_host_bw(c, sym_a, sym_b, priv_a, priv_b, max);
  if (opt.wants("p_lat")) bench_p_lat(c, var);
  if (opt.wants("pingpong")) bench_pingpong(c, flag, sig, data, sym_a);
  if (opt.wants("ab")) bench_ab(c, sym_a, sym_b);
  if (opt.wants("ab_put")) bench_ab_put(c, sym_a, sym_b);
  if (opt.wants("amo")) bench_amo(c, ctr, scratch);
  if (opt.wants("barrier")) bench_barrier(c);
  if (opt.wants("coll")) {
    const uint64_t per_pe = std::min<uint64_t>(sym_bytes / npes, opt.quick ? 1024 : (64u << 10));
    bench_coll(c, sym_a, sym_b, per_pe);
  }
  if (opt.wants("on_stream")) bench_on_stream(c, sym_a, sym_b);
  if (opt.wants("bf16")) {
    const uint64_t per_pe =
        std::min<uint64_t>(sym_bytes / npes, opt.quick ? (1u << 20) : (256u << 20));
    bench_bf16(c, sym_a, sym_b, per_pe);
  }

  S(barrier_all)();
  if (priv_a) CK(cudaFree(priv_a));
  if (priv_b) CK(cudaFree(priv_b));
  S(free)(small);
  S(free)(sym_b);
  S(free)(sym_a);
  S(free)(scratch);
  S(finalize)();
#ifdef VSHMEM_BENCH_NVSHMEM
  MPI_Finalize();
#endif
  return 0;
}
