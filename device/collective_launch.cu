// shmemx_collective_launch: cooperative launch sized so that the grids of all PEs sharing the GPU
// are resident together (a kernel that waits on another PE's kernel must never wait for SM room
// that the waiting kernel itself holds).
#include <cuda_runtime.h>

#include "device/device_runtime.hpp"
#include "shmemx.h"

namespace {

using vshmem::device::host_mirror;
using vshmem::device::report;

int max_grid(const char* call, const void* func, dim3 block, size_t shared, int* out) {
  if (!vshmem::device::require_state(call)) return 1;
  int device = 0, sms = 0, cooperative = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) {
    e = cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device);
  }
  if (e == cudaSuccess) {
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, func, static_cast<int>(block.x * block.y * block.z), shared);
  }
  if (e != cudaSuccess) {
    report(call, "cannot size the grid: %s", cudaGetErrorString(e));
    return 1;
  }
  if (!cooperative) {
    report(call, "device %d does not support cooperative launches", device);
    return 1;
  }
  const int sharing =
      host_mirror().state.pes_sharing_device > 0 ? host_mirror().state.pes_sharing_device : 1;
  *out = per_sm * sms / sharing;
  if (*out < 1) {
    report(call,
           "the kernel cannot be resident: %d block(s) of %u threads fit on %d SMs, shared by "
           "%d PEs",
           per_sm * sms, block.x * block.y * block.z, sms, sharing);
    return 1;
  }
  return 0;
}

}  // namespace

extern "C" {

int shmemx_collective_launch_query_gridsize(const void* func, dim3 blockDims, void** args,
                                            size_t sharedMem, int* gridsize) {
  const char* call = "shmemx_collective_launch_query_gridsize";
  if (gridsize == nullptr || func == nullptr) {
    report(call, "func and gridsize must not be NULL");
    return 1;
  }
  int g = 0;
  if (max_grid(call, func, blockDims, sharedMem, &g) != 0) return 1;
  *gridsize = g;
  return 0;
}

int shmemx_collective_launch(const void* func, dim3 gridDims, dim3 blockDims, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  const char* call = "shmemx_collective_launch";
  if (func == nullptr) {
    report(call, "func must not be NULL");
    return 1;
  }
  int limit = 0;
  if (max_grid(call, func, blockDims, sharedMem, &limit) != 0) return 1;
  unsigned long long blocks = static_cast<unsigned long long>(gridDims.x) * gridDims.y * gridDims.z;
  if (blocks == 0) {
    gridDims = dim3(static_cast<unsigned>(limit), 1, 1);
    blocks = static_cast<unsigned long long>(limit);
  }
  if (blocks > static_cast<unsigned long long>(limit)) {
    report(call,
           "a grid of %llu blocks cannot be resident with the other PEs' grids: at most %d "
           "(shmemx_collective_launch_query_gridsize; %d PE(s) share this GPU)",
           blocks, limit, host_mirror().state.pes_sharing_device);
    return 1;
  }
  cudaError_t e = cudaLaunchCooperativeKernel(func, gridDims, blockDims, args, sharedMem, stream);
  if (e != cudaSuccess) {
    report(call, "cudaLaunchCooperativeKernel: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

}  // extern "C"
