// Device collectives on any team (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and split teams):
// broadcast, fcollect, alltoall, reductions and reduce-scatter, with thread, _warp and _block
// forms. Every PE
// of the team calls the same collective with the same arguments (from one thread, warp or block
// per PE, as for barriers); PE numbers (PE_root, blocks of fcollect/alltoall, the reduction
// order) are team numbers.
//
// Algorithms (peers are reached by loads/stores through the window, so the simple direct ones
// are also the fast ones on one node): a sync makes every PE's source ready; then
//   broadcast: every PE copies root's source into its dest (a get);
//   fcollect:  every PE stores its block into every PE's dest (pushes, starting at me + 1 so that
//              PEs do not all hit PE 0 first);
//   alltoall:  as fcollect, block j of source to PE j;
//   reduce:    every PE reads all PEs' sources and combines them in PE order 0..n-1, so that every
//              PE computes the same bits (also for floating point);
// and a final barrier completes the stores and keeps sources alive until every PE has read them.
// In-place reductions (dest == source) stage results in the synchronization area, 512 KiB at a
// time, with one more sync per chunk. The _block forms spread the element loop over the block.
// Long double and complex reductions are not provided in device code.
#pragma once

#include "vshmem/device/impl/rma.cuh"
#include "vshmem/device/impl/sync.cuh"
#include "vshmem/shmem_coll.h"

#ifdef __CUDACC__

