/* The OpenSHMEM 1.5 API groups beyond setup, RMA and ordering: atomics, signals,
 * point-to-point synchronization, teams and contexts, collectives, locks, and the C11
 * type-generic forms. Included by shmem.h. */
#ifndef VSHMEM_SHMEM_API_MORE_H
#define VSHMEM_SHMEM_API_MORE_H

#include "vshmem/shmem_types.h"
#include "vshmem/shmem_amo.h"
#include "vshmem/shmem_signal.h"
#include "vshmem/shmem_wait.h"
#include "vshmem/shmem_team.h"
#include "vshmem/shmem_coll.h"
#include "vshmem/shmem_lock.h"

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
#include "vshmem/shmem_generic.h"
#endif

#endif
