/* C ABI between libvshmem and its remote-path plugin (libvshmem_transport_ucx.so), loaded with
 * dlopen so that libvshmem never links UCX: a job whose peers are all mapped runs without UCX.
 *
 * Addresses of the heap are offsets from its base H (identical on every PE). Every call returns 0
 * on success; otherwise a vshmem::Code (> 0) with a message in err (NUL-terminated) that starts
 * with what failed and names the peer, e.g. "put to PE 3: PE 3 failed or exited (...)". */
#ifndef VSHMEM_TRANSPORT_PLUGIN_ABI_H
#define VSHMEM_TRANSPORT_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VSHMEM_TRANSPORT_ABI_VERSION 14

/* An offset with this bit set addresses the program's global and static variables (its data
 * segment) instead of the heap: the rest is the offset from each PE's own segment base, which
 * differs per PE (PIE executables). Atomics on it are always performed by the target's progress
 * thread with CPU atomics, so they are atomic with respect to the target's own CPU atomics. */
#define VSHMEM_TRANSPORT_STATIC_SEGMENT (1ull << 63)

/* Atomic operations, in the order of vshmem::AtomicOp. */
enum {
  VSHMEM_TRANSPORT_AMO_FETCH = 0,
  VSHMEM_TRANSPORT_AMO_SET,
  VSHMEM_TRANSPORT_AMO_SWAP,
  VSHMEM_TRANSPORT_AMO_CSWAP,
  VSHMEM_TRANSPORT_AMO_FETCH_ADD,
  VSHMEM_TRANSPORT_AMO_FETCH_AND,
  VSHMEM_TRANSPORT_AMO_FETCH_OR,
  VSHMEM_TRANSPORT_AMO_FETCH_XOR
};

/* What libvshmem lends the plugin: the bootstrap (collective steps) and the memory provider (the
 * only code that may touch the heap when it is GPU memory). Thread-safe. */
typedef struct vshmem_transport_host {
  void* ctx;
  int (*allgather)(void* ctx, const void* in, void* out, size_t bytes, char* err, size_t errlen);
  int (*copy)(void* ctx, void* dst, const void* src, size_t bytes, char* err, size_t errlen);
  int (*atomic)(void* ctx, int op, void* addr, unsigned width, uint64_t operand, uint64_t compare,
                uint64_t* result, char* err, size_t errlen);
  /* level: 0 error, 1 warn, 2 info, 3 trace (the message gets libvshmem's "vshmem: PE n:"). */
  void (*log)(void* ctx, int level, const char* message);
  int (*log_enabled)(void* ctx, int level);
  /* Host buffers that copy moves to and from the heap at full speed (page-locked for a GPU heap):
   * staging buffers. Since ABI 2. */
  int (*alloc_staging)(void* ctx, size_t bytes, void** out, char* err, size_t errlen);
  void (*free_staging)(void* ctx, void* p);
  /* copy, started and left running (staged transfers keep several chunks in flight): *ticket
   * names it for copy_test, which sets *done once it has completed (its buffers may then be
   * reused; the ticket is spent). copy_test never waits. Since ABI 5. */
  int (*copy_start)(void* ctx, void* dst, const void* src, size_t bytes, uint64_t* ticket,
                    char* err, size_t errlen);
  int (*copy_test)(void* ctx, uint64_t ticket, int* done, char* err, size_t errlen);
  /* Host memory the plugin got elsewhere (staging buffers that UCX allocated in shared memory, or
   * a same-host peer's, mapped here) made a buffer that copy and copy_start move to and from the
   * heap at full speed, as alloc_staging's are: page-locked for the GPU's copy engines
   * (cuMemHostRegister) for a GPU heap; nothing to do for a host heap. unregister_host undoes
   * it, before the memory goes. Since ABI 8. */
  int (*register_host)(void* ctx, void* p, size_t bytes, char* err, size_t errlen);
  void (*unregister_host)(void* ctx, void* p);
} vshmem_transport_host;

/* Who performs atomics on a remote PE's host heap (VSHMEM_UCX_ATOMICS; init args). */
enum vshmem_transport_atomics {
  VSHMEM_TRANSPORT_ATOMICS_TARGET = 0,
  VSHMEM_TRANSPORT_ATOMICS_NETWORK = 1,
  VSHMEM_TRANSPORT_ATOMICS_AUTO = 2
};

typedef struct vshmem_transport_init_args {
  int abi_version;
  int my_pe;
  int n_pes;
  const uint8_t* remote; /* n_pes flags: 1 for the PEs this path reaches */
  uintptr_t heap_base;
  size_t heap_size;
  int heap_is_device;    /* the heap is GPU memory: only the host callbacks may touch it */
  uintptr_t static_base; /* this PE's global and static variables (host memory), or 0 */
  size_t static_size;    /* the same on every PE */
  long timeout_ms;       /* no wait on a peer lasts longer (VSHMEM_BOOTSTRAP_TIMEOUT) */
  vshmem_transport_host host;
  /* The plugin's settings, parsed and checked once by libvshmem's configuration table
   * (runtime/common/config.hpp): the plugin reads no environment variable itself. */
  int rma_at_target;          /* VSHMEM_UCX_RMA=target */
  int atomics_on_network;     /* VSHMEM_UCX_ATOMICS: vshmem_transport_atomics (since ABI 12) */
  long spin_us;               /* VSHMEM_UCX_SPIN_US, or -1: the plugin's default */
  long stage_chunk_kib;       /* VSHMEM_UCX_CHUNK_KIB */
  long stage_chunks;          /* VSHMEM_UCX_CHUNKS */
  const char* user_tls;       /* the user's UCX_TLS, or NULL when unset or empty */
  int user_sm_error_handling; /* UCX_MM_ERROR_HANDLING or UCX_POSIX_ERROR_HANDLING is set */
  int stage_direct;           /* VSHMEM_UCX_STAGE_DIRECT (since ABI 8) */
  int no_peer_errors;         /* VSHMEM_UCX_PEER_ERRORS=0 (since ABI 10) */
  int no_data_ep;             /* VSHMEM_UCX_DATA_ENDPOINT=0 (since ABI 11) */
  int put_messages;           /* VSHMEM_UCX_PUT_MESSAGES: 0 off, 1 on, 2 auto (since ABI 13) */
  int get_messages;           /* VSHMEM_UCX_GET_MESSAGES (since ABI 14) */
} vshmem_transport_init_args;

