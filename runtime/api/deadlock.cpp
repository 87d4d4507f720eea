#include "runtime/api/deadlock.hpp"

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/api/peer_watch.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/process_info.hpp"
#include "runtime/transport/host_sync.hpp"
#include "runtime/transport/transport.hpp"
#include "shmem.h"

namespace vshmem::detail {
namespace {

using Record = HostSyncArea::WaitRecord;

std::atomic<uint64_t> g_limit_ns{0};  // 0: not watched
std::atomic<uint64_t> g_flags{0};     // HostSyncArea::kWaitCertain for this PE's waits
std::atomic<uint64_t> g_next_token{1};
std::atomic<bool> g_warned{false};

HostSyncArea* shared_pages() {
  const Runtime* rt = g_runtime;
  if (rt == nullptr || rt->transport == nullptr) return nullptr;
  return rt->transport->mapped().node_barrier();  // null unless every PE is on this node
}

struct Seen {
  uint64_t since_ns = 0;
  uint64_t flags = 0;
  char call[sizeof(Record::call)] = {};
};

// PE pe's published wait, if it has one (read between two equal reads of its owner).
bool read_record(const Record& r, Seen* out) {
  const uint64_t owner = r.owner.load(std::memory_order_acquire);
  if (owner == 0) return false;
  out->since_ns = r.since_ns.load(std::memory_order_relaxed);
  out->flags = r.flags.load(std::memory_order_relaxed);
  for (size_t i = 0; i + 1 < sizeof(out->call); ++i) {
    out->call[i] = __atomic_load_n(&r.call[i], __ATOMIC_RELAXED);
  }
  out->call[sizeof(out->call) - 1] = '\0';
  std::atomic_thread_fence(std::memory_order_acquire);
  return r.owner.load(std::memory_order_relaxed) == owner;
}

// Whether process pid is stopped (SIGSTOP, or a debugger holds it): it may be inside a wait whose
// condition already holds and that it has not looked at yet, so its record says nothing.
bool process_stopped(pid_t pid) {
  const char state = process_state(pid);
  return state == 'T' || state == 't';
}

void judge(const Runtime& rt, const HostSyncArea& pages, const char* call) {
  const uint64_t limit = g_limit_ns.load(std::memory_order_relaxed);
  const uint64_t now = monotonic_ns();
  std::string who;
  bool certain = true;
  for (int pe = 0; pe < rt.n_pes; ++pe) {
    const Record* r = pages.wait_record(pe);
    Seen seen;
    if (r == nullptr || !read_record(*r, &seen)) return;  // PE pe is not blocked in vshmem
    const uint64_t waited = now > seen.since_ns ? now - seen.since_ns : 0;
    if (waited < limit) return;
    certain = certain && (seen.flags & HostSyncArea::kWaitCertain) != 0;
    char line[96];
    std::snprintf(line, sizeof(line), "%sPE %d in %s for %.0f s", pe == 0 ? "" : ", ", pe,
                  seen.call, static_cast<double>(waited) / 1e9);
    who += line;
  }
  if (rt.peer_watch != nullptr) {
    for (int pe = 0; pe < rt.n_pes; ++pe) {
      if (pe != rt.my_pe && process_stopped(rt.peer_watch->pid_of(pe))) return;
    }
  }
  const double limit_s = static_cast<double>(limit) / 1e9;
  if (certain) {
    fail(call,
         "deadlock: every PE of the job has waited inside a vshmem call for at least %.0f s (%s), "
         "and only another PE's vshmem call could end any of these waits; ending the job "
         "(VSHMEM_DEADLOCK_S sets the time, 0 turns this off)",
         limit_s, who.c_str());
  }
  if (!g_warned.exchange(true)) {
    VSHMEM_WARN(
        "PE %d: %s: every PE of the job has waited inside a vshmem call for at least %.0f s (%s): "
        "a deadlock, unless another thread or a GPU kernel of some PE is still to end one of "
        "these waits (so the job goes on; VSHMEM_DEADLOCK_S sets the time, 0 turns this off)",
        rt.my_pe, call, limit_s, who.c_str());
  }
}

}  // namespace

Status configure_deadlock_watch(const Runtime& rt) {
  g_warned = false;
  Result<long long> seconds = env::int_var("VSHMEM_DEADLOCK_S", 60, 0, 100000000);
  if (!seconds) return seconds.status();
  g_limit_ns = static_cast<uint64_t>(*seconds) * 1000000000ull;
  const bool certain = rt.thread_level == SHMEM_THREAD_SINGLE && rt.provider != nullptr &&
                       !rt.provider->is_device_memory() && !device_library_linked();
  g_flags = certain ? HostSyncArea::kWaitCertain : 0;
  return Status::ok();
}

void note_long_wait(const char* call, uint64_t since_ns, uint64_t* token) {
  if (g_limit_ns.load(std::memory_order_relaxed) == 0) return;
  HostSyncArea* pages = shared_pages();
  if (pages == nullptr) return;
  const Runtime& rt = *g_runtime;
  Record* mine = pages->wait_record(rt.my_pe);
  if (mine == nullptr) return;
  // Publish (again, if another thread's wait took the record over and ended since).
  if (*token == 0 || mine->owner.load(std::memory_order_relaxed) != *token) {
    if (*token == 0) *token = g_next_token.fetch_add(1, std::memory_order_relaxed);
    mine->owner.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    mine->since_ns.store(since_ns, std::memory_order_relaxed);
    mine->flags.store(g_flags.load(std::memory_order_relaxed), std::memory_order_relaxed);
    const size_t n = std::min(std::strlen(call), sizeof(mine->call) - 1);
    for (size_t i = 0; i < sizeof(mine->call); ++i) {
      __atomic_store_n(&mine->call[i], i < n ? call[i] : '\0', __ATOMIC_RELAXED);
    }
    mine->owner.store(*token, std::memory_order_release);
  }
  if (rt.my_pe == 0) judge(rt, *pages, call);
}

void end_long_wait(uint64_t token) {
  if (token == 0) return;
  HostSyncArea* pages = shared_pages();
  Record* mine = pages != nullptr ? pages->wait_record(g_runtime->my_pe) : nullptr;
  if (mine == nullptr) return;
  uint64_t expected = token;
  mine->owner.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

}  // namespace vshmem::detail
