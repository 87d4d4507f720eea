/* Library setup, query and symmetric memory management (OpenSHMEM 1.5 sections 9.1-9.4). */
#ifndef VSHMEM_SHMEM_SETUP_H
#define VSHMEM_SHMEM_SETUP_H

#include "vshmem/shmem_types.h"

VSHMEM_BEGIN_C

/* Collective. Starts the library: bootstrap, symmetric heap, transports. Aborts the job with a
 * message naming the PE and the cause when that fails. It may be called several times
 * (OpenSHMEM 1.6): each call (shmem_init or shmem_init_thread) is matched by one shmem_finalize,
 * and the library is finalized by the last of them; after that it may be started again. */
void shmem_init(void);
/* As shmem_init; returns 0 on success, non-zero (with a message) on failure. *provided gets the
 * thread level granted: vshmem grants up to SHMEM_THREAD_MULTIPLE. */
int shmem_init_thread(int requested, int* provided);
void shmem_query_thread(int* provided);
/* Collective. Matches one shmem_init[_thread]; the last matching call releases every resource
 * (memory, mappings, sockets) and implies shmem_barrier_all; the others do nothing. */
void shmem_finalize(void);
/* OpenSHMEM 1.6; callable at any time from any thread. *initialized: nonzero between an
 * initialization call and its matching (last) shmem_finalize. *finalized: nonzero once the
 * library has been finalized, until it is initialized again. */
void shmem_query_initialized(int* initialized);
void shmem_query_finalized(int* finalized);
/* Ends every PE of the job with the given status. Never returns. */
void shmem_global_exit(int status);

VSHMEM_HOSTDEV int shmem_my_pe(void);
VSHMEM_HOSTDEV int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void* addr, int pe);
/* An address through which this PE can load/store pe's copy of dest, or NULL when pe's memory
 * is not mapped here (another node, or no peer path). For a global or static variable: dest
 * itself for this PE, NULL for every other (no process maps another's variables). */
VSHMEM_HOSTDEV void* shmem_ptr(const void* dest, int pe);
void shmem_info_get_version(int* major, int* minor);
void shmem_info_get_name(char* name);

/* Collective symmetric allocation: same arguments on every PE, same address returned on every
 * PE. Implies a barrier. NULL (with a message) when the heap cannot hold the request. */
void* shmem_malloc(size_t size);
void* shmem_malloc_with_hints(size_t size, long hints);
void* shmem_calloc(size_t count, size_t size);
void* shmem_align(size_t alignment, size_t size);
void* shmem_realloc(void* ptr, size_t size);
void shmem_free(void* ptr);

/* Deprecated forms still in use. */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void* shmalloc(size_t size);
void shfree(void* ptr);
void* shrealloc(void* ptr, size_t size);
void* shmemalign(size_t alignment, size_t size);

VSHMEM_END_C

#endif
