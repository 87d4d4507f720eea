/* Internal interface between libvshmem (host runtime) and libvshmem_device (nvcc-compiled).
 * Not for applications. */
#ifndef VSHMEM_DEVICE_HOOKS_H
#define VSHMEM_DEVICE_HOOKS_H

#ifdef __cplusplus
#include <stddef.h>
#include <stdint.h>
namespace vshmem {
namespace device {
struct GpuState;
}
namespace proxy {
struct RingView;
}
}  // namespace vshmem
extern "C" {
/* What libvshmem_device gives libvshmem when it is linked into a program (its static constructor
 * registers it, before main). libvshmem builds the whole device state
 * (vshmem/device/impl/state.h) and makes every piece of memory it names (the heap, the tables, the
 * device proxy's request ring); the library only holds the state in its symbol. */
struct vshmemi_device_library {
  /* The state the library's __constant__ symbol holds: kGpuStateVersion and sizeof(GpuState)
   * where it was compiled. shmem_init fails, naming both, when they are not libvshmem's. */
  uint32_t state_version;
  uint32_t state_bytes;
  /* Copies the state into the symbol (on the GPU state->cuda_device names; an uninitialized state
   * on the GPU of the last initialized one, if any). host_deltas: the state's n_pes peer deltas,
   * for the library's host code (on-stream calls). Called after shmem_init, every heap growth
   * and team change, and at shmem_finalize; 0 on success, else after a message. */
  int (*write_state)(const vshmem::device::GpuState* state, const int64_t* host_deltas);
};
void vshmemi_register_device_library(const struct vshmemi_device_library* library);
/* The state libvshmem built last, whatever the heap's memory (on a host heap the device library
 * is given the empty state instead); null before the first shmem_init. Its tables (peer_delta,
 * teams and their members) are in the symmetric heap: read them with shmem_getmem from this PE.
 * For tests and tools. */
const vshmem::device::GpuState* vshmemi_device_state_built(void);
/* For tests that drive the device proxy without a GPU (tests/mpe/device_proxy_host.cpp): a request
 * ring in ordinary memory that host threads post to (vshmem/device/impl/proxy_ring.h), the
 * proxy's staging buffer, and the copy it uses for data that is not in the ring. Given before
 * shmem_init, it is used by that shmem_init only (shmem_finalize forgets it) and only when
 * libvshmem made no ring of its own (runtime/transport/proxy_ring.hpp); a null ring: none. */
void vshmemi_set_device_proxy(const vshmem::proxy::RingView* ring, void* stage, size_t stage_bytes,
                              int (*copy)(void* dst, const void* src, size_t bytes));
/* Records an error the device library printed, for shmemx_last_error. */
void vshmemi_set_last_error(const char* text);
}
#endif

#endif
