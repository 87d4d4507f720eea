// Device calls to a PE behind the device proxy (issue #14), between two simulated nodes:
//   vshmemrun -n 2 --simulate-nodes 2 -- build/bench/vshmem_bench_proxy [iters]
// PE 0's kernel measures, against PE 1 (reached through the proxy and the remote path):
//   put+quiet latency at 8 B (aim <= 10 us), fetch_add latency, device barrier_all latency over
//   the 2 nodes (both PEs), and put bandwidth at 64 MiB (shmemx_putmem_block + quiet) against the
//   pinned host copy ceiling measured in the same run (cudaMemcpy D2H and H2D of 64 MiB, pinned):
//   aim >= 50% of the smaller of the two.
// Every line is "proxy_bench: <what>: <figure> ..."; the last lines give the ratios to the aims.
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(expr)                                                                 \
  do {                                                                           \
    cudaError_t e_ = (expr);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "proxy_bench: PE %d: %s: %s\n", shmem_my_pe(), #expr, \
                   cudaGetErrorString(e_));                                      \
      shmem_global_exit(1);                                                      \
    }                                                                            \
  } while (0)

namespace {

constexpr size_t kBig = size_t{64} << 20;

__global__ void put_quiet_kernel(long* dst, const long* src, int pe, int iters) {
  for (int i = 0; i < iters; ++i) {
    shmem_long_put(dst, src, 1, pe);
    shmem_quiet();
  }
}

__global__ void fetch_add_kernel(long* ctr, int pe, int iters, long* out) {
  long acc = 0;
  for (int i = 0; i < iters; ++i) acc += shmem_long_atomic_fetch_add(ctr, 1, pe);
  *out = acc;
}

__global__ void barrier_kernel(int iters) {
  for (int i = 0; i < iters; ++i) shmem_barrier_all();
}

__global__ void put_bw_kernel(char* dst, const char* src, size_t bytes, int pe) {
  shmemx_putmem_block(dst, src, bytes, pe);
  if (threadIdx.x == 0) shmem_quiet();
}

float time_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (n < 2) {
    if (me == 0) std::printf("proxy_bench: needs 2 PEs on 2 simulated nodes\n");
    shmem_finalize();
    return 1;
  }
  const int peer = 1;
  long* word = static_cast<long*>(shmem_malloc(sizeof(long) * 2));
  char* big_dst = static_cast<char*>(shmem_malloc(kBig));
  char* big_src = static_cast<char*>(shmem_malloc(kBig));
  if (word == nullptr || big_dst == nullptr || big_src == nullptr) {
    std::fprintf(stderr, "proxy_bench: shmem_malloc failed (set SHMEM_SYMMETRIC_SIZE=256M)\n");
    shmem_global_exit(1);
  }
  if (me == 0 && shmem_ptr(word, peer) != nullptr) {
    std::printf(
        "proxy_bench: PE 1 is mapped (not behind the proxy): run with --simulate-nodes 2\n");
    shmem_global_exit(1);
  }
  CK(cudaMemset(word, 0, sizeof(long) * 2));
  CK(cudaMemset(big_src, 0x3C, kBig));
  long* out = nullptr;
  CK(cudaMalloc(&out, sizeof(long)));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaDeviceSynchronize());
  shmem_barrier_all();

  double put_us = 0, fadd_us = 0, bar_us = 0, bw = 0, d2h = 0, h2d = 0;
  if (me == 0) {
    // Warm-up: endpoints, first touches.
    put_quiet_kernel<<<1, 1>>>(word, word + 1, peer, 10);
    fetch_add_kernel<<<1, 1>>>(word + 1, peer, 10, out);
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(a));
    put_quiet_kernel<<<1, 1>>>(word, word + 1, peer, iters);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    put_us = 1000.0 * time_ms(a, b) / iters;
    CK(cudaEventRecord(a));
    fetch_add_kernel<<<1, 1>>>(word + 1, peer, iters, out);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    fadd_us = 1000.0 * time_ms(a, b) / iters;
    // Bandwidth: best of 3.
    for (int r = 0; r < 3; ++r) {
      CK(cudaEventRecord(a));
      put_bw_kernel<<<1, 1024>>>(big_dst, big_src, kBig, peer);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      bw = std::max(bw, kBig / (time_ms(a, b) * 1e-3) / 1e9);
    }
    // The ceiling: pinned host copies of the same size, same process, same GPU.
    void* pinned = nullptr;
    CK(cudaHostAlloc(&pinned, kBig, cudaHostAllocDefault));
    for (int r = 0; r < 3; ++r) {
      CK(cudaEventRecord(a));
      CK(cudaMemcpyAsync(pinned, big_src, kBig, cudaMemcpyDeviceToHost));
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      d2h = std::max(d2h, kBig / (time_ms(a, b) * 1e-3) / 1e9);
      CK(cudaEventRecord(a));
      CK(cudaMemcpyAsync(big_dst, pinned, kBig, cudaMemcpyHostToDevice));
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      h2d = std::max(h2d, kBig / (time_ms(a, b) * 1e-3) / 1e9);
    }
    CK(cudaFreeHost(pinned));
  }
  shmem_barrier_all();
  // Barrier over the two nodes: both PEs' kernels.
  const int bar_iters = std::max(iters / 4, 50);
  barrier_kernel<<<1, 1>>>(5);
  CK(cudaDeviceSynchronize());
  shmem_barrier_all();
  CK(cudaEventRecord(a));
  barrier_kernel<<<1, 1>>>(bar_iters);
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  bar_us = 1000.0 * time_ms(a, b) / bar_iters;
  shmem_barrier_all();

  if (me == 0) {
    const double ceiling = std::min(d2h, h2d);
    std::printf("proxy_bench: %d PEs, %d iterations, PE %d behind the proxy\n", n, iters, peer);
    std::printf("proxy_bench: put+quiet 8 B latency: %.2f us (aim <= 10 us: %s)\n", put_us,
                put_us <= 10.0 ? "met" : "NOT met");
    std::printf("proxy_bench: fetch_add latency: %.2f us\n", fadd_us);
    std::printf("proxy_bench: barrier_all over 2 nodes: %.2f us\n", bar_us);
    std::printf("proxy_bench: put bandwidth 64 MiB: %.2f GB/s\n", bw);
    std::printf("proxy_bench: pinned copy ceiling 64 MiB: D2H %.2f GB/s, H2D %.2f GB/s\n", d2h,
                h2d);
    std::printf("proxy_bench: ratio put bandwidth / min(D2H, H2D) = %.2f (aim >= 0.50: %s)\n",
                bw / ceiling, bw / ceiling >= 0.5 ? "met" : "NOT met");
  }
  shmem_finalize();
  return 0;
}
