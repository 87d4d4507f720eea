// The device-visible state and the primitives every device call is built on: PE and address
// validation, translation to a peer's copy, and the thread/warp/block cooperation groups.
//
// The state is one struct in __constant__ memory, defined once in libvshmem_device and filled by
// the host runtime's state listener (device/state.cu) at shmem_init, after every heap growth and
// at shmem_finalize. Its layout is private to the device library: the host contract is
// device/state.h (vshmem::DeviceState), which the listener converts.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vshmem/shmem_types.h"

namespace vshmem::device {

// The first kInlinePeerSlots window slots are kept in constant memory: a uniform PE then costs
// one constant-cache read instead of a global load.
constexpr int kInlinePeerSlots = 64;

// A team in device memory (one per team slot; size 0: this PE holds no team there).
struct GpuTeam {
  int size;
  int my_index;
  const int32_t* members;  // device memory: world PE of each member, in team order
};

struct GpuState {
  uint64_t heap_base;       // H
  uint64_t heap_size;       // S (also the slot size of the window)
  uint64_t heap_committed;  // bytes of H backed by memory
  uint64_t window_base;     // W
  uint64_t sync_base;       // H + sync_offset: the device synchronization area (SyncLayout)
  uint64_t sync_bytes;
  const int32_t* peer_slot;  // device memory, n_pes entries; -1: not mapped (and for my_pe)
  // The host's predefined team handles, as lvalues for SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED in
  // device code (impl/sync.cuh); null while unknown (then the world is the only team).
  shmem_team_t world_handle;
  shmem_team_t shared_handle;
  int my_pe;
  int n_pes;
  int initialized;   // 0 before shmem_init / after shmem_finalize / heap not in GPU memory
  int debug_checks;  // VSHMEM_DEBUG_DEVICE=1
  int gpu_scope;     // every PE's heap is on this GPU: memory operations at .gpu scope (memory.cuh)
  int team_slots;    // entries of `teams` (0: teams unknown: only the world works)
  const GpuTeam* teams;       // device memory
  uint64_t team_handle_base;  // slot s's handle: team_handle_base + s * team_handle_stride
  uint64_t team_handle_stride;
  uint64_t team_sync_base;  // team slots' counters and scratch (device/state.h)
  uint64_t team_slot_bytes;
  int32_t inline_slot[kInlinePeerSlots];
};

// Layout of the zeroed symmetric synchronization area (DeviceState::sync_offset): these offsets
// within its first MiB; the team barriers' counters follow it (DeviceState::team_sync_offset).
struct SyncLayout {
  // uint64_t[kMaxRounds]: dissemination barrier round counters; peers add to ours.
  static constexpr uint64_t kBarrierCounters = 0;
  static constexpr int kMaxRounds = 64;
  // uint64_t: how many barriers this PE has entered; only this PE touches it. Own cache line.
  static constexpr uint64_t kBarrierEpoch = 1024;
  // uint64_t[n_pes]: flat-barrier flags; flags[q] is written by PE q only (sync.cuh).
  static constexpr uint64_t kBarrierFlags = 4096;
  static constexpr int kFlatMaxPes = 4096;
  // Reduction scratch: results of an in-place reduction wait here until every PE has read.
  static constexpr uint64_t kScratch = 64 * 1024;
  static constexpr uint64_t kScratchBytes = 512 * 1024;
  static constexpr uint64_t kBytesNeeded = kScratch + kScratchBytes;
};

}  // namespace vshmem::device

#ifdef __CUDACC__

// Defined in libvshmem_device (device/state.cu); needs separable compilation (-rdc).
extern __constant__ vshmem::device::GpuState vshmemi_device_state;

// Cold paths, defined in libvshmem_device (device/device_errors.cu): print
// "vshmem: PE n: <call> (block x,y,z thread x,y,z): <cause>" and trap.
extern "C" {
__device__ void vshmemi_device_fail_pe(const char* call, int pe);
__device__ void vshmemi_device_fail_unmapped(const char* call, int pe);
__device__ void vshmemi_device_fail_address(const char* call, const void* addr, size_t bytes);
__device__ void vshmemi_device_fail(const char* call, const char* cause);
}

