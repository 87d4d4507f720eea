// Device atomics: every OpenSHMEM 1.5 AMO on every type, at system scope, so that they are
// atomic with respect to the host's atomics and to kernels of other PEs on this or another GPU.
// They are relaxed (unordered) like the specification's AMOs; shmem_fence / shmem_quiet order
// and complete them.
#pragma once

#include "vshmem/device/impl/memory.cuh"
#include "vshmem/shmem_amo.h"

#ifdef __CUDACC__

namespace vshmem::device {

template <class T>
__device__ __forceinline__ void check_amo(const char* call, const T* dest) {
  check_symmetric(call, dest, sizeof(T));
  if (debug_on() && reinterpret_cast<uintptr_t>(dest) % sizeof(T) != 0) {
    vshmemi_device_fail(call, "the address is not aligned to its type");
  }
}

// The AMO on a PE reached through the proxy (impl/proxy.cuh): the cold branch of every AMO.
template <class T>
__device__ __forceinline__ T amo_proxy(const char* call, unsigned aop, const T* dest, T operand,
                                       T compare, bool fetch, int pe) {
  return bit_cast<T>(static_cast<Bits<T>>(vshmemi_proxy_amo(
      call, aop, const_cast<T*>(dest), static_cast<uint64_t>(bit_cast<Bits<T>>(operand)),
      static_cast<uint64_t>(bit_cast<Bits<T>>(compare)), sizeof(T), fetch ? 1 : 0, pe)));
}

// pe's copy of dest, after the checks; d is pe's delta (kUnmappedDelta: through the proxy).
template <class T>
__device__ __forceinline__ Bits<T>* amo_at(const char* call, const T* dest, int64_t d) {
  check_amo(call, dest);
  return bits_ptr(at_delta(const_cast<T*>(dest), d));
}

template <class T>
__device__ __forceinline__ T amo_fetch(const char* call, const T* source, int pe) {
  const int64_t d = peer_delta(pe);
  if (unmapped(d)) return amo_proxy(call, proxy::kAmoFetch, source, T{}, T{}, true, pe);
  return bit_cast<T>(ld_relaxed(amo_at(call, source, d)));
}
template <class T>
__device__ __forceinline__ void amo_set(const char* call, T* dest, T value, int pe) {
  const int64_t d = peer_delta(pe);
  if (unmapped(d)) {
    amo_proxy(call, proxy::kAmoSet, dest, value, T{}, false, pe);
    return;
  }
  st_relaxed(amo_at(call, dest, d), bit_cast<Bits<T>>(value));
}
template <class T>
__device__ __forceinline__ T amo_swap(const char* call, T* dest, T value, int pe) {
  const int64_t d = peer_delta(pe);
  if (unmapped(d)) return amo_proxy(call, proxy::kAmoSwap, dest, value, T{}, true, pe);
  return bit_cast<T>(atom_exch(amo_at(call, dest, d), bit_cast<Bits<T>>(value)));
}
template <class T>
__device__ __forceinline__ T amo_compare_swap(const char* call, T* dest, T cond, T value, int pe) {
  const int64_t d = peer_delta(pe);
  if (unmapped(d)) return amo_proxy(call, proxy::kAmoCompareSwap, dest, value, cond, true, pe);
  return bit_cast<T>(
      atom_cas(amo_at(call, dest, d), bit_cast<Bits<T>>(cond), bit_cast<Bits<T>>(value)));
}
// Integer addition is the same on the two's-complement bits for signed and unsigned types. The
// atomic is issued (predicated on a mapped peer) before the test that sends an unmapped one through
// the proxy: in a chain of fetch-and-adds no branch stands between one's result and the next one.
template <class T>
__device__ __forceinline__ T amo_fetch_add(const char* call, T* dest, T value, int pe) {
  const int64_t d = peer_delta(pe);
  if (!unmapped(d)) check_amo(call, dest);  // where amo_at checks: mapped peers
  const Bits<T> r =
      atom_add_if(bits_ptr(at_delta(dest, d)), bit_cast<Bits<T>>(value), !unmapped(d));
  if (unmapped(d)) return amo_proxy(call, proxy::kAmoFetchAdd, dest, value, T{}, true, pe);
  return bit_cast<T>(r);
}
template <class T>
__device__ __forceinline__ void amo_add(const char* call, T* dest, T value, int pe) {
  const int64_t d = peer_delta(pe);
  if (unmapped(d)) {
    amo_proxy(call, proxy::kAmoFetchAdd, dest, value, T{}, false, pe);
    return;
  }
  red_add(amo_at(call, dest, d), bit_cast<Bits<T>>(value));
}
// and / or / xor: Local(pointer, operand) is the mapped form.
constexpr unsigned kAmoFetchand = proxy::kAmoFetchAnd;
constexpr unsigned kAmoFetchor = proxy::kAmoFetchOr;
constexpr unsigned kAmoFetchxor = proxy::kAmoFetchXor;
template <class T, class Local>
__device__ __forceinline__ T amo_bitwise(const char* call, unsigned aop, T* dest, T value,
                                         bool fetch, int pe, Local local) {
  const int64_t d = peer_delta(pe);
  if (unmapped(d)) return amo_proxy(call, aop, dest, value, T{}, fetch, pe);
  return local(amo_at(call, dest, d), value);
}

}  // namespace vshmem::device

