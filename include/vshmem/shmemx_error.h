/* The calling thread's last vshmem error message, for bindings that raise an exception of their
 * own where the C call returns non-zero (the Python package does). */
#ifndef VSHMEM_SHMEMX_ERROR_H
#define VSHMEM_SHMEMX_ERROR_H

#include "vshmem/shmem_types.h"

VSHMEM_BEGIN_C

/* The text of this thread's most recent error message, as printed on stderr ("vshmem: PE n:
 * call: cause") without the newline; "" when there was none since shmemx_clear_last_error. The
 * pointer stays valid until this thread's next vshmem call. */
const char* shmemx_last_error(void);
void shmemx_clear_last_error(void);

VSHMEM_END_C

#endif