namespace vshmem::device {

__device__ __forceinline__ void check_root(const char* call, const TeamView& v, int root) {
  if (static_cast<unsigned>(root) >= static_cast<unsigned>(v.size)) {
    vshmemi_device_fail(call, "PE_root is not a PE of the team");
  }
}

// Small broadcasts on the world: after the opening barrier the root stores its source into every
// PE's dest and then the barrier's epoch into every PE's broadcast flag; the others wait for the
// flag. One barrier and one hop instead of two barriers: the closing barrier of the get form only
// kept the root's source alive while the others read it, and here the root reads it itself. The
// next collective's opening barrier keeps a fast root from storing into a dest a slow PE still
// waits on.
constexpr size_t kBroadcastPushBytes = 4096;

template <class G>
__device__ __forceinline__ void broadcast_push(const char* call, void* dest, const void* source,
                                               size_t bytes, int root) {
  const GpuState& s = vshmemi_device_state;
  const int n = s.n_pes, me = s.my_pe;
  uint64_t* flag = reinterpret_cast<uint64_t*>(s.sync_base + SyncLayout::kBroadcastFlag);
  // The opening barrier's epoch, the same on every PE (sync_group wrote it before its last sync).
  const uint64_t epoch =
      *reinterpret_cast<volatile uint64_t*>(s.sync_base + SyncLayout::kBarrierEpoch);
  const unsigned rank = G::rank(), size = G::size();
  if (me == root) {
    for (int i = 0; i < n; ++i) {
      int q = me + i;
      if (q >= n) q -= n;
      const int64_t d = peer_delta(q);
      check_symmetric(call, dest, bytes);
      if (unmapped(d)) {  // cold: a PE behind the device proxy (impl/proxy.cuh)
        if (rank == 0) vshmemi_proxy_rma(call, 0, dest, source, bytes, q);
        continue;
      }
      char* to = at_delta(static_cast<char*>(dest), d);
      if (to != source) copy_bytes(to, source, bytes, rank, size);
    }
    G::sync();               // every member's stores precede the flags (fence cumulativity)
    in_scope([&](auto sc) {  // one scope for the fence and the flags
      using Sc = decltype(sc);
      if (rank + 1 < static_cast<unsigned>(n) || rank == 0) fence_sys<Sc>();
      for (unsigned i = rank + 1; i < static_cast<unsigned>(n); i += size) {
        int q = me + static_cast<int>(i);
        if (q >= n) q -= n;
        const int64_t d = peer_delta(q);
        if (unmapped(d)) {
          vshmemi_proxy_signal(call, flag, epoch, 0, q);  // after the data: a proxy signal
        } else {
          st_relaxed<Sc>(at_delta(flag, d), epoch);
        }
      }
    });
  } else if (rank == 0) {
    in_scope([&](auto sc) {
      while (ld_acquire<decltype(sc)>(flag) < epoch) {
      }
    });
  }
  G::sync();
}

template <class G>
__device__ __forceinline__ int broadcast_group(const char* call, shmem_team_t team, void* dest,
                                               const void* source, size_t bytes, int root) {
  const TeamView v = team_view(call, team);
  check_root(call, v, root);
  team_sync_group<G>(call, team, true);
  if (v.world() && bytes <= kBroadcastPushBytes && !mc_on(v.size) &&
      vshmemi_device_state.n_pes <= SyncLayout::kFlatMaxPes) {
    check_symmetric(call, source, bytes);
    broadcast_push<G>(call, dest, source, bytes, root);
    return 0;
  }
  // With a multicast region, root stores its source into every PE's dest at once. Whether it
  // can is decided from arguments every PE shares, so all take the same path.
  const uint64_t mc = mc_team(v.slot, v.size);
  if (mc_broadcast_ok(mc, reinterpret_cast<uint64_t>(dest), reinterpret_cast<uint64_t>(source),
                      bytes)) {
    check_symmetric(call, dest, bytes);
    if (v.my_index == root) {
      check_symmetric(call, source, bytes);
      mc_broadcast_store<G>(dest, source, bytes, mc);
    }
    team_sync_group<G>(call, team, true);
    return 0;
  }
  const int root_pe = v.world_pe(root);
  const int64_t d = peer_delta(root_pe);
  check_symmetric(call, source, bytes);
  if (unmapped(d)) {  // cold: a root behind the device proxy (impl/proxy.cuh)
    if (G::rank() == 0) vshmemi_proxy_rma(call, 1, dest, source, bytes, root_pe);
    G::sync();
  } else {
    const char* from = at_delta(static_cast<const char*>(source), d);
    if (from != dest) copy_bytes(dest, from, bytes, G::rank(), G::size());
  }
  team_sync_group<G>(call, team, true);
  return 0;
}

// Copies block j of `source` to member j's dest for j = me + first, me + first + step, ... (team
// numbering, mod n), by `size` threads of which this is `rank`.
__device__ __forceinline__ void exchange_part(const char* call, const TeamView& v, void* dest,
                                              const void* source, size_t block_bytes, bool all_same,
                                              int first, int step, unsigned rank, unsigned size) {
  const int n = v.size, me = v.my_index;
  char* mine = static_cast<char*>(dest) + static_cast<size_t>(me) * block_bytes;
  check_symmetric(call, mine, block_bytes);
  for (int q = first; q <= n; q += step) {
    int j = me + q;  // the member served now, in team numbering (q <= n)
    if (j >= n) j -= n;
    const char* from =
        static_cast<const char*>(source) + (all_same ? 0 : static_cast<size_t>(j) * block_bytes);
    const int64_t d = peer_delta(v.world_pe(j));
    if (unmapped(d)) {  // cold: a member behind the device proxy (impl/proxy.cuh)
      if (rank == 0) vshmemi_proxy_rma(call, 0, mine, from, block_bytes, v.world_pe(j));
      continue;
    }
    copy_bytes(at_delta(mine, d), from, block_bytes, rank, size);
  }
}

// Block j of `source` (block_bytes each; all blocks equal when `all_same`) goes to PE j's dest at
// offset me * block_bytes. A block of two warps or more splits into min(n, warps) parts of whole
// warps, part p serving members me + 1 + p, me + 1 + p + parts, ...: the copies to different
// members are in flight together instead of one after another (at 8 PEs and 8 bytes a member, one
// round trip of loads instead of eight); a large block to few members still gets every warp.
// The opening barrier made every member's writes of `source` visible to the whole group, so a
// part may hand its copy to the proxy without a group synchronization of its own.
// kSplit = false: the whole group serves one member after another (the form before the split,
// kept for the benchmark's "ab" group).
template <class G, bool kSplit = true>
__device__ __forceinline__ int exchange_group(const char* call, shmem_team_t team, void* dest,
                                              const void* source, size_t block_bytes,
                                              bool all_same) {
  const TeamView v = team_view(call, team);
  const int n = v.size;
  team_sync_group<G>(call, team, true);
  // One call site of the copy whatever the split (a second inlined copy costs registers).
  const unsigned rank = G::rank(), size = G::size(), warps = size / 32;
  unsigned first = 1, step = 1, part_rank = rank, part_size = size;
  bool serves = true;
  if (kSplit && std::is_same_v<G, BlockGroup> && warps >= 2 && n >= 2) {
    const unsigned parts = warps < static_cast<unsigned>(n) ? warps : static_cast<unsigned>(n);
    part_size = (warps / parts) * 32;
    const unsigned part = rank / part_size;
    serves = part < parts;
    first = 1 + part;
    step = parts;
    part_rank = rank - part * part_size;
  }
  if (serves) {
    exchange_part(call, v, dest, source, block_bytes, all_same, static_cast<int>(first),
                  static_cast<int>(step), part_rank, part_size);
  }
  team_sync_group<G>(call, team, true);
  return 0;
}

struct OpSum {
  template <class T>
  __device__ __forceinline__ static T apply(T a, T b) {
    return a + b;
  }
};
struct OpProd {
  template <class T>
  __device__ __forceinline__ static T apply(T a, T b) {
    return a * b;
  }
};
struct OpMin {
  template <class T>
  __device__ __forceinline__ static T apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct OpMax {
  template <class T>
  __device__ __forceinline__ static T apply(T a, T b) {
    return a < b ? b : a;
  }
};
struct OpAnd {
  template <class T>
  __device__ __forceinline__ static T apply(T a, T b) {
    return a & b;
  }
};
struct OpOr {
  template <class T>
  __device__ __forceinline__ static T apply(T a, T b) {
    return a | b;
  }
};
struct OpXor {
  template <class T>
  __device__ __forceinline__ static T apply(T a, T b) {
    return a ^ b;
  }
};

// The type a reduction combines in: the element type, except for 16-bit floating point (half,
// bfloat16: vshmem/device/impl/half.cuh), which combines in float and rounds once at the end.
template <class T>
struct Accumulator {
  using type = T;
};

// The multimem operation of a reduction operator (McOp), where multimem has one.
template <class Op>
struct McOpOf {
  static constexpr bool kHas = false;
  static constexpr McOp kOp = McOp::kAdd;
};
#define VSHMEMI_DEV_MC_OP(OP, MC)         \
  template <>                             \
  struct McOpOf<OP> {                     \
    static constexpr bool kHas = true;    \
    static constexpr McOp kOp = McOp::MC; \
  };
VSHMEMI_DEV_MC_OP(OpSum, kAdd)
VSHMEMI_DEV_MC_OP(OpMin, kMin)
VSHMEMI_DEV_MC_OP(OpMax, kMax)
VSHMEMI_DEV_MC_OP(OpAnd, kAnd)
VSHMEMI_DEV_MC_OP(OpOr, kOr)
VSHMEMI_DEV_MC_OP(OpXor, kXor)
#undef VSHMEMI_DEV_MC_OP

// out[i] = the combination, in team order, of every member's in[i] for i < m (in is a symmetric
// address; out is this PE's memory), spread over `size` threads. Where in and out share their
// offset within 16 bytes, the middle goes 16 bytes a load (one load per member for 8 bf16
// elements instead of 8), the head and tail element by element. Each member's address is
// translated once per vector, not once per element.
// 16 bytes of pe's copy of the symmetric p (a get through the device proxy for an unmapped pe).
__device__ __forceinline__ uint4 peer_load16(const char* call, const void* p, int pe) {
  const int64_t d = peer_delta(pe);
  check_symmetric(call, p, 16);
  if (unmapped(d)) {
    uint4 v;
    vshmemi_proxy_rma(call, 1, &v, p, 16, pe);  // answered in the request
    return v;
  }
  return *reinterpret_cast<const uint4*>(at_delta(static_cast<const char*>(p), d));
}

template <class Op, class T>
__device__ __forceinline__ void combine_range(const char* call, const TeamView& v, T* out,
                                              const T* in, size_t m, size_t rank, size_t size) {
  using A = typename Accumulator<T>::type;
  const int n = v.size;
  size_t head = 0, nvec = 0;
  constexpr size_t kV = 16 / sizeof(T);
  if constexpr (sizeof(T) <= 8 && 16 % sizeof(T) == 0) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
    if ((a & 15) == (b & 15) && (a % sizeof(T)) == 0) {
      head = ((16 - (a & 15)) & 15) / sizeof(T);
      if (head > m) head = m;
      nvec = (m - head) / kV;
      const T* vin = in + head;
      T* vout = out + head;
      for (size_t j = rank; j < nvec; j += size) {
        A acc[kV];
        {
          alignas(16) T t[kV];
          *reinterpret_cast<uint4*>(t) = peer_load16(call, vin + j * kV, v.world_pe(0));
#pragma unroll
          for (size_t e = 0; e < kV; ++e) acc[e] = static_cast<A>(t[e]);
        }
        for (int k = 1; k < n; ++k) {
          alignas(16) T t[kV];
          *reinterpret_cast<uint4*>(t) = peer_load16(call, vin + j * kV, v.world_pe(k));
#pragma unroll
          for (size_t e = 0; e < kV; ++e) {
            acc[e] = static_cast<A>(Op::apply(acc[e], static_cast<A>(t[e])));
          }
        }
        alignas(16) T r[kV];
#pragma unroll
        for (size_t e = 0; e < kV; ++e) r[e] = static_cast<T>(acc[e]);
        *reinterpret_cast<uint4*>(vout + j * kV) = *reinterpret_cast<const uint4*>(r);
      }
    }
  }
  // The elements outside the vectors: [0, head) and [head + nvec * kV, m).
  const size_t tail = head + nvec * kV, rest = head + (m - tail);
  for (size_t r = rank; r < rest; r += size) {
    const size_t i = r < head ? r : tail + (r - head);
    A acc = static_cast<A>(g_value(call, in + i, v.world_pe(0)));
    for (int k = 1; k < n; ++k) {
      acc = static_cast<A>(Op::apply(acc, static_cast<A>(g_value(call, in + i, v.world_pe(k)))));
    }
    out[i] = static_cast<T>(acc);
  }
}

template <class G, class Op, class T>
__device__ __forceinline__ int reduce_group(const char* call, shmem_team_t team, T* dest,
                                            const T* source, size_t nreduce) {
  const TeamView v = team_view(call, team);
  const GpuState& s = vshmemi_device_state;
  const int n = v.size;
  const size_t bytes = nreduce * sizeof(T);
  check_symmetric(call, dest, bytes);
  check_symmetric(call, source, bytes);
  const uintptr_t d = reinterpret_cast<uintptr_t>(dest), src = reinterpret_cast<uintptr_t>(source);
  const bool overlap = d < src + bytes && src < d + bytes;
  if constexpr (McOpOf<Op>::kHas && Multimem<McOpOf<Op>::kOp, T>::kSupported) {
    // With a multicast region each PE reduces its share of the elements in the switch and
    // stores the results to every PE (impl/multimem.cuh); in place too, not partly overlapping.
    const uint64_t mc = mc_team(v.slot, n);
    if (mc_reduce_ok(mc, true, d, src, bytes)) {
      team_sync_group<G>(call, team, true);
      mc_reduce_share<G, McOpOf<Op>::kOp>(dest, source, nreduce, v.my_index, n, mc);
      team_sync_group<G>(call, team, true);
      return 0;
    }
  }
  // In-place results wait in scratch: the world's in the synchronization area, a team's in its
  // slot (so that collectives on different teams may run at the same time).
  const uint64_t team_scratch = TeamSlotLayout::scratch(s.n_pes);  // after the slot's counters
  T* scratch = reinterpret_cast<T*>(
      v.world()
          ? s.sync_base + SyncLayout::kScratch
          : s.team_sync_base + static_cast<uint64_t>(v.slot) * s.team_slot_bytes + team_scratch);
  const uint64_t scratch_bytes =
      v.world() ? SyncLayout::kScratchBytes : s.team_slot_bytes - team_scratch;
  const size_t chunk = overlap ? scratch_bytes / sizeof(T) : nreduce;
  team_sync_group<G>(call, team, true);
  for (size_t base = 0; base < nreduce; base += chunk) {
    const size_t m = nreduce - base < chunk ? nreduce - base : chunk;
    T* out = overlap ? scratch : dest + base;
    combine_range<Op>(call, v, out, source + base, m, G::rank(), G::size());
    if (overlap) {
      team_sync_group<G>(call, team, false);  // every PE has read this chunk of every source
      for (size_t i = G::rank(); i < m; i += G::size()) dest[base + i] = scratch[i];
      G::sync();  // the scratch is free again
    }
  }
  team_sync_group<G>(call, team, true);
  return 0;
}

// Reduce-scatter: `source` holds n blocks of nreduce elements (one per team member); member j's
// dest receives the combination, in team order, of block j of every member's source. As
// reduce_group otherwise; dest and source must not overlap.
template <class G, class Op, class T>
__device__ __forceinline__ int reducescatter_group(const char* call, shmem_team_t team, T* dest,
                                                   const T* source, size_t nreduce) {
  const TeamView v = team_view(call, team);
  const int n = v.size;
  const size_t bytes = nreduce * sizeof(T);
  check_symmetric(call, dest, bytes);
  check_symmetric(call, source, bytes * static_cast<size_t>(n));
  const uintptr_t d = reinterpret_cast<uintptr_t>(dest), src = reinterpret_cast<uintptr_t>(source);
  if (nreduce > 0 && d < src + bytes * static_cast<size_t>(n) && src < d + bytes) {
    vshmemi_device_fail(call, "dest and source overlap");
  }
  const T* block = source + static_cast<size_t>(v.my_index) * nreduce;
  team_sync_group<G>(call, team, true);
  if constexpr (McOpOf<Op>::kHas && Multimem<McOpOf<Op>::kOp, T>::kSupported) {
    // With a multicast region one multimem.ld_reduce per element reads our block of every
    // member's source in the switch (impl/multimem.cuh).
    const uint64_t mc = mc_team(v.slot, n);
    if (mc_reducescatter_ok(mc, true)) {
      mc_reduce_scatter<G, McOpOf<Op>::kOp>(dest, source, nreduce, v.my_index, mc);
      team_sync_group<G>(call, team, true);
      return 0;
    }
  }
  combine_range<Op>(call, v, dest, block, nreduce, G::rank(), G::size());
  team_sync_group<G>(call, team, true);
  return 0;
}

}  // namespace vshmem::device

