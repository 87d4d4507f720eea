// Teams, contexts and the synchronization machinery the collectives share.
//
// Team resources. Heap allocation is collective over the whole job, but teams are made
// collectively over their parent only, so api_init (called from shmem_init) reserves a fixed
// pool of symmetric memory once: for each of kTeamSlots slots, one 64-bit signal counter per
// world PE plus kSlotWords words of scratch. A team occupies one slot on each of its members; the
// members agree on a slot free on all of them when the team is split off its parent (an OR of the
// members' used-slot bitmaps, computed over the parent). Slot 0 is SHMEM_TEAM_WORLD, slot 1
// SHMEM_TEAM_SHARED, slot 2 the deprecated active-set collectives, slot 3 SHMEMX_TEAM_NODE.
//
// Signals between two PEs are counted per (slot, sender): PE x signals PE p by adding 1 to
// p's counter[slot][x], and p consumes x's k-th signal by waiting for the counter to reach k.
// Every algorithm consumes every signal it sends within the same call, and two PEs run the
// collectives they share in the same order (else no implementation could complete them), so the
// counts agree without ever being reset - also across teams that reuse a slot.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "shmem.h"

namespace vshmem::detail {

constexpr int kTeamSlots = 128;
constexpr int kWorldSlot = 0;
constexpr int kSharedSlot = 1;
constexpr int kActiveSetSlot = 2;
constexpr int kNodeSlot = 3;  // SHMEMX_TEAM_NODE: the PEs of this PE's node
constexpr int kLastPredefinedSlot = kNodeSlot;
static_assert(kNodeSlot == 3, "device/impl/sync.cuh names SHMEMX_TEAM_NODE as slot 3");
constexpr int kSlotWords = 4;  // 2: used-slot bitmap; 2: the split's arguments
constexpr uint32_t kTeamMagic = 0x7465616d;

// Collective. Reserves the team pool and sets up the predefined teams. Called by shmem_init after
// the heap exists, identically on every PE.
Status api_init(Runtime& rt);
// Forgets every team and context (called by shmem_finalize before the heap goes).
void api_finalize(Runtime& rt);

// Bytes of the device team barriers' counters for n_pes PEs (after the device sync area's first
// kDeviceSyncBytes).
constexpr size_t kTeamScratchBytes = 4096;  // per slot, for device in-place reductions
size_t team_slot_bytes(int n_pes);
size_t team_sync_bytes(int n_pes);
// The teams as device code sees them: teams[s] for every one of the kTeamSlots slots (size 0
// where this PE holds no team), slot s's members written at members + s * n_pes and named at the
// address members_device + s * n_pes (where the device state's tables put them), and the handle
// of slot s: handle_base + s * handle_stride.
void describe_teams(int n_pes, device::GpuTeam* teams, int32_t* members, uintptr_t members_device,
                    uint64_t* handle_base, uint64_t* handle_stride);

// A group of PEs that runs collectives together: a team, or a deprecated active set.
struct Group {
  int slot = -1;
  int my_index = -1;
  std::vector<int> members;  // world PE of each member, in team order
  int size() const { return static_cast<int>(members.size()); }
};

}  // namespace vshmem::detail

struct vshmem_team_s {
  uint32_t magic = 0;  // kTeamMagic while the team is live on this PE
  vshmem::detail::Group group;
  // The team's multicast region (a team smaller than the world, VSHMEM_ENABLE_MULTICAST=1, every
  // member able): made at the split (SHMEM_TEAM_SHARED: at shmem_init), dropped at destroy.
  // Teams of every PE use the world's.
  std::unique_ptr<vshmem::MulticastRegion> mc_region;
  std::vector<int> index_of_world;  // team number of each world PE, -1 for non-members
  shmem_team_config_t config{};
  long config_mask = 0;
};

struct vshmem_ctx_s {
  uint32_t magic;
  vshmem_team_s* team;
  long options;
  pthread_t owner;  // the creating thread (SHMEM_CTX_PRIVATE)
};

