// Multicast (NVLink SHARP) forms of the team barrier, broadcast and reductions, used when the
// runtime made a multicast region over the heap (VSHMEM_ENABLE_MULTICAST=1 and every PE's device
// reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: runtime/heap/multicast_region.hpp) for the
// team: the world's region for teams of every PE, the team's own for a smaller team that got one
// at its split. Which collective takes it: mc_select.h; the barriers' counting: mc_barrier.h.
// Otherwise every caller keeps its unicast algorithm.
//
//   multimem.st        one store reaches every PE's copy (broadcast, the results of reductions);
//   multimem.ld_reduce one load reads every PE's copy and combines them in the switch;
//   multimem.red       one reduction is applied to every PE's copy (the barrier's counter).
//
// A multicast address and the unicast address of the same memory are two proxies of it: a
// thread that touches the memory through both orders the accesses with fence.proxy.alias
// (DESIGN.md, virtual aliasing). Every function below that uses a multicast address fences
// before and after.
#pragma once

#include "vshmem/device/impl/mc_barrier.h"
#include "vshmem/device/impl/mc_select.h"
#include "vshmem/device/impl/memory.cuh"
#include "vshmem/device/impl/state.cuh"

#ifdef __CUDACC__

namespace vshmem::device {

// The world's multicast barrier words in the synchronization area (between SyncLayout's epoch and
// the flat barrier's flags; each on its own cache line). Teams have theirs in their slots
// (TeamSlotLayout, impl/mc_barrier.h).
struct McSyncLayout {
  static constexpr uint64_t kCounter = 2048;  // uint64_t: every PE adds 1 to every PE's copy
  static constexpr uint64_t kTarget = 2560;   // uint64_t: mc_barrier_count's target, this PE only
};
static_assert(McSyncLayout::kCounter > SyncLayout::kBarrierEpoch &&
                  McSyncLayout::kTarget + 8 <= SyncLayout::kBarrierFlags,
              "the multicast barrier's words must not overlap the other barriers'");
static_assert(SyncLayout::kBroadcastFlag != McSyncLayout::kCounter &&
                  SyncLayout::kBroadcastFlag != McSyncLayout::kTarget &&
                  SyncLayout::kBroadcastFlag > SyncLayout::kBarrierEpoch &&
                  SyncLayout::kBroadcastFlag + 8 <= SyncLayout::kBarrierFlags,
              "the broadcast flag must not overlap the barriers' words");

enum class McOp { kAdd, kMin, kMax, kAnd, kOr, kXor };

// Whether a collective over a team of team_size PEs takes the multicast path here.
__device__ __forceinline__ bool mc_on(int team_size) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const GpuState& s = vshmemi_device_state;
  return s.mc_base != 0 && team_size == s.n_pes;
#else
  (void)team_size;
  return false;
#endif
}

// The multicast address of H for the team in `slot` of team_size PEs (0: none here).
__device__ __forceinline__ uint64_t mc_team(int slot, int team_size) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const GpuState& s = vshmemi_device_state;
  const uint64_t own =
      s.teams != nullptr && slot > 0 && slot < s.team_slots ? s.teams[slot].mc_base : 0;
  return mc_team_base(s.mc_base, own, team_size, s.n_pes);
#else
  (void)slot;
  (void)team_size;
  return 0;
#endif
}

// The multicast address of the symmetric address p in the region at mc (default: the world's).
template <class T>
__device__ __forceinline__ T* mc_addr(T* p, uint64_t mc = vshmemi_device_state.mc_base) {
  const GpuState& s = vshmemi_device_state;
  return reinterpret_cast<T*>(mc + (reinterpret_cast<uint64_t>(p) - s.heap_base));
}

__device__ __forceinline__ void fence_proxy_alias() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.alias;" ::: "memory");
#endif
}

