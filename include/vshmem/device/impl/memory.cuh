// Memory operations at system (or, on one GPU, gpu) scope (PTX memory model, sm_70+): the building
// blocks of RMA, atomics, signals and waits. System scope is what makes them correct against the
// host's atomics and against other processes' kernels on the same or another GPU.
#pragma once

#include <type_traits>

#include "vshmem/device/impl/state.cuh"

#ifdef __CUDACC__

namespace vshmem::device {

// ---- Scope. When every PE of the job keeps its heap on this one GPU (and host-issued atomics
// run as kernels on it, runtime/memory/cuda_atomic_ptx.cpp), every thread that can touch the
// heap is on this GPU: .gpu scope is morally strong with all of them and much cheaper than .sys
// (a .sys fence waits for the PCIe/NVLink fabric). With peers on other GPUs everything is .sys.
// The choice is uniform (constant memory), made once by libvshmem (runtime/api/device_state.cpp).
__device__ __forceinline__ bool gpu_scope() { return vshmemi_device_state.gpu_scope != 0; }

// The scope of a primitive below, as its template argument: GpuScope or SysScope when the
// operation has chosen it (once, with in_scope), DynScope (the default) to choose it from the
// state at this instruction. An operation of several instructions (a barrier, a wait loop, a
// signal after a copy) calls in_scope once, so that its instructions carry no per-instruction
// branch on the state (issue #21 item 3).
struct GpuScope {};
struct SysScope {};
struct DynScope {};

// Runs f(GpuScope{}) or f(SysScope{}): one branch, then straight-line code of that scope.
template <class F>
__device__ __forceinline__ decltype(auto) in_scope(F&& f) {
  if (gpu_scope()) return f(GpuScope{});
  return f(SysScope{});
}

// asm volatile(BEFORE ".gpu" AFTER : operands) or the same with ".sys", in the scope SC.
#define VSHMEMI_ASM_IN(SC, BEFORE, AFTER, ...)                               \
  do {                                                                       \
    if constexpr (::std::is_same_v<SC, ::vshmem::device::GpuScope>) {        \
      asm volatile(BEFORE ".gpu" AFTER __VA_ARGS__);                         \
    } else if constexpr (::std::is_same_v<SC, ::vshmem::device::SysScope>) { \
      asm volatile(BEFORE ".sys" AFTER __VA_ARGS__);                         \
    } else if (::vshmem::device::gpu_scope()) {                              \
      asm volatile(BEFORE ".gpu" AFTER __VA_ARGS__);                         \
    } else {                                                                 \
      asm volatile(BEFORE ".sys" AFTER __VA_ARGS__);                         \
    }                                                                        \
  } while (0)

// ---- Raw-bit atomics, loads and stores. Their addresses are always in the symmetric heap or the
// window (global memory: the device calls check or require symmetric addresses), so they are
// global-space instructions. ----

// The global-space address of a generic pointer to global memory.
__device__ __forceinline__ uint64_t global_addr(const void* p) {
  return static_cast<uint64_t>(__cvta_generic_to_global(p));
}

template <class Sc = DynScope>
__device__ __forceinline__ uint32_t atom_add(uint32_t* p, uint32_t v) {
  uint32_t r;
  VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global.add.u32 %0, [%1], %2;",
                 : "=r"(r)
                 : "l"(global_addr(p)), "r"(v)
                 : "memory");
  return r;
}
template <class Sc = DynScope>
__device__ __forceinline__ uint64_t atom_add(uint64_t* p, uint64_t v) {
  uint64_t r;
  VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global.add.u64 %0, [%1], %2;",
                 : "=l"(r)
                 : "l"(global_addr(p)), "l"(v)
                 : "memory");
  return r;
}
// atom_add where `on` holds (else no memory is touched, whatever p is, and 0 is returned), at the
// state's scope: one predicated instruction of each scope rather than a branch on the scope or on
// `on` (the device fetch_add: its atomic issues as soon as its address is ready, and the test of
// an unmapped peer comes after it, while the atomic is in flight).
#define VSHMEMI_DEV_ATOM_ADD_IF(TYPE, BITS, CONSTRAINT)                                     \
  __device__ __forceinline__ TYPE atom_add_if(TYPE* p, TYPE v, bool on) {                   \
    TYPE r;                                                                                 \
    asm volatile(                                                                           \
        "{\n\t.reg .pred t, g, s;\n\tsetp.ne.u32 t, %3, 0;\n\t"                             \
        "setp.ne.and.u32 g, %4, 0, t;\n\tsetp.eq.and.u32 s, %4, 0, t;\n\tmov.b" #BITS       \
        " %0, 0;\n\t@g atom.relaxed.gpu.global.add.u" #BITS                                 \
        " %0, [%1], %2;\n\t@s atom.relaxed.sys.global.add.u" #BITS " %0, [%1], %2;\n\t}"    \
        : "=" CONSTRAINT(r)                                                                 \
        : "l"(global_addr(p)), CONSTRAINT(v), "r"(on ? 1u : 0u), "r"(gpu_scope() ? 1u : 0u) \
        : "memory");                                                                        \
    return r;                                                                               \
  }
