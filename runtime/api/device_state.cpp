// The device state (vshmem/device/impl/state.h), built whole here and handed to the device library
// (libvshmem_device), which only copies it into its __constant__ symbol: the PE's numbers, the heap
// and window, every peer's delta, the team table, the memory scope, the address checks, the proxy
// ring (whose memory is made here too: runtime/transport/proxy_ring.hpp). Its tables (peer deltas,
// teams, members) live in the symmetric heap, next to the device synchronization area, so that
// device code reads them wherever the heap is. Code loaded at run time (shmemx_cumodule_init,
// shmemx_culibrary_init) has its own copy of the symbol, which is written here too, through the
// memory provider's driver.
#include <strings.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "runtime/api/team.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "shmemx.h"
#include "vshmem/device/impl/state.h"
#include "vshmem/device_hooks.h"

namespace vshmem::detail {

namespace {

const vshmemi_device_library* g_library = nullptr;
device::GpuState g_built{};  // vshmemi_device_state_built()
bool g_built_any = false;
device::GpuState g_given{};  // what the device library holds (the empty state on a host heap)
bool g_warned_host_heap = false;
bool g_warned_sharing = false;

using device::GpuState;
using device::GpuTeam;
using device::kUnmappedDelta;

static_assert(kDeviceSyncBytes >= device::SyncLayout::kBytesNeeded,
              "the device synchronization area is smaller than its layout");

// Where the tables sit in the heap block of device_tables_bytes(n_pes).
struct TablesLayout {
  size_t teams;    // GpuTeam[kTeamSlots]
  size_t members;  // int32_t[kTeamSlots][n_pes]
  size_t bytes;
  explicit TablesLayout(int n_pes) {
    const size_t n = static_cast<size_t>(n_pes);
    teams = (n * sizeof(int64_t) + 63) / 64 * 64;  // the deltas first
    members = teams + kTeamSlots * sizeof(GpuTeam);
    bytes = members + kTeamSlots * n * sizeof(int32_t);
  }
};

// The state device code sees outside shmem_init .. shmem_finalize and on a host heap: no PEs,
// every peer unmapped (so that a device call to any PE traps naming it).
GpuState empty_state(const Runtime& rt) {
  GpuState s{};
  s.version = device::kGpuStateVersion;
  s.bytes = sizeof(GpuState);
  s.my_pe = rt.my_pe;
  s.cuda_device = -1;
  for (int64_t& d : s.inline_delta) d = kUnmappedDelta;
  return s;
}

template <class T, class R>
T value_or(R result, T fallback) {
  return result ? static_cast<T>(result.value()) : fallback;
}

// Fills the heap part of the state and the tables; false after a message when the tables cannot
// be written.
bool build(Runtime& rt, GpuState* s, std::vector<int64_t>* deltas) {
  const SymmetricHeap& heap = *rt.heap;
  const size_t n = static_cast<size_t>(rt.n_pes);
  s->heap_base = heap.base();
  s->heap_size = heap.size();
  s->heap_committed = heap.committed();
  s->window_base = heap.window_base();
  s->sync_base = reinterpret_cast<uintptr_t>(rt.device_sync);
  s->sync_bytes = rt.device_sync_bytes;
  s->n_pes = rt.n_pes;
  // Peer p's copy of H + x is at W + slot(p) * S + x: its delta is W + slot(p) * S - H (unsigned
  // arithmetic, wrapping like the device's add); 0 for our own PE (impl/state.cuh).
  const std::vector<int32_t>& slots = heap.peer_slots();
  deltas->assign(n, kUnmappedDelta);
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<int>(p) == rt.my_pe) {
      (*deltas)[p] = 0;
    } else if (slots[p] >= 0) {
      (*deltas)[p] = static_cast<int64_t>(
          s->window_base + static_cast<uint64_t>(slots[p]) * s->heap_size - s->heap_base);
    }
  }
  // Device copies take their alignment from the untranslated symmetric address (kDeltaAlign); H,
  // W and S are multiples of the allocation granularity, so this holds unless that changes.
  for (size_t p = 0; p < n; ++p) {
    const int64_t d = (*deltas)[p];
    if (d != kUnmappedDelta && static_cast<uint64_t>(d) % device::kDeltaAlign != 0) {
      log::message(log::Level::kError,
                   "PE %zu's window slot is %lld bytes from the heap, not a multiple of %llu "
                   "(heap at 0x%llx, window at 0x%llx, slot size %llu); device calls will trap",
                   p, static_cast<long long>(d),
                   static_cast<unsigned long long>(device::kDeltaAlign),
                   static_cast<unsigned long long>(s->heap_base),
                   static_cast<unsigned long long>(s->window_base),
                   static_cast<unsigned long long>(s->heap_size));
      return false;
    }
  }
  for (size_t p = 0; p < device::kInlinePeers && p < n; ++p) s->inline_delta[p] = (*deltas)[p];

