// Where the device fetch_add's latency goes (issue #6; bench/RESULTS.md, runs 6-8): one process,
// one GPU, no shmem_init. A single thread runs a dependent chain of fetch-and-adds (each address
// depends on the value the previous one returned) through:
//   - CUDA's atomicAdd (the hardware's figure),
//   - the bare PTX atom the library issues, with and without the "memory" clobber,
//   - the same with the library's run-time scope choice, then with a PE check and a debug check
//     calling a function that may return (the shape of the library's checks before they became
//     one noreturn branch: each costs a convergence barrier on the hot path),
//   - the library's own shmem_uint64_atomic_fetch_add, on a device state written here (heap and
//     one peer window slot in one cudaMalloc buffer), to its own PE and to the peer, at .gpu and
//     at .sys scope (built like the benchmarks: VSHMEM_DEVICE_DEBUG=0, no address checks).
// Each figure is the median of 5 timings of 20000 operations, in microseconds per operation.
//   build/bench/vshmem_amo_path
#include <cuda_runtime.h>
#include <shmem.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vshmem/device/impl/state.cuh"

#define CK(expr)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (expr);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "amo_path: %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(e_));                                        \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

namespace {

constexpr int kIters = 20000;
constexpr size_t kHalf = 2u << 20;  // heap size S; the peer's window slot follows the heap

__constant__ int c_sys_scope;  // the emulated scope choice
__constant__ int c_n_pes;
__constant__ int c_debug;

__device__ __noinline__ void fail() { __trap(); }

enum Kind { kAtomicAdd, kAsmClobber, kAsmNoClobber, kAsmScoped, kAsmScopedChecks, kLibrary };

__device__ __forceinline__ unsigned long long asm_add(unsigned long long* p, bool clobber) {
  unsigned long long r;
  const uint64_t g = static_cast<uint64_t>(__cvta_generic_to_global(p));
  if (clobber) {
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], 1;" : "=l"(r) : "l"(g) : "memory");
  } else {
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], 1;" : "=l"(r) : "l"(g));
  }
  return r;
}

__device__ __forceinline__ unsigned long long scoped_add(unsigned long long* p) {
  unsigned long long r;
  const uint64_t g = static_cast<uint64_t>(__cvta_generic_to_global(p));
  if (c_sys_scope) {
    asm volatile("atom.relaxed.sys.global.add.u64 %0, [%1], 1;" : "=l"(r) : "l"(g) : "memory");
  } else {
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], 1;" : "=l"(r) : "l"(g) : "memory");
  }
  return r;
}

template <Kind K>
__global__ void chain(unsigned long long* ctr, int pe, unsigned long long* out) {
  unsigned long long acc = 0, v = 0;
  for (int i = 0; i < kIters; ++i) {
    unsigned long long* p = ctr + (v >> 62);
    if (K == kAtomicAdd) {
      v = atomicAdd(p, 1ull);
    } else if (K == kAsmClobber) {
      v = asm_add(p, true);
    } else if (K == kAsmNoClobber) {
      v = asm_add(p, false);
    } else if (K == kAsmScoped) {
      v = scoped_add(p);
    } else if (K == kAsmScopedChecks) {
      if (static_cast<unsigned>(pe) >= static_cast<unsigned>(c_n_pes)) fail();
      if (c_debug && (reinterpret_cast<uintptr_t>(p) & 7) != 0) fail();
      v = scoped_add(p);
    } else {
      v = shmem_uint64_atomic_fetch_add(reinterpret_cast<uint64_t*>(p), 1, pe);
    }
    acc += v;
  }
  *out = acc;
}