VSHMEMI_DEV_ATOM_ADD_IF(uint32_t, 32, "r")
VSHMEMI_DEV_ATOM_ADD_IF(uint64_t, 64, "l")
#undef VSHMEMI_DEV_ATOM_ADD_IF
template <class Sc = DynScope>
__device__ __forceinline__ void red_add(uint32_t* p, uint32_t v) {
  VSHMEMI_ASM_IN(Sc, "red.relaxed", ".global.add.u32 [%0], %1;", ::"l"(global_addr(p)), "r"(v)
                 : "memory");
}
template <class Sc = DynScope>
__device__ __forceinline__ void red_add(uint64_t* p, uint64_t v) {
  VSHMEMI_ASM_IN(Sc, "red.relaxed", ".global.add.u64 [%0], %1;", ::"l"(global_addr(p)), "l"(v)
                 : "memory");
}
// Release: everything this thread (and, cumulatively, what it has observed) wrote before is
// visible to whoever observes the addition.
template <class Sc = DynScope>
__device__ __forceinline__ void red_add_release(uint64_t* p, uint64_t v) {
  VSHMEMI_ASM_IN(Sc, "red.release", ".global.add.u64 [%0], %1;", ::"l"(global_addr(p)), "l"(v)
                 : "memory");
}
template <class Sc = DynScope>
__device__ __forceinline__ uint32_t atom_cas(uint32_t* p, uint32_t cmp, uint32_t v) {
  uint32_t r;
  VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global.cas.b32 %0, [%1], %2, %3;",
                 : "=r"(r)
                 : "l"(global_addr(p)), "r"(cmp), "r"(v)
                 : "memory");
  return r;
}
template <class Sc = DynScope>
__device__ __forceinline__ uint64_t atom_cas(uint64_t* p, uint64_t cmp, uint64_t v) {
  uint64_t r;
  VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global.cas.b64 %0, [%1], %2, %3;",
                 : "=l"(r)
                 : "l"(global_addr(p)), "l"(cmp), "l"(v)
                 : "memory");
  return r;
}
template <class Sc = DynScope>
__device__ __forceinline__ uint32_t atom_exch(uint32_t* p, uint32_t v) {
  uint32_t r;
  VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global.exch.b32 %0, [%1], %2;",
                 : "=r"(r)
                 : "l"(global_addr(p)), "r"(v)
                 : "memory");
  return r;
}
template <class Sc = DynScope>
__device__ __forceinline__ uint64_t atom_exch(uint64_t* p, uint64_t v) {
  uint64_t r;
  VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global.exch.b64 %0, [%1], %2;",
                 : "=l"(r)
                 : "l"(global_addr(p)), "l"(v)
                 : "memory");
  return r;
}

