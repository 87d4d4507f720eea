// An NVSHMEM-style CUDA program built against vshmem's nvshmem.h: device put/signal/wait with
// NVSHMEM's constants, the team barrier in a kernel, collective launch, on-stream calls.
// argv[1]:
//   device     the kernels and on-stream calls
//   heap       the default heap budget holds 2 x 512 MiB and then 1 GiB more (it used to be a
//              fixed 1 GiB)
//   app_error  an earlier failed CUDA call of the application (cudaSetDevice on a device that
//              does not exist) is not reported as the failure of a later on-stream call
// Exits 77 (skipped) without a GPU.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_test_util.cuh"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

constexpr int kWords = 4096;

__global__ void ring_kernel(int* dest, const int* src, uint64_t* sig, uint64_t round) {
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  const int right = (me + 1) % n;
  nvshmemx_int_put_block(dest, src, kWords, right);
  if (threadIdx.x == 0) {
    nvshmem_fence();
    nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, right);
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, round);
    nvshmem_barrier(NVSHMEM_TEAM_WORLD);
  }
}

// The sized _block / _warp forms: put64_signal_block (SET, NVSHMEM's value) and iput32_warp (every
// second element of dest gets source's consecutive elements).
__global__ void sized_kernel(uint64_t* dst, const uint64_t* src, uint64_t* sig, int* idst,
                             const int* isrc, int n) {
  const int me = nvshmem_my_pe(), right = (me + 1) % nvshmem_n_pes();
  nvshmemx_put64_signal_block(dst, src, n, sig, 77, NVSHMEM_SIGNAL_SET, right);
  if (threadIdx.x < 32) nvshmemx_iput32_warp(idst, isrc, 2, 1, n / 2, right);
  __syncthreads();
  if (threadIdx.x == 0) {
    nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, 77);
    nvshmem_barrier(NVSHMEM_TEAM_WORLD);
  }
}

