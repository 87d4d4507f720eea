/* Memory ordering and whole-job synchronization (OpenSHMEM 1.5 sections 9.9, 9.12). */
#ifndef VSHMEM_SHMEM_ORDER_H
#define VSHMEM_SHMEM_ORDER_H

#include "vshmem/shmem_types.h"

VSHMEM_BEGIN_C

/* Orders this PE's puts, AMOs and stores to each other PE: those issued before the fence are
 * delivered before those issued after it. */
VSHMEM_HOSTDEV void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
/* Completes every put, AMO and store this PE issued (on the default context): they are visible
 * at their targets on return. */
VSHMEM_HOSTDEV void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
/* OpenSHMEM 1.6: completes what this PE issued to the npes PEs of target_pes (PE numbers of the
 * context's team): they are visible there on return. Every PE number is checked. */
void shmem_pe_quiet(const int* target_pes, size_t npes);
void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int* target_pes, size_t npes);
/* Collective: quiet, then wait until every PE has arrived. Logarithmic-depth (dissemination)
 * over the symmetric heap when every PE is mapped here, else over the bootstrap. */
VSHMEM_HOSTDEV void shmem_barrier_all(void);
/* Collective: wait until every PE has arrived (no quiet). */
VSHMEM_HOSTDEV void shmem_sync_all(void);

VSHMEM_END_C

#endif
