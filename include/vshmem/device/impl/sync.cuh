// Device setup queries, ordering (fence, quiet) and whole-team synchronization (barrier, sync).
//
// Barriers use the runtime's synchronization area. Up to kFlatMaxPes PEs: when every PE's heap is
// on this GPU (and no PE is behind the proxy), the central barrier: every PE adds 1 to one count
// at PE 0 and polls it (one remote write and one word to poll per PE). Otherwise a flat barrier,
// in which every PE writes the number of barriers it has entered into its own flag at every peer
// and waits until its flags from every peer reach that number (one hop of latency; the group
// forms spread the peers over their threads). Beyond that, a dissemination barrier: ceil(log2 n)
// rounds; in round r a PE adds 1 (with release) to counter r of PE me + 2^r and waits (with
// acquire) until its own counter r has reached the number of barriers it has entered. Flags and
// counters only grow, so there is no reset race and in-kernel, on-stream and graph-replayed
// barriers share one sequence. A barrier is entered by ONE thread per PE at a time (the thread
// form), one warp (_warp) or one block (_block); every PE must make the same sequence of
// barrier/sync calls, in kernels or on streams. The waits spin without timeouts (where PEs sit
// behind the proxy they also perform inbound atomics, and end naming the PE once the proxy failed
// a request: SlowPoll, impl/proxy.cuh): with PEs sharing
// a GPU they need MPS to be fast (without MPS the GPU time-slices between processes, ~2 ms per
// switch, but stays correct); the grids of all PEs that wait on each other must be resident at
// once (see shmemx_collective_launch).
#pragma once

#include <type_traits>

#include "vshmem/device/impl/memory.cuh"
#include "vshmem/device/impl/multimem.cuh"
#include "vshmem/shmem_team.h"

#ifdef __CUDACC__

