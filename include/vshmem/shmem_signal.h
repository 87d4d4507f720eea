/* Signaling operations (OpenSHMEM 1.5 section 9.7): put-with-signal and signal fetch/wait.
 *
 * shmem_put_signal writes the data to dest on pe, then updates sig_addr on pe with sig_op
 * (SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD) and signal. The signal never overtakes the data: the
 * copy completes, a release fence follows, then the signal is an AMO. A PE that observes the
 * signal (shmem_signal_wait_until, shmem_wait_until on sig_addr) sees the data. sig_addr is a
 * symmetric uint64_t that must not overlap dest. */
#ifndef VSHMEM_SHMEM_SIGNAL_H
#define VSHMEM_SHMEM_SIGNAL_H

#include "vshmem/shmem_types.h"

VSHMEM_BEGIN_C

#define VSHMEM_DECLARE_PUT_SIGNAL_TYPED(NAME, TYPE)                                                \
  VSHMEM_HOSTDEV void shmem_##NAME##_put_signal(TYPE* dest, const TYPE* source, size_t nelems,     \
                                                uint64_t* sig_addr, uint64_t signal, int sig_op,   \
                                                int pe);                                           \
  VSHMEM_HOSTDEV void shmem_##NAME##_put_signal_nbi(TYPE* dest, const TYPE* source, size_t nelems, \
                                                    uint64_t* sig_addr, uint64_t signal,           \
                                                    int sig_op, int pe);                           \
  void shmem_ctx_##NAME##_put_signal(shmem_ctx_t ctx, TYPE* dest, const TYPE* source,              \
                                     size_t nelems, uint64_t* sig_addr, uint64_t signal,           \
                                     int sig_op, int pe);                                          \
  void shmem_ctx_##NAME##_put_signal_nbi(shmem_ctx_t ctx, TYPE* dest, const TYPE* source,          \
                                         size_t nelems, uint64_t* sig_addr, uint64_t signal,       \
                                         int sig_op, int pe);
VSHMEM_RMA_TYPES(VSHMEM_DECLARE_PUT_SIGNAL_TYPED)

#define VSHMEM_DECLARE_PUT_SIGNAL_SIZED(BITS, BYTES)                                              \
  VSHMEM_HOSTDEV void shmem_put##BITS##_signal(void* dest, const void* source, size_t nelems,     \
                                               uint64_t* sig_addr, uint64_t signal, int sig_op,   \
                                               int pe);                                           \
  VSHMEM_HOSTDEV void shmem_put##BITS##_signal_nbi(void* dest, const void* source, size_t nelems, \
                                                   uint64_t* sig_addr, uint64_t signal,           \
                                                   int sig_op, int pe);                           \
  void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void* dest, const void* source,              \
                                    size_t nelems, uint64_t* sig_addr, uint64_t signal,           \
                                    int sig_op, int pe);                                          \
  void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t ctx, void* dest, const void* source,          \
                                        size_t nelems, uint64_t* sig_addr, uint64_t signal,       \
                                        int sig_op, int pe);
VSHMEM_RMA_SIZES(VSHMEM_DECLARE_PUT_SIGNAL_SIZED)

VSHMEM_HOSTDEV void shmem_putmem_signal(void* dest, const void* source, size_t nelems,
                                        uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
VSHMEM_HOSTDEV void shmem_putmem_signal_nbi(void* dest, const void* source, size_t nelems,
                                            uint64_t* sig_addr, uint64_t signal, int sig_op,
                                            int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,
                             uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,
                                 uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);

/* The local value of the symmetric signal object, read atomically. */
VSHMEM_HOSTDEV uint64_t shmem_signal_fetch(const uint64_t* sig_addr);
/* Waits until the local signal object satisfies `*sig_addr cmp cmp_value` (SHMEM_CMP_*);
 * returns the value that satisfied it. Yields the core while waiting. */
VSHMEM_HOSTDEV uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);
/* OpenSHMEM 1.6: atomically adds signal to / sets to signal the signal object sig_addr on pe,
 * with the atomicity of a put-with-signal's signal update (no data moves). */
void shmem_signal_add(uint64_t* sig_addr, uint64_t signal, int pe);
void shmem_signal_set(uint64_t* sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);

VSHMEM_END_C

#endif
