// The __constant__ device state and its host side: libvshmem builds the whole state
// (runtime/api/device_state.cpp; it also fills the copies of modules loaded at run time) and this
// library copies it into the symbol as it is, and keeps a host copy for its own host code
// (on-stream calls, collective launch).
//
// Registration: this object defines vshmemi_device_state, which every device call references,
// so the device link of any program that calls the device API pulls this object in, and with it
// its host side, whose static constructor registers the library with libvshmem (the device
// link stub references this object's fatbinary registration). The library's host entry points
// (on-stream calls, collective launch) reference host_mirror() here, which pulls it in for
// programs that only use those. tests/unit/device_registration_test.cu checks the first path.
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <vector>

#include "device/device_runtime.hpp"
#include "shmem.h"
#include "vshmem/device_hooks.h"

namespace {
// The state outside shmem_init .. shmem_finalize: no PEs, every peer unmapped (so that a device
// call to any PE traps naming it).
constexpr vshmem::device::GpuState empty_state() {
  vshmem::device::GpuState s{};
  s.version = vshmem::device::kGpuStateVersion;
  s.bytes = sizeof(vshmem::device::GpuState);
  s.cuda_device = -1;
  for (int64_t& d : s.inline_delta) d = vshmem::device::kUnmappedDelta;
  return s;
}
}  // namespace

__constant__ vshmem::device::GpuState vshmemi_device_state = empty_state();

// States written so far; read by the registration test through dlsym.
extern "C" {
__attribute__((visibility("default"))) int vshmemi_device_state_writes = 0;
}

extern "C" {

__device__ void vshmemi_device_fail(const char* call, const char* cause) {
  printf("vshmem: PE %d: %s (block %d,%d,%d thread %d,%d,%d): %s\n", vshmemi_device_state.my_pe,
         call, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, cause);
  __trap();
  __builtin_unreachable();
}

__device__ void vshmemi_device_fail_peer(const char* call, int pe) {
  const vshmem::device::GpuState& s = vshmemi_device_state;
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(s.n_pes)) {
    printf(
        "vshmem: PE %d: %s (block %d,%d,%d thread %d,%d,%d): PE %d is not a valid PE (the job "
        "has PEs 0..%d%s)\n",
        s.my_pe, call, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
        pe, s.n_pes - 1, s.initialized ? "" : "; shmem_init has not been called");
  } else {
    printf(
        "vshmem: PE %d: %s (block %d,%d,%d thread %d,%d,%d): PE %d's memory is not mapped here "
        "(another node or no peer path)%s\n",
        s.my_pe, call, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
        pe,
        s.proxy.slots == nullptr
            ? " and no device proxy serves it (its request ring could not be created)"
            : ": this call reaches mapped peers only");
  }
  __trap();
  __builtin_unreachable();
}

__device__ void vshmemi_device_fail_address(const char* call, const void* addr, size_t bytes) {
  const vshmem::device::GpuState& s = vshmemi_device_state;
  printf(
      "vshmem: PE %d: %s (block %d,%d,%d thread %d,%d,%d): address %p (+%llu bytes) is not "
      "inside the symmetric heap [%p, %p) (kernels reach only the symmetric heap: global and "
      "static variables are host memory, symmetric for host calls only)\n",
      s.my_pe, call, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
      addr, static_cast<unsigned long long>(bytes), reinterpret_cast<void*>(s.heap_base),
      reinterpret_cast<void*>(s.heap_base + s.heap_committed));
  __trap();
  __builtin_unreachable();
}

}  // extern "C"

namespace vshmem::device {
namespace {

std::mutex g_mutex;
HostMirror g_mirror;

// Copies go through a non-blocking stream of our own: the legacy default stream would wait for
// the application's kernels, which may be waiting on a PE that is inside shmem_malloc with us.
cudaStream_t copy_stream() {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) s = nullptr;
    return s;
  }();
  return stream;
}

