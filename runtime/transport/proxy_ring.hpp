// The memory of a PE's device-proxy request ring (vshmem/device/impl/proxy_ring.h), owned by the
// runtime: the slots and control block in page-locked host memory that the GPU maps at the same
// address, the producers' ticket counter in GPU memory (their fetch-and-add stays on the GPU),
// and the proxy thread's page-locked staging buffer. All of it comes from the memory provider
// (the driver API libvshmem loads at run time), is made once per shmem_init when device code has
// a peer it cannot map, and is freed on destruction: after the proxy thread stopped and the
// device state stopped naming it (shmem_finalize), before the provider goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/common/status.hpp"
#include "runtime/memory/memory.hpp"
#include "vshmem/device/impl/proxy_ring.h"

namespace vshmem {

class ProxyRing {
 public:
  static constexpr size_t kStageBytes = size_t{4} << 20;

  // A ring of `slots` slots (a power of two, at least 1) whose producers wait at most
  // timeout_ns: zeroed control block and slots, ticket counter 0.
  static Result<std::unique_ptr<ProxyRing>> create(MemoryProvider& provider, uint32_t slots,
                                                   uint64_t timeout_ns,
                                                   size_t stage_bytes = kStageBytes);
  ~ProxyRing();
  ProxyRing(const ProxyRing&) = delete;
  ProxyRing& operator=(const ProxyRing&) = delete;

  // What the device state holds and the proxy thread drains.
  const proxy::RingView& view() const { return view_; }
  void* stage() const { return stage_; }
  size_t stage_bytes() const { return stage_bytes_; }

 private:
  explicit ProxyRing(MemoryProvider& provider) : provider_(provider) {}

  MemoryProvider& provider_;
  std::unique_ptr<Buffer> shared_;   // control block, then the slots
  std::unique_ptr<Buffer> tickets_;  // the counter and the producers' view of consumed
  void* stage_ = nullptr;            // provider_.alloc_staging
  size_t stage_bytes_ = 0;
  proxy::RingView view_{};
};

}  // namespace vshmem
