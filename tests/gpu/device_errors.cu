// Bad input in device code: an invalid PE always, an address outside the symmetric heap with
// VSHMEM_DEBUG_DEVICE=1, print "vshmem: PE n: <call> (block .. thread ..): <cause>" and trap;
// nothing is written. Run as a single PE outside MPS (a trap under MPS ends every client).
//   device_errors pe | addr
#include <cstring>

#include "device_test_util.cuh"

using namespace device_test;

__global__ void bad_pe(int* sym) { shmem_int_p(sym, 42, shmem_n_pes()); }
__global__ void bad_address(int* not_symmetric) { shmem_int_p(not_symmetric, 42, 0); }

int main(int argc, char** argv) {
  require_gpu();
  shmem_init();
  int* sym = static_cast<int*>(shmem_malloc(sizeof(int)));
  int* local = nullptr;
  CUDA_OK(cudaMalloc(&local, sizeof(int)));
  const bool addr = argc > 1 && std::strcmp(argv[1], "addr") == 0;
  if (addr) {
    bad_address<<<1, 1>>>(local);
  } else {
    bad_pe<<<1, 1>>>(sym);
  }
  cudaError_t e = cudaDeviceSynchronize();
  std::fprintf(stderr, "PE %d: kernel ended with: %s\n", shmem_my_pe(), cudaGetErrorString(e));
  // A trap is the expected outcome; a kernel that went on is the failure this test exists for.
  return e == cudaSuccess ? 0 : 3;
}