#define VSHMEMI_DEV_BITOP(OP)                                                                 \
  template <class Sc = DynScope>                                                              \
  __device__ __forceinline__ uint32_t atom_##OP(uint32_t* p, uint32_t v) {                    \
    uint32_t r;                                                                               \
    VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global." #OP ".b32 %0, [%1], %2;",                   \
                   : "=r"(r)                                                                  \
                   : "l"(global_addr(p)), "r"(v)                                              \
                   : "memory");                                                               \
    return r;                                                                                 \
  }                                                                                           \
  template <class Sc = DynScope>                                                              \
  __device__ __forceinline__ uint64_t atom_##OP(uint64_t* p, uint64_t v) {                    \
    uint64_t r;                                                                               \
    VSHMEMI_ASM_IN(Sc, "atom.relaxed", ".global." #OP ".b64 %0, [%1], %2;",                   \
                   : "=l"(r)                                                                  \
                   : "l"(global_addr(p)), "l"(v)                                              \
                   : "memory");                                                               \
    return r;                                                                                 \
  }                                                                                           \
  template <class Sc = DynScope>                                                              \
  __device__ __forceinline__ void red_##OP(uint32_t* p, uint32_t v) {                         \
    VSHMEMI_ASM_IN(Sc, "red.relaxed", ".global." #OP ".b32 [%0], %1;", ::"l"(global_addr(p)), \
                   "r"(v)                                                                     \
                   : "memory");                                                               \
  }                                                                                           \
  template <class Sc = DynScope>                                                              \
  __device__ __forceinline__ void red_##OP(uint64_t* p, uint64_t v) {                         \
    VSHMEMI_ASM_IN(Sc, "red.relaxed", ".global." #OP ".b64 [%0], %1;", ::"l"(global_addr(p)), \
                   "l"(v)                                                                     \
                   : "memory");                                                               \
  }
VSHMEMI_DEV_BITOP(and)
VSHMEMI_DEV_BITOP(or)
VSHMEMI_DEV_BITOP(xor)
#undef VSHMEMI_DEV_BITOP

// ---- Single-copy-atomic loads and stores. ----

// ld_relaxed / ld_acquire on 16-, 32- and 64-bit words.
#define VSHMEMI_DEV_LOAD(SEM, TYPE, BITS, CONSTRAINT)              \
  template <class Sc = DynScope>                                   \
  __device__ __forceinline__ TYPE ld_##SEM(const TYPE* p) {        \
    TYPE r;                                                        \
    VSHMEMI_ASM_IN(Sc, "ld." #SEM, ".global.b" #BITS " %0, [%1];", \
                   : "=" CONSTRAINT(r)                             \
                   : "l"(global_addr(p))                           \
                   : "memory");                                    \
    return r;                                                      \
  }
#define VSHMEMI_DEV_LOADS(SEM)             \
  VSHMEMI_DEV_LOAD(SEM, uint16_t, 16, "h") \
  VSHMEMI_DEV_LOAD(SEM, uint32_t, 32, "r") \
  VSHMEMI_DEV_LOAD(SEM, uint64_t, 64, "l")
VSHMEMI_DEV_LOADS(relaxed)
VSHMEMI_DEV_LOADS(acquire)
#undef VSHMEMI_DEV_LOADS
#undef VSHMEMI_DEV_LOAD
template <class Sc = DynScope>
__device__ __forceinline__ void st_relaxed(uint32_t* p, uint32_t v) {
  VSHMEMI_ASM_IN(Sc, "st.relaxed", ".global.b32 [%0], %1;", ::"l"(global_addr(p)), "r"(v)
                 : "memory");
}
template <class Sc = DynScope>
__device__ __forceinline__ void st_relaxed(uint64_t* p, uint64_t v) {
  VSHMEMI_ASM_IN(Sc, "st.relaxed", ".global.b64 [%0], %1;", ::"l"(global_addr(p)), "l"(v)
                 : "memory");
}
template <class Sc = DynScope>
__device__ __forceinline__ void st_release(uint64_t* p, uint64_t v) {
  VSHMEMI_ASM_IN(Sc, "st.release", ".global.b64 [%0], %1;", ::"l"(global_addr(p)), "l"(v)
                 : "memory");
}