// Reduction type tables of OpenSHMEM 1.5 (Table 14) without long double and complex types.
#define VSHMEMI_DEV_REDUCE_BITWISE_TYPES(X) VSHMEM_REDUCE_BITWISE_TYPES(X)
#define VSHMEMI_DEV_REDUCE_ARITH_TYPES(X) \
  VSHMEM_REDUCE_INTEGER_TYPES(X) VSHMEM_REDUCE_DEVICE_REAL_TYPES(X)

#define VSHMEMI_DEV_DECL_COLL_TYPED(NAME, TYPE)                                                  \
  VSHMEM_HOSTDEV int shmem_##NAME##_broadcast(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                              size_t nelems, int PE_root);                       \
  VSHMEM_HOSTDEV int shmem_##NAME##_fcollect(shmem_team_t team, TYPE* dest, const TYPE* source,  \
                                             size_t nelems);                                     \
  VSHMEM_HOSTDEV int shmem_##NAME##_alltoall(shmem_team_t team, TYPE* dest, const TYPE* source,  \
                                             size_t nelems);
#define VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, OP)                                  \
  VSHMEM_HOSTDEV int shmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE* dest, \
                                                  const TYPE* source, size_t nreduce);
#define VSHMEMI_DEV_DECL_REDUCE_BITWISE(NAME, TYPE) \
  VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, and)          \
  VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, or)           \
  VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, xor)
