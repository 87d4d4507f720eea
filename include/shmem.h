/* vshmem: the OpenSHMEM 1.5 C API. Programs written for OpenSHMEM compile against this header
 * unchanged. GPU extensions are in shmemx.h. */
#ifndef VSHMEM_SHMEM_H
#define VSHMEM_SHMEM_H

#include "vshmem/shmem_types.h"
#include "vshmem/shmem_setup.h"
#include "vshmem/shmem_rma.h"
#include "vshmem/shmem_order.h"

/* Headers of further API groups are added here as they land. */
#if __has_include("vshmem/shmem_api_more.h")
#include "vshmem/shmem_api_more.h"
#endif

/* Under nvcc the same calls are also device functions (vshmem::device). */
#if defined(__CUDACC__) && defined(__cplusplus) && __has_include("vshmem/device/shmem_device.h")
#include "vshmem/device/shmem_device.h"
#endif

#endif
