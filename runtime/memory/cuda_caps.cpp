#include "runtime/memory/cuda_caps.hpp"

#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

// An attribute the driver does not know (older than the headers) reads as "not supported":
// absence of a capability is an answer, not an error.
bool attribute(const CudaDriver& driver, CUdevice dev, CUdevice_attribute attr, const char* what) {
  int value = 0;
  CUresult r = driver.cuDeviceGetAttribute(&value, attr, dev);
  if (r != CUDA_SUCCESS) {
    VSHMEM_TRACE("cuDeviceGetAttribute(%s, device %d): %s; taken as unsupported", what,
                 static_cast<int>(dev), driver.describe(r).c_str());
    return false;
  }
  return value != 0;
}

}  // namespace

Result<CudaNodeCaps> query_node_caps(const CudaDriver& driver) {
  CudaNodeCaps caps;
  caps.driver_version = driver.version;
  const int n = driver.device_count;
  for (int i = 0; i < n; ++i) {
    CUdevice dev = 0;
    VSHMEM_RETURN_IF_ERROR(
        driver.check(driver.cuDeviceGet(&dev, i), log::format("cuDeviceGet(%d)", i)));
    CudaDeviceCaps d;
    d.ordinal = i;
    char name[256] = {};
    if (driver.cuDeviceGetName(name, sizeof(name) - 1, dev) == CUDA_SUCCESS) d.name = name;
    driver.cuDeviceGetAttribute(&d.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    driver.cuDeviceGetAttribute(&d.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    d.vmm = attribute(driver, dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "vmm");
    d.posix_fd = attribute(
        driver, dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, "posix_fd");
    d.fabric = driver.version >= kMinFabricDriverVersion &&
               attribute(driver, dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, "fabric");
    d.multicast = attribute(driver, dev, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, "multicast");
    d.compression =
        attribute(driver, dev, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, "compression");
    d.gdr_with_vmm = attribute(
        driver, dev, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, "gdr_with_vmm");
    if (d.vmm) {
      CUmemAllocationProp prop = {};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = i;
      VSHMEM_RETURN_IF_ERROR(
          driver.check(driver.cuMemGetAllocationGranularity(&d.granularity_min, &prop,
                                                            CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                       log::format("cuMemGetAllocationGranularity(device %d, minimum)", i)));
      VSHMEM_RETURN_IF_ERROR(
          driver.check(driver.cuMemGetAllocationGranularity(&d.granularity_recommended, &prop,
                                                            CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                       log::format("cuMemGetAllocationGranularity(device %d, recommended)", i)));
    }
    caps.devices.push_back(std::move(d));
  }
  caps.can_access_peer.assign(n, std::vector<bool>(n, false));
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) {
      if (from == to) {
        caps.can_access_peer[from][to] = true;
        continue;
      }
      CUdevice dev_from = 0, dev_to = 0;
      int can = 0;
      VSHMEM_RETURN_IF_ERROR(driver.check(driver.cuDeviceGet(&dev_from, from), "cuDeviceGet"));
      VSHMEM_RETURN_IF_ERROR(driver.check(driver.cuDeviceGet(&dev_to, to), "cuDeviceGet"));
      VSHMEM_RETURN_IF_ERROR(driver.check(driver.cuDeviceCanAccessPeer(&can, dev_from, dev_to),
                                          log::format("cuDeviceCanAccessPeer(%d, %d)", from, to)));
      caps.can_access_peer[from][to] = can != 0;
    }
  }
  return caps;
}

void log_node_caps(const CudaNodeCaps& caps) {
  if (!log::enabled(log::Level::kInfo)) return;
  for (const CudaDeviceCaps& d : caps.devices) {
    VSHMEM_INFO(
        "CUDA device %d (%s, sm_%d%d): vmm=%d posix_fd=%d fabric=%d multicast=%d "
        "compression=%d gdr_with_vmm=%d granularity min=%zu recommended=%zu",
        d.ordinal, d.name.c_str(), d.cc_major, d.cc_minor, d.vmm, d.posix_fd, d.fabric, d.multicast,
        d.compression, d.gdr_with_vmm, d.granularity_min, d.granularity_recommended);
  }
  for (size_t from = 0; from < caps.can_access_peer.size(); ++from) {
    std::string row;
    for (size_t to = 0; to < caps.can_access_peer[from].size(); ++to) {
      row += caps.can_access_peer[from][to] ? " 1" : " 0";
    }
    VSHMEM_INFO("CUDA peer access from device %zu to devices 0..%zu:%s", from,
                caps.can_access_peer.size() - 1, row.c_str());
  }
}

}  // namespace vshmem::detail
