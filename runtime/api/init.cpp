// shmem_init / shmem_finalize and the query calls.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>

#include "runtime/api/deadlock.hpp"
#include "runtime/api/fault_report.hpp"
#include "runtime/api/launcher_link.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/api/settings_check.hpp"
#include "runtime/api/wait_policy.hpp"
#include "runtime/bootstrap/launcher_protocol.hpp"
#include "runtime/api/team.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/private_dir.hpp"
#include "runtime/transport/remote_path.hpp"
#include "shmem.h"
#include "shmemx.h"

namespace vshmem::detail {
namespace {

std::mutex g_init_mutex;
// OpenSHMEM 1.6: initialization calls are counted, and the last matching shmem_finalize
// finalizes. Atomics: shmem_query_initialized/finalized may be called from any thread.
int g_init_count = 0;  // under g_init_mutex
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_finalized{false};
std::string g_backend_reason;  // why the heap is where it is (SHMEM_INFO)
constexpr uint64_t kDefaultSymmetricSize = 1ull << 30;

// The default VA budget of the heap: the device's memory rounded up to whole GiB (at least
// kDefaultSymmetricSize), or kDefaultSymmetricSize where the provider has no fixed capacity.
uint64_t default_heap_size(uint64_t capacity) {
  constexpr uint64_t kGiB = 1ull << 30;
  const uint64_t rounded = (capacity + kGiB - 1) / kGiB * kGiB;
  return rounded > kDefaultSymmetricSize ? rounded : kDefaultSymmetricSize;
}

// Where shmem_init's time goes (issue 18: init at 8 and 16 PEs against NVSHMEM's), one line per
// PE at VSHMEM_DEBUG=info: the milliseconds of each step since the one before. Nothing is timed
// below info.
class InitSteps {
 public:
  InitSteps() : on_(log::enabled(log::Level::kInfo)) {
    if (on_) last_ = start_ = std::chrono::steady_clock::now();
  }
  void mark(const char* step) {
    if (!on_ || n_ == kMax) return;
    const auto now = std::chrono::steady_clock::now();
    steps_[n_++] = {step, std::chrono::duration<double, std::milli>(now - last_).count()};
    last_ = now;
  }
  void report() const {
    if (!on_) return;
    std::string line;
    for (size_t i = 0; i < n_; ++i) line += log::format("%s %.1f, ", steps_[i].name, steps_[i].ms);
    const double total =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
            .count();
    VSHMEM_INFO("shmem_init steps (ms): %stotal %.1f", line.c_str(), total);
  }

