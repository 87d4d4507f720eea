/* C ABI between libvshmem and its bootstrap plugins (libvshmem_bootstrap_mpi.so,
 * libvshmem_bootstrap_pmix.so), loaded with dlopen so that libvshmem never links MPI or PMIx.
 * Every call returns 0 on success; otherwise non-zero with a message in err (NUL-terminated). */
#ifndef VSHMEM_BOOTSTRAP_PLUGIN_ABI_H
#define VSHMEM_BOOTSTRAP_PLUGIN_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VSHMEM_BOOTSTRAP_ABI_VERSION 2

typedef struct vshmem_bootstrap_init_args {
  int abi_version; /* VSHMEM_BOOTSTRAP_ABI_VERSION */
  void* mpi_comm;  /* pointer to an MPI_Comm the application owns, or NULL */
  long timeout_ms; /* time limit of every operation */
  /* libvshmem's message level (VSHMEM_DEBUG, SHMEM_DEBUG, NVSHMEM_DEBUG, parsed once by
   * libvshmem): 0 error, 1 warn, 2 info, 3 trace. A plugin prints what this level allows and
   * reads no variable itself. Since ABI 2. */
  int log_level;
} vshmem_bootstrap_init_args;

typedef struct vshmem_bootstrap_plugin {
  int abi_version;
  void* ctx;
  int rank;
  int size;
  int (*allgather)(void* ctx, const void* in, void* out, size_t bytes, char* err, size_t errlen);
  int (*broadcast)(void* ctx, void* buf, size_t bytes, int root, char* err, size_t errlen);
  int (*barrier)(void* ctx, char* err, size_t errlen);
  void (*finalize)(void* ctx);
} vshmem_bootstrap_plugin;

/* Each plugin exports this symbol. */
typedef int (*vshmem_bootstrap_plugin_init_fn)(const vshmem_bootstrap_init_args* args,
                                               vshmem_bootstrap_plugin* out, char* err,
                                               size_t errlen);
#define VSHMEM_BOOTSTRAP_PLUGIN_INIT_SYMBOL "vshmem_bootstrap_plugin_init"

#ifdef __cplusplus
}
#endif

#endif
