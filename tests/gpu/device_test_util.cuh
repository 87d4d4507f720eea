// Helpers of the device API tests: GPU presence (exit 77 when none), checks that name the PE,
// random data, and poisoning.
#pragma once

#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

namespace device_test {

constexpr int kSkip = 77;

// Called before shmem_init: without a usable GPU the test is skipped on every PE.
inline void require_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no CUDA device: skipped\n");
    std::exit(kSkip);
  }
}

#define CUDA_OK(expr)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (expr);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "PE %d: %s:%d: %s: %s\n", shmem_my_pe(), __FILE__, __LINE__,   \
                   #expr, cudaGetErrorString(e_));                                        \
      shmem_global_exit(1);                                                               \
    }                                                                                     \
  } while (0)

#define EXPECT(cond, ...)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), __FILE__,  \
                   __LINE__, #cond);                                                      \
      std::fprintf(stderr, __VA_ARGS__);                                                  \
      std::fprintf(stderr, "\n");                                                         \
      shmem_global_exit(1);                                                               \
    }                                                                                     \
  } while (0)

// Fresh data per run: the seed is printed so that a failure can be replayed (VSHMEM_TEST_SEED).
inline uint64_t seed() {
  static uint64_t s = [] {
    const char* e = std::getenv("VSHMEM_TEST_SEED");
    uint64_t v = e ? std::strtoull(e, nullptr, 0) : static_cast<uint64_t>(std::time(nullptr));
    return v;
  }();
  return s;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(seed() * 1000003u + static_cast<uint64_t>(shmem_my_pe()));
  return r;
}

inline void print_seed(const char* test) {
  if (shmem_my_pe() == 0) {
    std::printf("%s: %d PEs, seed %llu\n", test, shmem_n_pes(),
                static_cast<unsigned long long>(seed()));
    std::fflush(stdout);
  }
}

// A value every PE can compute for (pe, i, round), so that receivers check senders' data.
__host__ __device__ inline uint64_t pattern(uint64_t salt, int pe, uint64_t i) {
  uint64_t x = salt ^ (static_cast<uint64_t>(pe) << 40) ^ (i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

inline void poison(void* p, size_t bytes) { CUDA_OK(cudaMemset(p, 0xA5, bytes)); }

template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

template <class T>
void to_device(T* d, const std::vector<T>& h) {
  CUDA_OK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// A salt all PEs agree on (PE 0's random draw, broadcast through the symmetric heap by host
// calls).
inline uint64_t common_salt() {
  static uint64_t* slot = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  uint64_t v = rng()();
  if (shmem_my_pe() == 0) {
    for (int pe = 0; pe < shmem_n_pes(); ++pe) shmem_putmem(slot, &v, sizeof(v), pe);
  }
  shmem_barrier_all();
  shmem_getmem(&v, slot, sizeof(v), shmem_my_pe());
  shmem_barrier_all();
  return v;
}

}  // namespace device_test
