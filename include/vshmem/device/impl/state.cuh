// The device-visible state and the primitives every device call is built on: PE and address
// validation, translation to a peer's copy, and the thread/warp/block cooperation groups.
//
// The state is one struct (vshmem/device/impl/state.h), built whole by libvshmem at shmem_init,
// after every heap growth and team change, and at shmem_finalize (runtime/api/device_state.cpp);
// libvshmem_device only holds it in __constant__ memory (device/state.cu).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vshmem/device/impl/state.h"

#ifdef __CUDACC__

// Defined in libvshmem_device (device/state.cu); needs separable compilation (-rdc).
extern __constant__ vshmem::device::GpuState vshmemi_device_state;

// Cold paths, defined in libvshmem_device (device/state.cu): print
// "vshmem: PE n: <call> (block x,y,z thread x,y,z): <cause>" and trap. Declared noreturn so that
// a check costs a branch that is not taken and leads out of the hot path, with no reconvergence
// point after it. vshmemi_device_fail_peer names the cause: pe is not a valid PE, or its memory is
// not mapped here.
#include "vshmem/device/impl/proxy.cuh"

extern "C" {
__device__ __attribute__((noreturn)) void vshmemi_device_fail_peer(const char* call, int pe);
__device__ __attribute__((noreturn)) void vshmemi_device_fail_address(const char* call,
                                                                      const void* addr,
                                                                      size_t bytes);
__device__ __attribute__((noreturn)) void vshmemi_device_fail(const char* call, const char* cause);
}

// PE numbers and unmapped peers are always checked: both come out of the one delta lookup (an
// invalid PE reads kUnmappedDelta), so an invalid PE never becomes a silent write through a wrong
// slot and the check costs nothing a loop over one PE does not hoist.
//
// Address checks (inside the committed symmetric heap, aligned for atomics) are chosen when the
// calling code is compiled:
//   VSHMEM_DEVICE_DEBUG=2  when the job runs with VSHMEM_DEBUG_DEVICE=1 (the default with NDEBUG,
//                          i.e. release builds);
//   VSHMEM_DEVICE_DEBUG=1  always (the default without NDEBUG);
//   VSHMEM_DEVICE_DEBUG=0  never, as in NVSHMEM: for latency-bound code. The run-time switch costs
//                          a taken branch per call even when it is off, about 0.02 us per call in
//                          a chain of dependent fetch-and-adds on an H200 (bench/RESULTS.md, run
//                          10); the benchmarks build with 0.
#ifndef VSHMEM_DEVICE_DEBUG
#ifdef NDEBUG
#define VSHMEM_DEVICE_DEBUG 2
#else
#define VSHMEM_DEVICE_DEBUG 1
#endif
#endif

namespace vshmem::device {

__device__ __forceinline__ const GpuState& state() { return vshmemi_device_state; }

__device__ __forceinline__ bool debug_on() {
#if VSHMEM_DEVICE_DEBUG == 2
  return vshmemi_device_state.debug_checks != 0;
#else
  return VSHMEM_DEVICE_DEBUG != 0;
#endif
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

// The global table's entry u when `far`, else kUnmappedDelta: one predicated read-only load, no
// branch (a branch around a load in a loop costs more than the load: bench/amo_path.cu) and no
// load at all for other PEs (a fence with acquire semantics empties L1, after which every global
// load goes to L2: a put + quiet loop would pay that). The compiler keeps it inside loops (it
// hoists no inline asm), and a check that reads its result waits for it even when it is
// predicated off: 0.016 us per call in a chain of dependent fetch-and-adds (bench/RESULTS.md, run
// 10). A load the compiler can hoist out of every loop would remove that.
__device__ __forceinline__ int64_t far_delta(const int64_t* table, unsigned u, bool far) {
  int64_t d;
  asm("{\n\t.reg .pred f;\n\tsetp.ne.u32 f, %2, 0;\n\tmov.b64 %0, %3;\n\t"
      "@f ld.global.nc.b64 %0, [%1];\n\t}"
      : "=l"(d)
      : "l"(static_cast<uint64_t>(__cvta_generic_to_global(table + u))), "r"(far ? 1u : 0u),
        "l"(kUnmappedDelta));
  return d;
}

// pe's delta, or kUnmappedDelta for an unmapped peer and for an invalid PE, without a branch: the
// constant-memory entry (pe & (kInlinePeers - 1)) and, for a valid pe >= kInlinePeers, the global
// table's are read and the answer selected.
__device__ __forceinline__ int64_t peer_delta(int pe) {
  const GpuState& s = vshmemi_device_state;
  static_assert((kInlinePeers & (kInlinePeers - 1)) == 0, "kInlinePeers: a power of two");
  const unsigned u = static_cast<unsigned>(pe);
  const int64_t inline_d = s.inline_delta[u & (kInlinePeers - 1)];
  const bool far = u >= static_cast<unsigned>(kInlinePeers) && u < static_cast<unsigned>(s.n_pes);
  const int64_t far_d = far_delta(s.peer_delta, u, far);
  return u < static_cast<unsigned>(kInlinePeers) ? inline_d : far_d;
}

// A device call to a PE reached through the proxy (impl/proxy.cuh): the branch on
// d == kUnmappedDelta that the mapped path already takes to reject bad PEs.
__device__ __forceinline__ bool unmapped(int64_t d) { return d == kUnmappedDelta; }
template <class T>
__device__ __forceinline__ T* at_delta(T* addr, int64_t d) {
  return reinterpret_cast<T*>(reinterpret_cast<uint64_t>(addr) + static_cast<uint64_t>(d));
}

// Where this thread reaches pe's copy of the symmetric object at `addr` (bytes long): the
// address itself for our own PE (never our window alias: DESIGN.md, virtual aliasing), else the
// peer's window slot. Fails (trap) for an invalid PE, an unmapped peer, or, with address checks
// on, an address outside the heap. The delta is read first: its loads do not depend on addr.
template <class T>
__device__ __forceinline__ T* peer_ptr(const char* call, T* addr, size_t bytes, int pe) {
  const int64_t d = peer_delta(pe);
  check_symmetric(call, addr, bytes);
  if (d == kUnmappedDelta) vshmemi_device_fail_peer(call, pe);
  return reinterpret_cast<T*>(reinterpret_cast<uint64_t>(addr) + static_cast<uint64_t>(d));
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