// The state into the symbol of the current GPU.
int publish(const GpuState& st) {
  cudaError_t e = cudaMemcpyToSymbolAsync(vshmemi_device_state, &st, sizeof(st), 0,
                                          cudaMemcpyHostToDevice, copy_stream());
  if (e == cudaSuccess) e = cudaStreamSynchronize(copy_stream());
  if (e != cudaSuccess) {
    cudaGetLastError();
    report("shmem_init", "cannot set the device state (cudaMemcpyToSymbol): %s",
           cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

int write_state(const GpuState* s, const int64_t* host_deltas) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++vshmemi_device_state_writes;
  // The symbol lives on every GPU: the state goes to the heap's (the runtime chose it:
  // VSHMEM_DEVICE, the application's current device, or the local rank), which becomes current
  // so that the application's kernels find it there. An empty state goes where the last one was.
  const int device = s->initialized ? s->cuda_device : g_mirror.state.cuda_device;
  const bool write = s->initialized || g_mirror.state.initialized;
  g_mirror.state = *s;
  if (s->initialized) {
    g_mirror.deltas.assign(host_deltas, host_deltas + s->n_pes);
  } else {
    g_mirror.deltas.clear();
  }
  if (!write) return 0;  // never written on a GPU: nothing to clear
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device) {
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
      cudaGetLastError();
      report("shmem_init", "cannot make GPU %d (the heap's) current: %s", device,
             cudaGetErrorString(e));
      return 1;
    }
  }
  return publish(*s);
}

struct Registration {
  Registration() {
    static const vshmemi_device_library library = {kGpuStateVersion, sizeof(GpuState),
                                                   &write_state};
    vshmemi_register_device_library(&library);
  }
};
Registration g_registration;

}  // namespace

const HostMirror& host_mirror() { return g_mirror; }

void report(const char* call, const char* fmt, ...) {
  char cause[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(cause, sizeof(cause), fmt, ap);
  va_end(ap);
  char line[700];
  std::snprintf(line, sizeof(line), "vshmem: PE %d: %s: %s", g_mirror.state.my_pe, call, cause);
  vshmemi_set_last_error(line);
  std::fprintf(stderr, "%s\n", line);
  std::fflush(stderr);
}

bool require_state(const char* call) {
  if (g_mirror.state.initialized) return true;
  report(call,
         "the device library holds no state: shmem_init has not been called, shmem_finalize "
         "was, or the heap is not GPU memory (VSHMEM_BACKEND=cuda)");
  return false;
}

bool host_proxy_peer(const char* /*call*/, const void* addr, size_t bytes, int pe) {
  const GpuState& s = g_mirror.state;
  if (!s.initialized || s.proxy.slots == nullptr || pe < 0 || pe >= s.n_pes || pe == s.my_pe ||
      g_mirror.deltas[static_cast<size_t>(pe)] != kUnmappedDelta) {
    return false;
  }
  const uint64_t a = reinterpret_cast<uint64_t>(addr);
  return a >= s.heap_base && a - s.heap_base <= s.heap_committed &&
         bytes <= s.heap_committed - (a - s.heap_base);
}

void* host_peer_ptr(const char* call, const void* addr, size_t bytes, int pe) {
  if (!require_state(call)) return nullptr;
  const GpuState& s = g_mirror.state;
  if (pe < 0 || pe >= s.n_pes) {
    report(call, "PE %d is not a valid PE (the job has PEs 0..%d)", pe, s.n_pes - 1);
    return nullptr;
  }
  uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (a < s.heap_base || a - s.heap_base > s.heap_committed ||
      bytes > s.heap_committed - (a - s.heap_base)) {
    report(call,
           "address %p (+%zu bytes) is not inside the symmetric heap [%p, %p) (stream calls reach "
           "only the symmetric heap: global and static variables are symmetric for host calls "
           "only)",
           addr, bytes, reinterpret_cast<void*>(s.heap_base),
           reinterpret_cast<void*>(s.heap_base + s.heap_committed));
    return nullptr;
  }
  if (pe == s.my_pe) return const_cast<void*>(addr);
  const int64_t d = g_mirror.deltas[static_cast<size_t>(pe)];
  if (d == kUnmappedDelta) {
    report(call,
           "PE %d's memory is not mapped here and no device proxy serves it: this on-stream call "
           "reaches mapped peers only",
           pe);
    return nullptr;
  }
  return reinterpret_cast<void*>(a + static_cast<uint64_t>(d));
}

}  // namespace vshmem::device

extern "C" int shmemx_gpu_shared_without_mps(void) {
  const vshmem::device::GpuState& s = vshmem::device::host_mirror().state;
  return s.initialized && s.pes_sharing_device > 1 && !s.mps;
}

extern "C" int shmemx_pes_sharing_gpu(void) {
  const vshmem::device::GpuState& s = vshmem::device::host_mirror().state;
  return s.initialized ? s.pes_sharing_device : 0;
}
