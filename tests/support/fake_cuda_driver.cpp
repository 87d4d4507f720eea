#include "tests/support/fake_cuda_driver.hpp"

#include "vshmem/device/impl/proxy_mailbox.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace vshmem::testing {
namespace {

struct Object {
  int fd = -1;
  size_t size = 0;
  bool multicast = false;
  int refs = 1;  // cuMemRetainAllocationHandle adds one, cuMemRelease drops one
};

struct Mapped {  // one cuMemMap: [start, start + size) shows handle
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
};

struct Fabric {  // what a fake fabric handle carries
  uint64_t magic;
  int64_t pid;
  int64_t fd;
};
constexpr uint64_t kFabricMagic = 0x66616b6566616272ull;
constexpr const char* kMulticastName = "vshmem-fake-multicast";
constexpr const char* kMemoryName = "vshmem-fake-memory";

std::mutex g_mu;
FakeDriverConfig g_config;
std::map<CUmemGenericAllocationHandle, Object> g_objects;
CUmemGenericAllocationHandle g_next = 0x1000;
std::map<std::string, int> g_calls;
std::map<uintptr_t, Mapped> g_mapped;    // by start address
std::map<uintptr_t, int> g_sync_memops;  // address -> times CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set
int g_binds = 0;
thread_local std::vector<CUcontext> t_ctx;

void count(const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls[name];
}

Object* find(CUmemGenericAllocationHandle h) {
  auto it = g_objects.find(h);
  return it == g_objects.end() ? nullptr : &it->second;
}

CUmemGenericAllocationHandle add(Object o) {
  const CUmemGenericAllocationHandle h = g_next++;
  g_objects[h] = o;
  return h;
}

int new_memfd(const char* name, size_t size) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A descriptor's memfd name tells memory from multicast objects on import.
bool is_multicast_fd(int fd) {
  char path[64], target[256] = {};
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  ssize_t n = ::readlink(path, target, sizeof(target) - 1);
  return n > 0 && std::strstr(target, kMulticastName) != nullptr;
}

CUresult import_fd(CUmemGenericAllocationHandle* h, int fd) {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  Object o;
  o.fd = fd;
  o.size = static_cast<size_t>(st.st_size);
  o.multicast = is_multicast_fd(fd);
  std::lock_guard<std::mutex> lock(g_mu);
  *h = add(o);
  return CUDA_SUCCESS;
}

#define FAKE(name) count(#name)

CUresult fk_cuGetErrorName(CUresult r, const char** out) {
  switch (r) {
    case CUDA_SUCCESS: *out = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *out = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *out = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED: *out = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_PERMITTED: *out = "CUDA_ERROR_NOT_PERMITTED"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_STATE: *out = "CUDA_ERROR_ILLEGAL_STATE"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
      *out = "CUDA_ERROR_ILLEGAL_INSTRUCTION";
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult fk_cuGetErrorString(CUresult r, const char** out) {
  const char* name = nullptr;
  if (fk_cuGetErrorName(r, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *out = "injected by the fake driver";
  return CUDA_SUCCESS;
}
CUresult fk_cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult fk_cuDeviceGet(CUdevice* d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult fk_cuDeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult fk_cuDeviceGetName(char* name, int len, CUdevice) {
  std::snprintf(name, static_cast<size_t>(len), "vshmem fake GPU");
  return CUDA_SUCCESS;
}
CUresult fk_cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  std::lock_guard<std::mutex> lock(g_mu);
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *v = g_config.fabric_supported; break;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: *v = g_config.multicast_supported; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = g_config.pci_bus; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult fk_cuDeviceCanAccessPeer(int* can, CUdevice, CUdevice) {
  *can = 1;
  return CUDA_SUCCESS;
}
CUcontext fake_context() { return reinterpret_cast<CUcontext>(static_cast<uintptr_t>(0xc0de)); }
CUresult fk_cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  *c = fake_context();
  return CUDA_SUCCESS;
}
CUresult fk_cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult fk_cuCtxGetCurrent(CUcontext* c) {
  *c = t_ctx.empty() ? nullptr : t_ctx.back();
  return CUDA_SUCCESS;
}
CUresult fk_cuCtxSetCurrent(CUcontext c) {
  if (t_ctx.empty()) {
    if (c != nullptr) t_ctx.push_back(c);
  } else if (c == nullptr) {
    t_ctx.pop_back();
  } else {
    t_ctx.back() = c;
  }
  return CUDA_SUCCESS;
}
CUresult fk_cuCtxGetDevice(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fk_cuCtxPushCurrent(CUcontext c) {
  t_ctx.push_back(c);
  return CUDA_SUCCESS;
}
CUresult fk_cuCtxPopCurrent(CUcontext* c) {
  if (t_ctx.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (c != nullptr) *c = t_ctx.back();
  t_ctx.pop_back();
  return CUDA_SUCCESS;
}
CUresult fk_cuCtxEnablePeerAccess(CUcontext, unsigned int) { return CUDA_SUCCESS; }
CUresult fk_cuCtxDisablePeerAccess(CUcontext) { return CUDA_SUCCESS; }
CUresult fk_cuMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = *total = size_t{1} << 32;
  return CUDA_SUCCESS;
}
CUresult fk_cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp*,
                                          CUmemAllocationGranularity_flags) {
  std::lock_guard<std::mutex> lock(g_mu);
  *g = g_config.granularity;
  return CUDA_SUCCESS;
}
CUresult fk_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                unsigned long long) {
  FAKE(cuMemAddressReserve);
  const size_t align = alignment == 0 ? 4096 : alignment;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (addr != 0) {
    void* p = ::mmap(reinterpret_cast<void*>(addr), size, PROT_NONE, flags, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
  }
  void* p = ::mmap(nullptr, size + align, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (base + align - 1) / align * align;
  if (aligned > base) ::munmap(p, aligned - base);
  if (base + size + align > aligned + size) {
    ::munmap(reinterpret_cast<void*>(aligned + size), base + size + align - aligned - size);
  }
  *ptr = static_cast<CUdeviceptr>(aligned);
  return CUDA_SUCCESS;
}
CUresult fk_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKE(cuMemAddressFree);
  return ::munmap(reinterpret_cast<void*>(ptr), size) == 0 ? CUDA_SUCCESS
                                                           : CUDA_ERROR_INVALID_VALUE;
}
CUresult fk_cuMemCreate(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp*,
                        unsigned long long) {
  FAKE(cuMemCreate);
  Object o;
  o.fd = new_memfd(kMemoryName, size);
  if (o.fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  o.size = size;
  std::lock_guard<std::mutex> lock(g_mu);
  *h = add(o);
  return CUDA_SUCCESS;
}
CUresult fk_cuMemRelease(CUmemGenericAllocationHandle h) {
  FAKE(cuMemRelease);
  std::lock_guard<std::mutex> lock(g_mu);
  Object* o = find(h);
  if (o == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (--o->refs > 0) return CUDA_SUCCESS;
  ::close(o->fd);
  g_objects.erase(h);
  return CUDA_SUCCESS;
}
CUresult fk_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                     unsigned long long) {
  FAKE(cuMemMap);
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    Object* o = find(h);
    if (o == nullptr || offset + size > o->size) return CUDA_ERROR_INVALID_VALUE;
    fd = o->fd;
  }
  void* p = ::mmap(reinterpret_cast<void*>(ptr), size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_mu);
  g_mapped[static_cast<uintptr_t>(ptr)] = Mapped{size, h};
  return CUDA_SUCCESS;
}
CUresult fk_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKE(cuMemUnmap);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_mapped.erase(static_cast<uintptr_t>(ptr));
    g_sync_memops.erase(static_cast<uintptr_t>(ptr));
  }
  void* p = ::mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return p == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult fk_cuMemSetAccess(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) {
  FAKE(cuMemSetAccess);
  return CUDA_SUCCESS;
}
CUresult fk_cuMemExportToShareableHandle(void* out, CUmemGenericAllocationHandle h,
                                         CUmemAllocationHandleType type, unsigned long long) {
  FAKE(cuMemExportToShareableHandle);
  std::lock_guard<std::mutex> lock(g_mu);
  Object* o = find(h);
  if (o == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    *static_cast<int*>(out) = ::dup(o->fd);
    return CUDA_SUCCESS;
  }
  if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
    if (!g_config.fabric_supported) return CUDA_ERROR_NOT_SUPPORTED;
    if (g_config.fabric_export_result != CUDA_SUCCESS) return g_config.fabric_export_result;
    Fabric f{kFabricMagic, static_cast<int64_t>(::getpid()), o->fd};
    std::memset(out, 0, sizeof(CUmemFabricHandle));
    std::memcpy(out, &f, sizeof(f));
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult fk_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* h, void* os_handle,
                                           CUmemAllocationHandleType type) {
  FAKE(cuMemImportFromShareableHandle);
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    return import_fd(h, ::dup(static_cast<int>(reinterpret_cast<uintptr_t>(os_handle))));
  }
  if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
    Fabric f{};
    std::memcpy(&f, os_handle, sizeof(f));
    if (f.magic != kFabricMagic) return CUDA_ERROR_INVALID_VALUE;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%lld/fd/%lld", static_cast<long long>(f.pid),
                  static_cast<long long>(f.fd));
    return import_fd(h, ::open(path, O_RDWR | O_CLOEXEC));
  }
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult fk_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                   CUmemGenericAllocationHandle h) {
  *prop = {};
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = 0;
  std::lock_guard<std::mutex> lock(g_mu);
  Object* o = find(h);
  if (o == nullptr) return CUDA_ERROR_INVALID_VALUE;
  prop->requestedHandleTypes = g_config.unshareable_handles.count(h) != 0
                                   ? CU_MEM_HANDLE_TYPE_NONE
                                   : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  if (g_config.fabric_supported && g_config.unshareable_handles.count(h) == 0) {
    prop->requestedHandleTypes = static_cast<CUmemAllocationHandleType>(prop->requestedHandleTypes |
                                                                        CU_MEM_HANDLE_TYPE_FABRIC);
  }
  return CUDA_SUCCESS;
}
// The allocation mapped at addr (anywhere inside one cuMemMap), with one more reference.
CUresult fk_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* h, void* addr) {
  FAKE(cuMemRetainAllocationHandle);
  std::lock_guard<std::mutex> lock(g_mu);
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  auto it = g_mapped.upper_bound(a);
  if (it == g_mapped.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (a - it->first >= it->second.size) return CUDA_ERROR_INVALID_VALUE;
  Object* o = find(it->second.handle);
  if (o == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ++o->refs;
  *h = it->second.handle;
  return CUDA_SUCCESS;
}
CUresult fk_cuPointerSetAttribute(const void* value, CUpointer_attribute attribute,
                                  CUdeviceptr ptr) {
  FAKE(cuPointerSetAttribute);
  std::lock_guard<std::mutex> lock(g_mu);
  if (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t a = static_cast<uintptr_t>(ptr);
  auto it = g_mapped.find(a);
  if (it == g_mapped.end()) return CUDA_ERROR_INVALID_VALUE;
  if (*static_cast<const int*>(value) != 0) ++g_sync_memops[a];
  return CUDA_SUCCESS;
}
// Live cuMemAlloc / cuMemHostAlloc allocations: address -> (bytes, flags; -1 for cuMemAlloc).
struct Live {
  size_t bytes = 0;
  int flags = -1;
};
std::map<uintptr_t, Live> g_live;
std::atomic<uint64_t> g_poison{0x9E3779B97F4A7C15ull};

// Fresh allocations hold garbage, as the real driver's may: whoever needs zeros must write them.
void* poisoned(size_t bytes) {
  auto* p = static_cast<unsigned char*>(std::malloc(bytes == 0 ? 1 : bytes));
  if (p == nullptr) return nullptr;
  uint64_t x = g_poison.fetch_add(0x9E3779B97F4A7C15ull) ^ reinterpret_cast<uintptr_t>(p);
  for (size_t i = 0; i < bytes; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<unsigned char>((x >> 33) | 1);  // never 0
  }
  return p;
}

CUresult fk_cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  count("cuMemAlloc");
  void* m = poisoned(bytes);
  if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_mu);
  g_live[reinterpret_cast<uintptr_t>(m)] = Live{bytes, -1};
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult fk_cuMemFree(CUdeviceptr p) {
  count("cuMemFree");
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_live.find(static_cast<uintptr_t>(p));
    if (it == g_live.end() || it->second.flags != -1) return CUDA_ERROR_INVALID_VALUE;
    g_live.erase(it);
  }
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult fk_cuMemHostAlloc(void** p, size_t bytes, unsigned int flags) {
  count("cuMemHostAlloc");
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if ((flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0 &&
        g_config.mapped_host_alloc_result != CUDA_SUCCESS) {
      return g_config.mapped_host_alloc_result;
    }
  }
  void* m = poisoned(bytes);
  if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_mu);
  g_live[reinterpret_cast<uintptr_t>(m)] = Live{bytes, static_cast<int>(flags)};
  *p = m;
  return CUDA_SUCCESS;
}
// Host registration of memory allocated elsewhere (the UCX plugin's shared staging buffers):
// accepted and counted; the fake's copies reach any host memory anyway.
CUresult fk_cuMemHostRegister(void* p, size_t bytes, unsigned int) {
  count("cuMemHostRegister");
  return p != nullptr && bytes != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult fk_cuMemHostUnregister(void* p) {
  count("cuMemHostUnregister");
  return p != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult fk_cuMemFreeHost(void* p) {
  count("cuMemFreeHost");
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_live.find(reinterpret_cast<uintptr_t>(p));
    if (it == g_live.end() || it->second.flags == -1) return CUDA_ERROR_INVALID_VALUE;
    g_live.erase(it);
  }
  std::free(p);
  return CUDA_SUCCESS;
}
// Only memory allocated with CU_MEMHOSTALLOC_DEVICEMAP has a device address: the host's (unified
// addressing), or another one when the configuration plays a platform without it.
CUresult fk_cuMemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned int flags) {
  count("cuMemHostGetDevicePointer");
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_live.find(reinterpret_cast<uintptr_t>(p));
  if (flags != 0 || it == g_live.end() || it->second.flags == -1 ||
      (it->second.flags & CU_MEMHOSTALLOC_DEVICEMAP) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *d = reinterpret_cast<CUdeviceptr>(p) + (g_config.mapped_host_elsewhere ? 4096 : 0);
  return CUDA_SUCCESS;
}
// What cuPointerGetAttribute(MEMORY_TYPE) answers: the mapped heap and cuMemAlloc's blocks are
// device memory, cuMemHostAlloc's page-locked host memory; anything else is unknown to CUDA.
CUresult fk_cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FAKE(cuPointerGetAttribute);
  if (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE &&
      attribute != CU_POINTER_ATTRIBUTE_IS_MANAGED &&
      attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const uintptr_t a = static_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mu);
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  bool known = false;
  if (auto it = g_mapped.upper_bound(a); it != g_mapped.begin()) {
    --it;
    if (a - it->first < it->second.size) {
      type = CU_MEMORYTYPE_DEVICE;
      known = true;
    }
  }
  if (auto it = g_live.upper_bound(a); !known && it != g_live.begin()) {
    --it;
    if (a - it->first < it->second.bytes) {
      type = it->second.flags == -1 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      known = true;
    }
  }
  if (!known) return CUDA_ERROR_INVALID_VALUE;  // memory CUDA does not know (pageable host memory)
  if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED) {
    *static_cast<int*>(data) = 0;  // the fake has no managed memory
  } else if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
    *static_cast<int*>(data) = 0;  // one device
  } else {
    *static_cast<CUmemorytype*>(data) = type;
  }
  return CUDA_SUCCESS;
}
// This thread's stream capture mode (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
bool capture_forbids() {
  return g_config.global_capture_elsewhere && t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

std::vector<std::function<void()>> g_held_kernels;  // launched while hold_kernels (under g_mu)
CUresult fk_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream) {
  FAKE(cuMemcpyAsync);
  if (capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  auto copy = [dst, src, bytes] {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  };
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_config.hold_kernels) {  // the copy's stream waits behind the held kernels
      g_held_kernels.push_back(std::move(copy));
      return CUDA_SUCCESS;
    }
  }
  copy();
  return CUDA_SUCCESS;
}
CUresult fk_cuMemsetD8Async(CUdeviceptr dst, unsigned char c, size_t bytes, CUstream) {
  if (capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::memset(reinterpret_cast<void*>(dst), c, bytes);
  return CUDA_SUCCESS;
}
CUresult fk_cuStreamCreate(CUstream* s, unsigned int) {
  *s = reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x5e));
  return CUDA_SUCCESS;
}
CUresult fk_cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
std::map<uintptr_t, int> g_stream_syncs;  // stream -> cuStreamSynchronize calls on it
CUresult fk_cuStreamSynchronize(CUstream s) {
  if (capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    ++g_stream_syncs[reinterpret_cast<uintptr_t>(s)];
  }
  return g_config.stream_query_result;
}
CUresult fk_cuStreamQuery(CUstream) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_config.hold_kernels && !g_held_kernels.empty()) return CUDA_ERROR_NOT_READY;
  return g_config.stream_query_result;
}
CUresult fk_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  std::swap(t_capture_mode, *mode);
  return CUDA_SUCCESS;
}
CUresult fk_cuModuleLoadData(CUmodule* m, const void*) {
  *m = reinterpret_cast<CUmodule>(static_cast<uintptr_t>(0x30d));
  return CUDA_SUCCESS;
}
CUresult fk_cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
// The kernels of the atomic PTX, by name: 32 and 64 (vshmem_atomic_b32/b64), 7 for the inbound
// mailbox's fallback (vshmem_mailbox_serve).
constexpr uintptr_t kMailboxFunction = 7;
CUresult fk_cuModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  const uintptr_t id = std::strstr(name, "mailbox") != nullptr ? kMailboxFunction
                       : std::strstr(name, "b32") != nullptr   ? 32
                                                               : 64;
  *f = reinterpret_cast<CUfunction>(id);
  return CUDA_SUCCESS;
}
// Code loaded at run time: the handle is the address of a FakeLoadedCode.
CUresult fake_global(CUdeviceptr* p, size_t* bytes, const void* handle, const char* name) {
  const auto* code = static_cast<const FakeLoadedCode*>(handle);
  if (code == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (code->name != name) return CUDA_ERROR_NOT_FOUND;
  *p = reinterpret_cast<CUdeviceptr>(code->global);
  *bytes = code->bytes;
  return CUDA_SUCCESS;
}
CUresult fk_cuModuleGetGlobal(CUdeviceptr* p, size_t* bytes, CUmodule m, const char* name) {
  FAKE(cuModuleGetGlobal);
  return fake_global(p, bytes, m, name);
}
CUresult fk_cuLibraryGetGlobal(CUdeviceptr* p, size_t* bytes, CUlibrary l, const char* name) {
  FAKE(cuLibraryGetGlobal);
  return fake_global(p, bytes, l, name);
}

// The host atomic kernels (runtime/memory/cuda_atomic_ptx.cpp), done on the host.
template <class T>
uint64_t host_atomic(T* p, unsigned op, T operand, T compare) {
  T old = 0;
  switch (op) {
    case 0: old = __atomic_load_n(p, __ATOMIC_SEQ_CST); break;
    case 1: old = __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST); break;
    case 2:
      old = compare;
      __atomic_compare_exchange_n(p, &old, operand, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      break;
    case 3: old = __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST); break;
    case 4: old = __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST); break;
    case 5: old = __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST); break;
    case 6: old = __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST); break;
    default: break;
  }
  return static_cast<uint64_t>(old);
}
std::function<void()> atomic_kernel(CUfunction f, void** args);
CUresult fk_cuLaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void** args, void**) {
  FAKE(cuLaunchKernel);
  if (capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::function<void()> kernel;
  if (reinterpret_cast<uintptr_t>(f) == kMailboxFunction) {
    const proxy::MailboxView view{*static_cast<proxy::Mailbox**>(args[0]),
                                  *static_cast<uint64_t**>(args[1])};
    const uint64_t launch = *static_cast<uint64_t*>(args[2]);
    kernel = [view, launch] { proxy::mailbox_fallback(view, launch); };
  } else {
    kernel = atomic_kernel(f, args);
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_config.hold_kernels) {
      g_held_kernels.push_back(std::move(kernel));
      return CUDA_SUCCESS;
    }
  }
  kernel();
  return CUDA_SUCCESS;
}
std::function<void()> atomic_kernel(CUfunction f, void** args) {
  const CUdeviceptr target = *static_cast<CUdeviceptr*>(args[0]);
  const uint64_t operand = *static_cast<uint64_t*>(args[1]);
  const uint64_t compare = *static_cast<uint64_t*>(args[2]);
  const CUdeviceptr result = *static_cast<CUdeviceptr*>(args[3]);
  const unsigned op = *static_cast<unsigned*>(args[4]);
  return [=] {
    uint64_t old = 0;
    if (reinterpret_cast<uintptr_t>(f) == 32) {
      old = host_atomic(reinterpret_cast<uint32_t*>(target), op, static_cast<uint32_t>(operand),
                        static_cast<uint32_t>(compare));
    } else {
      old = host_atomic(reinterpret_cast<uint64_t*>(target), op, operand, compare);
    }
    *reinterpret_cast<uint64_t*>(result) = old;
  };
}