namespace vshmem::device {

__device__ __forceinline__ void check_initialized(const char* call) {
  if (!vshmemi_device_state.initialized) {
    vshmemi_device_fail(call,
                        "the device library holds no state: shmem_init has not been called, "
                        "shmem_finalize was, or the heap is not GPU memory (VSHMEM_BACKEND=cuda)");
  }
}

// A team as a device call sees it: its slot, size, this PE's number in it, and its members'
// world PE numbers (null for the world, whose member i is PE i).
struct TeamView {
  int slot;
  int size;
  int my_index;
  const int32_t* members;
  __device__ __forceinline__ bool world() const { return members == nullptr; }
  __device__ __forceinline__ int world_pe(int i) const { return members ? members[i] : i; }
};

// The team behind a handle, or false for SHMEM_TEAM_INVALID and for anything that is not a team
// this PE belongs to (the queries then return -1, as on the host).
__device__ __forceinline__ bool team_lookup(shmem_team_t team, TeamView* v) {
  const GpuState& s = vshmemi_device_state;
  if (team == nullptr) return false;
  // world_handle is null while the host runtime exports no SHMEM_TEAM_WORLD object (no teams
  // yet): then the world is the only team there can be.
  if (team == s.world_handle || s.world_handle == nullptr) {
    *v = TeamView{0, s.n_pes, s.my_pe, nullptr};
    return true;
  }
  const int slot = team_slot(s, team);
  if (slot < 0 || s.teams[slot].size == 0) return false;
  const GpuTeam& g = s.teams[slot];
  *v = TeamView{slot, g.size, g.my_index, g.members};
  return true;
}

// As team_lookup, for barriers and collectives: traps, naming the call, for a bad handle.
__device__ __forceinline__ TeamView team_view(const char* call, shmem_team_t team) {
  TeamView v{};
  if (!team_lookup(team, &v)) {
    vshmemi_device_fail(call, team == nullptr ? "the team is SHMEM_TEAM_INVALID"
                                              : "the handle is not a team this PE belongs to");
  }
  return v;
}

// The dissemination barrier, by one thread (jobs of more than SyncLayout::kFlatMaxPes PEs):
// ceil(log2 n) rounds; in round r this PE adds 1 (release) to counter r of PE me + 2^r and waits
// (acquire loads) until its own counter r reaches `epoch`.
template <class Sc>
__device__ __forceinline__ void dissemination(const char* call, uint64_t epoch) {
  const GpuState& s = vshmemi_device_state;
  uint64_t* counters = reinterpret_cast<uint64_t*>(s.sync_base + SyncLayout::kBarrierCounters);
  const int n = s.n_pes, me = s.my_pe;
  for (int r = 0, d = 1; d < n; ++r, d <<= 1) {
    int to = me + d;
    if (to >= n) to -= n;
    const int64_t dt = peer_delta(to);
    if (unmapped(dt)) {
      vshmemi_proxy_notify(call, counters + r, to);  // cold: a PE behind the proxy
    } else {
      red_add_release<Sc>(at_delta(counters + r, dt), 1);
    }
    SlowPoll slow;
    while (ld_acquire<Sc>(counters + r) < epoch) {
      slow(call);
    }
  }
}

// Before a barrier's flags: shmem_quiet's fence for a barrier, a release fence for a sync (see
// sync_group).
template <class Sc>
__device__ __forceinline__ void fence_before_flags(bool quiet) {
  if (quiet) {
    fence_sys<Sc>();
  } else {
    fence_release<Sc>();
  }
}

// The writes of a flat or counting barrier: for each peer of this member's share (me + rank + 1,
// then every G::size()-th further, mod n), op(word's address at that peer); for a peer behind
// the proxy (cold), one-way adds of 1 to `word` and, when given, to `also` there instead.
template <class G, class Op>
__device__ __forceinline__ void to_peers(const char* call, uint64_t* word, uint64_t* also, Op op) {
  const GpuState& s = vshmemi_device_state;
  const int n = s.n_pes, me = s.my_pe;
  for (unsigned i = G::rank() + 1; i < static_cast<unsigned>(n); i += G::size()) {
    int to = me + static_cast<int>(i);
    if (to >= n) to -= n;
    const int64_t dt = peer_delta(to);
    if (unmapped(dt)) {
      vshmemi_proxy_notify(call, word, to);
      if (also != nullptr) vshmemi_proxy_notify(call, also, to);
    } else {
      op(at_delta(word, dt));
    }
  }
}

// Waits until flags[me + i] (mod n) reach `epoch` for i = rank + 1, rank + 1 + size, ... < n,
// kBatch flags per pass (see flat), with acquire or relaxed loads.
template <unsigned kBatch, bool kAcquire, class Sc>
__device__ __forceinline__ void wait_flags(const char* call, const uint64_t* flags, int n, int me,
                                           unsigned rank, unsigned size, uint64_t epoch) {
  SlowPoll slow;
  for (unsigned base = rank + 1; base < static_cast<unsigned>(n); base += kBatch * size) {
    for (;;) {
      uint64_t seen[kBatch];
#pragma unroll
      for (unsigned j = 0; j < kBatch; ++j) {
        const unsigned i = base + j * size;
        int from = me + static_cast<int>(i);
        if (from >= n) from -= n;
        seen[j] = i >= static_cast<unsigned>(n) ? epoch
                  : kAcquire                    ? ld_acquire<Sc>(flags + from)
                                                : ld_relaxed<Sc>(flags + from);
      }
      uint64_t least = seen[0];
#pragma unroll
      for (unsigned j = 1; j < kBatch; ++j) least = seen[j] < least ? seen[j] : least;
      if (least >= epoch) break;
      slow(call);
    }
  }
}

// The flat barrier, by the members of a group (n <= kFlatMaxPes): flags[q] of PE p holds the
// number of barriers PE q has entered, written only by q. Each member writes `epoch` into this
// PE's flag at its share of the peers, then waits for its share of this PE's flags. One hop of
// latency whatever n is; the stores are independent, so they overlap.
template <class G, class Sc>
__device__ __forceinline__ void flat(const char* call, uint64_t epoch, bool quiet) {
  const GpuState& s = vshmemi_device_state;
  uint64_t* flags = reinterpret_cast<uint64_t*>(s.sync_base + SyncLayout::kBarrierFlags);
  const int n = s.n_pes, me = s.my_pe;
  const unsigned rank = G::rank(), size = G::size();
  // The group synchronization before this made every member's earlier stores visible to this
  // thread; the fence makes them (cumulatively) visible before the flags (see sync_group).
  if (rank < static_cast<unsigned>(n)) fence_before_flags<Sc>(quiet);
  // Cold (a PE behind the proxy): flags[me] there counts our barriers (epoch), written by us
  // alone, one more per barrier: adding 1 sets it to epoch, one-way (impl/proxy.cuh).
  to_peers<G>(call, flags + me, nullptr, [&](uint64_t* there) { st_relaxed<Sc>(there, epoch); });
  // Polls. With one flag to watch per thread (the group forms, and the thread form with one peer)
  // they are acquire loads: the load that sees the flag needs no fence after it (a fence would
  // also wait for the flags this thread just stored, ~0.13 us on the H200). The thread form with
  // more peers polls kBatch flags per pass with independent relaxed loads, all issued before any
  // is compared, then fences once: acquire loads would be performed one after another, a round
  // trip each (4.2 us instead of 3.1 at 8 PEs on the H200).
  if (std::is_same_v<G, ThreadGroup> && n > 2) {
    wait_flags<8, false, Sc>(call, flags, n, me, rank, size, epoch);
    fence_acquire<Sc>();
  } else {
    wait_flags<1, true, Sc>(call, flags, n, me, rank, size, epoch);
  }
}

// The counting barrier, by the members of a group (n <= kFlatMaxPes): each member adds 1 to
// this PE's arrival counter (SyncLayout::kArrivals) at its share of the peers (after the fence
// that makes the adds releases) and one thread waits with acquire loads until this PE's own
// counter holds n - 1 more arrivals than at the last counting barrier (kArrivalTarget, this PE's
// only). One word to poll instead of n - 1 flags: the thread form watches one location with one
// acquire load in flight, as the group forms do. The counter only grows, so a fast peer's add
// for the next barrier may arrive early without harm.
template <class G, class Sc>
__device__ __forceinline__ void counting(const char* call, bool quiet) {
  const GpuState& s = vshmemi_device_state;
  uint64_t* arrivals = reinterpret_cast<uint64_t*>(s.sync_base + SyncLayout::kArrivals);
  volatile uint64_t* target_p =
      reinterpret_cast<volatile uint64_t*>(s.sync_base + SyncLayout::kArrivalTarget);
  const int n = s.n_pes;
  const unsigned rank = G::rank();
  const uint64_t target = *target_p + static_cast<uint64_t>(n - 1);
  if (rank < static_cast<unsigned>(n)) fence_before_flags<Sc>(quiet);
  // Cold (a PE behind the proxy, one-way adds): flags[me] there must also count this barrier: the
  // flag barrier's cold path raises it by adding 1 per barrier (flat), so a barrier of the other
  // kind that skipped it would leave that PE waiting at the next flag barrier.
  to_peers<G>(call, arrivals,
              reinterpret_cast<uint64_t*>(s.sync_base + SyncLayout::kBarrierFlags) + s.my_pe,
              [&](uint64_t* there) { red_add<Sc>(there, uint64_t{1}); });
  if (rank == 0) {
    SlowPoll slow;
    while (ld_acquire<Sc>(arrivals) < target) {
      slow(call);
    }
  }
  G::sync();  // every member has read the target
  if (rank == 0) *target_p = target;
}

static_assert(SyncLayout::kArrivals > SyncLayout::kBarrierEpoch &&
                  SyncLayout::kArrivals + 8 <= McSyncLayout::kCounter &&
                  SyncLayout::kArrivalTarget > SyncLayout::kBroadcastFlag &&
                  SyncLayout::kArrivalTarget + 8 <= SyncLayout::kBarrierFlags,
              "the counting barrier's words must not overlap the other barriers' words");

// The central barrier, by the group's leader (every PE's heap on this GPU, no PE behind the
// proxy): each PE adds 1 to PE 0's count (SyncLayout::kCentralCount) after the fence that makes
// the add a release, and polls that one word with acquire loads until it holds n more than at the
// last central barrier (kCentralTarget, this PE's only). One remote write and one word to poll
// per PE, whatever n is: the flat barrier's leader issues n - 1 stores and polls n - 1 flags, the
// counting barrier's n - 1 adds. Polling a word of PE 0 is an access to the same L2 when every
// heap is on this GPU, which is why it is used only then (a poll over NVLink would cost a round
// trip per load). The count only grows, so a fast PE's add for the next barrier may land before
// a slow PE has seen this one's total without harm.
//
// The leader also stores this PE's private words (the new target, and the barrier epoch, which
// sync_group then leaves alone) right after its add, not after the wait: a store still in flight
// when the next barrier's fence comes would make that fence wait for it.
template <class G, class Sc>
__device__ __forceinline__ void central(bool quiet, volatile uint64_t* epoch_p, uint64_t epoch) {
  const GpuState& s = vshmemi_device_state;
  if (G::rank() != 0) return;
  volatile uint64_t* target_p =
      reinterpret_cast<volatile uint64_t*>(s.sync_base + SyncLayout::kCentralTarget);
  const uint64_t target = *target_p + static_cast<uint64_t>(s.n_pes);
  // PE 0's count: delta 0 (our own word) on PE 0, its window slot elsewhere; mapped, as the
  // caller checked.
  uint64_t* count = at_delta(reinterpret_cast<uint64_t*>(s.sync_base + SyncLayout::kCentralCount),
                             s.inline_delta[0]);
  fence_before_flags<Sc>(quiet);
  red_add<Sc>(count, uint64_t{1});
  *target_p = target;
  *epoch_p = epoch;
  while (ld_acquire<Sc>(count) < target) {
  }
}

static_assert(SyncLayout::kCentralCount >= 8 * SyncLayout::kMaxRounds &&
                  SyncLayout::kCentralTarget >= SyncLayout::kCentralCount + 128 &&
                  SyncLayout::kCentralTarget + 8 <= SyncLayout::kBarrierEpoch,
              "the central barrier's words must not overlap the other barriers' words");

// How a world barrier of at most kFlatMaxPes PEs waits: on n - 1 flags, on one arrival counter,
// or on PE 0's central count (only where central() may run: every heap on this GPU and no proxy;
// elsewhere kCentral is the flag barrier). All advance the barrier epoch, so broadcasts and later
// barriers of any kind agree; every PE must use the same kind for the same barrier, which is why
// every form (thread, warp, block, on stream) uses kDefaultBarrier.
enum class BarrierKind { kFlags, kCounter, kCentral };

// The central barrier: on the H200 with 8 PEs the thread form of the flag barrier took 2.1-3.5
// us and the counting barrier's 2.35 us against 1.25-1.63 us for their block forms, the gap being
// the n - 1 remote writes one thread issues (bench/RESULTS.md, run 19); the central barrier's
// thread form issues one. The benchmark's "ab" group times all three kinds in every form.
constexpr BarrierKind kDefaultBarrier = BarrierKind::kCentral;

// A barrier or sync made by the whole group G: thread, warp or block. Every member reads the
// epoch before anyone advances it; the leader advances it after.
//
// quiet (a barrier, not a sync): the fence before the flags is shmem_quiet's fence.sc, not a
// release fence. For the PEs taking part the release/acquire handshake alone would order
// everything; fence.sc also completes the stores towards threads outside it (a PE outside a team,
// a thread not synchronized with the barrier's group), as shmem_quiet does. Measured on the H200,
// the difference between the two fences in a barrier is within noise (1.376 vs 1.366 us, block
// form, 2 PEs, bench/RESULTS.md runs 3 and 6).
template <class G, BarrierKind kKind = kDefaultBarrier>
__device__ __forceinline__ void sync_group(const char* call, bool quiet) {
  const GpuState& s = vshmemi_device_state;
  check_initialized(call);
  if (mc_on(s.n_pes)) {  // a multicast region spans every PE (impl/multimem.cuh)
    mc_barrier<G>(quiet);
    return;
  }
  volatile uint64_t* epoch_p =
      reinterpret_cast<volatile uint64_t*>(s.sync_base + SyncLayout::kBarrierEpoch);
  G::sync();  // every member's stores precede the flags (fence cumulativity)
  const uint64_t epoch = *epoch_p + 1;
  // The scope is chosen once for the whole barrier (memory.cuh, in_scope). True when the barrier
  // has stored the new epoch itself (central).
  const bool epoch_stored = in_scope([&](auto sc) {
    using Sc = decltype(sc);
    if (s.n_pes <= SyncLayout::kFlatMaxPes) {
      if constexpr (kKind == BarrierKind::kCounter) {
        counting<G, Sc>(call, quiet);
      } else if constexpr (kKind == BarrierKind::kCentral && std::is_same_v<Sc, GpuScope>) {
        // gpu_scope: every PE's heap is on this GPU. Uniform over the job, like the proxy's
        // absence (with PEs on two nodes, simulated or not, every PE has a peer behind it).
        if (s.proxy.slots == nullptr) {
          central<G, Sc>(quiet, epoch_p, epoch);
          return true;
        }
        flat<G, Sc>(call, epoch, quiet);
      } else {
        flat<G, Sc>(call, epoch, quiet);
      }
    } else if (G::rank() == 0) {
      if (quiet) fence_sys<Sc>();
      dissemination<Sc>(call, epoch);  // each round's add is a release
    }
    return false;
  });
  G::sync();  // every member has read the epoch and the waits are over
  if (epoch_stored) return;
  if (G::rank() == 0) *epoch_p = epoch;
  G::sync();
}

// A barrier over a team other than the world, made by the group G (flat, like the world's):
// PE p tells member q "p has entered c barriers of this slot with you" by writing c into q's
// received[p]; c counts per (slot, peer), so the counts agree whatever teams used the slot before
// (every two PEs run the team barriers they share in the same order, as the specification
// requires), and the slot never needs resetting.
template <class G, class Sc>
__device__ __forceinline__ void team_flat(const char* call, const TeamView& v, bool quiet) {
  const GpuState& s = vshmemi_device_state;
  const size_t n = static_cast<size_t>(s.n_pes);
  uint64_t* sent = reinterpret_cast<uint64_t*>(s.team_sync_base +
                                               static_cast<uint64_t>(v.slot) * s.team_slot_bytes +
                                               TeamSlotLayout::kSignals);
  uint64_t* received = sent + n;
  const unsigned rank = G::rank(), size = G::size(), m = static_cast<unsigned>(v.size);
  // The leader fences also in a team of one: a barrier's quiet covers stores to any PE.
  if (rank == 0 || rank + 1 < m) fence_before_flags<Sc>(quiet);
  // The world PE of the member j places after this PE in the team.
  auto member_after = [&](unsigned j) {
    unsigned i = static_cast<unsigned>(v.my_index) + j;
    return v.world_pe(static_cast<int>(i >= m ? i - m : i));
  };
  // Member j places after this PE is served by group thread j - 1 (mod the group size), which
  // alone touches sent[] for that peer.
  for (unsigned j = rank + 1; j < m; j += size) {
    const int q = member_after(j);
    volatile uint64_t* count = sent + q;
    const uint64_t c = *count + 1;
    *count = c;
    const int64_t dq = peer_delta(q);
    if (unmapped(dq)) {
      // Cold: a PE behind the proxy. received[me] there is c - 1, written by us alone: adding 1
      // sets it to c, one-way (impl/proxy.cuh).
      vshmemi_proxy_notify(call, received + s.my_pe, q);
    } else {
      st_relaxed<Sc>(at_delta(received + s.my_pe, dq), c);
    }
  }
  for (unsigned j = rank + 1; j < m; j += size) {
    const int q = member_after(j);
    const uint64_t c = *static_cast<volatile uint64_t*>(sent + q);
    SlowPoll slow;
    while (ld_acquire<Sc>(received + q) < c) {
      slow(call);
    }
  }
}

// A barrier (quiet) or sync over `team`, made by the whole group G.
template <class G>
__device__ __forceinline__ void team_sync_group(const char* call, shmem_team_t team, bool quiet) {
  check_initialized(call);
  const TeamView v = team_view(call, team);
  if (v.world()) {
    sync_group<G>(call, quiet);
    return;
  }
  // With a region (the world's for a team of every PE, else the team's own: every member has it
  // or none does), the multicast barrier on the slot's counter (impl/multimem.cuh).
  if (const uint64_t mc = mc_team(v.slot, v.size); mc != 0) {
    mc_team_barrier<G>(v.slot, v.size, mc, quiet);
    return;
  }
  G::sync();
  in_scope([&](auto sc) { team_flat<G, decltype(sc)>(call, v, quiet); });
  G::sync();
}

}  // namespace vshmem::device

