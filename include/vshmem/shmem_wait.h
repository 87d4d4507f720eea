/* Point-to-point synchronization (OpenSHMEM 1.5 section 9.10): wait_until and test in their
 * single, _all, _any, _some and _vector forms over the point-to-point type table, and the
 * deprecated shmem_wait / shmem_TYPENAME_wait.
 *
 * ivars must be symmetric (they are updated by other PEs through RMA, AMOs or signals). Each
 * ivar is read atomically; when a wait is satisfied, every update the writer made before the
 * satisfying one is visible. Waits spin briefly, then yield the core (PEs may outnumber cores).
 * status (may be NULL) excludes element i from the wait when status[i] != 0. _any returns
 * SIZE_MAX and _some returns 0 when every element is excluded or nelems is 0. */
#ifndef VSHMEM_SHMEM_WAIT_H
#define VSHMEM_SHMEM_WAIT_H

#include "vshmem/shmem_types.h"

/* Table 10 (point-to-point synchronization types): X(TYPENAME, TYPE). */
#define VSHMEM_P2P_TYPES(X)        \
  X(short, short)                  \
  X(int, int)                      \
  X(long, long)                    \
  X(longlong, long long)           \
  X(ushort, unsigned short)        \
  X(uint, unsigned int)            \
  X(ulong, unsigned long)          \
  X(ulonglong, unsigned long long) \
  X(int32, int32_t)                \
  X(int64, int64_t)                \
  X(uint32, uint32_t)              \
  X(uint64, uint64_t)              \
  X(size, size_t)                  \
  X(ptrdiff, ptrdiff_t)

VSHMEM_BEGIN_C

#define VSHMEM_DECLARE_WAIT(NAME, TYPE)                                                            \
  VSHMEM_HOSTDEV void shmem_##NAME##_wait_until(TYPE* ivar, int cmp, TYPE cmp_value);              \
  VSHMEM_HOSTDEV void shmem_##NAME##_wait_until_all(TYPE* ivars, size_t nelems, const int* status, \
                                                    int cmp, TYPE cmp_value);                      \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_wait_until_any(TYPE* ivars, size_t nelems,                  \
                                                      const int* status, int cmp, TYPE cmp_value); \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_wait_until_some(                                            \
      TYPE* ivars, size_t nelems, size_t* indices, const int* status, int cmp, TYPE cmp_value);    \
  VSHMEM_HOSTDEV void shmem_##NAME##_wait_until_all_vector(                                        \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE* cmp_values);                   \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_wait_until_any_vector(                                      \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE* cmp_values);                   \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_wait_until_some_vector(                                     \
      TYPE* ivars, size_t nelems, size_t* indices, const int* status, int cmp, TYPE* cmp_values);  \
  VSHMEM_HOSTDEV int shmem_##NAME##_test(TYPE* ivar, int cmp, TYPE cmp_value);                     \
  VSHMEM_HOSTDEV int shmem_##NAME##_test_all(TYPE* ivars, size_t nelems, const int* status,        \
                                             int cmp, TYPE cmp_value);                             \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_test_any(TYPE* ivars, size_t nelems, const int* status,     \
                                                int cmp, TYPE cmp_value);                          \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_test_some(TYPE* ivars, size_t nelems, size_t* indices,      \
                                                 const int* status, int cmp, TYPE cmp_value);      \
  VSHMEM_HOSTDEV int shmem_##NAME##_test_all_vector(TYPE* ivars, size_t nelems, const int* status, \
                                                    int cmp, TYPE* cmp_values);                    \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_test_any_vector(                                            \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE* cmp_values);                   \
  VSHMEM_HOSTDEV size_t shmem_##NAME##_test_some_vector(                                           \
      TYPE* ivars, size_t nelems, size_t* indices, const int* status, int cmp, TYPE* cmp_values);
VSHMEM_P2P_TYPES(VSHMEM_DECLARE_WAIT)

/* Deprecated: wait until *ivar != cmp_value. */
#define VSHMEM_DECLARE_WAIT_DEPRECATED(NAME, TYPE) \
  void shmem_##NAME##_wait(TYPE* ivar, TYPE cmp_value);
VSHMEM_DECLARE_WAIT_DEPRECATED(short, short)
VSHMEM_DECLARE_WAIT_DEPRECATED(int, int)
VSHMEM_DECLARE_WAIT_DEPRECATED(long, long)
VSHMEM_DECLARE_WAIT_DEPRECATED(longlong, long long)
void shmem_wait(long* ivar, long cmp_value);
/* The pre-1.4 long form; in C11 the type-generic shmem_wait_until (shmem_generic.h) replaces it
 * and calls the typed form. */
void shmem_wait_until(long* ivar, int cmp, long cmp_value);

VSHMEM_END_C

#endif