template <Kind K>
double time_us(unsigned long long* ctr, int pe, unsigned long long* out) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> us;
  for (int r = -1; r < 5; ++r) {
    CK(cudaEventRecord(a));
    chain<K><<<1, 1>>>(ctr, pe, out);
    CK(cudaGetLastError());
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 0) us.push_back(ms * 1e3 / kIters);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// The library's device state for a two-PE job whose heap is buf[0, S) and whose peer (PE 1) is
// reached through window slot 0 at buf[S, 2S).
void set_state(char* buf, int64_t* deltas, bool sys_scope) {
  vshmem::device::GpuState st{};
  st.heap_base = reinterpret_cast<uint64_t>(buf);
  st.heap_size = kHalf;
  st.heap_committed = kHalf;
  st.window_base = reinterpret_cast<uint64_t>(buf) + kHalf;
  st.sync_base = st.heap_base;
  st.peer_delta = deltas;
  st.my_pe = 0;
  st.n_pes = 2;
  st.initialized = 1;
  st.gpu_scope = sys_scope ? 0 : 1;
  for (int p = 0; p < vshmem::device::kInlinePeers; ++p) {
    st.inline_delta[p] = vshmem::device::kUnmappedDelta;
  }
  st.inline_delta[0] = 0;
  st.inline_delta[1] = static_cast<int64_t>(kHalf);  // slot 0 of the window: W - H
  CK(cudaMemcpyToSymbol(vshmemi_device_state, &st, sizeof(st)));
  const int sys = sys_scope ? 1 : 0, n = 2, dbg = 0;
  CK(cudaMemcpyToSymbol(c_sys_scope, &sys, sizeof(sys)));
  CK(cudaMemcpyToSymbol(c_n_pes, &n, sizeof(n)));
  CK(cudaMemcpyToSymbol(c_debug, &dbg, sizeof(dbg)));
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("amo_path: no CUDA device: skipped\n");
    return 0;
  }
  char* buf = nullptr;
  int64_t* deltas = nullptr;
  unsigned long long* out = nullptr;
  CK(cudaMalloc(&buf, 2 * kHalf));
  CK(cudaMemset(buf, 0, 2 * kHalf));
  CK(cudaMalloc(&deltas, 2 * sizeof(int64_t)));
  const int64_t host_deltas[2] = {0, static_cast<int64_t>(kHalf)};
  CK(cudaMemcpy(deltas, host_deltas, sizeof(host_deltas), cudaMemcpyHostToDevice));
  CK(cudaMalloc(&out, sizeof(*out)));
  auto* ctr = reinterpret_cast<unsigned long long*>(buf);
  auto* peer_copy = reinterpret_cast<unsigned long long*>(buf + kHalf);

  auto row = [](const std::string& what, double us) {
    std::printf("%-58s %8.3f\n", what.c_str(), us);
  };
  std::printf("%-58s %8s\n", "fetch-and-add chain, 1 thread (us per operation)", "us");
  set_state(buf, deltas, false);
  row("atomicAdd", time_us<kAtomicAdd>(peer_copy, 1, out));
  row("atomicAdd, own PE's address", time_us<kAtomicAdd>(ctr, 0, out));
  row("asm atom.gpu, memory clobber", time_us<kAsmClobber>(peer_copy, 1, out));
  row("asm atom.gpu, no clobber", time_us<kAsmNoClobber>(peer_copy, 1, out));
  for (int sys = 0; sys <= 1; ++sys) {
    set_state(buf, deltas, sys != 0);
    const std::string tag = std::string(" [") + (sys ? "sys" : "gpu") + " scope]";
    row("asm atom, scope chosen at run time" + tag, time_us<kAsmScoped>(peer_copy, 1, out));
    row("... plus returning PE and debug checks" + tag,
        time_us<kAsmScopedChecks>(peer_copy, 1, out));
    row("library, own PE" + tag, time_us<kLibrary>(ctr, 0, out));
    row("library, peer (window slot)" + tag, time_us<kLibrary>(ctr, 1, out));
  }
  CK(cudaFree(out));
  CK(cudaFree(deltas));
  CK(cudaFree(buf));
  return 0;
}