#define VSHMEMI_DEV_DECL_REDUCE_ARITH(NAME, TYPE) \
  VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, min)        \
  VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, max)        \
  VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, sum)        \
  VSHMEMI_DEV_DECL_REDUCE(NAME, TYPE, prod)

extern "C" {
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_DECL_COLL_TYPED)
VSHMEM_HOSTDEV int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source,
                                      size_t nelems, int PE_root);
VSHMEM_HOSTDEV int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source,
                                     size_t nelems);
VSHMEM_HOSTDEV int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source,
                                     size_t nelems);
VSHMEMI_DEV_REDUCE_BITWISE_TYPES(VSHMEMI_DEV_DECL_REDUCE_BITWISE)
VSHMEMI_DEV_REDUCE_ARITH_TYPES(VSHMEMI_DEV_DECL_REDUCE_ARITH)
}

// The definitions, for a name prefix (shmem_ / shmemx_), suffix ("" / _warp / _block) and group.
#define VSHMEMI_DEV_COLL_TYPED(NAME, TYPE, PRE, SUF, G)                                         \
  __device__ __forceinline__ int PRE##NAME##_broadcast##SUF(                                    \
      shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems, int PE_root) {          \
    return vshmem::device::broadcast_group<VSHMEMI_DEV_G(G)>(                                   \
        #PRE #NAME "_broadcast" #SUF, team, dest, source, nelems * sizeof(TYPE), PE_root);      \
  }                                                                                             \
  __device__ __forceinline__ int PRE##NAME##_fcollect##SUF(shmem_team_t team, TYPE* dest,       \
                                                           const TYPE* source, size_t nelems) { \
    return vshmem::device::exchange_group<VSHMEMI_DEV_G(G)>(                                    \
        #PRE #NAME "_fcollect" #SUF, team, dest, source, nelems * sizeof(TYPE), true);          \
  }                                                                                             \
  __device__ __forceinline__ int PRE##NAME##_alltoall##SUF(shmem_team_t team, TYPE* dest,       \
                                                           const TYPE* source, size_t nelems) { \
    return vshmem::device::exchange_group<VSHMEMI_DEV_G(G)>(                                    \
        #PRE #NAME "_alltoall" #SUF, team, dest, source, nelems * sizeof(TYPE), false);         \
  }
#define VSHMEMI_DEV_COLL_MEM(PRE, SUF, G)                                                          \
  __device__ __forceinline__ int PRE##broadcastmem##SUF(                                           \
      shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root) {             \
    return vshmem::device::broadcast_group<VSHMEMI_DEV_G(G)>(#PRE "broadcastmem" #SUF, team, dest, \
                                                             source, nelems, PE_root);             \
  }                                                                                                \
  __device__ __forceinline__ int PRE##fcollectmem##SUF(shmem_team_t team, void* dest,              \
                                                       const void* source, size_t nelems) {        \
    return vshmem::device::exchange_group<VSHMEMI_DEV_G(G)>(#PRE "fcollectmem" #SUF, team, dest,   \
                                                            source, nelems, true);                 \
  }                                                                                                \
  __device__ __forceinline__ int PRE##alltoallmem##SUF(shmem_team_t team, void* dest,              \
                                                       const void* source, size_t nelems) {        \
    return vshmem::device::exchange_group<VSHMEMI_DEV_G(G)>(#PRE "alltoallmem" #SUF, team, dest,   \
                                                            source, nelems, false);                \
  }