CUresult fk_cuMulticastCreate(CUmemGenericAllocationHandle* h, const CUmulticastObjectProp* prop) {
  FAKE(cuMulticastCreate);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_config.multicast_create_result != CUDA_SUCCESS) return g_config.multicast_create_result;
  if (prop->size == 0 || prop->size % g_config.multicast_granularity != 0 ||
      prop->numDevices == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Object o;
  o.fd = new_memfd(kMulticastName, prop->size);
  if (o.fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  o.size = prop->size;
  o.multicast = true;
  *h = add(o);
  return CUDA_SUCCESS;
}
CUresult fk_cuMulticastGetGranularity(size_t* g, const CUmulticastObjectProp*,
                                      CUmulticastGranularity_flags) {
  FAKE(cuMulticastGetGranularity);
  std::lock_guard<std::mutex> lock(g_mu);
  *g = g_config.multicast_granularity;
  return CUDA_SUCCESS;
}
CUresult fk_cuMulticastAddDevice(CUmemGenericAllocationHandle h, CUdevice) {
  FAKE(cuMulticastAddDevice);
  std::lock_guard<std::mutex> lock(g_mu);
  Object* o = find(h);
  if (o == nullptr || !o->multicast) return CUDA_ERROR_INVALID_VALUE;
  return g_config.multicast_add_device_result;
}
CUresult fk_cuMulticastBindMem(CUmemGenericAllocationHandle mc, size_t mc_offset,
                               CUmemGenericAllocationHandle mem, size_t mem_offset, size_t size,
                               unsigned long long) {
  FAKE(cuMulticastBindMem);
  std::lock_guard<std::mutex> lock(g_mu);
  Object* m = find(mc);
  Object* p = find(mem);
  if (m == nullptr || !m->multicast || p == nullptr || p->multicast || mc_offset + size > m->size ||
      mem_offset + size > p->size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int this_bind = g_binds++;
  if (g_config.multicast_bind_fail_from >= 0 && this_bind >= g_config.multicast_bind_fail_from &&
      (g_config.multicast_bind_fail_until < 0 || this_bind < g_config.multicast_bind_fail_until)) {
    return g_config.multicast_bind_result;
  }
  return CUDA_SUCCESS;
}
CUresult fk_cuMulticastUnbind(CUmemGenericAllocationHandle mc, CUdevice, size_t, size_t) {
  FAKE(cuMulticastUnbind);
  std::lock_guard<std::mutex> lock(g_mu);
  return find(mc) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult fk_cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  FAKE(cuModuleGetLoadingMode);
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}
CUresult fk_fabric_info(int, detail::CudaFabricInfo* out) {
  FAKE(fabric_info);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_config.fabric_info_result != CUDA_SUCCESS) return g_config.fabric_info_result;
  *out = g_config.fabric_info;
  return CUDA_SUCCESS;
}

detail::CudaDriver make_table() {
  detail::CudaDriver d;
#define FAKE_ENTRY(name, version) d.name = fk_##name;
  VSHMEM_CUDA_DRIVER_FUNCTIONS(FAKE_ENTRY)
  VSHMEM_CUDA_DRIVER_OPTIONAL_FUNCTIONS(FAKE_ENTRY)
#undef FAKE_ENTRY
  d.fabric_info = fk_fabric_info;
  d.fake = true;
  d.version = 12080;
  d.device_count = 1;
  return d;
}

}  // namespace