// shmem_fence / shmem_quiet. Device stores and atomics are issued synchronously by the thread,
// so one sequentially consistent system-scope fence both orders them (fence) and, since it
// waits for the thread's outstanding stores to be performed at system scope, completes them
// (quiet).
template <class Sc = DynScope>
__device__ __forceinline__ void fence_sys() {
  VSHMEMI_ASM_IN(Sc, "fence.sc", ";", ::: "memory");
}
// Turns earlier relaxed loads into acquires (after a wait has seen its value).
template <class Sc = DynScope>
__device__ __forceinline__ void fence_acquire() {
  VSHMEMI_ASM_IN(Sc, "fence.acq_rel", ";", ::: "memory");
}
// Before a relaxed store or atomic that publishes earlier stores (a signal, a barrier flag): the
// release pattern of the PTX model (fence.acq_rel + strong write), lighter than fence.sc.
template <class Sc = DynScope>
__device__ __forceinline__ void fence_release() {
  VSHMEMI_ASM_IN(Sc, "fence.acq_rel", ";", ::: "memory");
}

// ---- Values <-> raw bits. ----

template <size_t N>
struct BitsOf;
template <>
struct BitsOf<2> {
  using type = uint16_t;
};
template <>
struct BitsOf<4> {
  using type = uint32_t;
};
template <>
struct BitsOf<8> {
  using type = uint64_t;
};
template <class T>
using Bits = typename BitsOf<sizeof(T)>::type;

template <class To, class From>
__device__ __forceinline__ To bit_cast(const From& v) {
  static_assert(sizeof(To) == sizeof(From));
  To r;
  memcpy(&r, &v, sizeof(To));
  return r;
}

template <class T>
__device__ __forceinline__ Bits<T>* bits_ptr(T* p) {
  return reinterpret_cast<Bits<T>*>(p);
}

// A load that observes other PEs' and the host's latest stores (waits and tests).
template <class T, class Sc = DynScope>
__device__ __forceinline__ T load_sys(const T* p) {
  return bit_cast<T>(ld_relaxed<Sc>(reinterpret_cast<const Bits<T>*>(p)));
}
// The same as an acquire: what was written before the store it reads from (with release) is
// visible to this thread after it, without a fence.
template <class T, class Sc = DynScope>
__device__ __forceinline__ T load_acquire(const T* p) {
  return bit_cast<T>(ld_acquire<Sc>(reinterpret_cast<const Bits<T>*>(p)));
}

template <class T>
__device__ __forceinline__ bool compare(T value, int cmp, T ref) {
  switch (cmp) {
    case 0: return value == ref;  // SHMEM_CMP_EQ
    case 1: return value != ref;  // SHMEM_CMP_NE
    case 2: return value > ref;   // SHMEM_CMP_GT
    case 3: return value >= ref;  // SHMEM_CMP_GE
    case 4: return value < ref;   // SHMEM_CMP_LT
    case 5: return value <= ref;  // SHMEM_CMP_LE
    default: return false;
  }
}

__device__ __forceinline__ void check_cmp(const char* call, int cmp) {
  if (static_cast<unsigned>(cmp) > 5u) vshmemi_device_fail(call, "invalid comparison operator");
}

// ---- Bulk copies, cooperatively by a group, in the widest word both addresses allow. ----

struct alignas(8) Bits128 {
  uint64_t lo, hi;
};

// kUnroll words per thread per pass, every load of a pass issued before its first store (a
// load-store-load loop keeps one load in flight: the compiler cannot hoist a load above a store
// that may alias it, so the copy would be latency-bound far below the memory's bandwidth). The
// last pass is predicated rather than left to a one-word loop: a block of 512 threads copying
// 16 KiB (two 16-byte words a thread) waits for one round of loads, not two.
constexpr unsigned kCopyUnroll = 4;

