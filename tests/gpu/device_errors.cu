// Bad input in device code: an invalid PE always, an address outside the symmetric heap with
// VSHMEM_DEBUG_DEVICE=1 (a put's destination, a test's ivars), print "vshmem: PE n: <call>
// (block .. thread ..): <cause>" and trap; nothing is written or read. Run as a single PE outside
// MPS (a trap under MPS ends every client).
//   device_errors pe | addr | test_addr
#include <cstring>

#include "device_test_util.cuh"

using namespace device_test;

__global__ void bad_pe(int* sym) { shmem_int_p(sym, 42, shmem_n_pes()); }
__global__ void bad_address(int* not_symmetric) { shmem_int_p(not_symmetric, 42, 0); }
__global__ void bad_test_address(int* not_symmetric, size_t* out) {
  *out = shmem_int_test_any(not_symmetric, 1, nullptr, SHMEM_CMP_EQ, 0);
}

int main(int argc, char** argv) {
  require_gpu();
  shmem_init();
  int* sym = static_cast<int*>(shmem_malloc(sizeof(int)));
  int* local = nullptr;
  CUDA_OK(cudaMalloc(&local, sizeof(int)));
  const char* which = argc > 1 ? argv[1] : "pe";
  size_t* out = nullptr;
  CUDA_OK(cudaMalloc(&out, sizeof(size_t)));
  if (std::strcmp(which, "addr") == 0) {
    bad_address<<<1, 1>>>(local);
  } else if (std::strcmp(which, "test_addr") == 0) {
    bad_test_address<<<1, 1>>>(local, out);
  } else {
    bad_pe<<<1, 1>>>(sym);
  }
  cudaError_t e = cudaDeviceSynchronize();
  std::fprintf(stderr, "PE %d: kernel ended with: %s\n", shmem_my_pe(), cudaGetErrorString(e));
  // A trap is the expected outcome; a kernel that went on is the failure this test exists for.
  return e == cudaSuccess ? 0 : 3;
}
