// A memory provider whose every operation is unsupported: the base of the fakes that unit tests
// give the runtime's collective logic (VA agreement, transport plan), each overriding only what
// it simulates.
#pragma once

#include <memory>
#include <vector>

#include "runtime/memory/memory.hpp"

namespace vshmem::testing {

class StubProvider : public MemoryProvider {
 public:
  const char* name() const override { return "stub"; }
  bool is_device_memory() const override { return false; }
  size_t granularity() const override { return 4096; }
  std::vector<HandleKind> handle_kinds() const override { return {}; }
  Result<uintptr_t> find_free_range(size_t, size_t) override { return unsupported(); }
  Result<std::shared_ptr<VirtualReservation>> reserve(uintptr_t, size_t) override {
    return unsupported();
  }
  Result<std::shared_ptr<PhysicalAllocation>> create(size_t) override { return unsupported(); }
  Result<std::shared_ptr<PhysicalAllocation>> import(ShareableHandle, size_t) override {
    return unsupported();
  }
  Result<std::unique_ptr<Mapping>> map(std::shared_ptr<VirtualReservation>, size_t,
                                       std::shared_ptr<PhysicalAllocation>) override {
    return unsupported();
  }
  Status copy(void*, const void*, size_t) override { return unsupported(); }
  Status atomic(const AtomicRequest&, uint64_t*) override { return unsupported(); }
  Status fill(void*, int, size_t) override { return unsupported(); }

 protected:
  static Status unsupported() { return error(Code::kUnsupported, "not simulated by this test"); }
};

}  // namespace vshmem::testing
