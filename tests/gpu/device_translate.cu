// The device calls' address translation (impl/state.cuh: peer_ptr, shmem_ptr) on a device state
// written by this test, one process, no shmem_init: a 70-PE job seen from PE 3, so that both the
// constant-memory deltas (PEs below kInlinePeers) and the global table (PEs 64 and up) are used,
// with mapped and unmapped peers of each kind; and shmemx_mc_ptr's arithmetic with multicast off
// and with a made-up multicast base (nothing is dereferenced through it). The "heap" and two window
// slots lie in one cudaMalloc buffer: heap [0, S), slot 0 (PE 1) [S, 2S), slot 1 (PE 65) [2S, 3S).
//   device_translate             the checks below
//   device_translate bad_pe P    shmem_int_p to PE P (unmapped or invalid): must trap naming P
#include <cuda_runtime.h>
#include <shmem.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "vshmem/device/impl/state.cuh"

namespace {

using vshmem::device::kInlinePeers;
using vshmem::device::kUnmappedDelta;

constexpr uint64_t kS = 2u << 20;
constexpr int kPes = 70, kMe = 3;
constexpr int kPeSlot0 = 1, kPeSlot1 = 65;  // mapped peers: window slots 0 and 1
constexpr int kOffset = 4096;               // the symmetric int used: heap + kOffset

#define CK(expr)                                                                           \
  do {                                                                                     \
    cudaError_t e_ = (expr);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "device_translate: %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(e_));                                                \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

int failures = 0;
#define EXPECT(cond, ...)                                                               \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "device_translate:%d: check failed: %s: ", __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                \
      std::fprintf(stderr, "\n");                                                       \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

// What device code answers for each PE 0..kPes (kPes itself is invalid): shmem_ptr's result.
__global__ void ptrs(const int* sym, void** out) {
  for (int pe = 0; pe <= kPes; ++pe) out[pe] = shmem_ptr(sym, pe);
}

// RMA and atomics through the translation: p to each mapped PE (own included), then g and a
// fetch_add from each.
__global__ void rma(int* sym, int* got, long long* fetched, long long* counter) {
  const int pes[3] = {kMe, kPeSlot0, kPeSlot1};
  for (int i = 0; i < 3; ++i) shmem_int_p(sym, 100 + pes[i], pes[i]);
  shmem_quiet();
  for (int i = 0; i < 3; ++i) {
    got[i] = shmem_int_g(sym, pes[i]);
    fetched[i] = shmem_longlong_atomic_fetch_add(counter, 1000 + pes[i], pes[i]);
  }
}

__global__ void put_to_bad_pe(int* sym, int pe) { shmem_int_p(sym, 1, pe); }

// shmemx_mc_ptr's answers (only the arithmetic: no multicast object exists here and nothing is
// dereferenced): for the world, past the committed heap, and for SHMEM_TEAM_INVALID.
__global__ void mc_ptrs(const int* sym, void** out) {
  out[0] = shmemx_mc_ptr(SHMEM_TEAM_WORLD, sym);
  out[1] = shmemx_mc_ptr(SHMEM_TEAM_WORLD, reinterpret_cast<const char*>(sym) - kOffset + kS);
  out[2] = shmemx_mc_ptr(SHMEM_TEAM_INVALID, sym);
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  char* buf = nullptr;
  CK(cudaMalloc(&buf, 3 * kS));
  CK(cudaMemset(buf, 0, 3 * kS));
  const uint64_t heap = reinterpret_cast<uint64_t>(buf);
  std::vector<int64_t> delta(kPes, kUnmappedDelta);
  delta[kMe] = 0;
  delta[kPeSlot0] = static_cast<int64_t>(kS);      // W + 0 * S - H
  delta[kPeSlot1] = static_cast<int64_t>(2 * kS);  // W + 1 * S - H
  int64_t* table = nullptr;
  CK(cudaMalloc(&table, kPes * sizeof(int64_t)));
  CK(cudaMemcpy(table, delta.data(), kPes * sizeof(int64_t), cudaMemcpyHostToDevice));

  vshmem::device::GpuState st{};
  st.heap_base = heap;
  st.heap_size = kS;
  st.heap_committed = kS;
  st.window_base = heap + kS;
  st.sync_base = heap;
  st.peer_delta = table;
  st.my_pe = kMe;
  st.n_pes = kPes;
  st.initialized = 1;
  st.gpu_scope = 1;
  for (int p = 0; p < kInlinePeers; ++p) st.inline_delta[p] = delta[p];
  CK(cudaMemcpyToSymbol(vshmemi_device_state, &st, sizeof(st)));

  int* sym = reinterpret_cast<int*>(buf + kOffset);
  if (argc > 2 && std::strcmp(argv[1], "bad_pe") == 0) {
    put_to_bad_pe<<<1, 1>>>(sym, std::atoi(argv[2]));
    const cudaError_t e = cudaDeviceSynchronize();
    std::fprintf(stderr, "device_translate: kernel ended with: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 3;  // the trap is the expected outcome
  }

  void** d_ptrs = nullptr;
  CK(cudaMalloc(&d_ptrs, (kPes + 1) * sizeof(void*)));
  ptrs<<<1, 1>>>(sym, d_ptrs);
  CK(cudaGetLastError());
  std::vector<void*> got_ptrs(kPes + 1);
  CK(cudaMemcpy(got_ptrs.data(), d_ptrs, got_ptrs.size() * sizeof(void*), cudaMemcpyDeviceToHost));
  for (int pe = 0; pe <= kPes; ++pe) {
    void* want = nullptr;
    if (pe < kPes && delta[pe] != kUnmappedDelta) {
      want = buf + kOffset + delta[pe];
    }
    EXPECT(got_ptrs[pe] == want, "shmem_ptr(sym, %d) = %p, expected %p", pe, got_ptrs[pe], want);
  }

  int* d_got = nullptr;
  long long* d_fetched = nullptr;
  CK(cudaMalloc(&d_got, 3 * sizeof(int)));
  CK(cudaMalloc(&d_fetched, 3 * sizeof(long long)));
  auto* counter = reinterpret_cast<long long*>(buf + 2 * kOffset);
  rma<<<1, 1>>>(sym, d_got, d_fetched, counter);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  int got[3];
  long long fetched[3];
  CK(cudaMemcpy(got, d_got, sizeof(got), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(fetched, d_fetched, sizeof(fetched), cudaMemcpyDeviceToHost));
  const int pes[3] = {kMe, kPeSlot0, kPeSlot1};
  const uint64_t region[3] = {0, kS, 2 * kS};  // where each PE's copy lies in buf
  for (int i = 0; i < 3; ++i) {
    int in_memory = 0;
    long long count_in_memory = 0;
    CK(cudaMemcpy(&in_memory, buf + region[i] + kOffset, sizeof(int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&count_in_memory, buf + region[i] + 2 * kOffset, sizeof(long long),
                  cudaMemcpyDeviceToHost));
    EXPECT(in_memory == 100 + pes[i], "PE %d's copy holds %d after shmem_int_p of %d", pes[i],
           in_memory, 100 + pes[i]);
    EXPECT(got[i] == 100 + pes[i], "shmem_int_g from PE %d returned %d", pes[i], got[i]);
    EXPECT(fetched[i] == 0, "fetch_add on PE %d fetched %lld, expected 0", pes[i], fetched[i]);
    EXPECT(count_in_memory == 1000 + pes[i], "PE %d's counter holds %lld, expected %d", pes[i],
           count_in_memory, 1000 + pes[i]);
  }
  // Multicast off (mc_base 0, as on every machine without multicast): NULL everywhere. Then a
  // made-up multicast base (never dereferenced): the world's address is base + offset.
  // In kernels SHMEM_TEAM_WORLD is the state's world_handle, which shmem_init sets; this test has
  // no shmem_init, so it names a made-up handle (never dereferenced: team_lookup compares it).
  st.world_handle = reinterpret_cast<shmem_team_t>(uintptr_t{0x5eed0});
  for (const uint64_t mc_base : {uint64_t{0}, heap + 3 * kS}) {
    st.mc_base = mc_base;
    CK(cudaMemcpyToSymbol(vshmemi_device_state, &st, sizeof(st)));
    mc_ptrs<<<1, 1>>>(sym, d_ptrs);
    CK(cudaGetLastError());
    void* mc[3];
    CK(cudaMemcpy(mc, d_ptrs, sizeof(mc), cudaMemcpyDeviceToHost));
    void* want = mc_base == 0 ? nullptr : reinterpret_cast<void*>(mc_base + kOffset);
    EXPECT(mc[0] == want, "shmemx_mc_ptr(WORLD, sym) = %p, expected %p", mc[0], want);
    EXPECT(mc[1] == nullptr, "shmemx_mc_ptr past the committed heap = %p", mc[1]);
    EXPECT(mc[2] == nullptr, "shmemx_mc_ptr(SHMEM_TEAM_INVALID) = %p", mc[2]);
  }
  st.mc_base = 0;
  st.world_handle = nullptr;
  CK(cudaMemcpyToSymbol(vshmemi_device_state, &st, sizeof(st)));
  CK(cudaFree(d_fetched));
  CK(cudaFree(d_got));
  CK(cudaFree(d_ptrs));
  CK(cudaFree(table));
  CK(cudaFree(buf));
  if (failures != 0) {
    std::fprintf(stderr, "device_translate: %d checks failed\n", failures);
    return 1;
  }
  std::printf("device_translate: all checks passed\n");
  return 0;
}