// Multimem<op, T>: whether multimem supports op on T, and the loads and reductions. The integer
// forms name the signedness where it matters (min, max); add is the same in two's complement.
template <McOp kOp, class T>
struct Multimem {
  static constexpr bool kSupported = false;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define VSHMEMI_MULTIMEM(OP, OPSTR, T, PTXT, REG)                                       \
  template <>                                                                           \
  struct Multimem<McOp::OP, T> {                                                        \
    static constexpr bool kSupported = true;                                            \
    __device__ __forceinline__ static T ld_reduce(const T* mc) {                        \
      T v;                                                                              \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." OPSTR "." PTXT " %0, [%1];" \
                   : "=" REG(v)                                                         \
                   : "l"(mc)                                                            \
                   : "memory");                                                         \
      return v;                                                                         \
    }                                                                                   \
    __device__ __forceinline__ static void red(T* mc, T v) {                            \
      asm volatile("multimem.red.relaxed.sys.global." OPSTR "." PTXT " [%0], %1;"       \
                   :                                                                    \
                   : "l"(mc), REG(v)                                                    \
                   : "memory");                                                         \
    }                                                                                   \
  };
#define VSHMEMI_MULTIMEM_INT(T32S, T32U, T64S, T64U) \
  VSHMEMI_MULTIMEM(kAdd, "add", T32S, "s32", "r")    \
  VSHMEMI_MULTIMEM(kAdd, "add", T32U, "u32", "r")    \
  VSHMEMI_MULTIMEM(kAdd, "add", T64S, "u64", "l")    \
  VSHMEMI_MULTIMEM(kAdd, "add", T64U, "u64", "l")    \
  VSHMEMI_MULTIMEM(kMin, "min", T32S, "s32", "r")    \
  VSHMEMI_MULTIMEM(kMin, "min", T32U, "u32", "r")    \
  VSHMEMI_MULTIMEM(kMin, "min", T64S, "s64", "l")    \
  VSHMEMI_MULTIMEM(kMin, "min", T64U, "u64", "l")    \
  VSHMEMI_MULTIMEM(kMax, "max", T32S, "s32", "r")    \
  VSHMEMI_MULTIMEM(kMax, "max", T32U, "u32", "r")    \
  VSHMEMI_MULTIMEM(kMax, "max", T64S, "s64", "l")    \
  VSHMEMI_MULTIMEM(kMax, "max", T64U, "u64", "l")    \
  VSHMEMI_MULTIMEM(kAnd, "and", T32S, "b32", "r")    \
  VSHMEMI_MULTIMEM(kAnd, "and", T32U, "b32", "r")    \
  VSHMEMI_MULTIMEM(kAnd, "and", T64S, "b64", "l")    \
  VSHMEMI_MULTIMEM(kAnd, "and", T64U, "b64", "l")    \
  VSHMEMI_MULTIMEM(kOr, "or", T32S, "b32", "r")      \
  VSHMEMI_MULTIMEM(kOr, "or", T32U, "b32", "r")      \
  VSHMEMI_MULTIMEM(kOr, "or", T64S, "b64", "l")      \
  VSHMEMI_MULTIMEM(kOr, "or", T64U, "b64", "l")      \
  VSHMEMI_MULTIMEM(kXor, "xor", T32S, "b32", "r")    \
  VSHMEMI_MULTIMEM(kXor, "xor", T32U, "b32", "r")    \
  VSHMEMI_MULTIMEM(kXor, "xor", T64S, "b64", "l")    \
  VSHMEMI_MULTIMEM(kXor, "xor", T64U, "b64", "l")
VSHMEMI_MULTIMEM_INT(int, unsigned int, long long, unsigned long long)
// long is 64 bits under nvcc on Linux, a type of its own for overloading.
VSHMEMI_MULTIMEM(kAdd, "add", long, "u64", "l")
VSHMEMI_MULTIMEM(kAdd, "add", unsigned long, "u64", "l")
VSHMEMI_MULTIMEM(kMin, "min", long, "s64", "l")
VSHMEMI_MULTIMEM(kMin, "min", unsigned long, "u64", "l")
VSHMEMI_MULTIMEM(kMax, "max", long, "s64", "l")
VSHMEMI_MULTIMEM(kMax, "max", unsigned long, "u64", "l")
VSHMEMI_MULTIMEM(kAnd, "and", long, "b64", "l")
VSHMEMI_MULTIMEM(kAnd, "and", unsigned long, "b64", "l")
VSHMEMI_MULTIMEM(kOr, "or", long, "b64", "l")
VSHMEMI_MULTIMEM(kOr, "or", unsigned long, "b64", "l")
VSHMEMI_MULTIMEM(kXor, "xor", long, "b64", "l")
VSHMEMI_MULTIMEM(kXor, "xor", unsigned long, "b64", "l")
VSHMEMI_MULTIMEM(kAdd, "add", float, "f32", "f")
VSHMEMI_MULTIMEM(kAdd, "add", double, "f64", "d")
#undef VSHMEMI_MULTIMEM_INT
#undef VSHMEMI_MULTIMEM

// Stores of 4 and 16 bytes to every PE's copy.
__device__ __forceinline__ void mc_store(uint32_t* mc, uint32_t v) {
  asm volatile("multimem.st.relaxed.sys.global.b32 [%0], %1;" ::"l"(mc), "r"(v) : "memory");
}
__device__ __forceinline__ void mc_store(float4* mc, float4 v) {
  asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc), "f"(v.x),
               "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}
template <class T>
__device__ __forceinline__ void mc_store_value(T* mc, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "multimem.st of 4 or 8 bytes");
  if constexpr (sizeof(T) == 4) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    asm volatile("multimem.st.relaxed.sys.global.b32 [%0], %1;" ::"l"(mc), "r"(bits) : "memory");
  } else {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    asm volatile("multimem.st.relaxed.sys.global.b64 [%0], %1;" ::"l"(mc), "l"(bits) : "memory");
  }
}
#endif  // __CUDA_ARCH__ >= 900

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// mc_barrier_count's operations on the device, through the region at mc, in the scope Sc that
// the barrier chose once (memory.cuh, in_scope).
template <class Sc>
struct McBarrierOps {
  uint64_t mc;
  __device__ __forceinline__ void before(bool quiet) {
    if (quiet) {
      fence_sys<Sc>();
    } else {
      fence_release<Sc>();
    }
    fence_proxy_alias();  // our unicast polls of the counter came before
  }
  __device__ __forceinline__ void add_all(uint64_t* counter) {
    asm volatile("multimem.red.release.sys.global.add.u64 [%0], %1;" ::"l"(mc_addr(counter, mc)),
                 "l"(1ull)
                 : "memory");
    fence_proxy_alias();  // before the unicast polls of the same counter
  }
  __device__ __forceinline__ uint64_t load_acquire(const uint64_t* counter) {
    return ld_acquire<Sc>(counter);
  }
};
#endif

// A multicast barrier of `members` PEs through the region at mc, by the group G, on this PE's
// counter and target words (McSyncLayout's for the world, TeamSlotLayout's for a team): the
// leader counts (mc_barrier_count), the group waits for it.
template <class G>
__device__ __forceinline__ void mc_barrier_on(uint64_t* counter, volatile uint64_t* target,
                                              uint64_t members, uint64_t mc, bool quiet) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  G::sync();  // every member's stores precede the release (fence cumulativity)
  if (G::rank() == 0) {
    in_scope([&](auto sc) {
      McBarrierOps<decltype(sc)> ops{mc};
      mc_barrier_count(ops, counter, target, members, quiet);
    });
  }
  G::sync();
#else
  (void)counter;
  (void)target;
  (void)members;
  (void)mc;
  (void)quiet;
#endif
}

