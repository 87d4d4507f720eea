// The __constant__ device state and the listener that keeps it in step with the host runtime.
//
// Registration: this object defines vshmemi_device_state, which every device call references,
// so the device link of any program that calls the device API pulls this object in, and with it
// its host side, whose static constructor registers the listener with libvshmem (the device
// link stub references this object's fatbinary registration). The library's host entry points
// (on-stream calls, collective launch) reference host_mirror() here, which pulls it in for
// programs that only use those. tests/unit/device_registration_test.cu checks the first path.
#include <cuda.h>  // driver types only: driver calls go through cudaGetDriverEntryPointByVersion
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "device/device_runtime.hpp"
#include "device/proxy_ring_memory.hpp"
#include "device/state.h"
#include "shmem.h"
#include "vshmem/device/impl/mc_barrier.h"
#include "vshmem/device_hooks.h"

namespace {
// The state outside shmem_init .. shmem_finalize: no PEs, every peer unmapped (so that a device
// call to any PE traps naming it).
constexpr vshmem::device::GpuState empty_state() {
  vshmem::device::GpuState s{};
  for (int64_t& d : s.inline_delta) d = vshmem::device::kUnmappedDelta;
  return s;
}
}  // namespace

__constant__ vshmem::device::GpuState vshmemi_device_state = empty_state();

