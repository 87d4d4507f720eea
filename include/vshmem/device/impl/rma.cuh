// Device RMA: put, get, p, g, iput, iget with their typed, sized and byte forms, _nbi forms, and
// the shmemx _warp/_block forms.
//
// Cost model (CUB-style): to a peer on the same GPU or over NVLink every form is a copy through
// the window by the calling threads. The thread form moves one word at a time from one thread:
// use it for small messages or when each thread has its own message. The _warp form spreads a
// message over 32 lanes and the _block form over the whole block: use them from 1 KiB or so on.
// All forms use 16-byte accesses when source and destination agree modulo 16. _nbi forms are
// the blocking forms here (the thread performs the copy); shmem_quiet completes both.
#pragma once

#include "vshmem/device/impl/memory.cuh"

#ifdef __CUDACC__

namespace vshmem::device {

// kUnroll: 16-byte words a thread keeps in flight (memory.cuh, copy_words); kFast: the aligned
// path of copy_bytes. The benchmark's "ab" group compares other values with the defaults.
// The peer's delta is read before the group's entry synchronization: it depends on nothing the
// group writes, and its loads complete while the group gathers.
template <class G, unsigned kUnroll = kCopyUnroll, bool kFast = true>
__device__ __forceinline__ void put_group(const char* call, void* dest, const void* source,
                                          size_t bytes, int pe) {
  const int64_t d = peer_delta(pe);
  check_symmetric(call, dest, bytes);
  G::sync();          // the group's writes of `source` are visible to every member
  if (unmapped(d)) {  // cold: through the proxy (impl/proxy.cuh), or a bad PE
    if (G::rank() == 0) vshmemi_proxy_rma(call, 0, dest, source, bytes, pe);
    G::sync();
    return;
  }
  copy_bytes_at<kUnroll, kFast>(at_delta(static_cast<char*>(dest), d), source, bytes, G::rank(),
                                G::size(), reinterpret_cast<uintptr_t>(dest),
                                reinterpret_cast<uintptr_t>(source));
  G::sync();
}

template <class G>
__device__ __forceinline__ void get_group(const char* call, void* dest, const void* source,
                                          size_t bytes, int pe) {
  const int64_t d = peer_delta(pe);
  check_symmetric(call, source, bytes);
  G::sync();
  if (unmapped(d)) {  // cold: through the proxy (impl/proxy.cuh), or a bad PE
    if (G::rank() == 0) vshmemi_proxy_rma(call, 1, dest, source, bytes, pe);
    G::sync();
    return;
  }
  copy_bytes_at(dest, at_delta(static_cast<const char*>(source), d), bytes, G::rank(), G::size(),
                reinterpret_cast<uintptr_t>(dest), reinterpret_cast<uintptr_t>(source));
  G::sync();  // every member sees the whole of `dest`
}

// The extent in bytes of a strided access: (nelems - 1) * stride + 1 elements.
__device__ __forceinline__ size_t strided_extent(ptrdiff_t stride, size_t nelems, size_t elem) {
  if (nelems == 0) return 0;
  size_t s = stride < 0 ? static_cast<size_t>(-stride) : static_cast<size_t>(stride);
  return ((nelems - 1) * s + 1) * elem;
}

template <class G, class E>
__device__ __forceinline__ void iput_group(const char* call, E* dest, const E* source,
                                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {
  G::sync();
  const int64_t d = peer_delta(pe);
  check_symmetric(call, dest, strided_extent(dst, nelems, sizeof(E)));
  if (unmapped(d)) {
    if (G::rank() == 0)
      vshmemi_proxy_strided(call, 0, dest, source, dst, sst, nelems, sizeof(E), pe);
    G::sync();
    return;
  }
  copy_strided(at_delta(dest, d), source, dst, sst, nelems, G::rank(), G::size());
  G::sync();
}

template <class G, class E>
__device__ __forceinline__ void iget_group(const char* call, E* dest, const E* source,
                                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {
  G::sync();
  const int64_t d = peer_delta(pe);
  check_symmetric(call, source, strided_extent(sst, nelems, sizeof(E)));
  if (unmapped(d)) {
    if (G::rank() == 0)
      vshmemi_proxy_strided(call, 1, dest, source, dst, sst, nelems, sizeof(E), pe);
    G::sync();
    return;
  }
  copy_strided(dest, at_delta(source, d), dst, sst, nelems, G::rank(), G::size());
  G::sync();
}

// Element storage for strided copies (the element type itself; a hook for types whose device
// representation differs).
template <class T>
struct Storage {
  using type = T;
};
template <class T>
using StorageOf = typename Storage<T>::type;

template <class T>
__device__ __forceinline__ StorageOf<T>* storage(T* p) {
  return reinterpret_cast<StorageOf<T>*>(p);
}
template <class T>
__device__ __forceinline__ const StorageOf<T>* storage(const T* p) {
  return reinterpret_cast<const StorageOf<T>*>(p);
}

// shmem_p / shmem_g: one store or load through the window; through the proxy for a PE that is
// not mapped (its bits travel in the request).
template <class T>
__device__ __forceinline__ void p_value(const char* call, T* dest, T value, int pe) {
  const int64_t d = peer_delta(pe);
  check_symmetric(call, dest, sizeof(T));
  if (unmapped(d)) {
    static_assert(sizeof(T) <= 8, "p of at most 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &value, sizeof(T));
    vshmemi_proxy_p(call, dest, bits, sizeof(T), pe);
    return;
  }
  *at_delta(dest, d) = value;
}
template <class T>
__device__ __forceinline__ T g_value(const char* call, const T* source, int pe) {
  const int64_t d = peer_delta(pe);
  check_symmetric(call, source, sizeof(T));
  if (unmapped(d)) {
    T v;
    if constexpr (sizeof(T) <= 8) {
      const uint64_t bits = vshmemi_proxy_g(call, source, sizeof(T), pe);
      memcpy(&v, &bits, sizeof(T));
    } else {
      vshmemi_proxy_rma(call, 1, &v, source, sizeof(T), pe);  // answered in the request
    }
    return v;
  }
  return *at_delta(source, d);
}

template <size_t N>
struct SizedWord;
template <>
struct SizedWord<1> {
  using type = uint8_t;
};
template <>
struct SizedWord<2> {
  using type = uint16_t;
};
template <>
struct SizedWord<4> {
  using type = uint32_t;
};
template <>
struct SizedWord<8> {
  using type = uint64_t;
};
template <>
struct SizedWord<16> {
  using type = Bits128;
};

}  // namespace vshmem::device

// The RMA types without long double: nvcc narrows long double to double in device code, so the
// long double calls are host-only (their device declarations have no definition).
#define VSHMEMI_DEV_VALUE_TYPES(X) VSHMEM_RMA_DEVICE_TYPES(X)

#define VSHMEMI_DEV_G(G) vshmem::device::G

// ---- The OpenSHMEM names: device definitions (the host ones are in libvshmem). ----
#ifdef __CUDA_ARCH__
extern "C" {

#define VSHMEMI_DEV_RMA_TYPED(NAME, TYPE)                                                          \
  __device__ __forceinline__ void shmem_##NAME##_put(TYPE* dest, const TYPE* source,               \
                                                     size_t nelems, int pe) {                      \
    vshmem::device::put_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_" #NAME "_put", dest, source,     \
                                                          nelems * sizeof(TYPE), pe);              \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_get(TYPE* dest, const TYPE* source,               \
                                                     size_t nelems, int pe) {                      \
    vshmem::device::get_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_" #NAME "_get", dest, source,     \
                                                          nelems * sizeof(TYPE), pe);              \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_put_nbi(TYPE* dest, const TYPE* source,           \
                                                         size_t nelems, int pe) {                  \
    vshmem::device::put_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_" #NAME "_put_nbi", dest, source, \
                                                          nelems * sizeof(TYPE), pe);              \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_get_nbi(TYPE* dest, const TYPE* source,           \
                                                         size_t nelems, int pe) {                  \
    vshmem::device::get_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_" #NAME "_get_nbi", dest, source, \
                                                          nelems * sizeof(TYPE), pe);              \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_iput(                                             \
      TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {       \
    vshmem::device::iput_group<VSHMEMI_DEV_G(ThreadGroup)>(                                        \
        "shmem_" #NAME "_iput", vshmem::device::storage(dest), vshmem::device::storage(source),    \
        dst, sst, nelems, pe);                                                                     \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_iget(                                             \
      TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {       \
    vshmem::device::iget_group<VSHMEMI_DEV_G(ThreadGroup)>(                                        \
        "shmem_" #NAME "_iget", vshmem::device::storage(dest), vshmem::device::storage(source),    \
        dst, sst, nelems, pe);                                                                     \
  }
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_RMA_TYPED)
#undef VSHMEMI_DEV_RMA_TYPED

#define VSHMEMI_DEV_RMA_VALUE(NAME, TYPE)                                            \
  __device__ __forceinline__ void shmem_##NAME##_p(TYPE* dest, TYPE value, int pe) { \
    vshmem::device::p_value("shmem_" #NAME "_p", dest, value, pe);                   \
  }                                                                                  \
  __device__ __forceinline__ TYPE shmem_##NAME##_g(const TYPE* source, int pe) {     \
    return vshmem::device::g_value("shmem_" #NAME "_g", source, pe);                 \
  }
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_RMA_VALUE)
#undef VSHMEMI_DEV_RMA_VALUE

#define VSHMEMI_DEV_RMA_SIZED(BITS, BYTES)                                                        \
  __device__ __forceinline__ void shmem_put##BITS(void* dest, const void* source, size_t nelems,  \
                                                  int pe) {                                       \
    vshmem::device::put_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_put" #BITS, dest, source,        \
                                                          nelems * BYTES, pe);                    \
  }                                                                                               \
  __device__ __forceinline__ void shmem_get##BITS(void* dest, const void* source, size_t nelems,  \
                                                  int pe) {                                       \
    vshmem::device::get_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_get" #BITS, dest, source,        \
                                                          nelems * BYTES, pe);                    \
  }                                                                                               \
  __device__ __forceinline__ void shmem_put##BITS##_nbi(void* dest, const void* source,           \
                                                        size_t nelems, int pe) {                  \
    vshmem::device::put_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_put" #BITS "_nbi", dest, source, \
                                                          nelems * BYTES, pe);                    \
  }                                                                                               \
  __device__ __forceinline__ void shmem_get##BITS##_nbi(void* dest, const void* source,           \
                                                        size_t nelems, int pe) {                  \
    vshmem::device::get_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_get" #BITS "_nbi", dest, source, \
                                                          nelems * BYTES, pe);                    \
  }                                                                                               \
  __device__ __forceinline__ void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst, \
                                                   ptrdiff_t sst, size_t nelems, int pe) {        \
    using W = vshmem::device::SizedWord<BYTES>::type;                                             \
    vshmem::device::iput_group<VSHMEMI_DEV_G(ThreadGroup)>(                                       \
        "shmem_iput" #BITS, static_cast<W*>(dest), static_cast<const W*>(source), dst, sst,       \
        nelems, pe);                                                                              \
  }                                                                                               \
  __device__ __forceinline__ void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst, \
                                                   ptrdiff_t sst, size_t nelems, int pe) {        \
    using W = vshmem::device::SizedWord<BYTES>::type;                                             \
    vshmem::device::iget_group<VSHMEMI_DEV_G(ThreadGroup)>(                                       \
        "shmem_iget" #BITS, static_cast<W*>(dest), static_cast<const W*>(source), dst, sst,       \
        nelems, pe);                                                                              \
  }