  const TablesLayout layout(rt.n_pes);
  const auto tables = reinterpret_cast<uintptr_t>(rt.device_tables);
  std::vector<unsigned char> bytes(layout.bytes, 0);
  std::memcpy(bytes.data(), deltas->data(), n * sizeof(int64_t));
  describe_teams(rt.n_pes, reinterpret_cast<GpuTeam*>(bytes.data() + layout.teams),
                 reinterpret_cast<int32_t*>(bytes.data() + layout.members), tables + layout.members,
                 &s->team_handle_base, &s->team_handle_stride);
  s->peer_delta = reinterpret_cast<const int64_t*>(tables);
  s->teams = reinterpret_cast<const GpuTeam*>(tables + layout.teams);
  s->team_slots = kTeamSlots;
  s->team_sync_base = s->sync_base + kDeviceSyncBytes;
  s->team_slot_bytes = team_slot_bytes(rt.n_pes);
  // Slots 0 and 1 are SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED (runtime/api/team.hpp).
  s->world_handle = reinterpret_cast<shmem_team_t>(s->team_handle_base);
  s->shared_handle = reinterpret_cast<shmem_team_t>(s->team_handle_base + s->team_handle_stride);
  s->mc_base = rt.multicast ? rt.multicast->base() : 0;
  if (bytes != rt.device_tables_written) {
    Status st = rt.provider->copy(rt.device_tables, bytes.data(), bytes.size());
    if (!st) {
      log::message(log::Level::kError,
                   "the device state's tables (%zu bytes): %s; device calls will trap",
                   bytes.size(), st.message().c_str());
      rt.device_tables_written.clear();
      return false;
    }
    rt.device_tables_written = std::move(bytes);
  }
  s->debug_checks = value_or(env::bool_var("VSHMEM_DEBUG_DEVICE"), false) ? 1 : 0;
  // Every PE's heap on this GPU: .gpu scope reaches every thread that can touch the heap
  // (impl/memory.cuh). VSHMEM_DEVICE_SCOPE=sys keeps system scope regardless.
  const bool sys = strcasecmp(env::text("VSHMEM_DEVICE_SCOPE").c_str(), "sys") == 0;
  s->gpu_scope = s->pes_sharing_device == rt.n_pes && !sys ? 1 : 0;
  s->initialized = 1;
  return true;
}

// The device proxy's ring when device code cannot map some peer: made by libvshmem once per
// shmem_init (kept across heap growths and team changes) and named in the state. Without it
// (the memory could not be had) device calls to those peers trap, naming the cause.
void add_proxy_ring(Runtime& rt, const std::vector<int64_t>& deltas, GpuState* s) {
  bool any_unmapped = false;
  for (int64_t d : deltas) any_unmapped |= d == kUnmappedDelta;
  if (!any_unmapped) return;
  if (rt.proxy_ring == nullptr) {
    const long long asked = value_or(env::int_var("VSHMEM_PROXY_SLOTS", 1024, 1, 1 << 20), 1024LL);
    uint32_t slots = 1;
    while (slots < static_cast<uint64_t>(asked)) slots <<= 1;
    const double seconds = value_or(env::seconds_var("VSHMEM_PROXY_TIMEOUT"), 60.0);
    Result<std::unique_ptr<ProxyRing>> ring =
        ProxyRing::create(*rt.provider, slots, static_cast<uint64_t>(seconds * 1e9));
    if (!ring) {
      log::message(log::Level::kError,
                   "shmem_init: cannot create the device proxy's request ring: %s; device calls "
                   "to PEs this GPU cannot map will trap",
                   ring.status().message().c_str());
      return;
    }
    rt.proxy_ring = std::move(ring).value();
  }
  s->proxy = rt.proxy_ring->view();
  // The remote PEs' atomics on our heap, for our waiting kernels to perform (the provider keeps
  // it from the first call on); without it they wait for a free hardware queue, as before.
  MemoryProvider::InboundSettings inbound_settings;
  inbound_settings.timeout_ns = s->proxy.timeout_ns;
  inbound_settings.look_ns =
      static_cast<uint64_t>(value_or(env::int_var("VSHMEM_INBOUND_LOOK_US", 2, 0, 1000000), 2LL)) *
      1000;
  inbound_settings.copy_max = static_cast<size_t>(
      value_or(env::size_var("VSHMEM_INBOUND_COPY_MAX", proxy::kMailboxBounceBytes),
               proxy::kMailboxBounceBytes));
  Result<proxy::MailboxView> inbound = rt.provider->inbound_mailbox(inbound_settings);
  if (inbound) {
    s->inbound = *inbound;
  } else {
    VSHMEM_INFO("no inbound atomic mailbox: %s", inbound.status().message().c_str());
  }
}

