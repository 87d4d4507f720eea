/* vshmem extensions beyond OpenSHMEM 1.5: init attributes, GPU peer access, on-stream calls,
 * and the _warp/_block device variants. */
#ifndef VSHMEM_SHMEMX_H
#define VSHMEM_SHMEMX_H

#include "shmem.h"

VSHMEM_BEGIN_C

/* SHMEMX_TEAM_NODE, the PEs of this PE's node, is declared with the predefined teams
 * (vshmem/shmem_team.h). */

/* A job's unique ID (shmemx_get_uniqueid): 128 opaque bytes that every PE of the job passes to
 * shmemx_init_attr. It names where PE 0 waits for the others (an IPv4 address and port) and
 * carries a random secret that every PE must present. */
#define SHMEMX_UNIQUEID_BYTES 128
typedef struct shmemx_uniqueid {
  int version;
  char internal[SHMEMX_UNIQUEID_BYTES - sizeof(int)];
} shmemx_uniqueid_t;
#define SHMEMX_UNIQUEID_INITIALIZER \
  {                                 \
    0, { 0 }                        \
  }

/* Attributes for shmemx_init_attr. */
typedef struct shmemx_init_attr {
  /* A pointer to an MPI_Comm the application has already set up (after MPI_Init): the job is
   * bootstrapped over it (PE ranks follow its ranks). NULL: VSHMEM_BOOTSTRAP decides. */
  void* mpi_comm;
  /* Set by shmemx_set_attr_uniqueid_args (a copy of the ID is kept here). */
  int uid_rank;
  int uid_nranks;
  shmemx_uniqueid_t uid;
} shmemx_init_attr_t;
#define SHMEMX_INIT_ATTR_INITIALIZER \
  { 0, 0, 0, SHMEMX_UNIQUEID_INITIALIZER }

#define SHMEMX_INIT_WITH_MPI_COMM (1u << 0)
#define SHMEMX_INIT_WITH_UNIQUEID (1u << 1)

/* As shmem_init_thread, with attributes. flags: 0 (as shmem_init), SHMEMX_INIT_WITH_MPI_COMM to
 * use attr->mpi_comm, or SHMEMX_INIT_WITH_UNIQUEID to start the job from the unique ID set by
 * shmemx_set_attr_uniqueid_args (no launcher or MPI needed; VSHMEM_BOOTSTRAP is not consulted).
 * Returns 0 on success, non-zero with a message naming the cause. */
int shmemx_init_attr(unsigned int flags, shmemx_init_attr_t* attr);

/* Makes a new unique ID. Call it in the process that will be PE 0 (rank 0 in
 * shmemx_set_attr_uniqueid_args), once per job start, and hand the bytes to every other process
 * by any means (MPI_Bcast, a file, torch.distributed, a job script). This process listens for
 * the job's PEs from now on (VSHMEM_BOOTSTRAP_UID_ADDR / VSHMEM_BOOTSTRAP_UID_IFNAME choose the
 * address; default: the first non-loopback IPv4 interface). Returns 0, or non-zero with a
 * message. */
int shmemx_get_uniqueid(shmemx_uniqueid_t* uid);
/* Records in *attr that this process is PE `rank` of `nranks` in the job of *uid. Returns 0, or
 * non-zero (with a message) for a rank outside [0, nranks) or a null pointer. */
int shmemx_set_attr_uniqueid_args(int rank, int nranks, const shmemx_uniqueid_t* uid,
                                  shmemx_init_attr_t* attr);

/* The multicast address of the symmetric address ptr for team: a store there (multimem.st in
 * device code) reaches every member's copy of ptr, and multimem.ld_reduce there combines them.
 * NULL when multicast is off (the default; VSHMEM_ENABLE_MULTICAST=1 asks for it, and it needs
 * every PE's GPU to report CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED), for a team that does not
 * span every PE, for an invalid team, and for ptr outside the committed symmetric heap. Accesses
 * through it and through ptr are two proxies of one memory: order them with fence.proxy.alias.
 * Host code may not dereference it. */
VSHMEM_HOSTDEV void* shmemx_mc_ptr(shmem_team_t team, const void* ptr);

/* The application's own GPU memory joins the symmetric heap. Collective: every PE passes a
 * buffer of the same size, made of whole allocations of its device that the application created
 * with cuMemCreate (requestedHandleTypes including POSIX file descriptors, or fabric handles where
 * the job uses those) and mapped with cuMemMap; PyTorch's expandable segments are such memory.
 * The same physical memory is mapped again into the heap, at an address that is the same on
 * every PE, and into every peer's window: the returned address is symmetric and works with every
 * RMA, AMO, signal, collective and device call, and stores through either address are seen
 * through the other. The application keeps its own mapping and must not release the memory
 * before unregistering. flags must be 0. Returns NULL on every PE when any PE's buffer cannot be
 * shared this way (cudaMalloc or host memory, a part of an allocation, another device, a job
 * whose PEs do not all map each other's memory), with the cause in the error message. Ends with
 * a barrier. */
void* shmemx_buffer_register_symmetric(void* buf, size_t size, int flags);
/* Collective: unmaps what shmemx_buffer_register_symmetric(ptr's buffer, size, 0) mapped, after
 * a barrier. ptr is the address it returned. Returns 0, or non-zero with an error message. */
int shmemx_buffer_unregister_symmetric(void* ptr, size_t size);

VSHMEM_END_C

#if __has_include("vshmem/shmemx_error.h")
#include "vshmem/shmemx_error.h"
#endif
#if __has_include("vshmem/peer_access.h")
#include "vshmem/peer_access.h"
#endif
#if __has_include("vshmem/shmemx_more.h")
#include "vshmem/shmemx_more.h"
#endif

#endif
