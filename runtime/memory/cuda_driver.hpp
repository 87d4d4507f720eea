// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"). libvshmem never links
// libcuda or cudart: it must load on machines without a driver and then report "no usable
// device". cuda.h is used at build time for types, enums and prototypes only.
#pragma once

#include <cuda.h>

#include <string>

#include "runtime/common/status.hpp"

namespace vshmem::detail {

// Every entry point the runtime uses. Names are the base names given to cuGetProcAddress; where
// cuda.h maps a name to a versioned symbol (cuMemGetInfo -> cuMemGetInfo_v2), the member's type
// follows that mapping, which is the variant cuGetProcAddress returns for the version we ask.
#define VSHMEM_CUDA_DRIVER_FUNCTIONS(X)     \
  X(cuGetErrorName)                         \
  X(cuGetErrorString)                       \
  X(cuInit)                                 \
  X(cuDeviceGet)                            \
  X(cuDeviceGetCount)                       \
  X(cuDeviceGetName)                        \
  X(cuDeviceGetAttribute)                   \
  X(cuDeviceCanAccessPeer)                  \
  X(cuDevicePrimaryCtxRetain)               \
  X(cuDevicePrimaryCtxRelease)              \
  X(cuCtxGetCurrent)                        \
  X(cuCtxSetCurrent)                        \
  X(cuCtxGetDevice)                         \
  X(cuCtxPushCurrent)                       \
  X(cuCtxPopCurrent)                        \
  X(cuCtxEnablePeerAccess)                  \
  X(cuCtxDisablePeerAccess)                 \
  X(cuMemGetInfo)                           \
  X(cuMemGetAllocationGranularity)          \
  X(cuMemAddressReserve)                    \
  X(cuMemAddressFree)                       \
  X(cuMemCreate)                            \
  X(cuMemRelease)                           \
  X(cuMemMap)                               \
  X(cuMemUnmap)                             \
  X(cuMemSetAccess)                         \
  X(cuMemExportToShareableHandle)           \
  X(cuMemImportFromShareableHandle)         \
  X(cuMemGetAllocationPropertiesFromHandle) \
  X(cuMemAlloc)                             \
  X(cuMemFree)                              \
  X(cuMemcpyAsync)                          \
  X(cuMemsetD8Async)                        \
  X(cuStreamCreate)                         \
  X(cuStreamDestroy)                        \
  X(cuStreamSynchronize)                    \
  X(cuModuleLoadData)                       \
  X(cuModuleUnload)                         \
  X(cuModuleGetFunction)                    \
  X(cuLaunchKernel)

constexpr int kMinDriverVersion = 12000;        // VMM with the entry points above
constexpr int kMinFabricDriverVersion = 12040;  // CU_MEM_HANDLE_TYPE_FABRIC

struct CudaDriver {
#define VSHMEM_CUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  VSHMEM_CUDA_DRIVER_FUNCTIONS(VSHMEM_CUDA_DRIVER_MEMBER)
#undef VSHMEM_CUDA_DRIVER_MEMBER

  int version = 0;       // cuDriverGetVersion: 1000 * major + 10 * minor
  int device_count = 0;  // devices visible to this process (after CUDA_VISIBLE_DEVICES)

  // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or the number when the driver cannot name it.
  std::string describe(CUresult result) const;
  // Ok for CUDA_SUCCESS, else a kSystem (kOutOfMemory for CUDA_ERROR_OUT_OF_MEMORY) Status
  // "<call>: <CUresult name> (<text>)".
  Status check(CUresult result, const std::string& call) const;
};

// The loaded driver, loaded and initialized (cuInit) on the first call; later calls return the
// same answer. Code::kUnsupported with the cause when there is no usable device: no libcuda.so.1,
// a driver older than 12.0, cuInit failing, or no device visible.
Result<const CudaDriver*> cuda_driver();

// "12.4" for 12040.
std::string driver_version_string(int version);

}  // namespace vshmem::detail