 private:
  struct Step {
    const char* name;
    double ms;
  };
  static constexpr size_t kMax = 16;
  bool on_;
  std::chrono::steady_clock::time_point start_, last_;
  Step steps_[kMax] = {};
  size_t n_ = 0;
};

void print_info_and_version(const Runtime& rt) {
  if (rt.my_pe != 0) return;
  if (env::get("SHMEM_VERSION") || env::get("NVSHMEM_VERSION")) {
    std::printf("vshmem %s, OpenSHMEM %d.%d\n", VSHMEM_VERSION_STRING, SHMEM_MAJOR_VERSION,
                SHMEM_MINOR_VERSION);
  }
  if (env::get("SHMEM_INFO") || env::get("NVSHMEM_INFO")) {
    std::printf("vshmem %s (OpenSHMEM %d.%d). Environment variables:\n", VSHMEM_VERSION_STRING,
                SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
    for (size_t i = 0; i < config::kVarCount; ++i) {
      if (config::kVars[i].internal) continue;
      std::printf("  %s\n      %s\n", config::describe(i).c_str(), config::kVars[i].doc);
    }
    std::printf("The symmetric heap is in %s memory: %s.\n",
                rt.transport->host_loads_reach_heap() ? "host" : "GPU", g_backend_reason.c_str());
  }
  std::fflush(stdout);
}

// VSHMEM_ENABLE_MULTICAST=1 asks for the world's multicast region; every PE must be able to make
// its part, else all continue without it and PE 0 says why (once).
Status setup_multicast(Runtime& rt) {
  bool enabled = false;
  VSHMEM_ASSIGN_OR_RETURN(enabled, env::bool_var("VSHMEM_ENABLE_MULTICAST"));
  rt.multicast_enabled = enabled;
  std::string why;
  VSHMEM_ASSIGN_OR_RETURN(rt.multicast,
                          MulticastRegion::create(*rt.provider, *rt.bootstrap, *rt.heap,
                                                  rt.fd_exchange.get(), enabled, &why));
  if (rt.multicast) {
    VSHMEM_INFO("multicast on: %zu-byte region at %#lx", rt.multicast->size(),
                static_cast<unsigned long>(rt.multicast->base()));
  } else if (enabled && rt.my_pe == 0) {
    // Teams whose members map each other may still get regions of their own (SHMEM_TEAM_SHARED
    // at the end of shmem_init, splits): team.cpp says so for each that cannot.
    VSHMEM_WARN(
        "VSHMEM_ENABLE_MULTICAST=1 but multicast is off over every PE: %s; unicast algorithms "
        "except in teams with a region of their own",
        why.c_str());
  } else {
    VSHMEM_INFO("multicast off: %s", why.c_str());
  }
  return Status::ok();
}

Status initialize(const BootstrapOptions& options, int requested) {
  // Every variable is parsed before anything starts, so a typo fails fast and on every PE; its
  // message names the PE by the launcher's number (the bootstrap confirms it below).
  log::set_pe(rank_before_bootstrap(options));
  VSHMEM_RETURN_IF_ERROR(config::load());
  // Precedence: VSHMEM_*, then OpenSHMEM's SHMEM_*, then NVSHMEM's name.
  uint64_t heap_size = 0, chunk = 0;
  VSHMEM_ASSIGN_OR_RETURN(heap_size, env::size_var("NVSHMEM_SYMMETRIC_SIZE", heap_size));
  VSHMEM_ASSIGN_OR_RETURN(heap_size, env::size_var("SHMEM_SYMMETRIC_SIZE", heap_size));
  VSHMEM_ASSIGN_OR_RETURN(heap_size, env::size_var("VSHMEM_SYMMETRIC_SIZE", heap_size));
  const bool heap_size_given = env::get("VSHMEM_SYMMETRIC_SIZE") ||
                               env::get("SHMEM_SYMMETRIC_SIZE") ||
                               env::get("NVSHMEM_SYMMETRIC_SIZE");
  if (!heap_size_given) heap_size = kDefaultSymmetricSize;
  VSHMEM_ASSIGN_OR_RETURN(chunk, env::size_var("VSHMEM_HEAP_CHUNK_SIZE"));
  uint64_t initial = 0;
  VSHMEM_ASSIGN_OR_RETURN(initial, env::size_var("VSHMEM_HEAP_INITIAL"));
  if (heap_size == 0) return error(Code::kInvalidArgument, "SHMEM_SYMMETRIC_SIZE: must be > 0");
  if (chunk == 0) return error(Code::kInvalidArgument, "VSHMEM_HEAP_CHUNK_SIZE: must be > 0");
#ifdef NDEBUG
  constexpr bool kCheckDefault = false;
#else
  constexpr bool kCheckDefault = true;
#endif
  bool check = kCheckDefault;
  VSHMEM_ASSIGN_OR_RETURN(check, env::bool_var("VSHMEM_CHECK_SYMMETRY", kCheckDefault));

  // Parsed here to be compared below: a PE that would skip the multicast steps the others take
  // would leave them waiting.
  bool multicast = false;
  VSHMEM_ASSIGN_OR_RETURN(multicast, env::bool_var("VSHMEM_ENABLE_MULTICAST"));
  InitSteps steps;

  auto rt = std::make_unique<Runtime>();
  VSHMEM_ASSIGN_OR_RETURN(rt->bootstrap, create_bootstrap(options));
  rt->my_pe = rt->bootstrap->rank();
  rt->n_pes = rt->bootstrap->size();
  log::set_pe(rt->my_pe);
  // What must agree is compared first: a PE with another heap size or growth step would stall
  // the first collective that depends on it, far from the cause.
  VSHMEM_RETURN_IF_ERROR(check_settings_agree(
      *rt->bootstrap, {{"SHMEM_SYMMETRIC_SIZE/VSHMEM_SYMMETRIC_SIZE", std::to_string(heap_size)},
                       {"VSHMEM_HEAP_CHUNK_SIZE", std::to_string(chunk)},
                       {"VSHMEM_HEAP_INITIAL", std::to_string(initial)},
                       {"VSHMEM_CHECK_SYMMETRY", check ? "on" : "off"},
                       {"VSHMEM_BACKEND", env::text("VSHMEM_BACKEND")},
                       {"VSHMEM_HANDLE_TYPE", env::text("VSHMEM_HANDLE_TYPE")},
                       {"VSHMEM_DISABLE_P2P", env::text("VSHMEM_DISABLE_P2P")},
                       {"VSHMEM_ENABLE_MULTICAST", multicast ? "1" : "0"}}));
  steps.mark("bootstrap");
  rt->thread_level = requested < SHMEM_THREAD_SINGLE     ? SHMEM_THREAD_SINGLE
                     : requested > SHMEM_THREAD_MULTIPLE ? SHMEM_THREAD_MULTIPLE
                                                         : requested;
  VSHMEM_ASSIGN_OR_RETURN(rt->topology, discover_topology(*rt->bootstrap));
  if (rt->topology.n_nodes > 1 && device_library_linked()) {
    // Before anything here starts CUDA (memory.hpp, prefer_eager_module_loading says why).
    if (prefer_eager_module_loading() == ModuleLoading::kEagerSet) {
      VSHMEM_INFO(
          "PE %d: CUDA_MODULE_LOADING=EAGER: the PEs span %d nodes, and kernels must not "
          "wait for a first launch's loading while they wait for remote PEs",
          rt->my_pe, rt->topology.n_nodes);
    }
  }
  VSHMEM_RETURN_IF_ERROR(choose_wait_policy(*rt->bootstrap));
  VSHMEM_ASSIGN_OR_RETURN(rt->peer_watch, PeerWatch::create(*rt->bootstrap, rt->topology));
  VSHMEM_ASSIGN_OR_RETURN(rt->job, agree_job_identity(*rt->bootstrap));
  steps.mark("topology");
  VSHMEM_RETURN_IF_ERROR(check_device_library());
  ProviderOptions provider_options{rt->topology.local_rank, rt->topology.local_size};
  provider_options.auto_tries_device = device_library_linked();
  provider_options.chosen_because = &g_backend_reason;
  VSHMEM_ASSIGN_OR_RETURN(rt->provider, create_memory_provider(provider_options));
  rt->device_mps = rt->provider->mps_enabled();
  if (!rt->provider->is_device_memory() && !device_library_linked()) {
    bind_to_chosen_cpu(rt->my_pe, rt->topology.n_nodes > 1);
  }
  if (!heap_size_given) {
    // The size is a VA budget (physical memory is committed as the heap grows): by default a GPU
    // heap may grow to the GPU's memory, as NVSHMEM's does. PE 0's answer holds for every PE.
    heap_size = default_heap_size(rt->provider->memory_capacity());
    if (rt->n_pes > 1) {
      VSHMEM_RETURN_IF_ERROR(rt->bootstrap->broadcast(&heap_size, sizeof(heap_size), 0));
    }
  }
  steps.mark("provider");
  VSHMEM_ASSIGN_OR_RETURN(rt->plan, plan_transports(*rt->bootstrap, rt->topology, *rt->provider));
  if (rt->plan.n_mapped() > 0) {
    std::chrono::milliseconds timeout{};
    VSHMEM_ASSIGN_OR_RETURN(timeout, bootstrap_timeout());
    std::string dir;
    VSHMEM_ASSIGN_OR_RETURN(dir, job_socket_dir(rt->job.id));
    VSHMEM_ASSIGN_OR_RETURN(
        rt->fd_exchange, FdExchange::create(dir, rt->job.id, rt->job.secret, rt->my_pe, timeout));
  }
  // Every handle socket listens before anyone sends to one.
  VSHMEM_RETURN_IF_ERROR(rt->bootstrap->barrier());
  steps.mark("plan");
  HeapConfig config{heap_size, chunk, check};
  auto heap = SymmetricHeap::create(*rt->provider, *rt->bootstrap, rt->topology, rt->plan.mapped(),
                                    rt->fd_exchange.get(), config);
  if (!heap) {
    // Name the setting behind the sizes in the cause (e.g. =99999T: no address range is free).
    return heap.status().with_context(log::format(
        "the symmetric heap of %llu bytes per PE (%s): ",
        static_cast<unsigned long long>(heap_size),
        env::get("VSHMEM_SYMMETRIC_SIZE")  ? "VSHMEM_SYMMETRIC_SIZE"
        : env::get("SHMEM_SYMMETRIC_SIZE") ? "SHMEM_SYMMETRIC_SIZE"
                                           : "the default; set SHMEM_SYMMETRIC_SIZE to change it"));
  }
  rt->heap = std::move(heap).value();
  steps.mark("heap_range");
  if (rt->provider->is_device_memory()) {
    // The whole reserved range: the heap H and the window slots after it.
    const uintptr_t end = rt->heap->base() + rt->heap->reserved_bytes();
    install_fault_report(rt->my_pe, rt->heap->base(), end);
  }
  VSHMEM_ASSIGN_OR_RETURN(rt->statics, DataSegment::agree(*rt->bootstrap));
  steps.mark("statics");
  VSHMEM_ASSIGN_OR_RETURN(rt->transport,
                          Transport::create(*rt->bootstrap, rt->plan, *rt->provider, *rt->heap,
                                            rt->fd_exchange.get(), rt->statics));
  VSHMEM_RETURN_IF_ERROR(configure_deadlock_watch(*rt));
  {
    Transport* transport = rt->transport.get();
    rt->heap->set_region_hook([transport](uint64_t offset, size_t bytes) {
      return transport->add_region(offset, bytes);
    });
  }
  // VSHMEM_HEAP_INITIAL is the same on every PE (checked above): growth is collective.
  if (initial > 0) VSHMEM_RETURN_IF_ERROR(rt->heap->commit_at_least(initial, "shmem_init"));
  VSHMEM_RETURN_IF_ERROR(setup_multicast(*rt));
  steps.mark("transport_multicast");
  Runtime* raw = rt.get();
  rt->heap->set_chunk_listener([raw](size_t offset, const auto& chunk) {
    if (raw->multicast) {
      Status bound = raw->multicast->bind_chunk(offset, chunk);
      if (!bound.is_ok()) {
        // Every PE got the same answer and drops the region with it.
        if (raw->my_pe == 0) {
          VSHMEM_WARN("multicast off from now on: %s; unicast algorithms on every PE",
                      bound.message().c_str());
        }
        raw->multicast.reset();
      }
    }
    // The teams' own regions (every PE takes part in a growth: each binds for its teams).
    if (raw->multicast_enabled) bind_team_regions(*raw, offset, chunk);
  });
  rt->heap->set_growth_listener([raw] {
    // During init the heap grows before the device synchronization area exists: the device
    // library gets its first, complete state at the end of shmem_init.
    if (raw->device_tables != nullptr) publish_device_state(*raw);
  });
  // Internal symmetric objects come first in the heap, allocated identically on every PE.
  void* p = nullptr;
  VSHMEM_ASSIGN_OR_RETURN(p,
                          rt->heap->allocate(kBarrierRounds * sizeof(uint64_t), 64, "shmem_init"));
  rt->barrier_counters = static_cast<uint64_t*>(p);
  steps.mark("first_chunk");
  VSHMEM_RETURN_IF_ERROR(clear_init_object(*rt, p, kBarrierRounds * sizeof(uint64_t)));
  // The device synchronization area: kDeviceSyncBytes for the world's barriers and collectives,
  // then the team barriers' counters (vshmem/device/impl/state.h, GpuState::team_sync_base).
  const size_t sync_bytes = kDeviceSyncBytes + team_sync_bytes(rt->n_pes);
  VSHMEM_ASSIGN_OR_RETURN(rt->device_sync, rt->heap->allocate(sync_bytes, 4096, "shmem_init"));
  rt->device_sync_bytes = sync_bytes;
  VSHMEM_RETURN_IF_ERROR(clear_init_object(*rt, rt->device_sync, sync_bytes));
  // The device state's tables (runtime/api/device_state.cpp), written at every publication.
  VSHMEM_ASSIGN_OR_RETURN(rt->device_tables,
                          rt->heap->allocate(device_tables_bytes(rt->n_pes), 64, "shmem_init"));
  steps.mark("sync_area");
  // Teams' and collectives' symmetric pool (runtime/api/team.hpp).
  VSHMEM_RETURN_IF_ERROR(api_init(*rt));
  steps.mark("teams");
  // Peers reach this PE's heap through the remote path only after the barrier below, and the
  // remote path performs their operations only from here on: after the fills above, in this
  // thread, so that a sanitizer sees them ordered before a peer's first write (a signal's add,
  // performed by the path's progress thread).
  if (RemotePath* remote = rt->transport->remote()) remote->serve();
  VSHMEM_RETURN_IF_ERROR(rt->bootstrap->barrier());
  steps.mark("barrier");

  g_runtime = rt.release();
  publish_device_state(*g_runtime);
  steps.mark("device_state");
  g_runtime->watch = JobWatch::start(*g_runtime);
  steps.report();
  print_info_and_version(*g_runtime);
  VSHMEM_INFO("initialized: %d PEs, %d node(s), backend %s, bootstrap %s", g_runtime->n_pes,
              g_runtime->topology.n_nodes, g_runtime->provider->name(),
              g_runtime->bootstrap->name());
  return Status::ok();
}

int init_common(const BootstrapOptions& options, int requested, int* provided) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (g_runtime == nullptr) {
    Status st = initialize(options, requested);
    if (!st) {
      remove_fault_report();  // the heap it watched is gone
      // Causes from inside init may already name the call ("shmem_init: ..."): not twice.
      const bool named = st.message().rfind("shmem_init", 0) == 0;
      log::message(log::Level::kError, "%s%s", named ? "" : "shmem_init: ", st.message().c_str());
      return 1;
    }
    tell_launcher(launcher_protocol::shmem_state_signal(), 1);
    g_initialized = true;
    g_finalized = false;
    flush_output_on_terminate();
  }
  ++g_init_count;
  if (provided != nullptr) *provided = g_runtime->thread_level;
  return 0;
}

}  // namespace

Status clear_init_object(Runtime& rt, void* p, size_t bytes) {
  if (rt.provider->creates_zeroed()) return Status::ok();
  return rt.provider->fill(p, 0, bytes);
}

}  // namespace vshmem::detail

