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
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <unistd.h>
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

#define CUDA_OK(expr)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (expr);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "PE %d: %s:%d: %s: %s\n", shmem_my_pe(), __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(e_));                                                    \
      shmem_global_exit(1);                                                                    \
    }                                                                                          \
  } while (0)

#define EXPECT(cond, ...)                                                                         \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), __FILE__, __LINE__, \
                   #cond);                                                                        \
      std::fprintf(stderr, __VA_ARGS__);                                                          \
      std::fprintf(stderr, "\n");                                                                 \
      shmem_global_exit(1);                                                                       \
    }                                                                                             \
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

// Phases and a watchdog: a phase that does not finish within VSHMEM_TEST_PHASE_TIMEOUT seconds
// (default 60) ends the test with a message naming the PE and the phase, so that a hang reads
// as a failure that says where it happened rather than as a CTest timeout.
inline std::atomic<const char*>& current_phase() {
  static std::atomic<const char*> p{"shmem_init"};
  return p;
}
inline std::atomic<long>& phase_started() {
  static std::atomic<long> t{0};
  return t;
}
inline long now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline void phase(const char* name) {
  phase_started() = now_s();
  current_phase() = name;
  if (shmem_my_pe() == 0) {
    std::printf("  phase: %s\n", name);
    std::fflush(stdout);
  }
}
inline void start_watchdog() {
  const char* e = std::getenv("VSHMEM_TEST_PHASE_TIMEOUT");
  const long limit = e ? std::atol(e) : 60;
  phase_started() = now_s();
  std::thread([limit] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (now_s() - phase_started() > limit) {
        std::fprintf(stderr, "PE %d: phase '%s' did not finish within %ld s\n", shmem_my_pe(),
                     current_phase().load(), limit);
        std::fflush(stderr);
        _exit(1);
      }
    }
  }).detach();
}

inline void print_seed(const char* test) {
  start_watchdog();
  if (shmem_my_pe() == 0) {
    std::printf("%s: %d PEs, seed %llu; %d PEs share this GPU%s\n", test, shmem_n_pes(),
                static_cast<unsigned long long>(seed()), shmemx_pes_sharing_gpu(),
                shmemx_gpu_shared_without_mps() ? " WITHOUT MPS (time-sliced)" : "");
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

// This PE's kernels are done, then every PE's (host barrier).
inline void sync_device_and_pes() {
  CUDA_OK(cudaDeviceSynchronize());
  shmem_barrier_all();
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
