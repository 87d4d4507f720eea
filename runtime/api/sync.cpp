// Ordering (fence, quiet) and the job-wide barrier.
#include <sched.h>

#include <atomic>

#include "runtime/api/runtime.hpp"
#include "runtime/api/team.hpp"
#include "runtime/api/wait_policy.hpp"
#include "runtime/transport/host_sync.hpp"
#include "runtime/transport/host_wake.hpp"
#include "shmem.h"

namespace vshmem::detail {

namespace {
// Device calls to unmapped PEs that a finished kernel posted may still be in the proxy's ring.
void drain_device_proxy(Runtime& rt, const char* call) {
  if (rt.device_proxy != nullptr) {
    if (Status st = rt.device_proxy->drain(); !st) fail(call, st);
  }
}
}  // namespace

void quiet(Runtime& rt, const char* call) {
  drain_device_proxy(rt, call);
  if (Status st = rt.transport->quiet(); !st) fail(call, st);
}

void quiet_before_release(Runtime& rt, const char* call) {
  drain_device_proxy(rt, call);
  if (Status st = rt.transport->quiet_before_release(); !st) fail(call, st);
}

void fence(Runtime& rt, const char* call) {
  Status st = rt.transport->fence();
  if (!st) fail(call, st);
}

namespace {

// The node's barrier when the waits of every PE yield the core (PEs outnumber the CPUs; the choice
// is the same on every PE: barrier_gathers): each PE but PE 0 adds its arrival to PE 0's count,
// the one whose add completes it wakes PE 0, and PE 0 publishes the epoch to all at once (one
// store, one futex wake for every member asleep on the release word). Against the dissemination
// barrier's ceil(log2 n) rounds in which every PE waits and is woken, every PE waits once, and
// PE 0 leaves first, so the root of a following rooted collective (OSU's: PE 0) pushes before
// its members look: measured on 2 cores, 7 interleaved runs each (bench/RESULTS.md, issue #15
// session 11), barrier_all at 4 PEs 11.9 against 12.9 us, at 8 PEs 39.8 against 62.3, and the
// broadcast after it 0.62 against 5.28 us at 4 PEs (OSHMEM: 2.0). Session 8 measured a central
// barrier released by PE 0 1.3-2.6x slower than dissemination, on a box that other sessions
// loaded to 8-12 runnable tasks, before waits yielded before they slept (wait_policy.hpp).
void gathered_barrier(Runtime& rt, HostSyncArea& shared, uint64_t epoch, const char* call) {
  uint64_t* arrived = shared.counter(0, HostSyncArea::kArrivedCounter);
  uint64_t* release = shared.counter(0, HostSyncArea::kReleaseCounter);
  const uint64_t all_arrived = epoch * static_cast<uint64_t>(rt.n_pes - 1);
  // spin_first: see yield_until.
  auto wait_for = [&](WakeWord word, auto&& met, auto&& spin_first) {
    if (met() || yield_until(met, spin_first)) return;
    Backoff backoff(call, word);
    while (!met()) backoff.pause(met);
  };
  if (rt.my_pe == 0) {
    // While the members that last arrived on PE 0's CPU have all arrived, the missing ones run
    // elsewhere, and the PEs sharing this CPU can do nothing but wait for the release: PE 0 spins
    // instead of yielding the core to them (YieldPhase::spin). 4 PEs on 2 CPUs:
    // bench/RESULTS.md, issue #15 session 32.
    wait_for(
        shared.wake_word(0),
        [&] { return __atomic_load_n(arrived, __ATOMIC_ACQUIRE) >= all_arrived; },
        [&] { return shared.arrived_from_cpu(rt.n_pes, epoch, sched_getcpu()); });
    __atomic_store_n(release, epoch, __ATOMIC_SEQ_CST);
    wake(shared.release_wake_word(0));
    return;
  }
  HostSyncArea::ArrivalRecord* mine = shared.arrival_record(rt.my_pe);
  mine->cpu.store(sched_getcpu(), std::memory_order_relaxed);
  mine->epoch.store(epoch, std::memory_order_release);
  // The add is seq_cst, as wake() requires of the store that may satisfy a sleeper.
  if (__atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST) == all_arrived) wake(shared.wake_word(0));
  wait_for(
      shared.release_wake_word(0),
      [&] { return __atomic_load_n(release, __ATOMIC_ACQUIRE) >= epoch; }, [] { return false; });
}

}  // namespace

