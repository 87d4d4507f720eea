// 16-bit floating point in the device API: `half` (__half) and `bfloat16` (__nv_bfloat16), the
// NVSHMEM type names. Device code gets, for both, the typed RMA calls (put, get, p, g, _nbi,
// iput, iget; thread, _warp and _block forms), broadcast / fcollect / alltoall, and the sum, prod,
// min and max reductions and reduce-scatters. Reductions combine in float and round once to the
// element type, in team order, so every PE computes the same bits. These names exist in device
// code only (the host API has no 16-bit types; shmemx_half_*_on_stream calls are the host's way
// in, shmemx.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "vshmem/device/impl/coll.cuh"
#include "vshmem/device/impl/rma.cuh"

#ifdef __CUDACC__

namespace vshmem::device {
template <>
struct Accumulator<__half> {
  using type = float;
};
template <>
struct Accumulator<__nv_bfloat16> {
  using type = float;
};
}  // namespace vshmem::device

#define VSHMEMI_DEV_HALF_TYPES(X) X(half, __half) X(bfloat16, __nv_bfloat16)

#define VSHMEMI_DEV_HALF_RMA(NAME, TYPE, PRE, SUF, G)                                            \
  __device__ __forceinline__ void PRE##NAME##_put##SUF(TYPE* dest, const TYPE* source,           \
                                                       size_t nelems, int pe) {                  \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>(#PRE #NAME "_put" #SUF, dest, source,            \
                                                nelems * sizeof(TYPE), pe);                      \
  }                                                                                              \
  __device__ __forceinline__ void PRE##NAME##_get##SUF(TYPE* dest, const TYPE* source,           \
                                                       size_t nelems, int pe) {                  \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>(#PRE #NAME "_get" #SUF, dest, source,            \
                                                nelems * sizeof(TYPE), pe);                      \
  }                                                                                              \
  __device__ __forceinline__ void PRE##NAME##_put_nbi##SUF(TYPE* dest, const TYPE* source,       \
                                                           size_t nelems, int pe) {              \
    vshmem::device::put_group<VSHMEMI_DEV_G(G)>(#PRE #NAME "_put_nbi" #SUF, dest, source,        \
                                                nelems * sizeof(TYPE), pe);                      \
  }                                                                                              \
  __device__ __forceinline__ void PRE##NAME##_get_nbi##SUF(TYPE* dest, const TYPE* source,       \
                                                           size_t nelems, int pe) {              \
    vshmem::device::get_group<VSHMEMI_DEV_G(G)>(#PRE #NAME "_get_nbi" #SUF, dest, source,        \
                                                nelems * sizeof(TYPE), pe);                      \
  }                                                                                              \
  __device__ __forceinline__ void PRE##NAME##_iput##SUF(                                         \
      TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {     \
    using W = vshmem::device::SizedWord<sizeof(TYPE)>::type;                                     \
    vshmem::device::iput_group<VSHMEMI_DEV_G(G)>(                                                \
        #PRE #NAME "_iput" #SUF, reinterpret_cast<W*>(dest), reinterpret_cast<const W*>(source), \
        dst, sst, nelems, pe);                                                                   \
  }                                                                                              \
  __device__ __forceinline__ void PRE##NAME##_iget##SUF(                                         \
      TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {     \
    using W = vshmem::device::SizedWord<sizeof(TYPE)>::type;                                     \
    vshmem::device::iget_group<VSHMEMI_DEV_G(G)>(                                                \
        #PRE #NAME "_iget" #SUF, reinterpret_cast<W*>(dest), reinterpret_cast<const W*>(source), \
        dst, sst, nelems, pe);                                                                   \
  }
#define VSHMEMI_DEV_HALF_VALUE(NAME, TYPE)                                           \
  __device__ __forceinline__ void shmem_##NAME##_p(TYPE* dest, TYPE value, int pe) { \
    vshmem::device::p_value("shmem_" #NAME "_p", dest, value, pe);                   \
  }                                                                                  \
  __device__ __forceinline__ TYPE shmem_##NAME##_g(const TYPE* source, int pe) {     \
    return vshmem::device::g_value("shmem_" #NAME "_g", source, pe);                 \
  }
#define VSHMEMI_DEV_HALF_ALL(NAME, TYPE)                            \
  VSHMEMI_DEV_HALF_RMA(NAME, TYPE, shmem_, , ThreadGroup)           \
  VSHMEMI_DEV_HALF_RMA(NAME, TYPE, shmemx_, _warp, WarpGroup)       \
  VSHMEMI_DEV_HALF_RMA(NAME, TYPE, shmemx_, _block, BlockGroup)     \
  VSHMEMI_DEV_HALF_VALUE(NAME, TYPE)                                \
  VSHMEMI_DEV_COLL_TYPED(NAME, TYPE, shmem_, , ThreadGroup)         \
  VSHMEMI_DEV_COLL_TYPED(NAME, TYPE, shmemx_, _warp, WarpGroup)     \
  VSHMEMI_DEV_COLL_TYPED(NAME, TYPE, shmemx_, _block, BlockGroup)   \
  VSHMEMI_DEV_REDUCE_ARITH(NAME, TYPE, shmem_, , ThreadGroup)       \
  VSHMEMI_DEV_REDUCE_ARITH(NAME, TYPE, shmemx_, _warp, WarpGroup)   \
  VSHMEMI_DEV_REDUCE_ARITH(NAME, TYPE, shmemx_, _block, BlockGroup) \
  VSHMEMI_DEV_RS_ARITH_ALL(NAME, TYPE)

extern "C" {
VSHMEMI_DEV_HALF_TYPES(VSHMEMI_DEV_HALF_ALL)
}

#endif  // __CUDACC__
