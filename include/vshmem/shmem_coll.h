/* Collective routines (OpenSHMEM 1.5 section 9.9): team sync, broadcast, collect, fcollect,
 * alltoall(s) and reductions over teams, and the deprecated active-set forms (PE_start,
 * logPE_stride, PE_size, pSync).
 *
 * dest and source are symmetric. Every member of the team calls the routine with the same
 * arguments. Each routine returns once the local dest holds the result and the local source may
 * be reused. Algorithms: dissemination barrier (ceil(log2 N) rounds), binomial-tree broadcast
 * (depth ceil(log2 N)), recursive-doubling reduction (log2 N rounds, results identical on every
 * PE), and direct copies for collect/fcollect/alltoall(s) between two barriers.
 *
 * Active-set forms: vshmem keeps its own synchronization state, so pSync and pWrk are checked for
 * NULL but otherwise never read or written (they may be ordinary, non-symmetric arrays); the
 * SHMEM_SYNC_VALUE contract is met trivially. Active sets that overlap must be used in the same
 * order by the PEs they share, as the specification requires. */
#ifndef VSHMEM_SHMEM_COLL_H
#define VSHMEM_SHMEM_COLL_H

#include "vshmem/shmem_types.h"

/* Complex element types of the sum/prod reductions: C's _Complex; std::complex in C++ (same
 * layout). The library's own C++ sources see a two-member struct of the same layout. */
#if defined(__cplusplus)
#if defined(VSHMEM_COMPLEX_AS_STRUCT)
typedef struct {
  double re, im;
} vshmem_complexd_t;
typedef struct {
  float re, im;
} vshmem_complexf_t;
#else
#include <complex>
typedef std::complex<double> vshmem_complexd_t;
typedef std::complex<float> vshmem_complexf_t;
#endif
#else
typedef double _Complex vshmem_complexd_t;
typedef float _Complex vshmem_complexf_t;
#endif

/* Reduction type tables of OpenSHMEM 1.5: X(TYPENAME, TYPE). */
#define VSHMEM_REDUCE_BITWISE_TYPES(X) \
  X(uchar, unsigned char)              \
  X(ushort, unsigned short)            \
  X(uint, unsigned int)                \
  X(ulong, unsigned long)              \
  X(ulonglong, unsigned long long)     \
  X(int8, int8_t)                      \
  X(int16, int16_t)                    \
  X(int32, int32_t)                    \
  X(int64, int64_t)                    \
  X(uint8, uint8_t)                    \
  X(uint16, uint16_t)                  \
  X(uint32, uint32_t)                  \
  X(uint64, uint64_t)                  \
  X(size, size_t)
#define VSHMEM_REDUCE_INTEGER_TYPES(X) \
  X(char, char)                        \
  X(schar, signed char)                \
  X(short, short)                      \
  X(int, int)                          \
  X(long, long)                        \
  X(longlong, long long)               \
  X(ptrdiff, ptrdiff_t)                \
  VSHMEM_REDUCE_BITWISE_TYPES(X)
/* Device code has the real types but long double (nvcc narrows it to double there). */
#define VSHMEM_REDUCE_DEVICE_REAL_TYPES(X) X(float, float) X(double, double)
#define VSHMEM_REDUCE_REAL_TYPES(X) VSHMEM_REDUCE_DEVICE_REAL_TYPES(X) X(longdouble, long double)
#define VSHMEM_REDUCE_MINMAX_TYPES(X) VSHMEM_REDUCE_INTEGER_TYPES(X) VSHMEM_REDUCE_REAL_TYPES(X)
#define VSHMEM_REDUCE_COMPLEX_TYPES(X) X(complexd, vshmem_complexd_t) X(complexf, vshmem_complexf_t)
#define VSHMEM_REDUCE_ARITH_TYPES(X) VSHMEM_REDUCE_MINMAX_TYPES(X) VSHMEM_REDUCE_COMPLEX_TYPES(X)

/* Deprecated active-set reductions (shmem_TYPENAME_OP_to_all). */
#define VSHMEM_TO_ALL_BITWISE_TYPES(X) \
  X(short, short) X(int, int) X(long, long) X(longlong, long long)
#define VSHMEM_TO_ALL_MINMAX_TYPES(X) \
  VSHMEM_TO_ALL_BITWISE_TYPES(X) X(float, float) X(double, double) X(longdouble, long double)
#define VSHMEM_TO_ALL_ARITH_TYPES(X) VSHMEM_TO_ALL_MINMAX_TYPES(X) VSHMEM_REDUCE_COMPLEX_TYPES(X)

VSHMEM_BEGIN_C

/* Team synchronization: returns when every member has called it (no quiet). 0 on success. */
VSHMEM_HOSTDEV int shmem_team_sync(shmem_team_t team);