// Calls of the listener so far; read by the registration test through dlsym.
extern "C" {
__attribute__((visibility("default"))) int vshmemi_device_listener_calls = 0;
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
int64_t* g_device_deltas = nullptr;  // cudaMalloc'ed peer delta table (GpuState::peer_delta)
size_t g_device_deltas_n = 0;
// cudaMalloc'ed team table: team_slots GpuTeam entries, then team_slots * n_pes members.
void* g_device_teams = nullptr;
size_t g_device_teams_bytes = 0;
bool g_warned_host_heap = false;
bool g_warned_sharing = false;

template <class Fn>
Fn driver_fn(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

// Whether contexts on `device` are served by an MPS server (CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
// the driver's own answer, so neither a pipe directory guess nor an environment variable).
bool mps_enabled(int device) {
  using GetAttr = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  static GetAttr get = driver_fn<GetAttr>("cuDeviceGetAttribute");
  int v = 0;
  if (get == nullptr || get(&v, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, device) != CUDA_SUCCESS) {
    return false;
  }
  return v != 0;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && (std::strcmp(v, "1") == 0 || std::strcmp(v, "yes") == 0 ||
                          std::strcmp(v, "true") == 0 || std::strcmp(v, "on") == 0);
}

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

// Modules and libraries loaded at run time (shmemx_cumodule_init, shmemx_culibrary_init): each
// holds its own copy of vshmemi_device_state, which every publish() fills too.
struct LoadedCode {
  CUmodule module = nullptr;
  CUlibrary library = nullptr;
};
std::vector<LoadedCode> g_loaded;

// The address and size of `code`'s vshmemi_device_state; CUDA_ERROR_NOT_FOUND when the code does
// not define it (it was not linked with libvshmem_device).
CUresult loaded_state_symbol(const LoadedCode& code, CUdeviceptr* ptr, size_t* bytes) {
  using GetModuleGlobal = CUresult (*)(CUdeviceptr*, size_t*, CUmodule, const char*);
  using GetLibraryGlobal = CUresult (*)(CUdeviceptr*, size_t*, CUlibrary, const char*);
  static const auto module_global = driver_fn<GetModuleGlobal>("cuModuleGetGlobal");
  static const auto library_global = driver_fn<GetLibraryGlobal>("cuLibraryGetGlobal");
  if (code.module != nullptr) {
    return module_global != nullptr ? module_global(ptr, bytes, code.module, "vshmemi_device_state")
                                    : CUDA_ERROR_NOT_SUPPORTED;
  }
  return library_global != nullptr
             ? library_global(ptr, bytes, code.library, "vshmemi_device_state")
             : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fill_loaded(const LoadedCode& code, const GpuState& st) {
  using MemcpyHtoD = CUresult (*)(CUdeviceptr, const void*, size_t);
  static const auto memcpy_htod = driver_fn<MemcpyHtoD>("cuMemcpyHtoD");
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  CUresult r = loaded_state_symbol(code, &ptr, &bytes);
  if (r != CUDA_SUCCESS) return r;
  if (bytes != sizeof(st)) return CUDA_ERROR_INVALID_IMAGE;  // built against other headers
  return memcpy_htod != nullptr ? memcpy_htod(ptr, &st, sizeof(st)) : CUDA_ERROR_NOT_SUPPORTED;
}

void publish(const GpuState& st) {
  cudaError_t e = cudaMemcpyToSymbolAsync(vshmemi_device_state, &st, sizeof(st), 0,
                                          cudaMemcpyHostToDevice, copy_stream());
  if (e == cudaSuccess) e = cudaStreamSynchronize(copy_stream());
  if (e != cudaSuccess) {
    report("shmem_init", "cannot set the device state (cudaMemcpyToSymbol): %s",
           cudaGetErrorString(e));
  }
  for (const LoadedCode& code : g_loaded) {
    if (CUresult r = fill_loaded(code, st); r != CUDA_SUCCESS) {
      report("shmem_init", "cannot set the device state of a loaded module (CUresult %d)",
             static_cast<int>(r));
    }
  }
}

// The teams, into device memory (one GpuTeam per slot, then each slot's members). False after a
// report when that fails; teams are left out (team_slots 0) when the runtime describes none or
// its synchronization area has no room for their barriers.
bool copy_teams(const DeviceState& s, GpuState* st) {
  st->team_slots = 0;
  st->teams = nullptr;
  const size_t n = static_cast<size_t>(s.n_pes);
  const size_t slots = s.teams != nullptr && s.team_slots > 0 ? s.team_slots : 0;
  const uint64_t team_sync_end = s.team_sync_offset + slots * s.team_slot_bytes;
  if (slots == 0 || s.team_slot_bytes <= TeamSlotLayout::scratch(s.n_pes) ||
      team_sync_end > s.sync_offset + s.sync_bytes) {
    return true;
  }
  const size_t bytes = slots * sizeof(GpuTeam) + slots * n * sizeof(int32_t);
  if (g_device_teams_bytes < bytes) {
    if (g_device_teams != nullptr) cudaFree(g_device_teams);
    g_device_teams = nullptr;
    g_device_teams_bytes = 0;
    if (cudaMalloc(&g_device_teams, bytes) != cudaSuccess) {
      cudaGetLastError();
      report("device state", "cannot allocate the device team table (%zu bytes)", bytes);
      return false;
    }
    g_device_teams_bytes = bytes;
  }
  auto* dev_teams = static_cast<GpuTeam*>(g_device_teams);
  auto* dev_members = reinterpret_cast<int32_t*>(dev_teams + slots);
  std::vector<unsigned char> staging(bytes);
  auto* teams = reinterpret_cast<GpuTeam*>(staging.data());
  auto* members = reinterpret_cast<int32_t*>(teams + slots);
  for (size_t t = 0; t < slots; ++t) {
    const DeviceTeam& from = s.teams[t];
    teams[t] = GpuTeam{};
    if (from.size <= 0 || static_cast<size_t>(from.size) > n || from.members == nullptr) continue;
    teams[t].size = from.size;
    teams[t].my_index = from.my_index;
    teams[t].members = dev_members + t * n;
    teams[t].mc_base = from.mc_base;
    std::memcpy(members + t * n, from.members, static_cast<size_t>(from.size) * sizeof(int32_t));
  }
  cudaError_t e =
      cudaMemcpyAsync(g_device_teams, staging.data(), bytes, cudaMemcpyHostToDevice, copy_stream());
  if (e == cudaSuccess) e = cudaStreamSynchronize(copy_stream());
  if (e != cudaSuccess) {
    report("device state", "cannot copy the device team table: %s", cudaGetErrorString(e));
    return false;
  }
  st->team_slots = static_cast<int>(slots);
  st->teams = dev_teams;
  st->team_handle_base = s.team_handle_base;
  st->team_handle_stride = s.team_handle_stride;
  st->team_sync_base = s.heap_base + s.team_sync_offset;
  st->team_slot_bytes = s.team_slot_bytes;
  return true;
}

void clear_state() {
  GpuState empty = empty_state();
  empty.my_pe = g_mirror.state.my_pe;
  if (g_mirror.state.initialized) publish(empty);
  g_mirror.state = empty;
  g_mirror.peer_slot.clear();
  if (g_device_deltas != nullptr) {
    cudaFree(g_device_deltas);
    g_device_deltas = nullptr;
    g_device_deltas_n = 0;
  }
  if (g_device_teams != nullptr) {
    cudaFree(g_device_teams);
    g_device_teams = nullptr;
    g_device_teams_bytes = 0;
  }
}

void on_state(const DeviceState* s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++vshmemi_device_listener_calls;
  if (s == nullptr || !s->initialized) {
    clear_state();
    release_proxy_ring();  // shmem_finalize stopped the runtime's proxy thread first
    return;
  }
  if (s->version != kDeviceStateVersion) {
    report("shmem_init",
           "the runtime's device state is version %d, this device library reads version %d: "
           "rebuild against one vshmem",
           s->version, kDeviceStateVersion);
    clear_state();
    return;
  }
  g_mirror.state.my_pe = s->my_pe;
  int device = -1;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 ||
      cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return;  // no GPU here: the device API is not usable, nothing to keep in step
  }
  const uint64_t sync_base = s->heap_base + s->sync_offset;
  // The runtime says which GPU holds the heap (its memory provider chose it: VSHMEM_DEVICE, the
  // application's current device, or the local rank).
  const int heap_device = s->cuda_device;
  if (heap_device < 0) {
    if (!g_warned_host_heap) {
      g_warned_host_heap = true;
      report("shmem_init",
             "the symmetric heap is not GPU memory (host backend): device calls in kernels will "
             "trap; set VSHMEM_BACKEND=cuda to use the device API");
    }
    clear_state();
    return;
  }
  if (heap_device != device) {
    // The runtime picked this PE's GPU (VSHMEM_DEVICE or local rank); kernels and the
    // __constant__ state must live on the same one.
    if (cudaError_t e = cudaSetDevice(heap_device); e != cudaSuccess) {
      report("shmem_init", "cannot make GPU %d (the heap's) current: %s", heap_device,
             cudaGetErrorString(e));
      clear_state();
      return;
    }
    device = heap_device;
  }
  if (s->sync_bytes < SyncLayout::kBytesNeeded) {
    report("shmem_init", "the device synchronization area has %llu bytes, %llu needed",
           static_cast<unsigned long long>(s->sync_bytes),
           static_cast<unsigned long long>(SyncLayout::kBytesNeeded));
    clear_state();
    return;
  }
  const bool first = !g_mirror.state.initialized;
  const size_t n = static_cast<size_t>(s->n_pes);
  g_mirror.peer_slot.assign(s->peer_slot, s->peer_slot + n);
  // Peer p's copy of H + x is at W + slot(p) * S + x: its delta is W + slot(p) * S - H (unsigned
  // arithmetic, wrapping like the device's add); 0 for our own PE (impl/state.cuh).
  std::vector<int64_t> deltas(n);
  for (size_t p = 0; p < n; ++p) {
    const int32_t slot = g_mirror.peer_slot[p];
    if (static_cast<int>(p) == s->my_pe) {
      deltas[p] = 0;
    } else if (slot < 0) {
      deltas[p] = kUnmappedDelta;
    } else {
      deltas[p] = static_cast<int64_t>(s->window_base + static_cast<uint64_t>(slot) * s->heap_size -
                                       s->heap_base);
    }
  }
  if (g_device_deltas_n < n) {
    if (g_device_deltas != nullptr) cudaFree(g_device_deltas);
    g_device_deltas = nullptr;
    g_device_deltas_n = 0;
    if (cudaMalloc(&g_device_deltas, n * sizeof(int64_t)) != cudaSuccess) {
      report("shmem_init", "cannot allocate the device peer table (%zu PEs)", n);
      clear_state();
      return;
    }
    g_device_deltas_n = n;
  }
  cudaError_t e = cudaMemcpyAsync(g_device_deltas, deltas.data(), n * sizeof(int64_t),
                                  cudaMemcpyHostToDevice, copy_stream());
  if (e == cudaSuccess) e = cudaStreamSynchronize(copy_stream());
  if (e != cudaSuccess) {
    report("shmem_init", "cannot copy the device peer table: %s", cudaGetErrorString(e));
    clear_state();
    return;
  }

  GpuState st{};
  if (!copy_teams(*s, &st)) {
    clear_state();
    return;
  }
  st.heap_base = s->heap_base;
  st.heap_size = s->heap_size;
  st.heap_committed = s->heap_committed;
  st.window_base = s->window_base;
  st.sync_base = sync_base;
  st.sync_bytes = s->sync_bytes;
  st.peer_delta = g_device_deltas;
  st.mc_base = s->mc_base;
  // The host's SHMEM_TEAM_WORLD handle: slot 0 of the team table the runtime describes, else
  // looked up (rather than linked, so this library does not depend on the teams module).
  if (s->team_handle_base != 0) {
    st.world_handle = reinterpret_cast<shmem_team_t>(s->team_handle_base);
  } else if (void* sym = dlsym(RTLD_DEFAULT, "SHMEM_TEAM_WORLD")) {
    st.world_handle = *static_cast<shmem_team_t*>(sym);
  }
  // Slot 1 is SHMEM_TEAM_SHARED (runtime/api/team.hpp).
  st.shared_handle =
      s->team_handle_base != 0
          ? reinterpret_cast<shmem_team_t>(s->team_handle_base + s->team_handle_stride)
          : nullptr;
  st.my_pe = s->my_pe;
  st.n_pes = s->n_pes;
  st.initialized = 1;
  st.debug_checks = s->debug_checks || env_flag("VSHMEM_DEBUG_DEVICE");
  // Every PE's heap on this GPU: .gpu scope reaches every thread that can touch the heap
  // (impl/memory.cuh). VSHMEM_DEVICE_SCOPE=sys keeps system scope regardless.
  const char* scope = std::getenv("VSHMEM_DEVICE_SCOPE");
  st.gpu_scope =
      s->pes_sharing_device == s->n_pes && !(scope != nullptr && std::strcmp(scope, "sys") == 0);
  for (int p = 0; p < kInlinePeers; ++p) {
    st.inline_delta[p] = p < s->n_pes ? deltas[p] : kUnmappedDelta;
  }
  // Peers this GPU cannot map are reached through the proxy's request ring (device/proxy.cu).
  bool any_unmapped = false;
  for (size_t p = 0; p < n; ++p) any_unmapped |= deltas[p] == kUnmappedDelta;
  if (any_unmapped) {
    proxy::RingView ring{};
    if (ensure_proxy_ring(heap_device, &ring)) st.proxy = ring;
  }
  publish(st);
  g_mirror.state = st;
  g_mirror.device = heap_device;

  if (first) {
    // PEs sharing our GPU: node-local PEs whose heap is on the same device (the runtime's
    // locality exchange).
    const int sharing = s->pes_sharing_device > 0 ? s->pes_sharing_device : 1;
    g_mirror.pes_sharing_gpu = sharing;
    g_mirror.mps = mps_enabled(heap_device);
    if (sharing > 1 && !g_mirror.mps && !g_warned_sharing && s->my_pe == 0) {
      g_warned_sharing = true;
      report("shmem_init",
             "%d PEs share GPU %d without MPS: their kernels are time-sliced, and every wait on "
             "another PE inside a kernel (barriers, signals, collectives) costs a time slice "
             "(~2 ms). Start MPS (nvidia-cuda-mps-control -d) for concurrent kernels",
             sharing, heap_device);
    }
  }
}

struct Registration {
  Registration() { vshmemi_set_device_state_listener(&on_state); }
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
      g_mirror.peer_slot[static_cast<size_t>(pe)] >= 0) {
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
  int32_t slot = g_mirror.peer_slot[pe];
  if (slot < 0) {
    report(call,
           "PE %d's memory is not mapped here and no device proxy serves it: this on-stream call "
           "reaches mapped peers only",
           pe);
    return nullptr;
  }
  return reinterpret_cast<void*>(s.window_base + static_cast<uint64_t>(slot) * s.heap_size +
                                 (a - s.heap_base));
}

}  // namespace vshmem::device

namespace {

int register_loaded(const char* call, vshmem::device::LoadedCode code) {
  using namespace vshmem::device;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (code.module == nullptr && code.library == nullptr) {
    report(call, "the module is NULL");
    return 1;
  }
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  CUresult r = loaded_state_symbol(code, &ptr, &bytes);
  if (r == CUDA_ERROR_NOT_FOUND) {
    report(call,
           "the module does not define vshmemi_device_state: link its device code with "
           "libvshmem_device (nvcc -rdc=true ... -lvshmem_device, or nvlink)");
  } else if (r != CUDA_SUCCESS) {
    report(call, "cannot look up vshmemi_device_state in the module (CUresult %d)",
           static_cast<int>(r));
  } else if (bytes != sizeof(GpuState)) {
    report(call,
           "the module's vshmemi_device_state has %zu bytes, this library's %zu: it was built "
           "against other vshmem headers",
           bytes, sizeof(GpuState));
  }
  if (r != CUDA_SUCCESS || bytes != sizeof(GpuState)) {
    return 1;
  }
  for (const LoadedCode& c : g_loaded) {
    if (c.module == code.module && c.library == code.library) return 0;  // already known
  }
  if (CUresult f = fill_loaded(code, g_mirror.state); f != CUDA_SUCCESS) {
    report(call, "cannot set the module's device state (CUresult %d)", static_cast<int>(f));
    return 1;
  }
  g_loaded.push_back(code);
  return 0;
}

int unregister_loaded(const char* call, vshmem::device::LoadedCode code) {
  using namespace vshmem::device;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_loaded.size(); ++i) {
    if (g_loaded[i].module == code.module && g_loaded[i].library == code.library) {
      g_loaded.erase(g_loaded.begin() + static_cast<long>(i));
      return 0;
    }
  }
  report(call, "the module was not registered (shmemx_cumodule_init / shmemx_culibrary_init)");
  return 1;
}

}  // namespace

extern "C" int shmemx_cumodule_init(CUmodule module) {
  return register_loaded("shmemx_cumodule_init", {module, nullptr});
}
extern "C" int shmemx_cumodule_finalize(CUmodule module) {
  return unregister_loaded("shmemx_cumodule_finalize", {module, nullptr});
}
extern "C" int shmemx_culibrary_init(CUlibrary library) {
  return register_loaded("shmemx_culibrary_init", {nullptr, library});
}
extern "C" int shmemx_culibrary_finalize(CUlibrary library) {
  return unregister_loaded("shmemx_culibrary_finalize", {nullptr, library});
}

extern "C" int shmemx_gpu_shared_without_mps(void) {
  const vshmem::device::HostMirror& m = vshmem::device::host_mirror();
  return m.state.initialized && m.pes_sharing_gpu > 1 && !m.mps;
}

extern "C" int shmemx_pes_sharing_gpu(void) {
  const vshmem::device::HostMirror& m = vshmem::device::host_mirror();
  return m.state.initialized ? m.pes_sharing_gpu : 0;
}
