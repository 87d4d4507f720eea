#include "runtime/memory/cuda_driver.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>

#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

// The pinned signatures are the ones cuda.h declares under the plain names: code written against
// the header calls what the loader resolved.
#define VSHMEM_CUDA_DRIVER_SAME_AS_HEADER(name, version)                    \
  static_assert(std::is_same_v<PFN_##name##_v##version, decltype(&::name)>, \
                #name " is pinned to a version whose signature differs from cuda.h's");
VSHMEM_CUDA_DRIVER_FUNCTIONS(VSHMEM_CUDA_DRIVER_SAME_AS_HEADER)
VSHMEM_CUDA_DRIVER_OPTIONAL_FUNCTIONS(VSHMEM_CUDA_DRIVER_SAME_AS_HEADER)
#undef VSHMEM_CUDA_DRIVER_SAME_AS_HEADER

using DriverGetVersionFn = CUresult (*)(int*);
using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

Status unusable(const std::string& cause) { return error(Code::kUnsupported, cause); }

// NVML's GPU fabric info, declared here (the toolkit may ship without nvml.h); the layout is
// nvmlGpuFabricInfo_t of NVML 12.x.
struct NvmlFabricInfo {
  unsigned char cluster_uuid[16];
  int status;  // nvmlReturn_t
  unsigned int clique_id;
  unsigned char state;  // 3: NVML_GPU_FABRIC_STATE_COMPLETED
};
constexpr unsigned char kNvmlFabricStateCompleted = 3;
using NvmlInitFn = int (*)();
using NvmlHandleByPciFn = int (*)(const char*, void**);
using NvmlFabricInfoFn = int (*)(void*, NvmlFabricInfo*);

// The real table's fabric_info: NVML, loaded once; not supported where it or the call is missing.
CUresult nvml_fabric_info(int ordinal, CudaFabricInfo* out) {
  static void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  static const bool initialized = [] {
    if (lib == nullptr) return false;
    auto init = reinterpret_cast<NvmlInitFn>(::dlsym(lib, "nvmlInit_v2"));
    return init != nullptr && init() == 0;
  }();
  if (!initialized) return CUDA_ERROR_NOT_SUPPORTED;
  auto by_pci =
      reinterpret_cast<NvmlHandleByPciFn>(::dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto fabric = reinterpret_cast<NvmlFabricInfoFn>(::dlsym(lib, "nvmlDeviceGetGpuFabricInfo"));
  auto drv = cuda_driver();
  if (by_pci == nullptr || fabric == nullptr || !drv) return CUDA_ERROR_NOT_SUPPORTED;
  const CudaDriver& d = *drv.value();
  CUdevice dev = 0;
  int domain = 0, bus = 0, slot = 0;
  if (d.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
      d.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) != CUDA_SUCCESS ||
      d.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != CUDA_SUCCESS ||
      d.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  char pci[32];
  std::snprintf(pci, sizeof(pci), "%08x:%02x:%02x.0", domain, bus, slot);
  void* handle = nullptr;
  NvmlFabricInfo info = {};
  if (by_pci(pci, &handle) != 0 || fabric(handle, &info) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  out->registered = info.state == kNvmlFabricStateCompleted && info.status == 0;
  std::memcpy(out->cluster_uuid, info.cluster_uuid, sizeof(out->cluster_uuid));
  out->clique_id = info.clique_id;
  return CUDA_SUCCESS;
}

Result<const CudaDriver*> load() {
  // The handle is never closed: the driver keeps per-process state (contexts, atexit handlers)
  // that must not disappear while anything in the process may still call it.
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    return unusable(log::format("dlopen(libcuda.so.1): %s (no NVIDIA driver on this machine?)",
                                why != nullptr ? why : "unknown error"));
  }
  auto get_version = reinterpret_cast<DriverGetVersionFn>(::dlsym(lib, "cuDriverGetVersion"));
  if (get_version == nullptr) {
    return unusable("dlsym(libcuda.so.1, cuDriverGetVersion): symbol missing");
  }
  auto driver = std::make_unique<CudaDriver>();
  if (CUresult r = get_version(&driver->version); r != CUDA_SUCCESS) {
    return unusable(log::format("cuDriverGetVersion: CUresult %d", static_cast<int>(r)));
  }
  if (driver->version < kMinDriverVersion) {
    return unusable(log::format("the CUDA driver is version %s; vshmem needs %s or newer",
                                driver_version_string(driver->version).c_str(),
                                driver_version_string(kMinDriverVersion).c_str()));
  }
  // cuGetProcAddress_v2 is exported by every 12.x driver; each symbol is asked for at its pinned
  // version (see VSHMEM_CUDA_DRIVER_FUNCTIONS).
  auto get_proc = reinterpret_cast<GetProcAddressFn>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return unusable("dlsym(libcuda.so.1, cuGetProcAddress_v2): symbol missing");
  }
#define VSHMEM_CUDA_DRIVER_RESOLVE(name, version)                                     \
  {                                                                                   \
    void* fn = nullptr;                                                               \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;      \
    CUresult r = get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);  \
    if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr) { \
      return unusable(                                                                \
          log::format("cuGetProcAddress(%s, version %d): not found (CUresult %d, "    \
                      "query result %d)",                                             \
                      #name, version, static_cast<int>(r), static_cast<int>(found))); \
    }                                                                                 \
    driver->name = reinterpret_cast<decltype(driver->name)>(fn);                      \
  }
  VSHMEM_CUDA_DRIVER_FUNCTIONS(VSHMEM_CUDA_DRIVER_RESOLVE)
#undef VSHMEM_CUDA_DRIVER_RESOLVE
#define VSHMEM_CUDA_DRIVER_RESOLVE_OPTIONAL(name, version)                                    \
  {                                                                                           \
    void* fn = nullptr;                                                                       \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;              \
    if (get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS && \
        found == CU_GET_PROC_ADDRESS_SUCCESS) {                                               \
      driver->name = reinterpret_cast<decltype(driver->name)>(fn);                            \
    } else {                                                                                  \
      VSHMEM_TRACE("cuGetProcAddress(%s, version %d): not offered by this driver", #name,     \
                   version);                                                                  \
    }                                                                                         \
  }
  VSHMEM_CUDA_DRIVER_OPTIONAL_FUNCTIONS(VSHMEM_CUDA_DRIVER_RESOLVE_OPTIONAL)
#undef VSHMEM_CUDA_DRIVER_RESOLVE_OPTIONAL
  driver->fabric_info = nvml_fabric_info;

  if (CUresult r = driver->cuInit(0); r != CUDA_SUCCESS) {
    return unusable("no usable device: " + driver->check(r, "cuInit").message());
  }
  if (CUresult r = driver->cuDeviceGetCount(&driver->device_count); r != CUDA_SUCCESS) {
    return unusable("no usable device: " + driver->check(r, "cuDeviceGetCount").message());
  }
  if (driver->device_count <= 0) {
    return unusable("no usable device: cuDeviceGetCount found none (CUDA_VISIBLE_DEVICES?)");
  }
  VSHMEM_INFO("CUDA driver %s loaded, %d device(s) visible",
              driver_version_string(driver->version).c_str(), driver->device_count);
  return static_cast<const CudaDriver*>(driver.release());  // lives as long as the process
}

}  // namespace

std::string driver_version_string(int version) {
  return log::format("%d.%d", version / 1000, (version % 1000) / 10);
}

std::string CudaDriver::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  if (name == nullptr) return log::format("CUresult %d", static_cast<int>(result));
  if (text == nullptr) return name;
  return log::format("%s (%s)", name, text);
}

Status CudaDriver::check(CUresult result, const std::string& call) const {
  if (result == CUDA_SUCCESS) return Status::ok();
  Code code = result == CUDA_ERROR_OUT_OF_MEMORY ? Code::kOutOfMemory : Code::kSystem;
  return error(code, call + ": " + describe(result));
}

Result<const CudaDriver*> cuda_driver() {
  static const Result<const CudaDriver*> loaded = load();
  return loaded;
}

}  // namespace vshmem::detail
