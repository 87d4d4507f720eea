// A test double for the CUDA driver table (runtime/memory/cuda_driver.hpp), compiled only into
// test binaries. It never loads libcuda: "device memory" is memfd-backed host memory mapped with
// mmap, handles are entries of a table, POSIX FD handles are real descriptors (so they travel
// between processes over the runtime's fd passing), fabric handles name a descriptor through
// /proc/<pid>/fd (so processes on "different simulated nodes" can import them), and a multicast
// object is one more memfd (its mappings are ordinary shared memory: a store through one PE's
// mapping is seen through every PE's, though not in the bound unicast memory). Every call is
// counted, and failures are injected per call.
#pragma once

#include <cuda.h>

#include <set>
#include <string>

#include "runtime/memory/cuda_driver.hpp"

namespace vshmem::testing {

struct FakeDriverConfig {
  bool multicast_supported = true;  // CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
  bool fabric_supported = false;    // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
  int pci_bus = 1;                  // tells GPUs (locality tokens) apart
  size_t granularity = 64 << 10;
  size_t multicast_granularity = 64 << 10;
  // Failures to inject: the call returns this instead of CUDA_SUCCESS.
  CUresult multicast_create_result = CUDA_SUCCESS;
  CUresult multicast_add_device_result = CUDA_SUCCESS;
  CUresult multicast_bind_result = CUDA_SUCCESS;
  CUresult fabric_export_result = CUDA_SUCCESS;
  // cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP (device-mapped host memory) fails with this.
  CUresult mapped_host_alloc_result = CUDA_SUCCESS;
  // cuMemHostGetDevicePointer answers an address other than the host's (no unified addressing).
  bool mapped_host_elsewhere = false;
  // What cuStreamQuery answers: a sticky error (e.g. CUDA_ERROR_ILLEGAL_INSTRUCTION) plays a
  // kernel that trapped.
  CUresult stream_query_result = CUDA_SUCCESS;
  // Another thread captures a CUDA graph in the global mode: like the real driver, "potentially
  // unsafe" calls (copies, memsets, launches, stream synchronization) of a thread in the global
  // mode fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (and would end that capture).
  bool global_capture_elsewhere = false;
  // The GPU's queue is held (this process's kernels wait in it): cuLaunchKernel queues the kernel
  // and cuMemcpyAsync the copy, which run only at fake_run_held_kernels(); cuStreamQuery answers
  // CUDA_ERROR_NOT_READY while any waits; cuStreamSynchronize does not wait for them.
  bool hold_kernels = false;
  // Binds fail (with multicast_bind_result) from this bind on (0: the first); -1: never. Binds
  // are numbered from the process's first (or the last reset_fake_calls).
  int multicast_bind_fail_from = 0;
  // ... up to this bind, exclusive; -1: every bind from multicast_bind_fail_from on fails.
  int multicast_bind_fail_until = -1;
  // The device's place in an NVLink domain; fabric_info_result != CUDA_SUCCESS: none.
  CUresult fabric_info_result = CUDA_ERROR_NOT_SUPPORTED;
  detail::CudaFabricInfo fabric_info;
  std::string imex_channel_dir = "/dev/nvidia-caps-imex-channels";
  // Allocations made without a shareable handle type (cuMemGetAllocationPropertiesFromHandle
  // reports CU_MEM_HANDLE_TYPE_NONE for them).
  std::set<CUmemGenericAllocationHandle> unshareable_handles;
};

// Code loaded at run time, as the fake's cuModuleGetGlobal / cuLibraryGetGlobal see it: a CUmodule
// or CUlibrary handle is the address of one of these, whose only global is `name`, `bytes` long
// at `global` (host memory standing in for GPU memory).
struct FakeLoadedCode {
  std::string name;
  void* global = nullptr;
  size_t bytes = 0;
};

// The fake table, configured with `config` (the configuration may be changed again later; the
// table stays valid for the life of the process). Marked fake (CudaDriver::fake).
const detail::CudaDriver& fake_cuda_driver(const FakeDriverConfig& config);
// How often the named entry point was called since the process started (or the last reset).
int fake_calls(const std::string& name);
void reset_fake_calls();
// Runs the kernels held while FakeDriverConfig::hold_kernels was set, in launch order; returns
// how many ran.
int fake_run_held_kernels();
// How often cuStreamSynchronize was called on `stream` (CU_STREAM_LEGACY etc. included).
int fake_stream_syncs(CUstream stream);
// How often CU_POINTER_ATTRIBUTE_SYNC_MEMOPS was set on the mapping that holds `address` (0 when
// none does).
int fake_sync_memops(const void* address);
// The flags of the live cuMemHostAlloc allocation that starts at `address`; -1 when none does
// (never allocated, freed, or cuMemAlloc memory). Fresh cuMemHostAlloc and cuMemAlloc memory is
// filled with non-zero garbage.
int fake_host_alloc_flags(const void* address);
// The size of the live cuMemAlloc allocation that starts at `address`; 0 when none does.
size_t fake_device_alloc_bytes(const void* address);
// How many cuMemHostAlloc allocations made with (at least) `flags` are live.
int fake_live_host_allocs(unsigned int flags);
// The references an allocation holds (0: released).
int fake_refs(CUmemGenericAllocationHandle handle);
// Whether the real libcuda.so.1 is loaded in this process (it must never be in a fake test).
bool real_libcuda_loaded();

}  // namespace vshmem::testing
