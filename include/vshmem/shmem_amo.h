/* Atomic memory operations (OpenSHMEM 1.5 section 9.8): the standard, extended and bitwise AMOs
 * over their type tables, the non-blocking fetching forms (_nbi), the context (ctx_) forms and
 * the deprecated names (fadd, finc, cswap, swap, fetch, set, add, inc).
 *
 * dest/source must be symmetric and aligned to their type. Every AMO is atomic with respect to
 * every other AMO on the same location, whichever PE issues it and whichever path (mapping or
 * staged transport) carries it. float/double fetch, set and swap act on the bit pattern. On the
 * host every AMO completes before the call returns, so the _nbi forms have written *fetch on
 * return; shmem_quiet is still the portable way to wait for them. */
#ifndef VSHMEM_SHMEM_AMO_H
#define VSHMEM_SHMEM_AMO_H

#include "vshmem/shmem_types.h"

/* Table 6 (standard AMO types): X(TYPENAME, TYPE). */
#define VSHMEM_AMO_STANDARD_TYPES(X) \
  X(int, int)                        \
  X(long, long)                      \
  X(longlong, long long)             \
  X(uint, unsigned int)              \
  X(ulong, unsigned long)            \
  X(ulonglong, unsigned long long)   \
  X(int32, int32_t)                  \
  X(int64, int64_t)                  \
  X(uint32, uint32_t)                \
  X(uint64, uint64_t)                \
  X(size, size_t)                    \
  X(ptrdiff, ptrdiff_t)

/* Table 7 (extended AMO types): the standard ones plus float and double. */
#define VSHMEM_AMO_EXTENDED_TYPES(X) \
  X(float, float)                    \
  X(double, double)                  \
  VSHMEM_AMO_STANDARD_TYPES(X)

/* Table 8 (bitwise AMO types). */
#define VSHMEM_AMO_BITWISE_TYPES(X) \
  X(uint, unsigned int)             \
  X(ulong, unsigned long)           \
  X(ulonglong, unsigned long long)  \
  X(int32, int32_t)                 \
  X(int64, int64_t)                 \
  X(uint32, uint32_t)               \
  X(uint64, uint64_t)

/* Types of the deprecated AMO names (OpenSHMEM 1.3 tables). */
#define VSHMEM_AMO_DEPRECATED_TYPES(X) X(int, int) X(long, long) X(longlong, long long)
#define VSHMEM_AMO_DEPRECATED_EXTENDED_TYPES(X) \
  X(float, float) X(double, double) VSHMEM_AMO_DEPRECATED_TYPES(X)

VSHMEM_BEGIN_C

#define VSHMEM_DECLARE_AMO_EXTENDED(NAME, TYPE)                                                    \
  VSHMEM_HOSTDEV TYPE shmem_##NAME##_atomic_fetch(const TYPE* source, int pe);                     \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_set(TYPE* dest, TYPE value, int pe);                   \
  VSHMEM_HOSTDEV TYPE shmem_##NAME##_atomic_swap(TYPE* dest, TYPE value, int pe);                  \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_fetch_nbi(TYPE* fetch, const TYPE* source, int pe);    \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_swap_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe); \
  TYPE shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE* source, int pe);               \
  void shmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe);             \
  TYPE shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe);            \
  void shmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, TYPE* fetch, const TYPE* source,       \
                                           int pe);                                                \
  void shmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest, TYPE value,    \
                                          int pe);
VSHMEM_AMO_EXTENDED_TYPES(VSHMEM_DECLARE_AMO_EXTENDED)

