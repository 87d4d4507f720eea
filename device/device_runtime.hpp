// Host side of libvshmem_device: the copy of the device state that host code of this library
// (on-stream calls, collective launch) translates and validates with.
#pragma once

#include <cstdint>
#include <vector>

#include "vshmem/device/impl/state.cuh"

namespace vshmem::device {

struct HostMirror {
  GpuState state{};             // what the __constant__ state holds (as libvshmem built it)
  std::vector<int64_t> deltas;  // host copy of state.peer_delta (n_pes entries)
};

// The current mirror; state.initialized == 0 outside shmem_init .. shmem_finalize.
const HostMirror& host_mirror();

// Fails (returns false after printing "vshmem: PE n: <call>: <cause>") when the device library
// holds no usable state.
bool require_state(const char* call);

// Host-side translation for on-stream calls: pe's copy of the symmetric range, or nullptr after
// a message naming the call when pe, the range or the peer's mapping is unusable.
void* host_peer_ptr(const char* call, const void* addr, size_t bytes, int pe);

// True when pe is a valid PE that this GPU cannot map and the device proxy serves (on-stream
// calls then launch a kernel that posts to it), and [addr, addr + bytes) is in the heap. No
// message: host_peer_ptr reports what is wrong otherwise.
bool host_proxy_peer(const char* call, const void* addr, size_t bytes, int pe);

// Prints "vshmem: PE n: <call>: <cause>" on stderr.
void report(const char* call, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace vshmem::device