VSHMEM_RMA_SIZES(VSHMEMI_DEV_RMA_SIZED)
#undef VSHMEMI_DEV_RMA_SIZED

__device__ __forceinline__ void shmem_putmem(void* dest, const void* source, size_t nelems,
                                             int pe) {
  vshmem::device::put_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_putmem", dest, source, nelems, pe);
}
__device__ __forceinline__ void shmem_getmem(void* dest, const void* source, size_t nelems,
                                             int pe) {
  vshmem::device::get_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_getmem", dest, source, nelems, pe);
}
__device__ __forceinline__ void shmem_putmem_nbi(void* dest, const void* source, size_t nelems,
                                                 int pe) {
  vshmem::device::put_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_putmem_nbi", dest, source, nelems,
                                                        pe);
}
__device__ __forceinline__ void shmem_getmem_nbi(void* dest, const void* source, size_t nelems,
                                                 int pe) {
  vshmem::device::get_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_getmem_nbi", dest, source, nelems,
                                                        pe);
}

}  // extern "C"
#endif  // __CUDA_ARCH__

// ---- shmemx _warp / _block forms (device only). ----
extern "C" {

#define VSHMEMI_DEV_RMA_TYPED_GROUP(NAME, TYPE, SUFFIX, G)                                         \
  __device__ __forceinline__ void shmemx_##NAME##_put_##SUFFIX(TYPE* dest, const TYPE* source,     \
                                                               size_t nelems, int pe) {            \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>("shmemx_" #NAME "_put_" #SUFFIX, dest, source,     \
                                                nelems * sizeof(TYPE), pe);                        \
  }                                                                                                \
  __device__ __forceinline__ void shmemx_##NAME##_get_##SUFFIX(TYPE* dest, const TYPE* source,     \
                                                               size_t nelems, int pe) {            \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>("shmemx_" #NAME "_get_" #SUFFIX, dest, source,     \
                                                nelems * sizeof(TYPE), pe);                        \
  }                                                                                                \
  __device__ __forceinline__ void shmemx_##NAME##_put_nbi_##SUFFIX(TYPE* dest, const TYPE* source, \
                                                                   size_t nelems, int pe) {        \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>("shmemx_" #NAME "_put_nbi_" #SUFFIX, dest, source, \
                                                nelems * sizeof(TYPE), pe);                        \
  }                                                                                                \
  __device__ __forceinline__ void shmemx_##NAME##_get_nbi_##SUFFIX(TYPE* dest, const TYPE* source, \
                                                                   size_t nelems, int pe) {        \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>("shmemx_" #NAME "_get_nbi_" #SUFFIX, dest, source, \
                                                nelems * sizeof(TYPE), pe);                        \
  }                                                                                                \
  __device__ __forceinline__ void shmemx_##NAME##_iput_##SUFFIX(                                   \
      TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {       \
    vshmem::device::iput_group<VSHMEMI_DEV_G(G)>(                                                  \
        "shmemx_" #NAME "_iput_" #SUFFIX, vshmem::device::storage(dest),                           \
        vshmem::device::storage(source), dst, sst, nelems, pe);                                    \
  }                                                                                                \
  __device__ __forceinline__ void shmemx_##NAME##_iget_##SUFFIX(                                   \
      TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {       \
    vshmem::device::iget_group<VSHMEMI_DEV_G(G)>(                                                  \
        "shmemx_" #NAME "_iget_" #SUFFIX, vshmem::device::storage(dest),                           \
        vshmem::device::storage(source), dst, sst, nelems, pe);                                    \
  }