using namespace vshmem;
using namespace vshmem::detail;

extern "C" {

void shmem_init(void) {
  if (init_common({}, SHMEM_THREAD_SINGLE, nullptr) != 0) {
    // OpenSHMEM gives shmem_init no error return: end this PE; the launcher stops the rest.
    std::exit(1);
  }
}

int shmem_init_thread(int requested, int* provided) { return init_common({}, requested, provided); }

int shmemx_init_attr(unsigned int flags, shmemx_init_attr_t* attr) {
  BootstrapOptions options;
  UniqueIdArgs uid;
  if (flags & ~(SHMEMX_INIT_WITH_MPI_COMM | SHMEMX_INIT_WITH_UNIQUEID)) {
    log::message(log::Level::kError, "shmemx_init_attr: unknown flags 0x%x",
                 flags & ~(SHMEMX_INIT_WITH_MPI_COMM | SHMEMX_INIT_WITH_UNIQUEID));
    return 1;
  }
  if ((flags & SHMEMX_INIT_WITH_MPI_COMM) && (flags & SHMEMX_INIT_WITH_UNIQUEID)) {
    log::message(log::Level::kError,
                 "shmemx_init_attr: SHMEMX_INIT_WITH_MPI_COMM and SHMEMX_INIT_WITH_UNIQUEID "
                 "exclude each other");
    return 1;
  }
  if (flags & SHMEMX_INIT_WITH_UNIQUEID) {
    if (attr == nullptr) {
      log::message(log::Level::kError,
                   "shmemx_init_attr: SHMEMX_INIT_WITH_UNIQUEID needs the attributes set by "
                   "shmemx_set_attr_uniqueid_args");
      return 1;
    }
    static_assert(sizeof(attr->uid) == kUniqueIdBytes, "the ID's size is the bootstrap's");
    uid.rank = attr->uid_rank;
    uid.nranks = attr->uid_nranks;
    std::memcpy(uid.id, &attr->uid, kUniqueIdBytes);
    options.uid = &uid;
  }
  if (flags & SHMEMX_INIT_WITH_MPI_COMM) {
    if (attr == nullptr || attr->mpi_comm == nullptr) {
      log::message(log::Level::kError,
                   "shmemx_init_attr: SHMEMX_INIT_WITH_MPI_COMM needs attr->mpi_comm");
      return 1;
    }
    options.mpi_comm = attr->mpi_comm;
  }
  return init_common(options, SHMEM_THREAD_MULTIPLE, nullptr);
}

void shmem_query_thread(int* provided) {
  Runtime& rt = runtime_for("shmem_query_thread");
  if (provided != nullptr) *provided = rt.thread_level;
}

void shmem_finalize(void) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (g_runtime == nullptr) return;
  if (--g_init_count > 0) return;  // an earlier initialization call is still unmatched
  g_initialized = false;
  // Peers exit once they are past the barriers below: no longer a reason to end this PE.
  g_runtime->watch.reset();
  shmem_barrier_all();
  Runtime* rt = g_runtime;
  g_runtime = nullptr;
  api_finalize(*rt);
  if (rt->plan.job_has_remote) {
    // The barrier's last atomics may have reached our heap before their replies left: once every
    // PE is past this one, no peer has a request in flight to us.
    Status st = rt->bootstrap->barrier();
    if (!st) log::message(log::Level::kWarn, "shmem_finalize: %s", st.message().c_str());
  }
  rt->heap->set_region_hook(nullptr);
  stop_device_proxy(*rt);  // it drives the transport
  rt->transport.reset();
  remove_fault_report();
  rt->multicast.reset();  // unbinds our chunks before the heap releases them
  rt->heap.reset();
  publish_device_state(*rt);  // initialized = 0
  // A last bootstrap barrier: nobody tears down its sockets while a peer still needs them.
  Status st = rt->bootstrap->barrier();
  if (!st) log::message(log::Level::kWarn, "shmem_finalize: %s", st.message().c_str());
  delete rt;
  g_finalized = true;
  tell_launcher(launcher_protocol::shmem_state_signal(), 0);
}