// Modules and libraries loaded at run time and registered: each holds its own
// vshmemi_device_state, written with every state. Guarded by device_state_mutex().
struct LoadedCode {
  const void* handle;
  bool library;
};
std::vector<LoadedCode> g_loaded;
constexpr const char* kStateSymbol = "vshmemi_device_state";

Status write_loaded(Runtime& rt, const LoadedCode& code, const GpuState& s) {
  MemoryProvider::LoadedGlobal global;
  VSHMEM_ASSIGN_OR_RETURN(global,
                          rt.provider->loaded_global(code.handle, code.library, kStateSymbol));
  if (global.bytes != sizeof(GpuState)) {
    return error(
        Code::kInvalidArgument,
        log::format("the %s's %s has %zu bytes, this libvshmem's %zu: it was built against "
                    "other vshmem headers",
                    code.library ? "library" : "module", kStateSymbol, global.bytes,
                    sizeof(GpuState)));
  }
  return rt.provider->copy(global.address, &s, sizeof(s));
}

void write_all_loaded(Runtime& rt, const GpuState& s) {
  for (const LoadedCode& code : g_loaded) {
    Status st = write_loaded(rt, code, s);
    if (!st) {
      log::message(log::Level::kError, "the device state of a loaded %s: %s",
                   code.library ? "library" : "module", st.message().c_str());
    }
  }
}

void warn_once(const Runtime& rt, const GpuState& s) {
  if (s.cuda_device < 0 && !g_warned_host_heap) {
    g_warned_host_heap = true;
    VSHMEM_WARN(
        "shmem_init: the symmetric heap is not GPU memory (host backend): device calls in "
        "kernels will trap; set VSHMEM_BACKEND=cuda to use the device API");
  }
  if (s.cuda_device >= 0 && s.pes_sharing_device > 1 && !s.mps && rt.my_pe == 0 &&
      !g_warned_sharing) {
    g_warned_sharing = true;
    VSHMEM_WARN(
        "shmem_init: %d PEs share GPU %d without MPS: their kernels are time-sliced, and every "
        "wait on another PE inside a kernel (barriers, signals, collectives) costs a time slice "
        "(~2 ms). Start MPS (nvidia-cuda-mps-control -d) for concurrent kernels",
        s.pes_sharing_device, s.cuda_device);
  }
}

}  // namespace

size_t device_tables_bytes(int n_pes) { return TablesLayout(n_pes).bytes; }

bool device_library_linked() { return g_library != nullptr; }

Status check_device_library() {
  if (g_library == nullptr || (g_library->state_version == device::kGpuStateVersion &&
                               g_library->state_bytes == sizeof(GpuState))) {
    return Status::ok();
  }
  return error(Code::kInvalidArgument,
               log::format("the device library linked into this program (libvshmem_device) holds "
                           "device state version %u (%u bytes), this libvshmem builds version %u "
                           "(%zu bytes): build the program against the same vshmem",
                           g_library->state_version, g_library->state_bytes,
                           device::kGpuStateVersion, sizeof(GpuState)));
}

std::mutex& device_state_mutex() {
  static std::mutex m;
  return m;
}