void sync_all(Runtime& rt, const char* call) {
  if (rt.n_pes == 1) return;
  const Transport::BarrierKind kind = rt.transport->barrier_kind();
  if (kind == Transport::BarrierKind::kBootstrap) {
    // Remote peers and a GPU heap: the host cannot poll counters in device memory without
    // launching GPU work for every poll, so the bootstrap carries the barrier (with its time
    // limit: a PE computing longer than VSHMEM_BOOTSTRAP_TIMEOUT between barriers ends the job).
    Status st = rt.bootstrap->barrier();
    if (!st) fail(call, st);
    return;
  }
  // Dissemination barrier: ceil(log2 n) rounds; in round k PE i signals PE (i + 2^k) mod n and
  // waits for PE (i - 2^k) mod n. Counters only grow, so a signal that arrives early for the
  // next barrier is simply counted there. No time limit: a PE that computes for long is waited
  // for, as OpenSHMEM requires. The counters are the node's shared host pages when every PE is
  // mapped (plain host atomics, whatever the heap is made of), else the heap's, which peers
  // update through their paths to us.
  HostSyncArea* shared = rt.transport->mapped().node_barrier();
  const uint64_t epoch = ++rt.barrier_epoch;
  if (kind == Transport::BarrierKind::kNodeShared && barrier_gathers()) {
    gathered_barrier(rt, *shared, epoch, call);
    return;  // no fence: seq_cst adds and stores, acquire loads (as below)
  }
  for (int k = 0; (1 << k) < rt.n_pes; ++k) {
    int peer = (rt.my_pe + (1 << k)) % rt.n_pes;
    if (kind == Transport::BarrierKind::kNodeShared) {
      // The peer may be asleep on its wake word; we may sleep on ours (host_wake.hpp). We alone
      // write this counter (round k's signal to peer), and it counts barriers: where every PE
      // spins, a release store of the epoch, woken without a fence (node_wake_word), as the
      // collectives' signals (team.cpp: group_post); else an atomic add and a fenced wake.
      if (every_pe_spins()) {
        __atomic_store_n(shared->counter(peer, k), epoch, __ATOMIC_RELEASE);
        wake_after_copy(node_wake_word(shared, peer));
      } else {
        __atomic_fetch_add(shared->counter(peer, k), 1, __ATOMIC_SEQ_CST);
        wake(shared->wake_word(peer));
      }
      const uint64_t* own = shared->counter(rt.my_pe, k);
      auto met = [&] { return __atomic_load_n(own, __ATOMIC_ACQUIRE) >= epoch; };
      if (met() || yield_until(met)) continue;
      Backoff backoff(call, node_wake_word(shared, rt.my_pe));
      while (!met()) backoff.pause(met);
    } else {
      // The one PE that signals us in this round: when it is remote, its signal arrives as a
      // message, and the wait sleeps until the network has one (no core spent polling or
      // yielding).
      const int from = (rt.my_pe - (1 << k) % rt.n_pes + rt.n_pes) % rt.n_pes;
      RemotePath* remote = rt.transport->remote();
      const bool from_remote = kind == Transport::BarrierKind::kHeapCounters && remote != nullptr &&
                               &rt.transport->path(from) == static_cast<PeerPath*>(remote);
      Backoff backoff = from_remote ? Backoff(call, remote)
                                    : Backoff(call, kind == Transport::BarrierKind::kHeapCounters);
      // A posted add, not a fetching one: the round costs one message instead of a round trip
      // (the peer need not answer before we start waiting for our own signal).
      Status st = rt.transport->path(peer).signal_add(peer, &rt.barrier_counters[k], 1);
      if (!st) fail(call, st);
      while (read_own(rt, &rt.barrier_counters[k], call) < epoch) backoff.pause();
    }
  }
  // On the node's counters every signal is a release store or a seq_cst add, and every wait an
  // acquire load: what the peers did before their signals happens before what this PE does
  // next, with no fence (a mapped 2-PE barrier_all 0.95-0.97 of fenced on the 2-core VM of
  // bench/RESULTS.md, session 34). The heap's counters are read through the transport.
  if (kind != Transport::BarrierKind::kNodeShared) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

}  // namespace vshmem::detail

using namespace vshmem::detail;

extern "C" {

void shmem_fence(void) { fence(runtime_for("shmem_fence"), "shmem_fence"); }

void shmem_ctx_fence(shmem_ctx_t ctx) {
  ctx_pe(ctx, 0, "shmem_ctx_fence");
  shmem_fence();
}

void shmem_quiet(void) { quiet(runtime_for("shmem_quiet"), "shmem_quiet"); }

void shmem_ctx_quiet(shmem_ctx_t ctx) {
  ctx_pe(ctx, 0, "shmem_ctx_quiet");
  shmem_quiet();
}

void shmem_barrier_all(void) {
  Runtime& rt = runtime_for("shmem_barrier_all");
  // The node barrier's arrival is a release store or a seq_cst add that the peers acquire: it
  // orders this PE's stores before it, and quiet's fence would order nothing more it needs.
  if (rt.transport->barrier_kind() == vshmem::Transport::BarrierKind::kNodeShared) {
    quiet_before_release(rt, "shmem_barrier_all");
  } else {
    quiet(rt, "shmem_barrier_all");
  }
  sync_all(rt, "shmem_barrier_all");
}

void shmem_sync_all(void) { sync_all(runtime_for("shmem_sync_all"), "shmem_sync_all"); }

}  // extern "C"