extern "C" {
VSHMEM_HOSTDEV int shmem_team_my_pe(shmem_team_t team);
VSHMEM_HOSTDEV int shmem_team_n_pes(shmem_team_t team);
VSHMEM_HOSTDEV int shmem_team_sync(shmem_team_t team);
VSHMEM_HOSTDEV void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe);
VSHMEM_HOSTDEV void* shmemx_mc_ptr(shmem_team_t team, const void* ptr);
}

#ifdef __CUDA_ARCH__
extern "C" {

__device__ __forceinline__ int shmem_my_pe(void) { return vshmemi_device_state.my_pe; }
__device__ __forceinline__ int shmem_n_pes(void) { return vshmemi_device_state.n_pes; }

// -1 for SHMEM_TEAM_INVALID or a team this PE is not in, as on the host.
__device__ __forceinline__ int shmem_team_my_pe(shmem_team_t team) {
  vshmem::device::TeamView v{};
  return vshmem::device::team_lookup(team, &v) ? v.my_index : -1;
}
__device__ __forceinline__ int shmem_team_n_pes(shmem_team_t team) {
  vshmem::device::TeamView v{};
  return vshmem::device::team_lookup(team, &v) ? v.size : -1;
}
// -1 when a team is invalid, src_pe is not a PE of src_team or its PE is not in dest_team.
__device__ __forceinline__ int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                                                       shmem_team_t dest_team) {
  vshmem::device::TeamView from{}, to{};
  if (!vshmem::device::team_lookup(src_team, &from) ||
      !vshmem::device::team_lookup(dest_team, &to)) {
    return -1;
  }
  if (src_pe < 0 || src_pe >= from.size) return -1;
  const int pe = from.world_pe(src_pe);
  if (to.world()) return pe;
  for (int i = 0; i < to.size; ++i) {
    if (to.members[i] == pe) return i;
  }
  return -1;
}

