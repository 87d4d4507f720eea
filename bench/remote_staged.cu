// Staged remote bandwidth on the GPU heap (issue #13): two PEs on two simulated nodes, the heap in
// GPU memory, UCX without CUDA support (or VSHMEM_UCX_RMA=target), so every remote transfer is
// staged through page-locked host buffers on both sides (plugin_ucx.cpp, target ops). The ceiling
// of that path is the host<->device copy from page-locked memory, measured here in the same run:
// cudaMemcpy of the same size between a cudaHostAlloc buffer and device memory, both directions.
//   VSHMEM_BACKEND=cuda SHMEM_SYMMETRIC_SIZE=512M \
//     build/bin/vshmemrun -n 2 --simulate-nodes 2 -- build/bench/vshmem_bench_remote_staged [reps]
// One JSON line per figure (GB/s): h2d_pinned, d2h_pinned, staged_put, staged_get; then
// staged_put_ratio / staged_get_ratio = staged figure / min(h2d, d2h) (the target: >= 0.5).
// And what the network leg alone allows between the two simulated nodes: host_put / host_get
// move the same bytes between a page-locked host buffer of PE 0 and a global array of PE 1 (host
// memory at both ends, reached through the same remote path and UCX transport, without the GPU
// copies), with host_put_ratio / host_get_ratio against the same ceiling, and host_memcpy: one
// memcpy of the same bytes from page-locked memory into a global array in PE 0 (the ceiling of
// that host-to-host leg).
#include <cuda_runtime.h>
#include <shmem.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(expr)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (expr);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "remote_staged: %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(e_));                                             \
      shmem_global_exit(1);                                                             \
    }                                                                                   \
  } while (0)

