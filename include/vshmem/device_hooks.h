/* Internal interface between libvshmem (host runtime) and libvshmem_device (nvcc-compiled).
 * Not for applications. */
#ifndef VSHMEM_DEVICE_HOOKS_H
#define VSHMEM_DEVICE_HOOKS_H

#ifdef __cplusplus
namespace vshmem {
struct DeviceState;
}
extern "C" {
/* Registers the function that receives the device state (device/state.h) after shmem_init,
 * after every heap growth and at shmem_finalize (initialized == 0). If the library is already
 * initialized, the listener is called at once. The state's peer_slot array is host memory:
 * the listener copies what device code needs to device-visible memory. */
void vshmemi_set_device_state_listener(void (*listener)(const vshmem::DeviceState*));
/* Records an error the device library printed, for shmemx_last_error. */
void vshmemi_set_last_error(const char* text);
}
#endif

#endif