void publish_device_state(Runtime& rt) {
  std::lock_guard<std::mutex> lock(device_state_mutex());
  GpuState s = empty_state(rt);
  s.cuda_device = rt.provider ? rt.provider->device_ordinal() : -1;
  s.pes_sharing_device = rt.plan.same_locality_pes > 0 ? rt.plan.same_locality_pes : 1;
  s.mps = rt.device_mps ? 1 : 0;
  std::vector<int64_t> deltas;
  const bool live = rt.heap != nullptr && rt.device_sync != nullptr &&
                    rt.device_tables != nullptr && build(rt, &s, &deltas);
  if (!live) s.initialized = 0;
  const bool on_gpu = live && s.cuda_device >= 0;
  if (on_gpu && g_library != nullptr && check_device_library()) add_proxy_ring(rt, deltas, &s);
  g_built = s;
  g_built_any = true;
  g_given = on_gpu ? s : empty_state(rt);
  if ((on_gpu || !live) && rt.provider != nullptr) write_all_loaded(rt, g_given);
  if (g_library != nullptr && check_device_library()) {
    if (live) warn_once(rt, s);
    if (g_library->write_state(&g_given, on_gpu ? deltas.data() : nullptr) != 0 && on_gpu) {
      g_given = empty_state(rt);
      g_given.cuda_device = s.cuda_device;
      g_library->write_state(&g_given, nullptr);
    }
  }
  // shmem_finalize stopped the proxy thread, and no state names the ring any more.
  if (!live) rt.proxy_ring.reset();
  start_device_proxy(rt);
}

void register_device_library(const vshmemi_device_library* library) {
  g_library = library;
  // A device library loaded after shmem_init (a Python extension, a plugin) gets the state now.
  if (g_runtime != nullptr && library != nullptr) publish_device_state(*g_runtime);
}

namespace {

int register_loaded(const char* call, const void* handle, bool library) {
  Runtime* rt = g_runtime;
  if (rt == nullptr) {
    log::message(log::Level::kError, "%s: called before shmem_init or after shmem_finalize", call);
    return 1;
  }
  if (handle == nullptr) {
    log::message(log::Level::kError, "%s: the %s is NULL", call, library ? "library" : "module");
    return 1;
  }
  std::lock_guard<std::mutex> lock(device_state_mutex());
  for (const LoadedCode& code : g_loaded) {
    if (code.handle == handle && code.library == library) return 0;  // already known
  }
  const LoadedCode code{handle, library};
  Status st = write_loaded(*rt, code, g_given);
  if (!st) {
    const bool missing = st.message().find("does not define") != std::string::npos;
    log::message(log::Level::kError, "%s: %s%s", call, st.message().c_str(),
                 missing ? ": link its device code with libvshmem_device (nvcc -rdc=true ... "
                           "-lvshmem_device, or nvlink)"
                         : "");
    return 1;
  }
  g_loaded.push_back(code);
  return 0;
}

int unregister_loaded(const char* call, const void* handle, bool library) {
  std::lock_guard<std::mutex> lock(device_state_mutex());
  for (size_t i = 0; i < g_loaded.size(); ++i) {
    if (g_loaded[i].handle == handle && g_loaded[i].library == library) {
      g_loaded.erase(g_loaded.begin() + static_cast<long>(i));
      return 0;
    }
  }
  log::message(log::Level::kError,
               "%s: the %s was not registered (shmemx_cumodule_init / shmemx_culibrary_init)", call,
               library ? "library" : "module");
  return 1;
}

}  // namespace

}  // namespace vshmem::detail

#if __has_include(<cuda.h>)
extern "C" int shmemx_cumodule_init(CUmodule module) {
  return vshmem::detail::register_loaded("shmemx_cumodule_init", module, false);
}
extern "C" int shmemx_cumodule_finalize(CUmodule module) {
  return vshmem::detail::unregister_loaded("shmemx_cumodule_finalize", module, false);
}
extern "C" int shmemx_culibrary_init(CUlibrary library) {
  return vshmem::detail::register_loaded("shmemx_culibrary_init", library, true);
}
extern "C" int shmemx_culibrary_finalize(CUlibrary library) {
  return vshmem::detail::unregister_loaded("shmemx_culibrary_finalize", library, true);
}
#endif

extern "C" void vshmemi_register_device_library(const vshmemi_device_library* library) {
  vshmem::detail::register_device_library(library);
}

extern "C" const vshmem::device::GpuState* vshmemi_device_state_built(void) {
  return vshmem::detail::g_built_any ? &vshmem::detail::g_built : nullptr;
}
