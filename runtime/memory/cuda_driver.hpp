// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"). libvshmem never links
// libcuda or cudart: it must load on machines without a driver and then report "no usable
// device". cuda.h is used at build time for types, enums and prototypes only.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <string>

#include "runtime/common/status.hpp"

namespace vshmem::detail {

// Every entry point the runtime uses, each pinned to the ABI version whose signature we call it
// with: cuGetProcAddress returns the variant of a symbol that belongs to the version asked for,
// and asking for "the newest" silently changes signatures (cuCtxGetDevice grew a context
// parameter in 13.0, and calling that variant with one argument crashed the driver). The
// PFN_<name>_v<version> types come from cudaTypedefs.h.
#define VSHMEM_CUDA_DRIVER_FUNCTIONS(X)            \
  X(cuGetErrorName, 6000)                          \
  X(cuGetErrorString, 6000)                        \
  X(cuInit, 2000)                                  \
  X(cuDeviceGet, 2000)                             \
  X(cuDeviceGetCount, 2000)                        \
  X(cuDeviceGetName, 2000)                         \
  X(cuDeviceGetAttribute, 2000)                    \
  X(cuDeviceCanAccessPeer, 4000)                   \
  X(cuDevicePrimaryCtxRetain, 7000)                \
  X(cuDevicePrimaryCtxRelease, 11000)              \
  X(cuCtxGetCurrent, 4000)                         \
  X(cuCtxSetCurrent, 4000)                         \
  X(cuCtxGetDevice, 2000)                          \
  X(cuCtxPushCurrent, 4000)                        \
  X(cuCtxPopCurrent, 4000)                         \
  X(cuCtxEnablePeerAccess, 4000)                   \
  X(cuCtxDisablePeerAccess, 4000)                  \
  X(cuMemGetInfo, 3020)                            \
  X(cuMemGetAllocationGranularity, 10020)          \
  X(cuMemAddressReserve, 10020)                    \
  X(cuMemAddressFree, 10020)                       \
  X(cuMemCreate, 10020)                            \
  X(cuMemRelease, 10020)                           \
  X(cuMemMap, 10020)                               \
  X(cuMemUnmap, 10020)                             \
  X(cuMemSetAccess, 10020)                         \
  X(cuMemExportToShareableHandle, 10020)           \
  X(cuMemImportFromShareableHandle, 10020)         \
  X(cuMemGetAllocationPropertiesFromHandle, 10020) \
  X(cuMemRetainAllocationHandle, 11000)            \
  X(cuPointerSetAttribute, 6000)                   \
  X(cuPointerGetAttribute, 4000)                   \
  X(cuMemAlloc, 3020)                              \
  X(cuMemFree, 3020)                               \
  X(cuMemHostAlloc, 2020)                          \
  X(cuMemFreeHost, 2000)                           \
  X(cuMemHostRegister, 6050)                       \
  X(cuMemHostUnregister, 4000)                     \
  X(cuMemHostGetDevicePointer, 3020)               \
  X(cuMemcpyAsync, 4000)                           \
  X(cuMemsetD8Async, 3020)                         \
  X(cuStreamCreate, 2000)                          \
  X(cuStreamDestroy, 4000)                         \
  X(cuStreamSynchronize, 2000)                     \
  X(cuStreamQuery, 2000)                           \
  X(cuThreadExchangeStreamCaptureMode, 10010)      \
  X(cuModuleLoadData, 2000)                        \
  X(cuModuleUnload, 2000)                          \
  X(cuModuleGetFunction, 2000)                     \
  X(cuModuleGetLoadingMode, 11070)                 \
  X(cuModuleGetGlobal, 3020)                       \
  X(cuLibraryGetGlobal, 12000)                     \
  X(cuLaunchKernel, 4000)

// Entry points some supported drivers lack (multicast objects came with 12.1): resolved when the
// driver has them, else left null, and every caller checks before calling.
#define VSHMEM_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X) \
  X(cuMulticastCreate, 12010)                    \
  X(cuMulticastGetGranularity, 12010)            \
  X(cuMulticastAddDevice, 12010)                 \
  X(cuMulticastBindMem, 12010)                   \
  X(cuMulticastUnbind, 12010)

// Where a device sits in a multi-node NVLink domain (NVML's GPU fabric info): GPUs with the same
// cluster UUID and clique id reach each other's memory over NVLink through fabric handles.
struct CudaFabricInfo {
  bool registered = false;  // the fabric manager finished registering the GPU
  uint8_t cluster_uuid[16] = {};
  uint32_t clique_id = 0;
};

constexpr int kMinDriverVersion = 12000;        // VMM with the entry points above
constexpr int kMinFabricDriverVersion = 12040;  // CU_MEM_HANDLE_TYPE_FABRIC

struct CudaDriver {
#define VSHMEM_CUDA_DRIVER_MEMBER(name, version) PFN_##name##_v##version name = nullptr;
  VSHMEM_CUDA_DRIVER_FUNCTIONS(VSHMEM_CUDA_DRIVER_MEMBER)
  VSHMEM_CUDA_DRIVER_OPTIONAL_FUNCTIONS(VSHMEM_CUDA_DRIVER_MEMBER)
#undef VSHMEM_CUDA_DRIVER_MEMBER

  // The device's fabric info; CUDA_ERROR_NOT_SUPPORTED where the system has none (no NVML, no
  // fabric manager: single-node systems). The real table asks NVML (loaded with dlopen).
  CUresult (*fabric_info)(int ordinal, CudaFabricInfo* out) = nullptr;
  // The directory of IMEX channel devices that fabric handles need.
  const char* imex_channel_dir = "/dev/nvidia-caps-imex-channels";
  bool fake = false;  // a test double (tests/support/fake_cuda_driver): never the real driver

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
