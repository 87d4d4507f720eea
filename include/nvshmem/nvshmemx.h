/* vshmem's NVSHMEM compatibility header for NVSHMEM's extensions (nvshmemx_*): they are all
 * declared by nvshmem.h (vshmem keeps one list of names), so this header only includes it. */
#ifndef VSHMEM_NVSHMEMX_H
#define VSHMEM_NVSHMEMX_H

#include "nvshmem.h"

#endif
