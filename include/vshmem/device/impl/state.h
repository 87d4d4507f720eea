// The device state as one plain struct (no CUDA types): libvshmem includes it to build the state,
// device code (impl/state.cuh) to read it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vshmem/device/impl/proxy_mailbox.h"
#include "vshmem/device/impl/proxy_ring.h"
#include "vshmem/shmem_types.h"

namespace vshmem::device {

// Peer p's copy of the symmetric address a is at a + delta[p]: delta[p] is the window slot's
// offset W + slot(p) * S - H for a mapped peer, 0 for our own PE (its memory at H itself, never a
// window alias), kUnmappedDelta for a PE device code cannot reach. One add, no branch on the PE
// (a chain of device fetch-and-adds measures what the translation costs: bench/amo_path.cu).
// The first kInlinePeers deltas are kept in constant memory: a uniform PE then costs one
// constant-cache read instead of a global load.
constexpr int kInlinePeers = 64;
constexpr int64_t kUnmappedDelta = INT64_MIN;
// Every mapped delta is a multiple of this (H, W and S are multiples of the allocation
// granularity; libvshmem refuses a state where one is not): a peer's copy of a symmetric address
// has the address's own low 9 bits, so that a group copy can take its alignment from the
// untranslated address and need not wait for the delta's load (impl/memory.cuh, copy_bytes_at).
constexpr uint64_t kDeltaAlign = 512;

// A team as device code reads it (one per team slot; size 0: this PE holds no team there).
struct GpuTeam {
  int size;
  int my_index;
  const int32_t* members;  // symmetric heap: world PE of each member, in team order
  uint64_t mc_base;        // the team's own multicast address of H (0: none; mc_select.h)
};

// The one host-to-device state (NVSHMEM keeps a device state the same way): libvshmem builds
// every field (runtime/api/device_state.cpp) and hands the struct to libvshmem_device, which
// copies it into its __constant__ symbol as it is (device/state.cu). Device code reads it in every
// call; a field that kernels do not read is marked "host".
//
// Versioned: a change of layout, or of what libvshmem and libvshmem_device expect of each other
// (vshmem/device_hooks.h), bumps kGpuStateVersion (and the size below when it changes), and
// libvshmem refuses (at shmem_init, naming both) a device library built for another version or
// size. 5: libvshmem makes the proxy ring's memory itself (the library no longer has the hook).
// 6: the inbound atomic mailbox (impl/proxy_mailbox.h), served by waiting kernels.
constexpr uint32_t kGpuStateVersion = 6;

struct GpuState {
  uint32_t version;         // kGpuStateVersion of the libvshmem that built it
  uint32_t bytes;           // sizeof(GpuState) there
  uint64_t heap_base;       // H
  uint64_t heap_size;       // S (also the slot size of the window)
  uint64_t heap_committed;  // bytes of H backed by memory
  uint64_t window_base;     // W
  uint64_t sync_base;       // H + sync_offset: the device synchronization area (SyncLayout)
  uint64_t sync_bytes;
  const int64_t* peer_delta;  // n_pes entries (see kUnmappedDelta), in the symmetric heap
  // The host's predefined team handles, as lvalues for SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED in
  // device code (impl/sync.cuh): team slots 0 and 1.
  shmem_team_t world_handle;
  shmem_team_t shared_handle;
  int my_pe;
  int n_pes;
  int initialized;   // 0 before shmem_init / after shmem_finalize / heap not in GPU memory
  int debug_checks;  // VSHMEM_DEBUG_DEVICE=1
  int gpu_scope;     // every PE's heap is on this GPU: memory operations at .gpu scope (memory.cuh)
  int team_slots;    // entries of `teams` (0: teams unknown: only the world works)
  // team_slots entries, in the symmetric heap; slot s's members at teams[s].members.
  const GpuTeam* teams;
  uint64_t team_handle_base;  // slot s's handle: team_handle_base + s * team_handle_stride
  uint64_t team_handle_stride;
  // Team slot s owns team_slot_bytes at team_sync_base + s * team_slot_bytes, inside the
  // synchronization area: its counters and scratch (TeamSlotLayout, impl/mc_barrier.h).
  uint64_t team_sync_base;
  uint64_t team_slot_bytes;
  int64_t inline_delta[kInlinePeers];  // peer_delta[0 .. kInlinePeers)
  // The multicast address of H; 0 when multicast is off. Teams spanning every PE use it
  // (impl/multimem.cuh).
  uint64_t mc_base;
  // The request ring to this PE's proxy thread (impl/proxy.cuh); slots == nullptr when every
  // peer is mapped (no proxy).
  proxy::RingView proxy;
  // Target-side atomics that remote PEs asked for, waiting to be performed on this GPU: any
  // kernel of this process in a vshmem wait performs them (impl/proxy_mailbox.h); box == nullptr
  // when there is no mailbox (no peer behind the proxy).
  proxy::MailboxView inbound;
  // host: the CUDA ordinal (this process's numbering) of the GPU holding the heap, -1 when the
  // heap is host memory; the state is written to that GPU's copy of the symbol.
  int cuda_device;
  // host: node-local PEs, this one included, whose heap is on the same GPU.
  int pes_sharing_device;
  int mps;  // host: an MPS server serves cuda_device (CU_DEVICE_ATTRIBUTE_MPS_ENABLED)
  int reserved;
};
static_assert(sizeof(GpuState) == 736,
              "the device state's layout changed: bump kGpuStateVersion and this size");

// Layout of the zeroed symmetric synchronization area (GpuState::sync_base): these offsets within
// its first MiB; the team barriers' counters follow it (GpuState::team_sync_base).
struct SyncLayout {
  // uint64_t[kMaxRounds]: dissemination barrier round counters; peers add to ours.
  static constexpr uint64_t kBarrierCounters = 0;
  static constexpr int kMaxRounds = 64;
  // uint64_t: the central barrier's count (sync.cuh, central): PE 0's copy only is used; every PE
  // adds 1 to it per central barrier and polls it. Own cache line (after the 64 round counters).
  static constexpr uint64_t kCentralCount = 512;
  // uint64_t: the count the last central barrier waited for; only this PE touches it.
  static constexpr uint64_t kCentralTarget = 768;
  // uint64_t: how many barriers this PE has entered; only this PE touches it. Own cache line.
  static constexpr uint64_t kBarrierEpoch = 1024;
  // uint64_t: the counting barrier's arrivals (sync.cuh, counting); peers add 1 to ours.
  static constexpr uint64_t kArrivals = 1536;
  // uint64_t: the barrier epoch of the last world broadcast whose data has arrived here; written
  // by that broadcast's root (coll.cuh, broadcast_push). Own cache line.
  static constexpr uint64_t kBroadcastFlag = 3072;
  // uint64_t: the arrivals the last counting barrier waited for; only this PE touches it.
  static constexpr uint64_t kArrivalTarget = 3584;
  // uint64_t[n_pes]: flat-barrier flags; flags[q] is written by PE q only (sync.cuh).
  static constexpr uint64_t kBarrierFlags = 4096;
  static constexpr int kFlatMaxPes = 4096;
  // Reduction scratch: results of an in-place reduction wait here until every PE has read.
  static constexpr uint64_t kScratch = 64 * 1024;
  static constexpr uint64_t kScratchBytes = 512 * 1024;
  static constexpr uint64_t kBytesNeeded = kScratch + kScratchBytes;
};

}  // namespace vshmem::device
