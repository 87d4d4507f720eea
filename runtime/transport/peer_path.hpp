// One interface per way of reaching a peer (DESIGN.md, transport), in the spirit of UCX's
// uct_iface_ops with UCT_IFACE_FLAG_* capability bits: the transport plan gives every PE one
// PeerPath, and the api layer validates, asks for the peer's path and dispatches to it.
//
// Addresses are symmetric addresses of our own heap (the same on every PE); the path knows where
// the peer's copy is. Blocking forms complete before they return (a put's bytes are in the
// target's heap: a signal, a barrier or another PE's get after it sees them); _nbi forms may
// complete later, at quiet. Every failure names the peer and the cause.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/common/status.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {

enum PathCaps : uint32_t {
  kPathLoadStore = 1u << 0,       // the peer's memory is in our address space (shmem_ptr)
  kPathRma = 1u << 1,             // one-sided put/get without the peer's CPU
  kPathNetworkAtomics = 1u << 2,  // atomics by the network, without the peer's CPU
  kPathTargetOps = 1u << 3,       // operations performed by the peer's progress thread
  kPathNodeBarrier = 1u << 4,     // a barrier over node-shared host counters (HostSyncArea)
  kPathDeviceMemory = 1u << 5,    // reaches a GPU heap directly (no staging through host buffers)
};

class PeerPath {
 public:
  virtual ~PeerPath() = default;
  virtual const char* name() const = 0;
  uint32_t caps() const { return caps_; }

  virtual Status put(int pe, void* dest, const void* source, size_t bytes) = 0;
  virtual Status get(int pe, void* dest, const void* source, size_t bytes) = 0;
  virtual Status put_nbi(int pe, void* dest, const void* source, size_t bytes) {
    return put(pe, dest, source, bytes);
  }
  virtual Status get_nbi(int pe, void* dest, const void* source, size_t bytes) {
    return get(pe, dest, source, bytes);
  }
  // request.address is symmetric; the result is the old value (zero-extended 4-byte ones).
  virtual Status atomic(int pe, const AtomicRequest& request, uint64_t* result) = 0;
  // Adds value to the 8-byte word at symmetric address word on pe without waiting for it to land:
  // a notification the peer polls for (the barrier's counters). Neither ordered with this PE's
  // other operations nor completed by quiet; it lands eventually (or the peer's wait times out).
  virtual Status signal_add(int pe, uint64_t* word, uint64_t value) {
    uint64_t old = 0;
    return atomic(pe, AtomicRequest{AtomicOp::kFetchAdd, word, 8, value, 0}, &old);
  }
  // Orders this PE's earlier operations on the path before its later ones (shmem_fence).
  virtual Status fence() = 0;
  // Completes this PE's outstanding operations on the path (shmem_quiet).
  virtual Status quiet() = 0;

 protected:
  uint32_t caps_ = 0;
};

}  // namespace vshmem