#define VSHMEMI_DEV_REDUCE(NAME, TYPE, OP, OPTYPE, PRE, SUF, G)                    \
  __device__ __forceinline__ int PRE##NAME##_##OP##_reduce##SUF(                   \
      shmem_team_t team, TYPE* dest, const TYPE* source, size_t nreduce) {         \
    return vshmem::device::reduce_group<VSHMEMI_DEV_G(G), vshmem::device::OPTYPE>( \
        #PRE #NAME "_" #OP "_reduce" #SUF, team, dest, source, nreduce);           \
  }
#define VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, OP, OPTYPE, PRE, SUF, G)                    \
  __device__ __forceinline__ int PRE##NAME##_##OP##_reducescatter##SUF(                   \
      shmem_team_t team, TYPE* dest, const TYPE* source, size_t nreduce) {                \
    return vshmem::device::reducescatter_group<VSHMEMI_DEV_G(G), vshmem::device::OPTYPE>( \
        #PRE #NAME "_" #OP "_reducescatter" #SUF, team, dest, source, nreduce);           \
  }
#define VSHMEMI_DEV_RS_BITWISE(NAME, TYPE, PRE, SUF, G)          \
  VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, and, OpAnd, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, or, OpOr, PRE, SUF, G)   \
  VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, xor, OpXor, PRE, SUF, G)
