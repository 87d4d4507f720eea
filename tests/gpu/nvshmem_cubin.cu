// Kernels loaded at run time see the device state: a cubin (cubin_kernel.cu, device-linked with
// libvshmem_device) is loaded with the driver API, registered with nvshmemx_cumodule_init, and
// its kernel puts to the right neighbour. Before registration the module's own state is empty
// (n_pes reads 0). argv[1]: the cubin. Exits 77 without a GPU.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "nvshmem_test_util.cuh"

#include <cstdio>
#include <cstring>
#include <random>

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  if (argc < 2) return 2;
  nvshmem_init();
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  using ModuleLoad = CUresult (*)(CUmodule*, const char*);
  using GetFunction = CUresult (*)(CUfunction*, CUmodule, const char*);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  using Unload = CUresult (*)(CUmodule);
  auto module_load = driver<ModuleLoad>("cuModuleLoad");
  auto get_function = driver<GetFunction>("cuModuleGetFunction");
  auto launch = driver<Launch>("cuLaunchKernel");
  auto unload = driver<Unload>("cuModuleUnload");
  EXPECT(module_load && get_function && launch && unload, "driver entry points");
  CUmodule mod = nullptr;
  CUfunction fn = nullptr, query = nullptr;
  EXPECT(module_load(&mod, argv[1]) == CUDA_SUCCESS, "cuModuleLoad(%s)", argv[1]);
  EXPECT(get_function(&fn, mod, "cubin_ring") == CUDA_SUCCESS &&
             get_function(&query, mod, "cubin_query") == CUDA_SUCCESS,
         "cuModuleGetFunction");

  int* dest = static_cast<int*>(nvshmem_malloc(sizeof(int)));
  int* seen = nullptr;
  EXPECT(dest != nullptr && cudaMalloc(&seen, 3 * sizeof(int)) == cudaSuccess, "allocation");
  // One fresh value for the job (PE 0's draw): PE k's left neighbour puts value + its number.
  int* shared_value = static_cast<int*>(nvshmem_malloc(sizeof(int)));
  EXPECT(shared_value != nullptr, "allocation");
  if (me == 0) {
    const int drawn = static_cast<int>(std::random_device{}() % 100000) * 16;
    CUDA_OK(cudaMemcpy(shared_value, &drawn, sizeof(int), cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  const int value = nvshmem_int_g(shared_value, 0);
  const int poison = -1;
  CUDA_OK(cudaMemcpy(dest, &poison, sizeof(int), cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());

  // Before registration the module's own copy of the state is empty.
  int s[3] = {-5, -5, -5};
  cudaMemcpy(seen, s, sizeof(s), cudaMemcpyHostToDevice);
  void* qargs[] = {&seen};
  EXPECT(launch(query, 1, 1, 1, 1, 1, 1, 0, nullptr, qargs, nullptr) == CUDA_SUCCESS, "launch");
  EXPECT(cudaDeviceSynchronize() == cudaSuccess, "query kernel");
  cudaMemcpy(s, seen, sizeof(s), cudaMemcpyDeviceToHost);
  EXPECT(s[1] == 0, "an unregistered module saw n_pes %d", s[1]);
  EXPECT(nvshmemx_cumodule_init(mod) == 0, "nvshmemx_cumodule_init");
  nvshmem_barrier_all();
  void* args[] = {&dest, const_cast<int*>(&value), &seen};
  EXPECT(launch(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr) == CUDA_SUCCESS, "cuLaunchKernel");
  EXPECT(cudaDeviceSynchronize() == cudaSuccess, "the cubin's kernel failed");
  nvshmem_barrier_all();
  int got = 0;
  cudaMemcpy(&got, dest, sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(s, seen, sizeof(s), cudaMemcpyDeviceToHost);
  EXPECT(s[0] == me && s[1] == n, "the module saw PE %d of %d", s[0], s[1]);
  EXPECT(s[2] == nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE), "node team %d", s[2]);
  EXPECT(got == value + (me + n - 1) % n, "got %d, expected %d", got, value + (me + n - 1) % n);
  // Registered twice: fine; unregistered: 0; then unknown: an error.
  EXPECT(nvshmemx_cumodule_init(mod) == 0, "second registration");
  EXPECT(nvshmemx_cumodule_finalize(mod) == 0, "finalize");
  EXPECT(nvshmemx_cumodule_finalize(mod) != 0, "an unknown module was accepted");
  unload(mod);
  cudaFree(seen);
  nvshmem_free(shared_value);
  nvshmem_free(dest);
  nvshmem_finalize();
  if (me == 0) std::printf("nvshmem_cubin: %d PEs: OK\n", n);
  return 0;
}
