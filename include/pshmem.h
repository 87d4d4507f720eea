/* vshmem: the OpenSHMEM profiling interface. Every shmem_X routine of the host library is also
 * callable as pshmem_X, with the same arguments and effect. A tool defines shmem_X itself (in the
 * program, or in a library that the program links or preloads before libvshmem), does its work
 * and calls pshmem_X:
 *
 *   #include <pshmem.h>
 *   void shmem_barrier_all(void) { ++barriers; pshmem_barrier_all(); }
 *
 * The tool sees the program's calls only: the library's own calls between its routines (the
 * barrier inside shmem_finalize, for instance) do not go through shmem_X. The device API (calls
 * in kernels) has no profiling names. */
#ifndef VSHMEM_PSHMEM_H
#define VSHMEM_PSHMEM_H

#include "shmem.h"
#include "shmemx.h"

VSHMEM_BEGIN_C
/* pshmem_X has the type of shmem_X (vshmem/pshmem_names.h lists every routine; it is written
 * when the library is built). */
#define VSHMEM_PSHMEM_NAME(name) extern __typeof__(name) p##name;
#include "vshmem/pshmem_names.h"
#undef VSHMEM_PSHMEM_NAME
VSHMEM_END_C

#endif
