// The device state: one trivially copyable struct, filled by the host runtime at shmem_init (and
// after every heap growth), read by the inline device functions from __constant__ memory.
// Plain C++: no CUDA types, so host code includes it too.
#pragma once

#include <stdint.h>

namespace vshmem {

constexpr int kDeviceStateVersion = 3;

// A team as device code needs it: one per team slot. size == 0 for slots in which this PE holds
// no team. Team handles are addresses in the host's team table (DeviceState::team_handle_*).
struct DeviceTeam {
  int size;
  int my_index;            // this PE's number in the team
  const int32_t* members;  // host memory: the world PE of each member, in team order
  // The multicast address of H for this team's members (a region made at the team's split,
  // runtime/heap/multicast_region.hpp), 0 when it has none. Teams of every PE use mc_base below.
  uint64_t mc_base;
};

struct DeviceState {
  int version;      // kDeviceStateVersion
  int initialized;  // 0 before shmem_init and after shmem_finalize
  int my_pe;
  int n_pes;
  uint64_t heap_base;       // H: symmetric addresses live in [heap_base, heap_base + heap_size)
  uint64_t heap_size;       // S: the VA budget of one PE's heap (also the window slot size)
  uint64_t heap_committed;  // bytes of H backed by physical memory (grows)
  uint64_t window_base;     // W: peer p's copy of H + x is at W + peer_slot[p] * S + x
  // Device-readable array of n_pes entries: the window slot of each PE, or -1 when the PE is not
  // mapped (reached through the staged transport). peer_slot[my_pe] is -1: our own memory is
  // addressed at H directly, never through a window alias (DESIGN.md, virtual aliasing).
  const int32_t* peer_slot;
  // Runtime-internal symmetric objects (offsets from heap_base), for device barriers/collectives.
  uint64_t sync_offset;  // start of the internal synchronization area
  uint64_t sync_bytes;
  int debug_checks;  // VSHMEM_DEBUG_DEVICE=1: validate PEs and addresses, trap on error
  // The CUDA ordinal (in this process's numbering) of the GPU whose memory backs this PE's heap,
  // or -1 when the heap is host memory: the device library makes it current rather than guess.
  int cuda_device;
  // Node-local PEs, this one included, whose heap is on the same GPU (from the transport
  // plan's locality exchange); meaningful when cuda_device >= 0.
  int pes_sharing_device;
  // Teams: slot s's team handle is team_handle_base + s * team_handle_stride (slot 0 is
  // SHMEM_TEAM_WORLD); teams[s] describes it (host memory, team_slots entries, null before the
  // teams exist). Team slot s owns team_slot_bytes at heap_base + team_sync_offset + s *
  // team_slot_bytes: the multicast barrier's counter and target, n_pes counters of team barriers
  // sent to each world PE (written by this PE only), n_pes counters received from each (written
  // by that PE), then scratch for the team's in-place reductions (the rest of the slot); the
  // offsets are TeamSlotLayout's (include/vshmem/device/impl/mc_barrier.h).
  const DeviceTeam* teams;
  uint64_t team_handle_base;
  uint64_t team_handle_stride;
  uint64_t team_sync_offset;
  uint64_t team_slot_bytes;
  int team_slots;
  int reserved;
  // The multicast address of H (runtime/heap/multicast_region.hpp): a store to mc_base + x
  // reaches every PE's H + x. 0 when multicast is off (the default). The region spans every PE.
  uint64_t mc_base;
  int reserved_tail[2];
};

}  // namespace vshmem
