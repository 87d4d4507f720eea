// NVSHMEM programs on a real GPU (issue #16): argv[1]
//   register     the application's own cuMemCreate memory (two allocations back to back, as
//                PyTorch's expandable segments make) joins the heap with
//                nvshmemx_buffer_register_symmetric: the same address on every PE, a device put
//                ring and an on-stream sum over it, stores seen through the application's own
//                address; cudaMalloc memory is refused on every PE; unregister, register again.
//   sync_memops  a synchronous cudaMemcpy of 32 KiB from pageable memory into the heap, then
//                nvshmem_barrier_all, then the right neighbour reads it: 200 rounds of fresh
//                data. The copy may return before its data lands unless the heap has
//                CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (what failed nvshmem_device at 4 PEs).
// Exits 77 (skipped) without a GPU.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_test_util.cuh"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define CU_OK(expr) EXPECT((expr) == CUDA_SUCCESS, "%s", #expr)

__global__ void ring_put(float* sym, size_t half, int right) {
  nvshmemx_float_put_block(sym + half, sym, half, right);
  if (threadIdx.x == 0) nvshmem_quiet();
}

// Every PE must hold the same value of p.
void same_everywhere(void* p) {
  auto* word = static_cast<uint64_t*>(nvshmem_malloc(sizeof(uint64_t)));
  const uint64_t mine = reinterpret_cast<uint64_t>(p);
  CUDA_OK(cudaMemcpy(word, &mine, sizeof(mine), cudaMemcpyHostToDevice));
  nvshmem_barrier_all();
  for (int q = 0; q < nvshmem_n_pes(); ++q) {
    uint64_t theirs = 0;
    nvshmem_getmem(&theirs, word, sizeof(theirs), q);
    EXPECT(theirs == mine, "PE %d registered at %#llx, this PE at %#llx", q,
           static_cast<unsigned long long>(theirs), static_cast<unsigned long long>(mine));
  }
  nvshmem_barrier_all();
  nvshmem_free(word);
}