#define VSHMEM_DECLARE_COLL_TYPED(NAME, TYPE)                                                    \
  int shmem_##NAME##_broadcast(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems, \
                               int PE_root);                                                     \
  int shmem_##NAME##_collect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems);  \
  int shmem_##NAME##_fcollect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems); \
  int shmem_##NAME##_alltoall(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems); \
  int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE* dest, const TYPE* source, ptrdiff_t dst, \
                               ptrdiff_t sst, size_t nelems);
VSHMEM_RMA_TYPES(VSHMEM_DECLARE_COLL_TYPED)

int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

/* Reductions: dest[i] = source[i] OP over every member. dest and source may be the same array
 * but must not overlap otherwise. */
#define VSHMEM_DECLARE_REDUCE(NAME, TYPE, OP)                                         \
  int shmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                   size_t nreduce);
#define VSHMEM_DECLARE_REDUCE_BITWISE(NAME, TYPE) \
  VSHMEM_DECLARE_REDUCE(NAME, TYPE, and)          \
  VSHMEM_DECLARE_REDUCE(NAME, TYPE, or)           \
  VSHMEM_DECLARE_REDUCE(NAME, TYPE, xor)
#define VSHMEM_DECLARE_REDUCE_MINMAX(NAME, TYPE) \
  VSHMEM_DECLARE_REDUCE(NAME, TYPE, max)         \
  VSHMEM_DECLARE_REDUCE(NAME, TYPE, min)
#define VSHMEM_DECLARE_REDUCE_ARITH(NAME, TYPE) \
  VSHMEM_DECLARE_REDUCE(NAME, TYPE, sum)        \
  VSHMEM_DECLARE_REDUCE(NAME, TYPE, prod)
VSHMEM_REDUCE_BITWISE_TYPES(VSHMEM_DECLARE_REDUCE_BITWISE)
VSHMEM_REDUCE_MINMAX_TYPES(VSHMEM_DECLARE_REDUCE_MINMAX)
VSHMEM_REDUCE_ARITH_TYPES(VSHMEM_DECLARE_REDUCE_ARITH)

/* Deprecated active-set forms. */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync);
/* In C11, shmem_sync is type-generic (shmem_generic.h): shmem_sync(team) calls
 * shmem_team_sync; the four-argument form calls this one. */
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync);
#define VSHMEM_DECLARE_ACTIVE_SET_SIZED(BITS)                                              \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root,   \
                             int PE_start, int logPE_stride, int PE_size, long* pSync);    \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start,    \
                           int logPE_stride, int PE_size, long* pSync);                    \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start,   \
                            int logPE_stride, int PE_size, long* pSync);                   \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start,   \
                            int logPE_stride, int PE_size, long* pSync);                   \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, \
                             size_t nelems, int PE_start, int logPE_stride, int PE_size,   \
                             long* pSync);
VSHMEM_DECLARE_ACTIVE_SET_SIZED(32)
VSHMEM_DECLARE_ACTIVE_SET_SIZED(64)

#define VSHMEM_DECLARE_TO_ALL(NAME, TYPE, OP)                                                  \
  void shmem_##NAME##_##OP##_to_all(TYPE* dest, const TYPE* source, int nreduce, int PE_start, \
                                    int logPE_stride, int PE_size, TYPE* pWrk, long* pSync);
#define VSHMEM_DECLARE_TO_ALL_BITWISE(NAME, TYPE) \
  VSHMEM_DECLARE_TO_ALL(NAME, TYPE, and)          \
  VSHMEM_DECLARE_TO_ALL(NAME, TYPE, or)           \
  VSHMEM_DECLARE_TO_ALL(NAME, TYPE, xor)
#define VSHMEM_DECLARE_TO_ALL_MINMAX(NAME, TYPE) \
  VSHMEM_DECLARE_TO_ALL(NAME, TYPE, max)         \
  VSHMEM_DECLARE_TO_ALL(NAME, TYPE, min)
#define VSHMEM_DECLARE_TO_ALL_ARITH(NAME, TYPE) \
  VSHMEM_DECLARE_TO_ALL(NAME, TYPE, sum)        \
  VSHMEM_DECLARE_TO_ALL(NAME, TYPE, prod)
VSHMEM_TO_ALL_BITWISE_TYPES(VSHMEM_DECLARE_TO_ALL_BITWISE)
VSHMEM_TO_ALL_MINMAX_TYPES(VSHMEM_DECLARE_TO_ALL_MINMAX)
VSHMEM_TO_ALL_ARITH_TYPES(VSHMEM_DECLARE_TO_ALL_ARITH)

VSHMEM_END_C

#endif