template <class W, unsigned kUnroll = kCopyUnroll>
__device__ __forceinline__ void copy_words(char* d, const char* s, size_t n, unsigned rank,
                                           unsigned size) {
  size_t head = (sizeof(W) - reinterpret_cast<uintptr_t>(d) % sizeof(W)) % sizeof(W);
  if (head > n) head = n;
  for (size_t i = rank; i < head; i += size) d[i] = s[i];
  const size_t words = (n - head) / sizeof(W);
  W* dw = reinterpret_cast<W*>(d + head);
  const W* sw = reinterpret_cast<const W*>(s + head);
  size_t i = rank;
  for (; i + (kUnroll - 1) * static_cast<size_t>(size) < words;
       i += kUnroll * static_cast<size_t>(size)) {
    W v[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) v[u] = sw[i + u * static_cast<size_t>(size)];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) dw[i + u * static_cast<size_t>(size)] = v[u];
  }
  // Fewer than kUnroll words left for this thread: two at a time, both loads first.
  for (; i + size < words; i += 2 * static_cast<size_t>(size)) {
    const W a = sw[i], b = sw[i + size];
    dw[i] = a;
    dw[i + size] = b;
  }
  if (i < words) dw[i] = sw[i];
  for (size_t i = head + words * sizeof(W) + rank; i < n; i += size) d[i] = s[i];
}

// A copy whose source and destination do not agree modulo 16 (skew: the two addresses XORed), in
// the widest word narrower than 16 bytes that both allow: 8, 4, 2 or 1 byte(s). The group's threads
// interleave through the message (thread r moves words r, r + size, ...).
__device__ __forceinline__ void copy_narrow(char* d, const char* s, size_t n, unsigned rank,
                                            unsigned size, uintptr_t skew) {
  if (n >= 8 && (skew & 7) == 0) {
    copy_words<uint64_t>(d, s, n, rank, size);
  } else if (n >= 4 && (skew & 3) == 0) {
    copy_words<uint32_t>(d, s, n, rank, size);
  } else if ((skew & 1) == 0) {
    copy_words<uint16_t>(d, s, n, rank, size);
  } else {
    for (size_t i = rank; i < n; i += size) d[i] = s[i];
  }
}

// The group's threads interleave through the whole message (thread r moves words r, r + size, ...),
// with 16-byte accesses when source and destination agree modulo 16, else the widest that agrees.
template <unsigned kUnroll = kCopyUnroll>
__device__ __forceinline__ void copy_interleaved(char* d, const char* s, size_t n, unsigned rank,
                                                 unsigned size) {
  const uintptr_t skew = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
  if (n >= 16 && (skew & 15) == 0) {
    copy_words<uint4, kUnroll>(d, s, n, rank, size);
  } else {
    copy_narrow(d, s, n, rank, size, skew);
  }
}

// A group of a warp or more aligns its 16-byte words to the destination's 512-byte boundaries, so
// that each warp-wide 16-byte access covers one whole 512-byte segment instead of straddling two.
// Measured on one H200 (bench/RESULTS.md, run 11): a 512 MiB copy cut into one chunk per block
// whose start is 16-byte but not 512-byte aligned went from 73-75% of cudaMemcpy to 93.6-94.2%
// (aligning to 128 bytes only gave 86-88%), pieces of 256 KiB + 3 bytes dealt round-robin from 75%
// to 92%, and copies that were aligned already or fit in L2 kept their speed. The thread form (one
// thread) keeps the 16-byte alignment.
constexpr size_t kWarpAccessAlign = 512;
static_assert(kDeltaAlign % kWarpAccessAlign == 0,
              "a peer's copy of an address must keep its place in a 512-byte segment");

