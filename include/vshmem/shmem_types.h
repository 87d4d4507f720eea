/* Constants, types and the type tables of the OpenSHMEM 1.5 API. Included by shmem.h. */
#ifndef VSHMEM_SHMEM_TYPES_H
#define VSHMEM_SHMEM_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define VSHMEM_EXTERN_C extern "C"
#define VSHMEM_BEGIN_C extern "C" {
#define VSHMEM_END_C }
#else
#define VSHMEM_EXTERN_C
#define VSHMEM_BEGIN_C
#define VSHMEM_END_C
#endif

/* Version of the specification implemented. */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "vshmem 0.1"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Thread levels. */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Comparison constants for point-to-point synchronization. */
#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* Signal operations. */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Context options. */
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* Memory hints (shmem_malloc_with_hints). */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* Deprecated active-set collectives' work arrays. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_BCAST_SYNC_SIZE 64
#define SHMEM_BARRIER_SYNC_SIZE 64
#define SHMEM_REDUCE_SYNC_SIZE 64
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 64
#define SHMEM_COLLECT_SYNC_SIZE 64
#define SHMEM_ALLTOALL_SYNC_SIZE 64
#define SHMEM_ALLTOALLS_SYNC_SIZE 64
#define SHMEM_SYNC_SIZE 64
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE

/* Contexts and teams are opaque handles. */
typedef struct vshmem_ctx_s* shmem_ctx_t;
typedef struct vshmem_team_s* shmem_team_t;

#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
VSHMEM_BEGIN_C
extern shmem_ctx_t SHMEM_CTX_DEFAULT;
VSHMEM_END_C
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

typedef struct {
  int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Declaration prefix of calls that also exist in device code (set by the device headers under
 * nvcc; empty for host compilers). */
#ifndef VSHMEM_HOSTDEV
#if defined(__CUDACC__) && defined(__cplusplus)
#define VSHMEM_HOSTDEV __host__ __device__
#else
#define VSHMEM_HOSTDEV
#endif
#endif

/* The standard RMA type table: X(TYPENAME, TYPE). Device code has every type but long double,
 * which nvcc narrows to double there. */
#define VSHMEM_RMA_TYPES(X) VSHMEM_RMA_DEVICE_TYPES(X) X(longdouble, long double)
#define VSHMEM_RMA_DEVICE_TYPES(X) \
  X(float, float)                  \
  X(double, double)                \
  X(char, char)                    \
  X(schar, signed char)            \
  X(short, short)                  \
  X(int, int)                      \
  X(long, long)                    \
  X(longlong, long long)           \
  X(uchar, unsigned char)          \
  X(ushort, unsigned short)        \
  X(uint, unsigned int)            \
  X(ulong, unsigned long)          \
  X(ulonglong, unsigned long long) \
  X(int8, int8_t)                  \
  X(int16, int16_t)                \
  X(int32, int32_t)                \
  X(int64, int64_t)                \
  X(uint8, uint8_t)                \
  X(uint16, uint16_t)              \
  X(uint32, uint32_t)              \
  X(uint64, uint64_t)              \
  X(size, size_t)                  \
  X(ptrdiff, ptrdiff_t)

/* Sized RMA: X(BITS, BYTES). */
#define VSHMEM_RMA_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

#endif
