/* vshmem's NVSHMEM compatibility header: programs written for NVSHMEM 3.x build against vshmem
 * unchanged (add this folder, <prefix>/include/nvshmem, to the include path next to
 * <prefix>/include, or link the CMake target vshmem::nvshmem). Every NVSHMEM call that vshmem
 * implements is available under its NVSHMEM name, in host and (under nvcc) device code; README.md
 * lists the NVSHMEM names vshmem does not provide.
 *
 * How: nvshmem_X / nvshmemx_X name vshmem's shmem_X / shmemx_X (nvshmem_names.h, generated from
 * vshmem's headers), so the OpenSHMEM headers stay free of NVSHMEM names. NVSHMEM's constants
 * keep NVSHMEM's values: comparisons (NVSHMEM_CMP_GE is 5 here, SHMEM_CMP_GE 3) and signal
 * operations (NVSHMEM_SIGNAL_SET is 9) are translated by the calls that take them, so mixing
 * NVSHMEM_CMP_* with shmem_* calls (or SHMEM_CMP_* with nvshmem_* calls) is a mistake. The few
 * calls whose NVSHMEM form differs from OpenSHMEM's are defined below. Team handles are vshmem's
 * (pointers, not NVSHMEM's small integers): use the NVSHMEM_TEAM_* names, not numbers. */
#ifndef VSHMEM_NVSHMEM_H
#define VSHMEM_NVSHMEM_H

#include "../shmem.h"
#include "../shmemx.h"

/* The NVSHMEM API level these headers follow (for `#if NVSHMEM_MAJOR_VERSION >= 3`); vshmem's
 * own version is VSHMEM_VERSION_STRING. */
#define NVSHMEM_MAJOR_VERSION 3
#define NVSHMEM_MINOR_VERSION 0
#define NVSHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define NVSHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN

/* Thread levels (same values). */
#define NVSHMEM_THREAD_SINGLE SHMEM_THREAD_SINGLE
#define NVSHMEM_THREAD_FUNNELED SHMEM_THREAD_FUNNELED
#define NVSHMEM_THREAD_SERIALIZED SHMEM_THREAD_SERIALIZED
#define NVSHMEM_THREAD_MULTIPLE SHMEM_THREAD_MULTIPLE

/* NVSHMEM's comparison and signal constants, with NVSHMEM's values. */
#define NVSHMEM_CMP_EQ 0
#define NVSHMEM_CMP_NE 1
#define NVSHMEM_CMP_GT 2
#define NVSHMEM_CMP_LE 3
#define NVSHMEM_CMP_LT 4
#define NVSHMEM_CMP_GE 5
#define NVSHMEM_SIGNAL_SET 9
#define NVSHMEM_SIGNAL_ADD 10

/* Translation to vshmem's values. An unknown value maps to one vshmem rejects with a message. */
static inline VSHMEM_HOSTDEV int VSHMEMI_NV_CMP(int cmp) {
  return cmp == NVSHMEM_CMP_EQ   ? SHMEM_CMP_EQ
         : cmp == NVSHMEM_CMP_NE ? SHMEM_CMP_NE
         : cmp == NVSHMEM_CMP_GT ? SHMEM_CMP_GT
         : cmp == NVSHMEM_CMP_LE ? SHMEM_CMP_LE
         : cmp == NVSHMEM_CMP_LT ? SHMEM_CMP_LT
         : cmp == NVSHMEM_CMP_GE ? SHMEM_CMP_GE
                                 : -1 - cmp;
}
static inline VSHMEM_HOSTDEV int VSHMEMI_NV_SIG_OP(int sig_op) {
  return sig_op == NVSHMEM_SIGNAL_SET   ? SHMEM_SIGNAL_SET
         : sig_op == NVSHMEM_SIGNAL_ADD ? SHMEM_SIGNAL_ADD
                                        : -1 - sig_op;
}

/* Types. */
typedef shmem_team_t nvshmem_team_t;
typedef shmem_team_t nvshmemx_team_t;
typedef shmem_ctx_t nvshmem_ctx_t;
typedef shmem_team_config_t nvshmem_team_config_t;
#define NVSHMEM_TEAM_CONFIG_INITIALIZER \
  { 0 }
#define NVSHMEM_TEAM_NUM_CONTEXTS SHMEM_TEAM_NUM_CONTEXTS

