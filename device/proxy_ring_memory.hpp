// The device proxy's ring memory (device/proxy.cu), for libvshmem through the device library's
// registration (device/state.cu).
#pragma once

#include "vshmem/device/impl/proxy_ring.h"

namespace vshmem::device {

// Creates the ring of n slots (a power of two; producers wait at most timeout_ns: the runtime's
// VSHMEM_PROXY_SLOTS and VSHMEM_PROXY_TIMEOUT) once per shmem_init and gives it to the runtime,
// which starts its proxy thread on it; false after a report when the memory cannot be had.
bool ensure_proxy_ring(int device, uint32_t n, uint64_t timeout_ns, proxy::RingView* view);
// At shmem_finalize, after the runtime stopped the proxy thread.
void release_proxy_ring();

}  // namespace vshmem::device
