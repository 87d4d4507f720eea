// The multicast barrier's counting, shared by the world's barrier and every team's (through the
// region the team uses: impl/multimem.cuh), and the place of a team's words in its slot of the
// device synchronization area. Plain C++ as well as CUDA: the device code runs it with
// multimem.red, and the fake-driver test (tests/mpe/multicast_fake.cpp) runs the very same
// counting on the host with the switch's part played by one atomic add per member, since no
// machine of CI can run multimem.
#pragma once

#include <stdint.h>

#include "vshmem/shmem_types.h"

namespace vshmem::device {

// Team slot s owns GpuState::team_slot_bytes at team_sync_base + s * team_slot_bytes
// (impl/state.h), laid out as below. The words are never reset: every count only grows, and
// the counts stay consistent when teams of other members or sizes reuse the slot.
struct TeamSlotLayout {
  // uint64_t: the slot's multicast barrier counter. In each multicast barrier of the team in this
  // slot, every member adds 1 to every member's copy (one multimem.red through the team's
  // region). Own cache line.
  static constexpr uint64_t kMcCounter = 0;
  // uint64_t: the value this PE's counter reached when its last multicast barrier in this slot
  // ended; only this PE touches it. Own cache line.
  static constexpr uint64_t kMcTarget = 128;
  // uint64_t[n_pes] unicast team barrier counts sent to each world PE (written by this PE), then
  // uint64_t[n_pes] received from each (written by that PE): impl/sync.cuh, team_flat.
  static constexpr uint64_t kSignals = 256;
  // The team's scratch for in-place reductions: the rest of the slot (impl/coll.cuh).
  VSHMEM_HOSTDEV static constexpr uint64_t scratch(int n_pes) {
    return kSignals + 2 * static_cast<uint64_t>(n_pes) * sizeof(uint64_t);
  }
  // The slot's size with scratch_bytes of scratch, in whole cache lines (so that the next slot's
  // counter has its line to itself).
  VSHMEM_HOSTDEV static constexpr uint64_t bytes(int n_pes, uint64_t scratch_bytes) {
    return (scratch(n_pes) + scratch_bytes + 127) / 128 * 128;
  }
};

// One PE's multicast barrier, by one thread: `counter` is this PE's copy of the barrier's counter
// and `target` its private word; `members` PEs take part, each adding 1 to every member's copy.
// This PE has passed a barrier when its copy holds the adds of every member for every barrier it
// entered so far: the previous target plus `members`. Counting on (instead of keeping an epoch)
// makes the counter right after any sequence of teams of any sizes in the slot, since each
// barrier completes with exactly `members` adds to each member's copy.
//
// Ops supplies the memory operations:
//   before(quiet)    orders this PE's earlier accesses before the add (a barrier's quiet, or a
//                    sync's release), and the earlier unicast polls of the counter before the
//                    multicast access (fence.proxy.alias);
//   add_all(counter) adds 1, with release, to every member's copy (multimem.red), then orders it
//                    before the unicast polls that follow;
//   load_acquire(p)  an acquire load of this PE's copy.
template <class Ops>
VSHMEM_HOSTDEV inline void mc_barrier_count(Ops& ops, uint64_t* counter, volatile uint64_t* target,
                                            uint64_t members, bool quiet) {
  const uint64_t want = *target + members;
  ops.before(quiet);
  ops.add_all(counter);
  while (ops.load_acquire(counter) < want) {
  }
  *target = want;
}

}  // namespace vshmem::device
