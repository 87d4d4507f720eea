// half / bfloat16 and reduce-scatter, as an NVSHMEM program uses them (nvshmem.h): device RMA of
// 16-bit floats, bf16 and half reductions on a stream and in a block, reduce-scatter on a stream
// (int, bf16) and in a warp (float max). Every result is compared bit for bit with a host
// reference that combines in float in PE order and rounds once. Exits 77 without a GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_test_util.cuh"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

constexpr int kN = 3000;  // elements per block (not a multiple of the block size)

__global__ void rma_kernel(__half* hdst, const __half* hsrc, __nv_bfloat16* bdst,
                           const __nv_bfloat16* bsrc, int n) {
  const int right = (nvshmem_my_pe() + 1) % nvshmem_n_pes();
  nvshmemx_bfloat16_put_block(bdst, bsrc, n, right);
  for (int i = threadIdx.x; i < n; i += blockDim.x) nvshmem_half_p(hdst + i, hsrc[i], right);
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_barrier_all();
}

__global__ void half_reduce_kernel(__half* dst, const __half* src, int n) {
  nvshmemx_half_sum_reduce_block(NVSHMEM_TEAM_WORLD, dst, src, n);
}

__global__ void float_rs_kernel(float* dst, const float* src, int n) {
  if (threadIdx.x < 32) nvshmemx_float_max_reducescatter_warp(NVSHMEM_TEAM_WORLD, dst, src, n);
}

template <class T>
static std::vector<T> fetch(const T* sym, size_t n, int pe) {
  std::vector<T> v(n);
  nvshmem_getmem(v.data(), sym, n * sizeof(T), pe);
  return v;
}