// The barrier over every PE, by the group G, through the world's region.
template <class G>
__device__ __forceinline__ void mc_barrier(bool quiet) {
  const GpuState& s = vshmemi_device_state;
  mc_barrier_on<G>(reinterpret_cast<uint64_t*>(s.sync_base + McSyncLayout::kCounter),
                   reinterpret_cast<volatile uint64_t*>(s.sync_base + McSyncLayout::kTarget),
                   static_cast<uint64_t>(s.n_pes), s.mc_base, quiet);
}

// The barrier over the team in `slot` (team_size members), by the group G, through the team's
// region at mc (mc_team: the world's for a team of every PE, else the team's own), on the slot's
// words (TeamSlotLayout).
template <class G>
__device__ __forceinline__ void mc_team_barrier(int slot, int team_size, uint64_t mc, bool quiet) {
  const GpuState& s = vshmemi_device_state;
  const uint64_t words = s.team_sync_base + static_cast<uint64_t>(slot) * s.team_slot_bytes;
  mc_barrier_on<G>(reinterpret_cast<uint64_t*>(words + TeamSlotLayout::kMcCounter),
                   reinterpret_cast<volatile uint64_t*>(words + TeamSlotLayout::kMcTarget),
                   static_cast<uint64_t>(team_size), mc, quiet);
}