namespace {

constexpr size_t kBytes = size_t{64} << 20;
// Host memory that PE 0 reaches on PE 1 through the remote path (a global variable: symmetric,
// in host memory whatever the heap is).
unsigned char g_host_target[kBytes];

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <typename F>
double median_seconds(int reps, F&& body) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    double t0 = now_s();
    body();
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const char* bench, size_t bytes, double value, const char* unit) {
  std::printf(
      "{\"suite\":\"remote_staged\",\"impl\":\"vshmem\",\"bench\":\"%s\",\"bytes\":%zu,"
      "\"value\":%.4f,\"unit\":\"%s\"}\n",
      bench, bytes, value, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  if (reps < 1) reps = 5;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (n != 2) {
    if (me == 0) std::fprintf(stderr, "remote_staged: run with 2 PEs on 2 (simulated) nodes\n");
    shmem_finalize();
    return 2;
  }
  const size_t bytes = kBytes;
  // Two symmetric blocks: the remote target and a local source/destination, both GPU memory on
  // the cuda backend.
  auto* target = static_cast<unsigned char*>(shmem_malloc(bytes));
  auto* local = static_cast<unsigned char*>(shmem_malloc(bytes));
  if (target == nullptr || local == nullptr) {
    std::fprintf(stderr,
                 "remote_staged: PE %d: shmem_malloc of 2 x %zu bytes failed (raise "
                 "SHMEM_SYMMETRIC_SIZE)\n",
                 me, bytes);
    shmem_global_exit(1);
  }
  // Fresh data in the source (PE 0's seed, given to both), checked after the timed transfers.
  auto* seed = static_cast<long*>(shmem_malloc(sizeof(long)));
  if (me == 0) {
    const long t = static_cast<long>(time(nullptr));
    for (int p = 0; p < n; ++p) shmem_long_p(seed, t, p);
  }
  shmem_barrier_all();
  std::vector<unsigned char> pattern(bytes);
  unsigned long long s = static_cast<unsigned long long>(shmem_long_g(seed, me)) * 2654435761u + 1;
  for (size_t i = 0; i < bytes; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    pattern[i] = static_cast<unsigned char>(s >> 56);
  }
  shmem_putmem(local, pattern.data(), bytes, me);
  shmem_barrier_all();
  if (me == 0) {
    // The ceiling: page-locked host memory <-> device memory.
    void* pinned = nullptr;
    void* device = nullptr;
    CK(cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable));
    CK(cudaMalloc(&device, bytes));
    CK(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice));  // warm up
    double h2d = median_seconds(
        reps, [&] { CK(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice)); });
    double d2h = median_seconds(
        reps, [&] { CK(cudaMemcpy(pinned, device, bytes, cudaMemcpyDeviceToHost)); });
    report("h2d_pinned", bytes, bytes / h2d / 1e9, "GB/s");
    report("d2h_pinned", bytes, bytes / d2h / 1e9, "GB/s");
    const double ceiling = bytes / std::max(h2d, d2h) / 1e9;
    // Staged remote transfers: GPU heap -> host staging -> network -> host staging -> GPU heap.
    shmem_putmem_nbi(target, local, bytes, 1);  // warm up (endpoints, staging buffers)
    shmem_quiet();
    double put = median_seconds(reps, [&] {
      shmem_putmem_nbi(target, local, bytes, 1);
      shmem_quiet();
    });
    double get = median_seconds(reps, [&] { shmem_getmem(local, target, bytes, 1); });
    report("staged_put", bytes, bytes / put / 1e9, "GB/s");
    report("staged_get", bytes, bytes / get / 1e9, "GB/s");
    report("staged_put_ratio", bytes, bytes / put / 1e9 / ceiling, "x");
    report("staged_get_ratio", bytes, bytes / get / 1e9 / ceiling, "x");
    // The network leg alone: page-locked host memory here, a global array (host memory) there.
    std::memcpy(pinned, pattern.data(), bytes);
    shmem_putmem(g_host_target, pinned, bytes, 1);  // warm up; also the data checked below
    shmem_quiet();
    double hput = median_seconds(reps, [&] {
      shmem_putmem_nbi(g_host_target, pinned, bytes, 1);
      shmem_quiet();
    });
    std::memset(pinned, 0x5a, bytes);  // poisoned: the gets must bring the pattern back
    double hget = median_seconds(reps, [&] { shmem_getmem(pinned, g_host_target, bytes, 1); });
    // The network leg's own ceiling between these two buffers' kinds of memory: one memcpy from
    // page-locked memory into a global array, here in PE 0 (what a cross-memory copy between the
    // two processes costs at best).
    // Through a volatile function pointer: the compiler may not drop copies it cannot see read
    // (the H200's mid batch of session 8 reported 1.5e6 GB/s with a plain memcpy here).
    static unsigned char local_host[kBytes];
    void* (*volatile copy)(void*, const void*, size_t) = std::memcpy;
    copy(local_host, pinned, bytes);  // warm up (first touch)
    double hcopy = median_seconds(reps, [&] { copy(local_host, pinned, bytes); });
    report("host_memcpy", bytes, bytes / hcopy / 1e9, "GB/s");
    report("host_put", bytes, bytes / hput / 1e9, "GB/s");
    report("host_get", bytes, bytes / hget / 1e9, "GB/s");
    report("host_put_ratio", bytes, bytes / hput / 1e9 / ceiling, "x");
    report("host_get_ratio", bytes, bytes / hget / 1e9 / ceiling, "x");
    if (std::memcmp(pinned, pattern.data(), bytes) != 0) {
      std::fprintf(stderr, "remote_staged: PE 0: host_get brought back other bytes\n");
      shmem_global_exit(1);
    }
    CK(cudaFree(device));
    CK(cudaFreeHost(pinned));
  }
  shmem_barrier_all();
  // What PE 0 put is what PE 1 holds, and what PE 0 got back is the same.
  std::vector<unsigned char> back(bytes, 0);
  shmem_getmem(back.data(), me == 1 ? target : local, bytes, me);
  if (std::memcmp(back.data(), pattern.data(), bytes) != 0 ||
      (me == 1 && std::memcmp(g_host_target, pattern.data(), bytes) != 0)) {
    std::fprintf(stderr, "remote_staged: PE %d: data differs after the staged transfers\n", me);
    shmem_global_exit(1);
  }
  shmem_barrier_all();
  if (me == 0) std::printf("remote_staged: data checked\n");
  shmem_free(seed);
  shmem_free(local);
  shmem_free(target);
  shmem_finalize();
  return 0;
}
