// What each local CUDA device can do, queried once per provider and never assumed: the memory
// provider, and the transport above it, choose their paths from these answers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/memory/cuda_driver.hpp"

namespace vshmem::detail {

struct CudaDeviceCaps {
  int ordinal = -1;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  bool vmm = false;           // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
  bool posix_fd = false;      // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
  bool fabric = false;        // attribute set and driver >= 12.4 (an IMEX channel is not checked)
  bool multicast = false;     // CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (queried only)
  bool compression = false;   // CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED
  bool gdr_with_vmm = false;  // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
  // For plain pinned device memory; zero when the device has no VMM.
  size_t granularity_min = 0;
  size_t granularity_recommended = 0;
};

struct CudaNodeCaps {
  int driver_version = 0;
  std::vector<CudaDeviceCaps> devices;
  // can_access_peer[from][to]: cuDeviceCanAccessPeer(from, to), directional; true on the
  // diagonal (a device always reaches its own memory).
  std::vector<std::vector<bool>> can_access_peer;
};

Result<CudaNodeCaps> query_node_caps(const CudaDriver& driver);
// One line per device and the peer matrix, at VSHMEM_DEBUG=info.
void log_node_caps(const CudaNodeCaps& caps);

}  // namespace vshmem::detail