#define VSHMEMI_DEV_RMA_TYPED_WARP(NAME, TYPE) \
  VSHMEMI_DEV_RMA_TYPED_GROUP(NAME, TYPE, warp, WarpGroup)
#define VSHMEMI_DEV_RMA_TYPED_BLOCK(NAME, TYPE) \
  VSHMEMI_DEV_RMA_TYPED_GROUP(NAME, TYPE, block, BlockGroup)
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_RMA_TYPED_WARP)
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_RMA_TYPED_BLOCK)
#undef VSHMEMI_DEV_RMA_TYPED_WARP
#undef VSHMEMI_DEV_RMA_TYPED_BLOCK
#undef VSHMEMI_DEV_RMA_TYPED_GROUP

#define VSHMEMI_DEV_RMA_SIZED_GROUP(BITS, BYTES, SUFFIX, G)                                       \
  __device__ __forceinline__ void shmemx_put##BITS##_##SUFFIX(void* dest, const void* source,     \
                                                              size_t nelems, int pe) {            \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>("shmemx_put" #BITS "_" #SUFFIX, dest, source,     \
                                                nelems * BYTES, pe);                              \
  }                                                                                               \
  __device__ __forceinline__ void shmemx_get##BITS##_##SUFFIX(void* dest, const void* source,     \
                                                              size_t nelems, int pe) {            \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>("shmemx_get" #BITS "_" #SUFFIX, dest, source,     \
                                                nelems * BYTES, pe);                              \
  }                                                                                               \
  __device__ __forceinline__ void shmemx_put##BITS##_nbi_##SUFFIX(void* dest, const void* source, \
                                                                  size_t nelems, int pe) {        \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>("shmemx_put" #BITS "_nbi_" #SUFFIX, dest, source, \
                                                nelems * BYTES, pe);                              \
  }                                                                                               \
  __device__ __forceinline__ void shmemx_get##BITS##_nbi_##SUFFIX(void* dest, const void* source, \
                                                                  size_t nelems, int pe) {        \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>("shmemx_get" #BITS "_nbi_" #SUFFIX, dest, source, \
                                                nelems * BYTES, pe);                              \
  }                                                                                               \
  __device__ __forceinline__ void shmemx_iput##BITS##_##SUFFIX(                                   \
      void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {      \
    using W = vshmem::device::SizedWord<BYTES>::type;                                             \
    vshmem::device::iput_group<VSHMEMI_DEV_G(G)>(                                                 \
        "shmemx_iput" #BITS "_" #SUFFIX, static_cast<W*>(dest), static_cast<const W*>(source),    \
        dst, sst, nelems, pe);                                                                    \
  }                                                                                               \
  __device__ __forceinline__ void shmemx_iget##BITS##_##SUFFIX(                                   \
      void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {      \
    using W = vshmem::device::SizedWord<BYTES>::type;                                             \
    vshmem::device::iget_group<VSHMEMI_DEV_G(G)>(                                                 \
        "shmemx_iget" #BITS "_" #SUFFIX, static_cast<W*>(dest), static_cast<const W*>(source),    \
        dst, sst, nelems, pe);                                                                    \
  }