void shmem_query_initialized(int* initialized) {
  if (initialized != nullptr) *initialized = g_initialized ? 1 : 0;
}

void shmem_query_finalized(int* finalized) {
  if (finalized != nullptr) *finalized = g_finalized ? 1 : 0;
}

void shmem_global_exit(int status) {
  log::message(log::Level::kError, "shmem_global_exit(%d) called; ending the job", status);
  std::fflush(stdout);
  std::fflush(stderr);
  // vshmemrun learns the status from the signal's value, stops every other PE and exits with
  // it. Under other launchers a non-zero exit makes them stop the rest; a zero status has to be
  // turned into a failure there, or the other PEs would wait forever.
  if (verified_launcher_pid() != 0) {
    tell_launcher(launcher_protocol::global_exit_signal(), status);
    std::_Exit(status);
  }
  std::_Exit(status == 0 ? 1 : status);
}

}  // extern "C"

namespace {
// In the committed part of the heap: the VA budget beyond it is reserved but not backed.
bool in_use(const Runtime& rt, const void* addr) {
  return rt.heap->contains(addr, 1) &&
         reinterpret_cast<uintptr_t>(addr) - rt.heap->base() < rt.heap->committed();
}
}  // namespace

extern "C" {

int shmem_my_pe(void) { return g_runtime != nullptr ? g_runtime->my_pe : -1; }
int shmem_n_pes(void) { return g_runtime != nullptr ? g_runtime->n_pes : -1; }
int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }
void start_pes(int) { shmem_init(); }