static void run_sized(int me, int n, cudaStream_t stream) {
  const int left = (me + n - 1) % n;
  auto* dst = static_cast<uint64_t*>(nvshmem_malloc(kWords * sizeof(uint64_t)));
  auto* src = static_cast<uint64_t*>(nvshmem_malloc(kWords * sizeof(uint64_t)));
  auto* sig = static_cast<uint64_t*>(nvshmem_calloc(1, sizeof(uint64_t)));
  auto* idst = static_cast<int*>(nvshmem_malloc(kWords * sizeof(int)));
  auto* isrc = static_cast<int*>(nvshmem_malloc(kWords * sizeof(int)));
  EXPECT(dst && src && sig && idst && isrc, "allocation failed");
  std::mt19937_64 rng(std::random_device{}() + 7u * me);
  std::vector<uint64_t> v(kWords), poison(kWords, ~0ull);
  std::vector<int> iv(kWords), ipoison(kWords, -1);
  for (auto& x : v) x = rng();
  for (auto& x : iv) x = static_cast<int>(rng() % 1000000);
  CUDA_OK(cudaMemcpy(src, v.data(), kWords * 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dst, poison.data(), kWords * 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(isrc, iv.data(), kWords * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(idst, ipoison.data(), kWords * 4, cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  int nn = kWords;
  void* args[] = {&dst, &src, &sig, &idst, &isrc, &nn};
  EXPECT(nvshmemx_collective_launch(reinterpret_cast<const void*>(sized_kernel), dim3(1), dim3(256),
                                    args, 0, stream) == 0,
         "launch");
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<uint64_t> got(kWords), expect(kWords);
  std::vector<int> igot(kWords), iexpect(kWords);
  nvshmem_getmem(expect.data(), src, kWords * 8, left);
  nvshmem_getmem(iexpect.data(), isrc, kWords * 4, left);
  CUDA_OK(cudaMemcpy(got.data(), dst, kWords * 8, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(igot.data(), idst, kWords * 4, cudaMemcpyDeviceToHost));
  EXPECT(got == expect, "put64_signal_block from PE %d", left);
  for (int i = 0; i < kWords; ++i) {
    const int want = i % 2 == 0 ? iexpect[i / 2] : -1;
    EXPECT(igot[i] == want, "iput32_warp element %d: %d, expected %d", i, igot[i], want);
  }
  nvshmem_barrier_all();
  nvshmem_free(isrc);
  nvshmem_free(idst);
  nvshmem_free(sig);
  nvshmem_free(src);
  nvshmem_free(dst);
}

static void run_device(int me, int n) {
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  int* src = static_cast<int*>(nvshmem_malloc(kWords * sizeof(int)));
  int* dest = static_cast<int*>(nvshmem_malloc(kWords * sizeof(int)));
  int* sum = static_cast<int*>(nvshmem_malloc(kWords * sizeof(int)));
  uint64_t* sig = static_cast<uint64_t*>(nvshmem_calloc(1, sizeof(uint64_t)));
  EXPECT(src && dest && sum && sig, "allocation failed");
  std::mt19937 rng(std::random_device{}() + me);
  std::vector<int> mine(kWords), poison(kWords, -1), got(kWords);
  for (int& v : mine) v = static_cast<int>(rng() % 100000);
  CUDA_OK(cudaMemcpy(src, mine.data(), kWords * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dest, poison.data(), kWords * sizeof(int), cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  for (uint64_t round = 1; round <= 3; ++round) {
    void* args[] = {&dest, &src, &sig, &round};
    EXPECT(nvshmemx_collective_launch(reinterpret_cast<const void*>(ring_kernel), dim3(1),
                                      dim3(256), args, 0, stream) == 0,
           "collective launch");
    CUDA_OK(cudaStreamSynchronize(stream));
  }
  // What the left neighbour holds in src is what landed in our dest.
  const int left = (me + n - 1) % n;
  std::vector<int> expect(kWords);
  nvshmem_getmem(expect.data(), src, kWords * sizeof(int), left);
  CUDA_OK(cudaMemcpy(got.data(), dest, kWords * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(got == expect, "the ring put from PE %d", left);

  // On stream: a sum over the world and a barrier, then a typed put and a signal.
  CUDA_OK(cudaMemcpy(sum, poison.data(), kWords * sizeof(int), cudaMemcpyHostToDevice));
  EXPECT(nvshmemx_int_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, sum, src, kWords, stream) == 0,
         "sum on stream");
  EXPECT(nvshmemx_barrier_all_on_stream(stream) == 0, "barrier on stream");
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<int> total(kWords, 0), theirs(kWords);
  for (int p = 0; p < n; ++p) {
    nvshmem_getmem(theirs.data(), src, kWords * sizeof(int), p);
    for (int i = 0; i < kWords; ++i) total[i] += theirs[i];
  }
  CUDA_OK(cudaMemcpy(got.data(), sum, kWords * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(got == total, "sum_reduce_on_stream");
  nvshmem_barrier_all();

  // Typed on-stream RMA and waits: a long put (nbi), then a p of a flag that the right neighbour's
  // stream waits for with NVSHMEM_CMP_EQ, then the team barrier on the stream.
  long* lbuf = static_cast<long*>(nvshmem_malloc(kWords * sizeof(long)));
  int* flag = static_cast<int*>(nvshmem_calloc(1, sizeof(int)));
  EXPECT(lbuf && flag, "allocation failed");
  std::vector<long> lmine(kWords), lgot(kWords);
  for (long& v : lmine) v = static_cast<long>(rng());
  long* lsrc = nullptr;
  CUDA_OK(cudaMalloc(&lsrc, kWords * sizeof(long)));
  CUDA_OK(cudaMemcpy(lsrc, lmine.data(), kWords * sizeof(long), cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  const int right = (me + 1) % n, token = 1000 + me, left_token = 1000 + left;
  EXPECT(nvshmemx_long_put_nbi_on_stream(lbuf, lsrc, kWords, right, stream) == 0, "put_nbi");
  EXPECT(nvshmemx_quiet_on_stream(stream) == 0, "quiet");
  EXPECT(nvshmemx_int_p_on_stream(flag, token, right, stream) == 0, "p_on_stream");
  EXPECT(nvshmemx_int_wait_until_on_stream(flag, NVSHMEM_CMP_EQ, left_token, stream) == 0,
         "wait_until_on_stream");
  EXPECT(nvshmemx_barrier_on_stream(NVSHMEM_TEAM_WORLD, stream) == 0, "barrier_on_stream");
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<long> lexpect(kWords);
  CUDA_OK(cudaMemcpy(lgot.data(), lbuf, kWords * sizeof(long), cudaMemcpyDeviceToHost));
  int fl = 0;
  CUDA_OK(cudaMemcpy(&fl, flag, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(fl == left_token, "flag %d, expected %d", fl, left_token);
  // The left neighbour's data: its lsrc is private, so it tells us through the heap.
  long* shared = static_cast<long*>(nvshmem_malloc(kWords * sizeof(long)));
  EXPECT(shared != nullptr, "allocation failed");
  CUDA_OK(cudaMemcpy(shared, lmine.data(), kWords * sizeof(long), cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  nvshmem_getmem(lexpect.data(), shared, kWords * sizeof(long), left);
  EXPECT(lgot == lexpect, "long_put_nbi_on_stream from PE %d", left);
  nvshmem_barrier_all();

  // A typed fcollect on the stream: every PE's block of longs, in PE order.
  long* all = static_cast<long*>(nvshmem_malloc(static_cast<size_t>(n) * kWords * sizeof(long)));
  EXPECT(all != nullptr, "allocation failed");
  EXPECT(nvshmemx_long_fcollect_on_stream(NVSHMEM_TEAM_WORLD, all, shared, kWords, stream) == 0,
         "long_fcollect_on_stream");
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<long> gathered(static_cast<size_t>(n) * kWords), block(kWords);
  CUDA_OK(cudaMemcpy(gathered.data(), all, gathered.size() * sizeof(long), cudaMemcpyDeviceToHost));
  for (int p = 0; p < n; ++p) {
    nvshmem_getmem(block.data(), shared, kWords * sizeof(long), p);
    EXPECT(std::equal(block.begin(), block.end(), gathered.begin() + static_cast<long>(p) * kWords),
           "fcollect block of PE %d", p);
  }
  nvshmem_barrier_all();
  nvshmem_free(all);
  nvshmem_free(shared);
  CUDA_OK(cudaFree(lsrc));
  nvshmem_free(flag);
  nvshmem_free(lbuf);
  nvshmem_free(sig);
  nvshmem_free(sum);
  nvshmem_free(dest);
  nvshmem_free(src);
  run_sized(me, n, stream);
  CUDA_OK(cudaStreamDestroy(stream));
}

static void run_heap(int me, int n) {
  // 2 x 512 MiB and 1 GiB more with no size variable set.
  char* a = static_cast<char*>(nvshmem_malloc(512u << 20));
  char* b = static_cast<char*>(nvshmem_malloc(512u << 20));
  char* c = static_cast<char*>(nvshmem_malloc(1u << 30));
  EXPECT(a && b && c, "the default heap did not hold 2 x 512 MiB + 1 GiB (%p %p %p)",
         static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c));
  const uint64_t mark = 0x5eed0000ull + static_cast<uint64_t>(me);
  nvshmem_putmem(c + (1u << 30) - 8, &mark, 8, (me + 1) % n);
  nvshmem_barrier_all();
  uint64_t got = 0;
  nvshmem_getmem(&got, c + (1u << 30) - 8, 8, me);
  EXPECT(got == 0x5eed0000ull + static_cast<uint64_t>((me + n - 1) % n), "mark %llx",
         static_cast<unsigned long long>(got));
  nvshmem_free(c);
  nvshmem_free(b);
  nvshmem_free(a);
}

static void run_app_error() {
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  // The application's own mistake, left in CUDA's last-error state.
  EXPECT(cudaSetDevice(count + 7) != cudaSuccess, "cudaSetDevice(%d) succeeded", count + 7);
  EXPECT(nvshmemx_barrier_all_on_stream(stream) == 0,
         "an earlier error of the application was reported as the on-stream call's");
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaStreamDestroy(stream));
}

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  const char* mode = argc > 1 ? argv[1] : "device";
  nvshmem_init();
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  if (std::strcmp(mode, "heap") == 0) {
    run_heap(me, n);
  } else if (std::strcmp(mode, "app_error") == 0) {
    run_app_error();
  } else {
    run_device(me, n);
  }
  nvshmem_barrier_all();
  nvshmem_finalize();
  if (me == 0) std::printf("nvshmem_device %s: %d PEs: OK\n", mode, n);
  return 0;
}