#define VSHMEMI_DEV_RS_ARITH(NAME, TYPE, PRE, SUF, G)            \
  VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, min, OpMin, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, max, OpMax, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, sum, OpSum, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCESCATTER(NAME, TYPE, prod, OpProd, PRE, SUF, G)
#define VSHMEMI_DEV_RS_BITWISE_ALL(NAME, TYPE)                  \
  VSHMEMI_DEV_RS_BITWISE(NAME, TYPE, shmem_, , ThreadGroup)     \
  VSHMEMI_DEV_RS_BITWISE(NAME, TYPE, shmemx_, _warp, WarpGroup) \
  VSHMEMI_DEV_RS_BITWISE(NAME, TYPE, shmemx_, _block, BlockGroup)
#define VSHMEMI_DEV_RS_ARITH_ALL(NAME, TYPE)                  \
  VSHMEMI_DEV_RS_ARITH(NAME, TYPE, shmem_, , ThreadGroup)     \
  VSHMEMI_DEV_RS_ARITH(NAME, TYPE, shmemx_, _warp, WarpGroup) \
  VSHMEMI_DEV_RS_ARITH(NAME, TYPE, shmemx_, _block, BlockGroup)
#define VSHMEMI_DEV_REDUCE_BITWISE(NAME, TYPE, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCE(NAME, TYPE, and, OpAnd, PRE, SUF, G)   \
  VSHMEMI_DEV_REDUCE(NAME, TYPE, or, OpOr, PRE, SUF, G)     \
  VSHMEMI_DEV_REDUCE(NAME, TYPE, xor, OpXor, PRE, SUF, G)