// Checks of addresses (and the VSHMEM_DEBUG_DEVICE switch) are compiled in unless NDEBUG is
// defined; PE numbers and unmapped peers are always checked (one compare against constant
// memory, so that an invalid PE never becomes a silent write through a wrong slot).
#ifndef VSHMEM_DEVICE_DEBUG
#ifdef NDEBUG
#define VSHMEM_DEVICE_DEBUG 0
#else
#define VSHMEM_DEVICE_DEBUG 1
#endif
#endif

namespace vshmem::device {

__device__ __forceinline__ const GpuState& state() { return vshmemi_device_state; }

__device__ __forceinline__ bool debug_on() {
  // A debug build checks always; a release build when the runtime was told to.
  return VSHMEM_DEVICE_DEBUG || vshmemi_device_state.debug_checks != 0;
}

__device__ __forceinline__ void check_pe(const char* call, int pe) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(vshmemi_device_state.n_pes)) {
    vshmemi_device_fail_pe(call, pe);
  }
}

// With checks on: [addr, addr + bytes) must lie in the committed part of the symmetric heap.
__device__ __forceinline__ void check_symmetric(const char* call, const void* addr, size_t bytes) {
  if (!debug_on()) return;
  const GpuState& s = vshmemi_device_state;
  uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (a < s.heap_base || a - s.heap_base > s.heap_committed ||
      bytes > s.heap_committed - (a - s.heap_base)) {
    vshmemi_device_fail_address(call, addr, bytes);
  }
}

__device__ __forceinline__ int peer_slot(int pe) {
  const GpuState& s = vshmemi_device_state;
  return pe < kInlinePeerSlots ? s.inline_slot[pe] : s.peer_slot[pe];
}

// Where this thread reaches pe's copy of the symmetric object at `addr` (bytes long): the
// address itself for our own PE (never our window alias: DESIGN.md, virtual aliasing), else the
// peer's window slot. Fails (trap) for an invalid PE, an unmapped peer, or, with checks on, an
// address outside the heap.
template <class T>
__device__ __forceinline__ T* peer_ptr(const char* call, T* addr, size_t bytes, int pe) {
  const GpuState& s = vshmemi_device_state;
  check_pe(call, pe);
  check_symmetric(call, addr, bytes);
  if (pe == s.my_pe) return addr;
  int slot = peer_slot(pe);
  if (slot < 0) vshmemi_device_fail_unmapped(call, pe);
  uint64_t a = reinterpret_cast<uint64_t>(addr);
  return reinterpret_cast<T*>(s.window_base + static_cast<uint64_t>(slot) * s.heap_size +
                              (a - s.heap_base));
}

// The team slot a handle names, or -1 when it names none of the slots the state describes.
// Host code of the device library uses it on its copy of the state too (device/on_stream.cu).
__host__ __device__ __forceinline__ int team_slot(const GpuState& s, shmem_team_t team) {
  const uintptr_t t = reinterpret_cast<uintptr_t>(team);
  if (t == 0 || s.team_slots == 0 || s.team_handle_stride == 0 || t < s.team_handle_base) {
    return -1;
  }
  const uint64_t off = t - s.team_handle_base;
  const uint64_t slot = off / s.team_handle_stride;
  if (off % s.team_handle_stride != 0 || slot >= static_cast<uint64_t>(s.team_slots)) return -1;
  return static_cast<int>(slot);
}

// Cooperation groups. A _warp call is made by all 32 lanes of a warp with the same arguments; a
// _block call by every thread of the block. Each group form begins and ends with a group
// synchronization, so it behaves as one call made by the group.
struct ThreadGroup {
  static __device__ __forceinline__ unsigned rank() { return 0; }
  static __device__ __forceinline__ unsigned size() { return 1; }
  static __device__ __forceinline__ void sync() {}
};

struct WarpGroup {
  static __device__ __forceinline__ unsigned rank() {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
  }
  static __device__ __forceinline__ unsigned size() { return 32; }
  static __device__ __forceinline__ void sync() { __syncwarp(); }
};

struct BlockGroup {
  static __device__ __forceinline__ unsigned rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  static __device__ __forceinline__ unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
  static __device__ __forceinline__ void sync() { __syncthreads(); }
};

}  // namespace vshmem::device

#endif  // __CUDACC__