const detail::CudaDriver& fake_cuda_driver(const FakeDriverConfig& config) {
  static detail::CudaDriver table = make_table();
  std::lock_guard<std::mutex> lock(g_mu);
  g_config = config;
  table.imex_channel_dir = nullptr;  // set below: the string must outlive the table's use
  static std::string dir;
  dir = config.imex_channel_dir;
  table.imex_channel_dir = dir.c_str();
  return table;
}

int fake_calls(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_calls.find(name);
  return it == g_calls.end() ? 0 : it->second;
}

int fake_stream_syncs(CUstream stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_stream_syncs.find(reinterpret_cast<uintptr_t>(stream));
  return it == g_stream_syncs.end() ? 0 : it->second;
}

int fake_sync_memops(const void* address) {
  std::lock_guard<std::mutex> lock(g_mu);
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  auto m = g_mapped.upper_bound(a);
  if (m == g_mapped.begin()) return 0;
  --m;
  if (a - m->first >= m->second.size) return 0;
  auto it = g_sync_memops.find(m->first);
  return it == g_sync_memops.end() ? 0 : it->second;
}

int fake_host_alloc_flags(const void* address) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_live.find(reinterpret_cast<uintptr_t>(address));
  return it == g_live.end() || it->second.flags == -1 ? -1 : it->second.flags;
}

size_t fake_device_alloc_bytes(const void* address) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_live.find(reinterpret_cast<uintptr_t>(address));
  return it == g_live.end() || it->second.flags != -1 ? 0 : it->second.bytes;
}

int fake_live_host_allocs(unsigned int flags) {
  std::lock_guard<std::mutex> lock(g_mu);
  int n = 0;
  for (const auto& [address, live] : g_live) {
    n += live.flags != -1 && (static_cast<unsigned>(live.flags) & flags) == flags;
  }
  return n;
}

int fake_refs(CUmemGenericAllocationHandle handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  Object* o = find(handle);
  return o == nullptr ? 0 : o->refs;
}

int fake_run_held_kernels() {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    run.swap(g_held_kernels);
  }
  for (auto& k : run) k();
  return static_cast<int>(run.size());
}

void reset_fake_calls() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_calls.clear();
  g_binds = 0;
}

bool real_libcuda_loaded() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return false;
  ::dlclose(h);
  return true;
}

}  // namespace vshmem::testing