// The 16-byte words of an aligned group copy (the benchmark's "ab_put" ladder times this loop
// alone; the library's copy is copy_run16): 32-bit word indices, so that each address is one wide
// multiply-add (the 64-bit indices of copy_words cost several instructions an address), every
// load of a pass issued before its first store. A block of 512 threads issues each instruction of
// a call 16 times on one SM: a 16 KiB put (two words a thread) spends about as long issuing its
// address arithmetic and tests as waiting for its one round of loads.
template <unsigned kUnroll>
__device__ __forceinline__ void copy_words16(uint4* dw, const uint4* sw, uint32_t words,
                                             unsigned rank, unsigned size) {
  uint32_t i = rank;
  for (; i + (kUnroll - 1) * size < words; i += kUnroll * size) {
    uint4 v[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) v[u] = sw[i + u * size];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) dw[i + u * size] = v[u];
  }
  // Fewer than kUnroll words left for this thread: two at a time, both loads first.
  for (; i + size < words; i += 2 * size) {
    const uint4 a = sw[i], b = sw[i + size];
    dw[i] = a;
    dw[i + size] = b;
  }
  if (i < words) dw[i] = sw[i];
}

// One run of a group copy whose source and destination agree modulo 16, with fewer than 2^34
// bytes (so that its word indices fit 32 bits with room). The words are counted from the
// destination's previous 512-byte boundary (a group of a warp or more) or 16-byte boundary (a
// smaller group): word j is the 16 bytes at d - lead + 16 j, and the words that lie wholly inside
// the message, jlo <= j < jend, are copied by an interleaved loop whose accesses are predicated on
// that range, so that each warp-wide access covers one whole 512-byte segment of the destination
// without a separate head pass (kWarpAccessAlign). The at most 30 bytes outside the whole words
// (before the first, after the last) are copied one per thread: by a group of a warp or more, the
// byte is loaded before the words and stored after them, so that the call waits for one round of
// loads, not two (a head copied before the words makes their loads wait for its store: bench
// "ab_put" ladder, runs 22-23). Every load of a pass is issued before its first store.
//
// `low` has d's low 9 bits: the untranslated symmetric address of a peer's copy (copy_bytes_at),
// so that the alignment arithmetic does not wait for the peer's delta.
template <unsigned kUnroll>
__device__ __forceinline__ void copy_run16_low(char* d, const char* s, size_t n, unsigned rank,
                                               unsigned size, uintptr_t low) {
  const uint32_t lead =
      static_cast<uint32_t>(low) & (size >= 32 ? static_cast<uint32_t>(kWarpAccessAlign - 1) : 15u);
  const uint32_t jlo = (lead + 15) >> 4;                         // the first whole word
  const uint32_t jend = static_cast<uint32_t>((n + lead) >> 4);  // after the last whole word
  const uint32_t count = jend > jlo ? jend - jlo : 0;
  uint4* const dw = reinterpret_cast<uint4*>(d - lead);
  const uint4* const sw = reinterpret_cast<const uint4*>(s - lead);
  // The bytes outside the whole words, when the destination or the size is not a multiple of 16
  // (a branch the group takes together): `head` bytes at d, then n - tail_at at d + tail_at.
  bool edge = false;
  size_t at = 0;
  char e = 0;
  if (((low | n) & 15) != 0) {
    const uint32_t before = 16 * jlo - lead;  // < 16
    const uint32_t head = n < before ? static_cast<uint32_t>(n) : before;
    const size_t tail_at = head + 16 * static_cast<size_t>(count);
    const uint32_t edges = head + static_cast<uint32_t>(n - tail_at);  // <= 30
    if (size >= 32) {
      edge = rank < edges;
      at = rank < head ? rank : tail_at + (rank - head);
      if (edge) e = s[at];
    } else {
      for (uint32_t k = rank; k < edges; k += size) {
        const size_t o = k < head ? k : tail_at + (k - head);
        d[o] = s[o];
      }
    }
  }
  for (uint32_t i = rank; i < jend; i += kUnroll * size) {
    uint4 v[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const uint32_t j = i + u * size;
      if (j - jlo < count) v[u] = sw[j];
    }
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const uint32_t j = i + u * size;
      if (j - jlo < count) dw[j] = v[u];
    }
  }
  if (edge) d[at] = e;
}
template <unsigned kUnroll>
__device__ __forceinline__ void copy_run16(char* d, const char* s, size_t n, unsigned rank,
                                           unsigned size) {
  copy_run16_low<kUnroll>(d, s, n, rank, size, reinterpret_cast<uintptr_t>(d));
}