/* Capability bits of a plugin instance (like UCT_IFACE_FLAG_*). */
enum {
  VSHMEM_TRANSPORT_CAP_RMA = 1u << 0,          /* one-sided put/get into some peer's heap */
  VSHMEM_TRANSPORT_CAP_AMO = 1u << 1,          /* network atomics on some peer's heap */
  VSHMEM_TRANSPORT_CAP_TARGET_OPS = 1u << 2,   /* operations performed by the target's thread */
  VSHMEM_TRANSPORT_CAP_DEVICE_MEMORY = 1u << 3 /* the network registers GPU memory itself */
};

typedef struct vshmem_transport_plugin {
  int abi_version;
  void* ctx;
  uint32_t caps;
  const char* name; /* e.g. "ucx" */
  /* Collective over all PEs (also those without remote peers): [offset, offset + bytes) of the
   * heap is now backed; registers it and exchanges what peers need to reach it. Peers' operations
   * on the heap are performed from serve() on (the regions added before it: at serve()), and on a
   * region added after it, from the end of its add_region. */
  int (*add_region)(void* ctx, uint64_t offset, size_t bytes, char* err, size_t errlen);
  /* Not collective: the heap added so far is initialized (shmem_init has filled what it fills),
   * and peers' operations on it are performed from now on. Called once, before the job's first
   * barrier, so no peer addresses the heap earlier. Since ABI 7: ThreadSanitizer then sees the
   * order fill -> serve -> a peer's operation performed by the progress thread. */
  void (*serve)(void* ctx);
  /* Blocking forms complete remotely before they return (the data is in the target's heap, or in
   * dest for a get); nbi forms complete at quiet. The local buffers may be any memory the
   * provider can copy. */
  int (*put)(void* ctx, int pe, uint64_t offset, const void* source, size_t bytes, int nbi,
             char* err, size_t errlen);
  int (*get)(void* ctx, int pe, void* dest, uint64_t offset, size_t bytes, int nbi, char* err,
             size_t errlen);
  int (*atomic)(void* ctx, int pe, int op, uint64_t offset, unsigned width, uint64_t operand,
                uint64_t compare, uint64_t* result, char* err, size_t errlen);
  /* Orders earlier operations before later ones (shmem_fence) / completes them (shmem_quiet). */
  int (*fence)(void* ctx, char* err, size_t errlen);
  int (*quiet)(void* ctx, char* err, size_t errlen);
  /* Lets the network move (a PE that waits on its own memory calls this). Cheap when idle. */
  void (*progress)(void* ctx);
  /* Not collective; every peer has stopped sending to us (the caller ran a barrier). */
  void (*finalize)(void* ctx);
  /* Adds value to the 8-byte word at offset of PE pe's heap, without waiting for it to land and
   * without quiet waiting for it either: a notification that the peer polls for (the barrier's
   * counters). One message, which the peer does not answer; the peer performs the add with its
   * CPU's atomics when it receives it (a host heap) or with the memory provider's. Not ordered
   * with this PE's other operations, except that blocking puts not yet known complete land first.
   * Since ABI 2. */
  int (*signal_add)(void* ctx, int pe, uint64_t offset, uint64_t value, char* err, size_t errlen);
  /* A peer whose connection the network saw break (it failed or exited), or -1; err gets the
   * network's cause. Cheap; any thread. Null in a plugin that cannot tell. */
  int (*failed_peer)(void* ctx, char* err, size_t errlen);
  /* Sleeps until the network has something for this PE (a message that progress would handle)
   * or timeout_us passed; returns at once when something is already there. A PE that waits for
   * a word only peers on this path write (a barrier counter) calls it instead of yielding, so
   * the kernel wakes it when the message arrives. Any thread. Since ABI 4. Before it sleeps it
   * polls while the network had something to do within the last spin_us microseconds (a PE whose
   * waits spin has a core of its own: a PE serving a peer's stream of requests answers each
   * without a wake-up); 0: only the plugin's own idle spin. Since ABI 9. */
  void (*wait_event)(void* ctx, int timeout_us, int spin_us);
} vshmem_transport_plugin;

/* Each plugin exports this symbol. Collective over all PEs of the job (the worker addresses are
 * exchanged here); a PE whose set-up failed still takes part and returns its error. */
typedef int (*vshmem_transport_plugin_init_fn)(const vshmem_transport_init_args* args,
                                               vshmem_transport_plugin* out, char* err,
                                               size_t errlen);
#define VSHMEM_TRANSPORT_PLUGIN_INIT_SYMBOL "vshmem_transport_plugin_init"

#ifdef __cplusplus
}
#endif

#endif