template <class T>
static bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  nvshmem_init();
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  const int left = (me + n - 1) % n;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  std::mt19937 rng(std::random_device{}() * 31u + static_cast<unsigned>(me));
  std::uniform_real_distribution<float> u(-4.f, 4.f);

  // Every PE's sources: n blocks of kN (reduce-scatter needs n blocks; reduce uses the first).
  const size_t total = static_cast<size_t>(n) * kN;
  auto* bsrc = static_cast<__nv_bfloat16*>(nvshmem_malloc(total * sizeof(__nv_bfloat16)));
  auto* bdst = static_cast<__nv_bfloat16*>(nvshmem_malloc(total * sizeof(__nv_bfloat16)));
  auto* hsrc = static_cast<__half*>(nvshmem_malloc(kN * sizeof(__half)));
  auto* hdst = static_cast<__half*>(nvshmem_malloc(kN * sizeof(__half)));
  auto* isrc = static_cast<int*>(nvshmem_malloc(total * sizeof(int)));
  auto* idst = static_cast<int*>(nvshmem_malloc(kN * sizeof(int)));
  auto* fsrc = static_cast<float*>(nvshmem_malloc(total * sizeof(float)));
  auto* fdst = static_cast<float*>(nvshmem_malloc(kN * sizeof(float)));
  EXPECT(bsrc && bdst && hsrc && hdst && isrc && idst && fsrc && fdst, "allocation failed");
  std::vector<__nv_bfloat16> b(total), bpoison(total, __float2bfloat16(-999.f));
  std::vector<__half> h(kN), hpoison(kN, __float2half(-999.f));
  std::vector<int> iv(total), ipoison(kN, -1);
  std::vector<float> fv(total), fpoison(kN, -1e30f);
  for (auto& x : b) x = __float2bfloat16(u(rng));
  for (auto& x : h) x = __float2half(u(rng));
  for (auto& x : iv) x = static_cast<int>(rng() % 20001) - 10000;
  for (auto& x : fv) x = u(rng);
  CUDA_OK(cudaMemcpy(bsrc, b.data(), total * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(hsrc, h.data(), kN * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(isrc, iv.data(), total * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(fsrc, fv.data(), total * 4, cudaMemcpyHostToDevice));
  nvshmem_barrier_all();

  // Device RMA of 16-bit floats to the right neighbour.
  CUDA_OK(cudaMemcpy(bdst, bpoison.data(), total * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(hdst, hpoison.data(), kN * 2, cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  {
    int nn = kN;
    void* args[] = {&hdst, &hsrc, &bdst, &bsrc, &nn};
    EXPECT(nvshmemx_collective_launch(reinterpret_cast<const void*>(rma_kernel), dim3(1), dim3(256),
                                      args, 0, stream) == 0,
           "launch");
    CUDA_OK(cudaStreamSynchronize(stream));
  }
  EXPECT(same_bits(fetch(hdst, kN, me), fetch(hsrc, kN, left)), "half_p from PE %d", left);
  EXPECT(same_bits(fetch(bdst, kN, me), fetch(bsrc, kN, left)), "bfloat16_put_block");
  nvshmem_barrier_all();

  // References: every PE's sources, combined in float in PE order.
  std::vector<std::vector<__nv_bfloat16>> all_b(n);
  std::vector<std::vector<__half>> all_h(n);
  std::vector<std::vector<int>> all_i(n);
  std::vector<std::vector<float>> all_f(n);
  for (int p = 0; p < n; ++p) {
    all_b[p] = fetch(bsrc, total, p);
    all_h[p] = fetch(hsrc, kN, p);
    all_i[p] = fetch(isrc, total, p);
    all_f[p] = fetch(fsrc, total, p);
  }
  std::vector<__nv_bfloat16> b_reduce(kN), b_rs(kN);
  std::vector<__half> h_reduce(kN);
  std::vector<int> i_rs(kN);
  std::vector<float> f_rs(kN);
  for (int i = 0; i < kN; ++i) {
    float br = 0, brs = 0, hr = 0, fm = -1e30f;
    int is = 0;
    const size_t mine = static_cast<size_t>(me) * kN + i;
    for (int p = 0; p < n; ++p) {
      br = p == 0 ? __bfloat162float(all_b[p][i]) : br + __bfloat162float(all_b[p][i]);
      brs = p == 0 ? __bfloat162float(all_b[p][mine]) : brs + __bfloat162float(all_b[p][mine]);
      hr = p == 0 ? __half2float(all_h[p][i]) : hr + __half2float(all_h[p][i]);
      is += all_i[p][mine];
      fm = p == 0 || all_f[p][mine] > fm ? all_f[p][mine] : fm;
    }
    b_reduce[i] = __float2bfloat16(br);
    b_rs[i] = __float2bfloat16(brs);
    h_reduce[i] = __float2half(hr);
    i_rs[i] = is;
    f_rs[i] = fm;
  }
  nvshmem_barrier_all();

  // bf16 sum on a stream.
  CUDA_OK(cudaMemcpy(bdst, bpoison.data(), kN * 2, cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  EXPECT(nvshmemx_bfloat16_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, bdst, bsrc, kN, stream) == 0,
         "bf16 reduce on stream");
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT(same_bits(fetch(bdst, kN, me), b_reduce), "bfloat16_sum_reduce_on_stream");

  // half sum in a block.
  CUDA_OK(cudaMemcpy(hdst, hpoison.data(), kN * 2, cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  {
    int nn = kN;
    void* args[] = {&hdst, &hsrc, &nn};
    EXPECT(nvshmemx_collective_launch(reinterpret_cast<const void*>(half_reduce_kernel), dim3(1),
                                      dim3(512), args, 0, stream) == 0,
           "launch");
    CUDA_OK(cudaStreamSynchronize(stream));
  }
  EXPECT(same_bits(fetch(hdst, kN, me), h_reduce), "half_sum_reduce_block");

  // Reduce-scatter: int and bf16 on a stream, float max in a warp.
  CUDA_OK(cudaMemcpy(idst, ipoison.data(), kN * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(bdst, bpoison.data(), kN * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(fdst, fpoison.data(), kN * 4, cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  EXPECT(nvshmemx_int_sum_reducescatter_on_stream(NVSHMEM_TEAM_WORLD, idst, isrc, kN, stream) == 0,
         "int reducescatter on stream");
  EXPECT(nvshmemx_bfloat16_sum_reducescatter_on_stream(NVSHMEM_TEAM_WORLD, bdst, bsrc, kN,
                                                       stream) == 0,
         "bf16 reducescatter on stream");
  {
    int nn = kN;
    void* args[] = {&fdst, &fsrc, &nn};
    EXPECT(nvshmemx_collective_launch(reinterpret_cast<const void*>(float_rs_kernel), dim3(1),
                                      dim3(64), args, 0, stream) == 0,
           "launch");
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT(same_bits(fetch(idst, kN, me), i_rs), "int_sum_reducescatter_on_stream");
  EXPECT(same_bits(fetch(bdst, kN, me), b_rs), "bfloat16_sum_reducescatter_on_stream");
  EXPECT(same_bits(fetch(fdst, kN, me), f_rs), "float_max_reducescatter_warp");
  // Overlapping dest and source is refused with a message, not computed wrongly.
  EXPECT(nvshmemx_int_sum_reducescatter_on_stream(NVSHMEM_TEAM_WORLD, isrc, isrc, kN, stream) != 0,
         "an overlapping reducescatter was accepted");

  nvshmem_barrier_all();
  nvshmem_free(fdst);
  nvshmem_free(fsrc);
  nvshmem_free(idst);
  nvshmem_free(isrc);
  nvshmem_free(hdst);
  nvshmem_free(hsrc);
  nvshmem_free(bdst);
  nvshmem_free(bsrc);
  CUDA_OK(cudaStreamDestroy(stream));
  nvshmem_finalize();
  if (me == 0) std::printf("nvshmem_half: %d PEs: OK\n", n);
  return 0;
}