int run_register(int me, int n) {
  auto mem_create =
      driver<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                          unsigned long long)>("cuMemCreate");
  auto reserve =
      driver<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
          "cuMemAddressReserve");
  auto mem_map = driver<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                     unsigned long long)>("cuMemMap");
  auto set_access =
      driver<CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t)>("cuMemSetAccess");
  auto unmap = driver<CUresult (*)(CUdeviceptr, size_t)>("cuMemUnmap");
  auto release = driver<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  auto addr_free = driver<CUresult (*)(CUdeviceptr, size_t)>("cuMemAddressFree");
  auto granularity =
      driver<CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
          "cuMemGetAllocationGranularity");
  EXPECT(mem_create && reserve && mem_map && set_access && unmap && release && addr_free &&
             granularity,
         "driver entry points");
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t g = 0;
  CU_OK(granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t size = 2 * g;
  CUdeviceptr va = 0;
  CU_OK(reserve(&va, size, g, 0, 0));
  CUmemGenericAllocationHandle h[2];
  for (int i = 0; i < 2; ++i) {
    CU_OK(mem_create(&h[i], g, &prop, 0));
    CU_OK(mem_map(va + i * g, g, 0, h[i], 0));
  }
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_OK(set_access(va, size, &access, 1));
  float* app = reinterpret_cast<float*>(va);
  const size_t words = size / sizeof(float), half = words / 2;
  std::mt19937 rng(std::random_device{}() + 131u * me);
  std::vector<float> mine(words);
  for (auto& w : mine) w = static_cast<float>(rng() % 1000);
  CUDA_OK(cudaMemcpy(app, mine.data(), size, cudaMemcpyHostToDevice));

  // cudaMalloc memory cannot be shared by handle: refused on every PE.
  void* plain = nullptr;
  CUDA_OK(cudaMalloc(&plain, size));
  void* refused = nvshmemx_buffer_register_symmetric(me == n - 1 ? plain : app, size, 0);
  EXPECT(refused == nullptr, "cudaMalloc memory was registered");
  EXPECT(std::strstr(shmemx_last_error(), "cuMemCreate") != nullptr, "message: %s",
         shmemx_last_error());
  CUDA_OK(cudaFree(plain));

  for (int round = 0; round < 2; ++round) {
    auto* sym = static_cast<float*>(nvshmemx_buffer_register_symmetric(app, size, 0));
    EXPECT(sym != nullptr, "register (round %d): %s", round, shmemx_last_error());
    same_everywhere(sym);
    std::vector<float> got(words);
    CUDA_OK(cudaMemcpy(got.data(), sym, size, cudaMemcpyDeviceToHost));
    EXPECT(std::memcmp(got.data(), mine.data(), size) == 0, "the heap address shows other data");
    // A ring put in a kernel: the right neighbour's second half gets our first half.
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    void* args[] = {&sym, const_cast<size_t*>(&half), const_cast<int*>(&right)};
    EXPECT(nvshmemx_collective_launch(reinterpret_cast<const void*>(ring_put), dim3(1), dim3(256),
                                      args, 0, nullptr) == 0,
           "launch");
    CUDA_OK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    std::vector<float> theirs(half);
    nvshmem_getmem(theirs.data(), sym, half * sizeof(float), left);
    CUDA_OK(cudaMemcpy(got.data(), app + half, half * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(std::memcmp(got.data(), theirs.data(), half * sizeof(float)) == 0,
           "the left PE's put, read through the application's address");
    // An on-stream sum over the first halves into a heap buffer.
    auto* sum = static_cast<float*>(nvshmem_malloc(half * sizeof(float)));
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));
    EXPECT(nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, sum, sym, half, stream) == 0,
           "sum on stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<float> total(half, 0.f), part(half);
    for (int q = 0; q < n; ++q) {
      nvshmem_getmem(part.data(), sym, half * sizeof(float), q);
      for (size_t i = 0; i < half; ++i) total[i] += part[i];
    }
    CUDA_OK(cudaMemcpy(part.data(), sum, half * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(part == total, "sum_reduce_on_stream over the registered buffer");
    CUDA_OK(cudaStreamDestroy(stream));
    nvshmem_free(sum);
    EXPECT(nvshmemx_buffer_unregister_symmetric(sym, size) == 0, "unregister: %s",
           shmemx_last_error());
    // Restore our first half's view for the next round.
    CUDA_OK(
        cudaMemcpy(mine.data() + half, app + half, half * sizeof(float), cudaMemcpyDeviceToHost));
  }
  for (int i = 0; i < 2; ++i) CU_OK(unmap(va + i * g, g));
  for (int i = 0; i < 2; ++i) CU_OK(release(h[i]));
  CU_OK(addr_free(va, size));
  return 0;
}

int run_sync_memops(int me, int n) {
  constexpr size_t kWords = 8192;  // 32 KiB: a pageable cudaMemcpy this small may return early
  auto* buf = static_cast<uint32_t*>(nvshmem_malloc(kWords * sizeof(uint32_t)));
  EXPECT(buf != nullptr, "allocation");
  // A job-wide seed from PE 0: every round's data is new and every PE knows what to expect.
  auto* seed_word = static_cast<uint32_t*>(nvshmem_malloc(sizeof(uint32_t)));
  const uint32_t my_seed = std::random_device{}();
  if (me == 0) CUDA_OK(cudaMemcpy(seed_word, &my_seed, sizeof(my_seed), cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  uint32_t seed = 0;
  nvshmem_getmem(&seed, seed_word, sizeof(seed), 0);
  auto pattern = [&](int round, int pe) { return seed ^ (round * 7919u + pe * 104729u); };
  std::vector<uint32_t> mine(kWords), got(kWords);
  const int left = (me + n - 1) % n;
  for (int round = 0; round < 200; ++round) {
    for (size_t i = 0; i < kWords; ++i) mine[i] = pattern(round, me) + static_cast<uint32_t>(i);
    CUDA_OK(cudaMemcpy(buf, mine.data(), kWords * sizeof(uint32_t), cudaMemcpyHostToDevice));
    nvshmem_barrier_all();
    nvshmem_getmem(got.data(), buf, kWords * sizeof(uint32_t), left);
    for (size_t i = 0; i < kWords; ++i) {
      EXPECT(got[i] == pattern(round, left) + i,
             "round %d: PE %d's cudaMemcpy had not landed at the barrier (word %zu: %u, "
             "expected %u)",
             round, left, i, got[i], pattern(round, left) + static_cast<uint32_t>(i));
    }
    nvshmem_barrier_all();
  }
  nvshmem_free(seed_word);
  nvshmem_free(buf);
  return 0;
}

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  const std::string mode = argc > 1 ? argv[1] : "register";
  nvshmem_init();
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  int rc = mode == "sync_memops" ? run_sync_memops(me, n) : run_register(me, n);
  nvshmem_finalize();
  if (me == 0 && rc == 0) std::printf("nvshmem_register %s: %d PEs: OK\n", mode.c_str(), n);
  return rc;
}