// Root's `bytes` at `source` into every PE's `dest` with multimem.st, by the group G; false (and
// nothing done) when the sizes or alignments do not suit multimem (4-byte words at least).
template <class G>
__device__ __forceinline__ bool mc_broadcast_store(void* dest, const void* source, size_t bytes,
                                                   uint64_t mc = vshmemi_device_state.mc_base) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint64_t d = reinterpret_cast<uint64_t>(dest), sa = reinterpret_cast<uint64_t>(source);
  if (((d | sa | bytes) & 3) != 0) return false;
  fence_proxy_alias();
  size_t done = 0;
  if (((d | sa) & 15) == 0) {
    const size_t vecs = bytes / 16;
    float4* to = mc_addr(static_cast<float4*>(dest), mc);
    const float4* from = static_cast<const float4*>(source);
    for (size_t i = G::rank(); i < vecs; i += G::size()) mc_store(to + i, from[i]);
    done = vecs * 16;
  }
  uint32_t* to = mc_addr(reinterpret_cast<uint32_t*>(static_cast<char*>(dest) + done), mc);
  const uint32_t* from = reinterpret_cast<const uint32_t*>(static_cast<const char*>(source) + done);
  for (size_t i = G::rank(); i < (bytes - done) / 4; i += G::size()) mc_store(to + i, from[i]);
  fence_proxy_alias();
  return true;
#else
  (void)dest;
  (void)source;
  (void)bytes;
  (void)mc;
  return false;
#endif
}

// The reduction of every PE's `source` into every PE's `dest`, by the group G of PE my_index of
// n: this PE reduces its share of the elements with multimem.ld_reduce and stores the results to
// every PE with multimem.st, so each element is combined once and every PE gets the same bits.
// dest may equal source (each element is read and written by its owner only), not overlap it
// otherwise. The caller synchronizes before and after.
template <class G, McOp kOp, class T>
__device__ __forceinline__ void mc_reduce_share(T* dest, const T* source, size_t nreduce,
                                                int my_index, int n,
                                                uint64_t mc = vshmemi_device_state.mc_base) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const size_t per = (nreduce + n - 1) / n;
  const size_t begin = per * static_cast<size_t>(my_index);
  const size_t end = begin + per < nreduce ? begin + per : nreduce;
  fence_proxy_alias();
  for (size_t i = begin + G::rank(); i < end; i += G::size()) {
    const T v = Multimem<kOp, T>::ld_reduce(mc_addr(source + i, mc));
    mc_store_value(mc_addr(dest + i, mc), v);
  }
  fence_proxy_alias();
#else
  (void)dest;
  (void)source;
  (void)nreduce;
  (void)my_index;
  (void)n;
  (void)mc;
#endif
}

// Reduce-scatter of every member's `source` (n blocks of nelems, block j for team member j) into
// this PE's `dest` (nelems), by the group G of member my_index: one multimem.ld_reduce per element
// of our block (it reads that element of every member's source in the switch), stored locally.
// reducescatter_group (impl/coll.cuh) calls it when mc_reducescatter_ok; the caller synchronizes
// before (sources ready) and after (sources free again). dest must not overlap any source.
template <class G, McOp kOp, class T>
__device__ __forceinline__ void mc_reduce_scatter(T* dest, const T* source, size_t nelems,
                                                  int my_index,
                                                  uint64_t mc = vshmemi_device_state.mc_base) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const T* block = source + nelems * static_cast<size_t>(my_index);
  fence_proxy_alias();  // the unicast writes of the sources (ordered by the sync) come first
  for (size_t i = G::rank(); i < nelems; i += G::size()) {
    dest[i] = Multimem<kOp, T>::ld_reduce(mc_addr(block + i, mc));
  }
  fence_proxy_alias();  // before any later unicast access to the sources
#else
  (void)dest;
  (void)source;
  (void)nelems;
  (void)my_index;
  (void)mc;
#endif
}

}  // namespace vshmem::device

#endif  // __CUDACC__
