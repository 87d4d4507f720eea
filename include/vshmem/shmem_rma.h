/* Remote memory access (OpenSHMEM 1.5 section 9.5): put, get, p, g, iput, iget, with their
 * typed, sized and byte forms, the non-blocking (_nbi) forms and the context (ctx_) forms.
 *
 * dest (put) / source (get) must be symmetric: inside the symmetric heap, or (host calls only)
 * a global or static variable of the main executable, which another PE's copy of is reached
 * through the UCX plugin (a round trip through UCX's shared memory / CMA even on one node, not a
 * copy through a mapping). The local buffer may
 * be any memory this PE can read (put) or write (get), host memory or, on the GPU heap, device
 * memory. Blocking forms return when the local buffer may be reused (put) or holds the data
 * (get). _nbi forms may return earlier; shmem_quiet completes them. To a peer whose memory is
 * mapped here, each call is a copy through the mapping. */
#ifndef VSHMEM_SHMEM_RMA_H
#define VSHMEM_SHMEM_RMA_H

#include "vshmem/shmem_types.h"

VSHMEM_BEGIN_C

#define VSHMEM_DECLARE_RMA_TYPED(NAME, TYPE)                                                      \
  VSHMEM_HOSTDEV void shmem_##NAME##_put(TYPE* dest, const TYPE* source, size_t nelems, int pe);  \
  VSHMEM_HOSTDEV void shmem_##NAME##_get(TYPE* dest, const TYPE* source, size_t nelems, int pe);  \
  VSHMEM_HOSTDEV void shmem_##NAME##_put_nbi(TYPE* dest, const TYPE* source, size_t nelems,       \
                                             int pe);                                             \
  VSHMEM_HOSTDEV void shmem_##NAME##_get_nbi(TYPE* dest, const TYPE* source, size_t nelems,       \
                                             int pe);                                             \
  VSHMEM_HOSTDEV void shmem_##NAME##_p(TYPE* dest, TYPE value, int pe);                           \
  VSHMEM_HOSTDEV TYPE shmem_##NAME##_g(const TYPE* source, int pe);                               \
  VSHMEM_HOSTDEV void shmem_##NAME##_iput(TYPE* dest, const TYPE* source, ptrdiff_t dst,          \
                                          ptrdiff_t sst, size_t nelems, int pe);                  \
  VSHMEM_HOSTDEV void shmem_##NAME##_iget(TYPE* dest, const TYPE* source, ptrdiff_t dst,          \
                                          ptrdiff_t sst, size_t nelems, int pe);                  \
  void shmem_ctx_##NAME##_put(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems,     \
                              int pe);                                                            \
  void shmem_ctx_##NAME##_get(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems,     \
                              int pe);                                                            \
  void shmem_ctx_##NAME##_put_nbi(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems, \
                                  int pe);                                                        \
  void shmem_ctx_##NAME##_get_nbi(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems, \
                                  int pe);                                                        \
  void shmem_ctx_##NAME##_p(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe);                     \
  TYPE shmem_ctx_##NAME##_g(shmem_ctx_t ctx, const TYPE* source, int pe);                         \
  void shmem_ctx_##NAME##_iput(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst,    \
                               ptrdiff_t sst, size_t nelems, int pe);                             \
  void shmem_ctx_##NAME##_iget(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst,    \
                               ptrdiff_t sst, size_t nelems, int pe);
VSHMEM_RMA_TYPES(VSHMEM_DECLARE_RMA_TYPED)

#define VSHMEM_DECLARE_RMA_SIZED(BITS, BYTES)                                                    \
  VSHMEM_HOSTDEV void shmem_put##BITS(void* dest, const void* source, size_t nelems, int pe);    \
  VSHMEM_HOSTDEV void shmem_get##BITS(void* dest, const void* source, size_t nelems, int pe);    \
  VSHMEM_HOSTDEV void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems,       \
                                            int pe);                                             \
  VSHMEM_HOSTDEV void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems,       \
                                            int pe);                                             \
  VSHMEM_HOSTDEV void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst,            \
                                       ptrdiff_t sst, size_t nelems, int pe);                    \
  VSHMEM_HOSTDEV void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst,            \
                                       ptrdiff_t sst, size_t nelems, int pe);                    \
  void shmem_ctx_put##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,       \
                           int pe);                                                              \
  void shmem_ctx_get##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,       \
                           int pe);                                                              \
  void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, \
                                 int pe);                                                        \
  void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, \
                                 int pe);                                                        \
  void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,      \
                            ptrdiff_t sst, size_t nelems, int pe);                               \
  void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,      \
                            ptrdiff_t sst, size_t nelems, int pe);
VSHMEM_RMA_SIZES(VSHMEM_DECLARE_RMA_SIZED)

VSHMEM_HOSTDEV void shmem_putmem(void* dest, const void* source, size_t nelems, int pe);
VSHMEM_HOSTDEV void shmem_getmem(void* dest, const void* source, size_t nelems, int pe);
VSHMEM_HOSTDEV void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe);
VSHMEM_HOSTDEV void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);

/* Blocked strided RMA (OpenSHMEM 1.6): nblocks blocks of bsize contiguous elements; block k is
 * read from source + k * sst elements and written to dest + k * dst elements (dst, sst >= 1;
 * 1 with bsize 1 is contiguous). Complete on return, like iput/iget. */
#define VSHMEM_DECLARE_RMA_BLOCKED_TYPED(NAME, TYPE)                                            \
  void shmem_##NAME##_ibput(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,       \
                            size_t bsize, size_t nblocks, int pe);                              \
  void shmem_##NAME##_ibget(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,       \
                            size_t bsize, size_t nblocks, int pe);                              \
  void shmem_ctx_##NAME##_ibput(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst, \
                                ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);           \
  void shmem_ctx_##NAME##_ibget(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst, \
                                ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);
VSHMEM_RMA_TYPES(VSHMEM_DECLARE_RMA_BLOCKED_TYPED)
#define VSHMEM_DECLARE_RMA_BLOCKED_SIZED(BITS, BYTES)                                        \
  void shmem_ibput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,       \
                         size_t bsize, size_t nblocks, int pe);                              \
  void shmem_ibget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,       \
                         size_t bsize, size_t nblocks, int pe);                              \
  void shmem_ctx_ibput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, \
                             ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);           \
  void shmem_ctx_ibget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, \
                             ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);
VSHMEM_RMA_SIZES(VSHMEM_DECLARE_RMA_BLOCKED_SIZED)

VSHMEM_END_C

#endif
