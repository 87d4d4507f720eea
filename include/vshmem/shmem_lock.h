/* Distributed locking (OpenSHMEM 1.5 section 9.11). lock is a symmetric long initialized to 0
 * on every PE. The lock is a ticket lock kept in PE 0's copy (next ticket in the high 32 bits,
 * ticket being served in the low 32): PEs acquire it in the order they asked for it, so no PE
 * starves under contention. shmem_clear_lock completes this PE's outstanding operations (quiet)
 * before it releases the lock. */
#ifndef VSHMEM_SHMEM_LOCK_H
#define VSHMEM_SHMEM_LOCK_H

#include "vshmem/shmem_types.h"

VSHMEM_BEGIN_C

void shmem_set_lock(long* lock);
void shmem_clear_lock(long* lock);
/* 0 when the lock was free and is now held by this PE, 1 when another PE holds it (or waits). */
int shmem_test_lock(long* lock);

VSHMEM_END_C

#endif
