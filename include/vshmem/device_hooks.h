/* Internal interface between libvshmem (host runtime) and libvshmem_device (nvcc-compiled).
 * Not for applications. */
#ifndef VSHMEM_DEVICE_HOOKS_H
#define VSHMEM_DEVICE_HOOKS_H

#ifdef __cplusplus
#include <stddef.h>
namespace vshmem {
struct DeviceState;
namespace proxy {
struct RingView;
}
}  // namespace vshmem
extern "C" {
/* Registers the function that receives the device state (device/state.h) after shmem_init,
 * after every heap growth and at shmem_finalize (initialized == 0). If the library is already
 * initialized, the listener is called at once. The state's peer_slot array is host memory:
 * the listener copies what device code needs to device-visible memory. */
void vshmemi_set_device_state_listener(void (*listener)(const vshmem::DeviceState*));
/* Called by the listener: the request ring that device code posts to for the PEs it cannot map
 * (vshmem/device/impl/proxy_ring.h), a pinned staging buffer, and the copy between host and GPU
 * memory the proxy uses for data that is not in the ring (it must not wait for the application's
 * kernels: a non-blocking stream). The runtime starts its proxy thread on the ring when the
 * listener returns; a null ring: none. */
void vshmemi_set_device_proxy(const vshmem::proxy::RingView* ring, void* stage, size_t stage_bytes,
                              int (*copy)(void* dst, const void* src, size_t bytes));
/* Records an error the device library printed, for shmemx_last_error. */
void vshmemi_set_last_error(const char* text);
}
#endif

#endif