// OpenSHMEM: accessible means reachable by RMA and AMOs, which every PE of the job is (mapped
// peers directly, the others through the remote path); shmem_ptr tells the two apart.
int shmem_pe_accessible(int pe) {
  Runtime* rt = g_runtime;
  if (rt == nullptr || pe < 0 || pe >= rt->n_pes) return 0;
  return rt->plan.path[pe] != PathKind::kRemote || rt->transport->remote() != nullptr;
}

int shmem_addr_accessible(const void* addr, int pe) {
  Runtime* rt = g_runtime;
  if (rt == nullptr || pe < 0 || pe >= rt->n_pes) return 0;
  if (rt->statics.contains(addr, 1)) {
    return pe == rt->my_pe || rt->transport->statics_reach_peers();
  }
  return in_use(*rt, addr) &&
         (rt->plan.path[pe] != PathKind::kRemote || rt->transport->remote() != nullptr);
}

void* shmem_ptr(const void* dest, int pe) {
  Runtime* rt = g_runtime;
  if (rt == nullptr || pe < 0 || pe >= rt->n_pes) return nullptr;
  // Our own global and static variables are where they are; no peer's are in our address space.
  if (rt->statics.contains(dest, 1)) return pe == rt->my_pe ? const_cast<void*>(dest) : nullptr;
  if (!in_use(*rt, dest)) return nullptr;
  return rt->heap->translate(dest, pe);
}

void shmem_info_get_version(int* major, int* minor) {
  if (major) *major = SHMEM_MAJOR_VERSION;
  if (minor) *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char* name) {
  if (name) std::snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

}  // extern "C"