// A group's copy of n bytes: the group's threads interleave through the message (thread r moves
// words r, r + size, ...), in 16-byte words when source and destination agree modulo 16
// (copy_run16_low: no separate head, one round of loads per pass), else in the widest word both
// addresses allow (copy_narrow). `dlow` and `slow` agree with dest and source modulo
// kWarpAccessAlign: a put passes the untranslated symmetric destination, a get the untranslated
// source (kDeltaAlign), so that choosing the path and the first whole word does not wait for the
// peer's delta: the block put of 16 KiB by 512 threads went from 24.4 to 42.7 GB/s with this alone
// (bench "ab_put" ladder rung 15 against rung 6, run 24). kFast = false: the general path of
// sessions 1-6 alone (64-bit word indices, a separate 512-byte head), kept for the benchmark's "ab"
// group.
template <unsigned kUnroll = kCopyUnroll, bool kFast = true>
__device__ __forceinline__ void copy_bytes_at(void* dest, const void* source, size_t n,
                                              unsigned rank, unsigned size, uintptr_t dlow,
                                              uintptr_t slow) {
  char* d = static_cast<char*>(dest);
  const char* s = static_cast<const char*>(source);
  if constexpr (kFast) {
    // Fewer than 16 bytes, or addresses that disagree modulo 16: 8-, 4-, 2- or 1-byte words (an
    // 8-byte message is one word, not eight bytes: the thread form's small puts and broadcasts).
    const uintptr_t skew = dlow ^ slow;
    if (n < 16 || (skew & 15) != 0) {
      copy_narrow(d, s, n, rank, size, skew);
      return;
    }
    // One call site of the word loop (registers: a second inlined copy would push block-wide
    // calls in a loop past 64 a thread), in runs of at most 16 GiB; a run's length is a multiple
    // of 512, so dlow keeps agreeing with d.
    constexpr size_t kRun = size_t{1} << 34;
    static_assert(kRun % kWarpAccessAlign == 0);
    for (;;) {
      const size_t m = n < kRun ? n : kRun;
      copy_run16_low<kUnroll>(d, s, m, rank, size, dlow);
      if (m == n) break;
      d += m;
      s += m;
      n -= m;
    }
  } else {
    (void)dlow;
    (void)slow;
    size_t head = 0;
    if (size >= 32 && n >= 2 * kWarpAccessAlign) {
      head =
          (kWarpAccessAlign - reinterpret_cast<uintptr_t>(d) % kWarpAccessAlign) % kWarpAccessAlign;
    }
    for (size_t i = rank; i < head; i += size) d[i] = s[i];
    copy_interleaved<kUnroll>(d + head, s + head, n - head, rank, size);
  }
}
// The same where dest and source are the addresses themselves (local copies, translated ones).
template <unsigned kUnroll = kCopyUnroll, bool kFast = true>
__device__ __forceinline__ void copy_bytes(void* dest, const void* source, size_t n, unsigned rank,
                                           unsigned size) {
  copy_bytes_at<kUnroll, kFast>(dest, source, n, rank, size, reinterpret_cast<uintptr_t>(dest),
                                reinterpret_cast<uintptr_t>(source));
}

// Strided element copy: dest[i * dst] = source[i * sst], with E the element's storage type.
template <class E>
__device__ __forceinline__ void copy_strided(E* dest, const E* source, ptrdiff_t dst, ptrdiff_t sst,
                                             size_t nelems, unsigned rank, unsigned size) {
  for (size_t i = rank; i < nelems; i += size) {
    dest[static_cast<ptrdiff_t>(i) * dst] = source[static_cast<ptrdiff_t>(i) * sst];
  }
}

}  // namespace vshmem::device

#endif  // __CUDACC__