#define VSHMEM_DECLARE_AMO_STANDARD(NAME, TYPE)                                                   \
  VSHMEM_HOSTDEV TYPE shmem_##NAME##_atomic_compare_swap(TYPE* dest, TYPE cond, TYPE value,       \
                                                         int pe);                                 \
  VSHMEM_HOSTDEV TYPE shmem_##NAME##_atomic_fetch_inc(TYPE* dest, int pe);                        \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_inc(TYPE* dest, int pe);                              \
  VSHMEM_HOSTDEV TYPE shmem_##NAME##_atomic_fetch_add(TYPE* dest, TYPE value, int pe);            \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_add(TYPE* dest, TYPE value, int pe);                  \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_compare_swap_nbi(TYPE* fetch, TYPE* dest, TYPE cond,  \
                                                             TYPE value, int pe);                 \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE* fetch, TYPE* dest, int pe);       \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_fetch_add_nbi(TYPE* fetch, TYPE* dest, TYPE value,    \
                                                          int pe);                                \
  TYPE shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE* dest, TYPE cond, TYPE value, \
                                              int pe);                                            \
  TYPE shmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, TYPE* dest, int pe);                  \
  void shmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, TYPE* dest, int pe);                        \
  TYPE shmem_ctx_##NAME##_atomic_fetch_add(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe);      \
  void shmem_ctx_##NAME##_atomic_add(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe);            \
  void shmem_ctx_##NAME##_atomic_compare_swap_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest,       \
                                                  TYPE cond, TYPE value, int pe);                 \
  void shmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest, int pe); \
  void shmem_ctx_##NAME##_atomic_fetch_add_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest,          \
                                               TYPE value, int pe);
VSHMEM_AMO_STANDARD_TYPES(VSHMEM_DECLARE_AMO_STANDARD)

#define VSHMEM_DECLARE_AMO_BITWISE_OP(NAME, TYPE, OP)                                             \
  VSHMEM_HOSTDEV TYPE shmem_##NAME##_atomic_fetch_##OP(TYPE* dest, TYPE value, int pe);           \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_##OP(TYPE* dest, TYPE value, int pe);                 \
  VSHMEM_HOSTDEV void shmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE* fetch, TYPE* dest, TYPE value, \
                                                             int pe);                             \
  TYPE shmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe);     \
  void shmem_ctx_##NAME##_atomic_##OP(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe);           \
  void shmem_ctx_##NAME##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest,       \
                                                  TYPE value, int pe);
#define VSHMEM_DECLARE_AMO_BITWISE(NAME, TYPE)   \
  VSHMEM_DECLARE_AMO_BITWISE_OP(NAME, TYPE, and) \
  VSHMEM_DECLARE_AMO_BITWISE_OP(NAME, TYPE, or)  \
  VSHMEM_DECLARE_AMO_BITWISE_OP(NAME, TYPE, xor)
VSHMEM_AMO_BITWISE_TYPES(VSHMEM_DECLARE_AMO_BITWISE)

/* Deprecated names, still called by common benchmarks. */
#define VSHMEM_DECLARE_AMO_DEPRECATED(NAME, TYPE)                       \
  TYPE shmem_##NAME##_cswap(TYPE* dest, TYPE cond, TYPE value, int pe); \
  TYPE shmem_##NAME##_finc(TYPE* dest, int pe);                         \
  void shmem_##NAME##_inc(TYPE* dest, int pe);                          \
  TYPE shmem_##NAME##_fadd(TYPE* dest, TYPE value, int pe);             \
  void shmem_##NAME##_add(TYPE* dest, TYPE value, int pe);
VSHMEM_AMO_DEPRECATED_TYPES(VSHMEM_DECLARE_AMO_DEPRECATED)
#define VSHMEM_DECLARE_AMO_DEPRECATED_EXTENDED(NAME, TYPE)  \
  TYPE shmem_##NAME##_swap(TYPE* dest, TYPE value, int pe); \
  TYPE shmem_##NAME##_fetch(const TYPE* source, int pe);    \
  void shmem_##NAME##_set(TYPE* dest, TYPE value, int pe);
VSHMEM_AMO_DEPRECATED_EXTENDED_TYPES(VSHMEM_DECLARE_AMO_DEPRECATED_EXTENDED)

VSHMEM_END_C

#endif
