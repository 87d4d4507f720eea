// The device proxy's ring memory (device/proxy.cu), for the state listener (device/state.cu).
#pragma once

#include "vshmem/device/impl/proxy_ring.h"

namespace vshmem::device {

// Creates the ring (once per shmem_init) and gives it to the runtime, which starts its proxy
// thread on it; false after a report when the memory cannot be had.
bool ensure_proxy_ring(int device, proxy::RingView* view);
// At shmem_finalize, after the runtime stopped the proxy thread.
void release_proxy_ring();

}  // namespace vshmem::device