/* Predefined teams. NVSHMEMX_TEAM_NODE: the PEs of this node. */
#define NVSHMEM_TEAM_INVALID SHMEM_TEAM_INVALID
#define NVSHMEM_TEAM_WORLD SHMEM_TEAM_WORLD
#define NVSHMEM_TEAM_SHARED SHMEM_TEAM_SHARED
#define NVSHMEMX_TEAM_NODE SHMEMX_TEAM_NODE
#define NVSHMEM_CTX_DEFAULT SHMEM_CTX_DEFAULT
#define NVSHMEM_CTX_INVALID SHMEM_CTX_INVALID
#define NVSHMEM_CTX_SERIALIZED SHMEM_CTX_SERIALIZED
#define NVSHMEM_CTX_PRIVATE SHMEM_CTX_PRIVATE
#define NVSHMEM_CTX_NOSTORE SHMEM_CTX_NOSTORE
#define NVSHMEM_MALLOC_ATOMICS_REMOTE SHMEM_MALLOC_ATOMICS_REMOTE
#define NVSHMEM_MALLOC_SIGNAL_REMOTE SHMEM_MALLOC_SIGNAL_REMOTE
#define NVSHMEM_SYNC_VALUE SHMEM_SYNC_VALUE

/* Status codes of the nvshmemx calls that return one. */
#define NVSHMEMX_SUCCESS 0
#define NVSHMEMX_ERROR_INTERNAL 1
#define NVSHMEM_STATUS_NOT_INITIALIZED 0
#define NVSHMEM_STATUS_IS_BOOTSTRAPPED 1
#define NVSHMEM_STATUS_IS_INITIALIZED 2

/* Initialization attributes and the unique ID. */
typedef shmemx_init_attr_t nvshmemx_init_attr_t;
typedef shmemx_uniqueid_t nvshmemx_uniqueid_t;
#define NVSHMEMX_INIT_ATTR_INITIALIZER SHMEMX_INIT_ATTR_INITIALIZER
#define NVSHMEMX_UNIQUEID_INITIALIZER SHMEMX_UNIQUEID_INITIALIZER
#define NVSHMEMX_INIT_THREAD_PES (1u << 0)
#define NVSHMEMX_INIT_WITH_MPI_COMM (1u << 1)
#define NVSHMEMX_INIT_WITH_SHMEM (1u << 2)
#define NVSHMEMX_INIT_WITH_UNIQUEID (1u << 3)

#include "nvshmem_names.h"

/* nvshmemx_init_attr with NVSHMEM's flag values. THREAD_PES asks for nothing vshmem does not do
 * anyway; WITH_SHMEM (an OpenSHMEM job underneath) is not supported and fails with a message. */
static inline int nvshmemx_init_attr(unsigned int flags, nvshmemx_init_attr_t* attr) {
  unsigned int f = 0;
  if (flags & NVSHMEMX_INIT_WITH_MPI_COMM) f |= SHMEMX_INIT_WITH_MPI_COMM;
  if (flags & NVSHMEMX_INIT_WITH_UNIQUEID) f |= SHMEMX_INIT_WITH_UNIQUEID;
  if (flags &
      ~(NVSHMEMX_INIT_THREAD_PES | NVSHMEMX_INIT_WITH_MPI_COMM | NVSHMEMX_INIT_WITH_UNIQUEID)) {
    f |= 1u << 30; /* refused by shmemx_init_attr as an unknown flag */
  }
  return shmemx_init_attr(f, attr);
}

/* NVSHMEM_STATUS_IS_INITIALIZED between init and finalize, else NOT_INITIALIZED. */
static inline int nvshmemx_init_status(void) {
  return shmem_my_pe() >= 0 ? NVSHMEM_STATUS_IS_INITIALIZED : NVSHMEM_STATUS_NOT_INITIALIZED;
}

/* nvshmem_team_get_config(team, config): every field. */
static inline int nvshmem_team_get_config(nvshmem_team_t team, nvshmem_team_config_t* config) {
  return shmem_team_get_config(team, SHMEM_TEAM_NUM_CONTEXTS, config);
}

/* NVSHMEM's team barrier (quiet, then synchronize the team) and team sync. OpenSHMEM's
 * shmem_barrier / shmem_sync are the deprecated active-set calls, which NVSHMEM does not have. */
static inline VSHMEM_HOSTDEV int nvshmem_barrier(nvshmem_team_t team) {
#if defined(__CUDA_ARCH__)
  return shmemx_barrier(team);
#else
  shmem_quiet();
  return shmem_team_sync(team);
#endif
}
static inline VSHMEM_HOSTDEV int nvshmem_sync(nvshmem_team_t team) { return shmem_team_sync(team); }

#endif
