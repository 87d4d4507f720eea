// Helpers of the tests written as NVSHMEM programs (nvshmem.h): checks that name the PE and end
// the job, and the driver API without linking libcuda (as the runtime does).
#pragma once

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>

#define EXPECT(cond, ...)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", nvshmem_my_pe(), __FILE__, \
                   __LINE__, #cond);                                                      \
      std::fprintf(stderr, __VA_ARGS__);                                                  \
      std::fprintf(stderr, "\n");                                                         \
      nvshmem_global_exit(1);                                                             \
    }                                                                                     \
  } while (0)
#define CUDA_OK(expr)                                                   \
  do {                                                                  \
    cudaError_t e_ = (expr);                                            \
    EXPECT(e_ == cudaSuccess, "%s: %s", #expr, cudaGetErrorString(e_)); \
  } while (0)

// A driver API entry point, or null.
template <class Fn>
Fn driver(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}