// NULL when pe's memory is not mapped here (or pe / dest is invalid); dest itself for our PE.
__device__ __forceinline__ void* shmem_ptr(const void* dest, int pe) {
  const vshmem::device::GpuState& s = vshmemi_device_state;
  uint64_t a = reinterpret_cast<uint64_t>(dest);
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(s.n_pes) || a < s.heap_base ||
      a - s.heap_base >= s.heap_size) {
    return nullptr;
  }
  const int64_t d = vshmem::device::peer_delta(pe);
  if (d == vshmem::device::kUnmappedDelta) return nullptr;
  return reinterpret_cast<void*>(a + static_cast<uint64_t>(d));
}

// As shmem_ptr with pe numbered in team; NULL for an invalid team or a pe outside it.
__device__ __forceinline__ void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe) {
  vshmem::device::TeamView v{};
  if (!vshmem::device::team_lookup(team, &v) || pe < 0 || pe >= v.size) return nullptr;
  return shmem_ptr(dest, v.world_pe(pe));
}

// The multicast address of ptr for the team (the world's region for a team of every PE, the
// team's own for a smaller one); NULL when the team has none, when multicast is off, and outside
// the committed heap (as on the host: shmemx.h).
__device__ __forceinline__ void* shmemx_mc_ptr(shmem_team_t team, const void* ptr) {
  const vshmem::device::GpuState& s = vshmemi_device_state;
  vshmem::device::TeamView v{};
  const uint64_t a = reinterpret_cast<uint64_t>(ptr);
  if (!vshmem::device::team_lookup(team, &v) || a < s.heap_base ||
      a - s.heap_base >= s.heap_committed) {
    return nullptr;
  }
  const uint64_t own =
      s.teams != nullptr && v.slot > 0 && v.slot < s.team_slots ? s.teams[v.slot].mc_base : 0;
  const uint64_t mc = vshmem::device::mc_team_base(s.mc_base, own, v.size, s.n_pes);
  return mc == 0 ? nullptr : reinterpret_cast<void*>(mc + (a - s.heap_base));
}