namespace vshmem::detail {

// Team objects, indexed by slot (a PE is a member of at most one team per slot).
extern vshmem_team_s g_team_table[kTeamSlots];

// The team behind a handle, or null for SHMEM_TEAM_INVALID and anything that is not a live team
// of this PE.
vshmem_team_s* team_lookup(shmem_team_t team);
// As team_lookup; a fatal error naming the call for an invalid handle.
vshmem_team_s& team_for(shmem_team_t team, const char* call);

// Collective over every PE, at each heap growth: binds this PE's new chunk in each of its teams'
// multicast regions, in slot order (each with its members); a team whose binding failed on any
// member loses its region on every member.
void bind_team_regions(Runtime& rt, size_t offset,
                       const std::shared_ptr<PhysicalAllocation>& chunk);

// The team's own multicast region (not the world's): made at its split (or at shmem_init for
// SHMEM_TEAM_SHARED smaller than the world; SHMEMX_TEAM_NODE shares the shared team's when both
// have the same members); null when it has none.
vshmem::MulticastRegion* own_region(const vshmem_team_s& t);

// Destroys (quiets and releases) every context created from team.
void destroy_team_contexts(vshmem_team_s* team);

// PE pe's wake word on the node's host sync pages (empty without them), what the barrier's and
// the collectives' waits sleep on. When every PE's waits spin (every_pe_spins) its sleepers pay
// the writers' barrier (copy_writers: a membarrier once a long wait), so that the writers may
// store their signal and wake without a fence (group_post, sync_all).
WakeWord node_wake_word(const HostSyncArea* node, int pe);

// --- synchronization over a group (the pool's pairwise counters) ---
// Adds one to `to`'s counter for us in the group's slot; the data written before it is visible
// to `to` when it sees the signal.
void group_signal(Runtime& rt, const Group& g, int to_world, const char* call);
// group_signal in two halves, for a PE that signals several members at once: post every signal
// first (group_post: the counter only), then wake the members that sleep (group_wake, once for
// all of them). A wake is a system call that can hand our core to the woken PE; made between two
// posts, it would keep the next member waiting for the data that is already written for it.
void group_post(Runtime& rt, const Group& g, int to_world, const char* call);
void group_wake(Runtime& rt, const int* to_world, int count);
// group_post to each of `to_world`, then one group_wake for all of them.
void group_post_all(Runtime& rt, const Group& g, const std::vector<int>& to_world,
                    const char* call);
// Consumes the next signal from `from_world`.
void group_wait(Runtime& rt, const Group& g, int from_world, const char* call);
// Waits until the next signal of at least one member in `from_world` has arrived, consumes the
// next signal of every member whose signal has, moves those members to the end of the list and
// returns how many they are (at least 1; 0 for an empty list).
int group_take_ready(Runtime& rt, const Group& g, std::vector<int>& from_world, const char* call);
// Dissemination barrier over the group's members: ceil(log2 n) rounds.
void group_barrier(Runtime& rt, const Group& g, const char* call);
// The symmetric scratch words of the group's slot (this PE's copy; the same address on all).
uint64_t* group_words(const Group& g);

// Mailboxes for small collectives in which every member writes to every other at once (one
// dependent wait per call instead of one per round: what counts when PEs outnumber the cores).
// Only the predefined slots have them, and only in jobs of at most kFlatMaxPes PEs: for each
// slot, [2][n_pes] cells of kFlatCellBytes, cell [parity][x] written by world PE x alone. The
// parity alternates per pair of PEs (flat_parity): x writes p's cell for their k-th flat call
// together only after their (k-1)-th is complete on x, which needed p's own write of it, which p
// makes after it has read the cell of their (k-2)-th. Both count the same calls, so they agree.
constexpr int kFlatSlots = kLastPredefinedSlot + 1;
constexpr int kFlatMaxPes = 16;
constexpr size_t kFlatCellBytes = 1024;
// This PE's copy of cell [parity][writer] of the slot (the same address on every PE), or null
// where there are no mailboxes (another slot, a larger job).
unsigned char* flat_cell(const Group& g, int parity, int writer_world);
// The parity of this PE's next flat call with `peer` on the group's slot; advance_flat_parity
// counts that call (after it, on every member of it).
int flat_parity(const Group& g, int peer_world);
void advance_flat_parity(const Group& g, int peer_world);

// Local copies between any two addresses (provider copy on device memory).
void local_copy(Runtime& rt, void* dst, const void* src, size_t bytes, const char* call);

// The element-wise combination of a reduction: acc[i] = acc[i] OP other[i].
using CombineFn = void (*)(void* acc, const void* other, size_t count);

// Collectives over a group; bytes and counts are validated by the caller.
void group_broadcast(Runtime& rt, const Group& g, void* dest, const void* source, size_t bytes,
                     int root, bool root_gets_dest, const char* call);
void group_reduce(Runtime& rt, const Group& g, void* dest, const void* source, size_t count,
                  size_t elem, CombineFn combine, const char* call);

}  // namespace vshmem::detail
