#include "runtime/transport/proxy_ring.hpp"

#include "runtime/common/log.hpp"

namespace vshmem {

Result<std::unique_ptr<ProxyRing>> ProxyRing::create(MemoryProvider& provider, uint32_t slots,
                                                     uint64_t timeout_ns, size_t stage_bytes) {
  if (slots == 0 || (slots & (slots - 1)) != 0) {
    return error(Code::kInvalidArgument,
                 log::format("the device proxy's ring: %u slots is not a power of two", slots));
  }
  std::unique_ptr<ProxyRing> ring(new ProxyRing(provider));
  const size_t shared_bytes = sizeof(proxy::Control) + size_t{slots} * sizeof(proxy::Slot);
  VSHMEM_ASSIGN_OR_RETURN(ring->shared_,
                          provider.allocate(BufferKind::kDeviceMappedHost, shared_bytes));
  VSHMEM_ASSIGN_OR_RETURN(ring->tickets_,
                          provider.allocate(BufferKind::kDevice, 2 * sizeof(uint64_t)));
  VSHMEM_ASSIGN_OR_RETURN(ring->stage_, provider.alloc_staging(stage_bytes));
  ring->stage_bytes_ = stage_bytes;
  auto* base = static_cast<unsigned char*>(ring->shared_->address());
  ring->view_.control = reinterpret_cast<proxy::Control*>(base);
  ring->view_.slots = reinterpret_cast<proxy::Slot*>(base + sizeof(proxy::Control));
  ring->view_.tickets = static_cast<uint64_t*>(ring->tickets_->address());
  ring->view_.n_slots = slots;
  ring->view_.timeout_ns = timeout_ns;
  return ring;
}

ProxyRing::~ProxyRing() {
  if (stage_ != nullptr) provider_.free_staging(stage_);
}

}  // namespace vshmem