// With PEs behind the proxy (impl/proxy.cuh) they order / complete its requests too.
__device__ __forceinline__ void shmem_fence(void) {
  vshmem::device::fence_sys();
  if (vshmemi_device_state.proxy.slots != nullptr) vshmemi_proxy_order(0);
}
__device__ __forceinline__ void shmem_quiet(void) {
  vshmem::device::fence_sys();
  if (vshmemi_device_state.proxy.slots != nullptr) vshmemi_proxy_order(1);
}

__device__ __forceinline__ void shmem_barrier_all(void) {
  vshmem::device::sync_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_barrier_all", true);
}
__device__ __forceinline__ void shmem_sync_all(void) {
  vshmem::device::sync_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_sync_all", false);
}
__device__ __forceinline__ int shmem_team_sync(shmem_team_t team) {
  vshmem::device::team_sync_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_team_sync", team, false);
  return 0;
}

}  // extern "C"
#endif  // __CUDA_ARCH__

// ---- shmemx forms (device only). ----
extern "C" {

#define VSHMEMI_DEV_SYNC_GROUP(SUFFIX, G)                                                        \
  __device__ __forceinline__ void shmemx_barrier_all_##SUFFIX(void) {                            \
    vshmem::device::sync_group<VSHMEMI_DEV_G(G)>("shmemx_barrier_all_" #SUFFIX, true);           \
  }                                                                                              \
  __device__ __forceinline__ void shmemx_sync_all_##SUFFIX(void) {                               \
    vshmem::device::sync_group<VSHMEMI_DEV_G(G)>("shmemx_sync_all_" #SUFFIX, false);             \
  }                                                                                              \
  __device__ __forceinline__ int shmemx_team_sync_##SUFFIX(shmem_team_t team) {                  \
    vshmem::device::team_sync_group<VSHMEMI_DEV_G(G)>("shmemx_team_sync_" #SUFFIX, team, false); \
    return 0;                                                                                    \
  }                                                                                              \
  __device__ __forceinline__ int shmemx_barrier_##SUFFIX(shmem_team_t team) {                    \
    vshmem::device::team_sync_group<VSHMEMI_DEV_G(G)>("shmemx_barrier_" #SUFFIX, team, true);    \
    return 0;                                                                                    \
  }
VSHMEMI_DEV_SYNC_GROUP(warp, WarpGroup)
VSHMEMI_DEV_SYNC_GROUP(block, BlockGroup)
#undef VSHMEMI_DEV_SYNC_GROUP

// Team barrier (quiet, then sync) from one thread.
__device__ __forceinline__ int shmemx_barrier(shmem_team_t team) {
  vshmem::device::team_sync_group<VSHMEMI_DEV_G(ThreadGroup)>("shmemx_barrier", team, true);
  return 0;
}

}  // extern "C"

#endif  // __CUDACC__

// In device code the predefined teams name the host's handles through the device state, so that
// kernels can write SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED as host code does (their host
// definitions are variables of libvshmem, which device code cannot read). Each is an lvalue of
// type shmem_team_t, as the variables are.
#if defined(__CUDACC__) && defined(__CUDA_ARCH__)
#define SHMEM_TEAM_WORLD (vshmemi_device_state.world_handle)
#define SHMEM_TEAM_SHARED (vshmemi_device_state.shared_handle)
// Slot 3 of the runtime's team table (runtime/api/team.hpp, kNodeSlot).
#define SHMEMX_TEAM_NODE                                                  \
  (reinterpret_cast<shmem_team_t>(vshmemi_device_state.team_handle_base + \
                                  3 * vshmemi_device_state.team_handle_stride))
#endif