#define VSHMEMI_DEV_RMA_SIZED_WARP(BITS, BYTES) \
  VSHMEMI_DEV_RMA_SIZED_GROUP(BITS, BYTES, warp, WarpGroup)
#define VSHMEMI_DEV_RMA_SIZED_BLOCK(BITS, BYTES) \
  VSHMEMI_DEV_RMA_SIZED_GROUP(BITS, BYTES, block, BlockGroup)
VSHMEM_RMA_SIZES(VSHMEMI_DEV_RMA_SIZED_WARP)
VSHMEM_RMA_SIZES(VSHMEMI_DEV_RMA_SIZED_BLOCK)
#undef VSHMEMI_DEV_RMA_SIZED_WARP
#undef VSHMEMI_DEV_RMA_SIZED_BLOCK
#undef VSHMEMI_DEV_RMA_SIZED_GROUP

#define VSHMEMI_DEV_RMA_MEM_GROUP(SUFFIX, G)                                                    \
  __device__ __forceinline__ void shmemx_putmem_##SUFFIX(void* dest, const void* source,        \
                                                         size_t nelems, int pe) {               \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>("shmemx_putmem_" #SUFFIX, dest, source, nelems, \
                                                pe);                                            \
  }                                                                                             \
  __device__ __forceinline__ void shmemx_getmem_##SUFFIX(void* dest, const void* source,        \
                                                         size_t nelems, int pe) {               \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>("shmemx_getmem_" #SUFFIX, dest, source, nelems, \
                                                pe);                                            \
  }                                                                                             \
  __device__ __forceinline__ void shmemx_putmem_nbi_##SUFFIX(void* dest, const void* source,    \
                                                             size_t nelems, int pe) {           \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>("shmemx_putmem_nbi_" #SUFFIX, dest, source,     \
                                                nelems, pe);                                    \
  }                                                                                             \
  __device__ __forceinline__ void shmemx_getmem_nbi_##SUFFIX(void* dest, const void* source,    \
                                                             size_t nelems, int pe) {           \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>("shmemx_getmem_nbi_" #SUFFIX, dest, source,     \
                                                nelems, pe);                                    \
  }
VSHMEMI_DEV_RMA_MEM_GROUP(warp, WarpGroup)
VSHMEMI_DEV_RMA_MEM_GROUP(block, BlockGroup)
#undef VSHMEMI_DEV_RMA_MEM_GROUP

}  // extern "C"

#endif  // __CUDACC__