#define VSHMEMI_DEV_REDUCE_ARITH(NAME, TYPE, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCE(NAME, TYPE, min, OpMin, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCE(NAME, TYPE, max, OpMax, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCE(NAME, TYPE, sum, OpSum, PRE, SUF, G) \
  VSHMEMI_DEV_REDUCE(NAME, TYPE, prod, OpProd, PRE, SUF, G)

#define VSHMEMI_DEV_COLL_THREAD(NAME, TYPE) \
  VSHMEMI_DEV_COLL_TYPED(NAME, TYPE, shmem_, , ThreadGroup)
#define VSHMEMI_DEV_COLL_WARP(NAME, TYPE) \
  VSHMEMI_DEV_COLL_TYPED(NAME, TYPE, shmemx_, _warp, WarpGroup)
#define VSHMEMI_DEV_COLL_BLOCK(NAME, TYPE) \
  VSHMEMI_DEV_COLL_TYPED(NAME, TYPE, shmemx_, _block, BlockGroup)
#define VSHMEMI_DEV_RB_THREAD(NAME, TYPE) \
  VSHMEMI_DEV_REDUCE_BITWISE(NAME, TYPE, shmem_, , ThreadGroup)
#define VSHMEMI_DEV_RB_WARP(NAME, TYPE) \
  VSHMEMI_DEV_REDUCE_BITWISE(NAME, TYPE, shmemx_, _warp, WarpGroup)
#define VSHMEMI_DEV_RB_BLOCK(NAME, TYPE) \
  VSHMEMI_DEV_REDUCE_BITWISE(NAME, TYPE, shmemx_, _block, BlockGroup)
#define VSHMEMI_DEV_RA_THREAD(NAME, TYPE) \
  VSHMEMI_DEV_REDUCE_ARITH(NAME, TYPE, shmem_, , ThreadGroup)
#define VSHMEMI_DEV_RA_WARP(NAME, TYPE) \
  VSHMEMI_DEV_REDUCE_ARITH(NAME, TYPE, shmemx_, _warp, WarpGroup)
#define VSHMEMI_DEV_RA_BLOCK(NAME, TYPE) \
  VSHMEMI_DEV_REDUCE_ARITH(NAME, TYPE, shmemx_, _block, BlockGroup)

#ifdef __CUDA_ARCH__
extern "C" {
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_COLL_THREAD)
VSHMEMI_DEV_COLL_MEM(shmem_, , ThreadGroup)
VSHMEMI_DEV_REDUCE_BITWISE_TYPES(VSHMEMI_DEV_RB_THREAD)
VSHMEMI_DEV_REDUCE_ARITH_TYPES(VSHMEMI_DEV_RA_THREAD)
}
#endif  // __CUDA_ARCH__

extern "C" {
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_COLL_WARP)
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_COLL_BLOCK)
VSHMEMI_DEV_COLL_MEM(shmemx_, _warp, WarpGroup)
VSHMEMI_DEV_COLL_MEM(shmemx_, _block, BlockGroup)
VSHMEMI_DEV_REDUCE_BITWISE_TYPES(VSHMEMI_DEV_RB_WARP)
VSHMEMI_DEV_REDUCE_BITWISE_TYPES(VSHMEMI_DEV_RB_BLOCK)
VSHMEMI_DEV_REDUCE_ARITH_TYPES(VSHMEMI_DEV_RA_WARP)
VSHMEMI_DEV_REDUCE_ARITH_TYPES(VSHMEMI_DEV_RA_BLOCK)
// Reduce-scatter (an NVSHMEM extension: no OpenSHMEM 1.5 host form), every form device-only.
VSHMEMI_DEV_REDUCE_BITWISE_TYPES(VSHMEMI_DEV_RS_BITWISE_ALL)
VSHMEMI_DEV_REDUCE_ARITH_TYPES(VSHMEMI_DEV_RS_ARITH_ALL)
}

#endif  // __CUDACC__
