/* vshmem extensions beyond OpenSHMEM 1.5: init attributes, GPU peer access, on-stream calls,
 * and the _warp/_block device variants. */
#ifndef VSHMEM_SHMEMX_H
#define VSHMEM_SHMEMX_H

#include "shmem.h"

VSHMEM_BEGIN_C

/* Attributes for shmemx_init_attr. */
typedef struct shmemx_init_attr {
  /* A pointer to an MPI_Comm the application has already set up (after MPI_Init): the job is
   * bootstrapped over it (PE ranks follow its ranks). NULL: VSHMEM_BOOTSTRAP decides. */
  void* mpi_comm;
} shmemx_init_attr_t;

#define SHMEMX_INIT_WITH_MPI_COMM (1u << 0)

/* As shmem_init_thread, with attributes. flags: SHMEMX_INIT_WITH_MPI_COMM to use attr->mpi_comm.
 * Returns 0 on success. */
int shmemx_init_attr(unsigned int flags, shmemx_init_attr_t* attr);

/* The multicast address of the symmetric address ptr for team: a store there (multimem.st in
 * device code) reaches every member's copy of ptr, and multimem.ld_reduce there combines them.
 * NULL when multicast is off (the default; VSHMEM_ENABLE_MULTICAST=1 asks for it, and it needs
 * every PE's GPU to report CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED), for a team that does not
 * span every PE, for an invalid team, and for ptr outside the committed symmetric heap. Accesses
 * through it and through ptr are two proxies of one memory: order them with fence.proxy.alias.
 * Host code may not dereference it. */
VSHMEM_HOSTDEV void* shmemx_mc_ptr(shmem_team_t team, const void* ptr);

VSHMEM_END_C

#if __has_include("vshmem/peer_access.h")
#include "vshmem/peer_access.h"
#endif
#if __has_include("vshmem/shmemx_more.h")
#include "vshmem/shmemx_more.h"
#endif

#endif