// The AMO type tables of OpenSHMEM 1.5 (Tables 10-12).
#define VSHMEMI_DEV_AMO_STANDARD_TYPES(X) VSHMEM_AMO_STANDARD_TYPES(X)
#define VSHMEMI_DEV_AMO_EXTENDED_TYPES(X) VSHMEM_AMO_EXTENDED_TYPES(X)
#define VSHMEMI_DEV_AMO_BITWISE_TYPES(X) VSHMEM_AMO_BITWISE_TYPES(X)

// The declarations (__host__ __device__ under nvcc) are those of vshmem/shmem_amo.h; the device
// definitions follow.
#ifdef __CUDA_ARCH__
extern "C" {

#define VSHMEMI_DEV_AMO_EXTENDED(NAME, TYPE)                                                       \
  __device__ __forceinline__ TYPE shmem_##NAME##_atomic_fetch(const TYPE* source, int pe) {        \
    return vshmem::device::amo_fetch("shmem_" #NAME "_atomic_fetch", source, pe);                  \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_atomic_set(TYPE* dest, TYPE value, int pe) {      \
    vshmem::device::amo_set("shmem_" #NAME "_atomic_set", dest, value, pe);                        \
  }                                                                                                \
  __device__ __forceinline__ TYPE shmem_##NAME##_atomic_swap(TYPE* dest, TYPE value, int pe) {     \
    return vshmem::device::amo_swap("shmem_" #NAME "_atomic_swap", dest, value, pe);               \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_atomic_fetch_nbi(TYPE* fetch, const TYPE* source, \
                                                                  int pe) {                        \
    *fetch = vshmem::device::amo_fetch("shmem_" #NAME "_atomic_fetch_nbi", source, pe);            \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_atomic_swap_nbi(TYPE* fetch, TYPE* dest,          \
                                                                 TYPE value, int pe) {             \
    *fetch = vshmem::device::amo_swap("shmem_" #NAME "_atomic_swap_nbi", dest, value, pe);         \
  }
VSHMEMI_DEV_AMO_EXTENDED_TYPES(VSHMEMI_DEV_AMO_EXTENDED)
#undef VSHMEMI_DEV_AMO_EXTENDED

#define VSHMEMI_DEV_AMO_STANDARD(NAME, TYPE)                                                    \
  __device__ __forceinline__ TYPE shmem_##NAME##_atomic_compare_swap(TYPE* dest, TYPE cond,     \
                                                                     TYPE value, int pe) {      \
    return vshmem::device::amo_compare_swap("shmem_" #NAME "_atomic_compare_swap", dest, cond,  \
                                            value, pe);                                         \
  }                                                                                             \
  __device__ __forceinline__ void shmem_##NAME##_atomic_compare_swap_nbi(                       \
      TYPE* fetch, TYPE* dest, TYPE cond, TYPE value, int pe) {                                 \
    *fetch = vshmem::device::amo_compare_swap("shmem_" #NAME "_atomic_compare_swap_nbi", dest,  \
                                              cond, value, pe);                                 \
  }                                                                                             \
  __device__ __forceinline__ TYPE shmem_##NAME##_atomic_fetch_inc(TYPE* dest, int pe) {         \
    return vshmem::device::amo_fetch_add("shmem_" #NAME "_atomic_fetch_inc", dest,              \
                                         static_cast<TYPE>(1), pe);                             \
  }                                                                                             \
  __device__ __forceinline__ void shmem_##NAME##_atomic_inc(TYPE* dest, int pe) {               \
    vshmem::device::amo_add("shmem_" #NAME "_atomic_inc", dest, static_cast<TYPE>(1), pe);      \
  }                                                                                             \
  __device__ __forceinline__ void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE* fetch, TYPE* dest,  \
                                                                      int pe) {                 \
    *fetch = vshmem::device::amo_fetch_add("shmem_" #NAME "_atomic_fetch_inc_nbi", dest,        \
                                           static_cast<TYPE>(1), pe);                           \
  }                                                                                             \
  __device__ __forceinline__ TYPE shmem_##NAME##_atomic_fetch_add(TYPE* dest, TYPE value,       \
                                                                  int pe) {                     \
    return vshmem::device::amo_fetch_add("shmem_" #NAME "_atomic_fetch_add", dest, value, pe);  \
  }                                                                                             \
  __device__ __forceinline__ void shmem_##NAME##_atomic_add(TYPE* dest, TYPE value, int pe) {   \
    vshmem::device::amo_add("shmem_" #NAME "_atomic_add", dest, value, pe);                     \
  }                                                                                             \
  __device__ __forceinline__ void shmem_##NAME##_atomic_fetch_add_nbi(TYPE* fetch, TYPE* dest,  \
                                                                      TYPE value, int pe) {     \
    *fetch =                                                                                    \
        vshmem::device::amo_fetch_add("shmem_" #NAME "_atomic_fetch_add_nbi", dest, value, pe); \
  }
VSHMEMI_DEV_AMO_STANDARD_TYPES(VSHMEMI_DEV_AMO_STANDARD)
#undef VSHMEMI_DEV_AMO_STANDARD

#define VSHMEMI_DEV_AMO_BITWISE_OP(NAME, TYPE, OP)                                                 \
  __device__ __forceinline__ TYPE shmem_##NAME##_atomic_fetch_##OP(TYPE* dest, TYPE value,         \
                                                                   int pe) {                       \
    using B = vshmem::device::Bits<TYPE>;                                                          \
    return vshmem::device::amo_bitwise(                                                            \
        "shmem_" #NAME "_atomic_fetch_" #OP, vshmem::device::kAmoFetch##OP, dest, value, true, pe, \
        [](B* p, TYPE v) {                                                                         \
          return static_cast<TYPE>(vshmem::device::atom_##OP(p, static_cast<B>(v)));               \
        });                                                                                        \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_atomic_##OP(TYPE* dest, TYPE value, int pe) {     \
    using B = vshmem::device::Bits<TYPE>;                                                          \
    vshmem::device::amo_bitwise("shmem_" #NAME "_atomic_" #OP, vshmem::device::kAmoFetch##OP,      \
                                dest, value, false, pe, [](B* p, TYPE v) {                         \
                                  vshmem::device::red_##OP(p, static_cast<B>(v));                  \
                                  return v;                                                        \
                                });                                                                \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE* fetch, TYPE* dest,  \
                                                                         TYPE value, int pe) {     \
    *fetch = shmem_##NAME##_atomic_fetch_##OP(dest, value, pe);                                    \
  }
#define VSHMEMI_DEV_AMO_BITWISE(NAME, TYPE)   \
  VSHMEMI_DEV_AMO_BITWISE_OP(NAME, TYPE, and) \
  VSHMEMI_DEV_AMO_BITWISE_OP(NAME, TYPE, or)  \
  VSHMEMI_DEV_AMO_BITWISE_OP(NAME, TYPE, xor)
VSHMEMI_DEV_AMO_BITWISE_TYPES(VSHMEMI_DEV_AMO_BITWISE)
#undef VSHMEMI_DEV_AMO_BITWISE
#undef VSHMEMI_DEV_AMO_BITWISE_OP

}  // extern "C"
#endif  // __CUDA_ARCH__

#endif  // __CUDACC__
