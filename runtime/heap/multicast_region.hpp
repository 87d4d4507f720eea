// A multicast region over the symmetric heap: one multicast object (NVLink SHARP) the size of H,
// to which every PE binds each of its heap chunks at the chunk's offset, mapped on every PE. A
// store to region + (a - H) reaches every PE's copy of a; multimem.ld_reduce there combines them.
//
// Every step is agreed by all PEs over the bootstrap: if any PE fails any step (no
// CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, a driver call failing, a chunk not on the multicast
// granularity), every PE learns which PE, which step and the driver's answer, releases what it
// made, and all continue with unicast algorithms together.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/heap/symmetric_heap.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {

// The steps, in order; a failure names its step.
enum class MulticastStep {
  kCapability,   // the device reports multicast support; every PE maps every other
  kGranularity,  // cuMulticastGetGranularity; the heap's chunks are multiples of it
  kCreate,       // cuMulticastCreate on PE 0 and the export of its handle
  kImport,       // the handle reaches every PE and is imported
  kAddDevice,    // cuMulticastAddDevice on every PE
  kBind,         // cuMulticastBindMem of every heap chunk (also at every growth)
  kMap,          // a VA range, cuMemMap and cuMemSetAccess of the object
};
const char* multicast_step_name(MulticastStep step);

class MulticastRegion {
 public:
  // Collective over every PE of the bootstrap. Null when multicast stays off; *why then says
  // why, identically on every PE ("VSHMEM_ENABLE_MULTICAST is not set" when `enabled` is false:
  // then no driver multicast call is made at all). fd_exchange carries a POSIX FD handle when the
  // heap's handles are not fabric handles.
  static Result<std::unique_ptr<MulticastRegion>> create(MemoryProvider& provider,
                                                         Bootstrap& bootstrap,
                                                         const SymmetricHeap& heap,
                                                         FdExchange* fd_exchange, bool enabled,
                                                         std::string* why);
  ~MulticastRegion();

  // Collective (every PE, after every heap growth): binds this PE's new chunk. A failure anywhere
  // is reported on every PE (the region must then be dropped by all: Code::kUnsupported with the
  // message); a bootstrap failure is returned as it is.
  Status bind_chunk(size_t offset, std::shared_ptr<PhysicalAllocation> chunk);

  // The multicast address of H (every PE's copy of H + x is reached through base() + x).
  uintptr_t base() const { return base_; }
  size_t size() const { return size_; }
  // The multicast address of symmetric address sym, or null outside the bound (committed) heap.
  void* translate(const void* sym) const;

 private:
  MulticastRegion(Bootstrap& bootstrap, uintptr_t heap_base, size_t heap_size)
      : bootstrap_(bootstrap), heap_base_(heap_base), heap_size_(heap_size) {}

  Bootstrap& bootstrap_;
  uintptr_t heap_base_;
  size_t heap_size_;
  size_t granularity_ = 0;
  size_t size_ = 0;
  uintptr_t base_ = 0;
  size_t bound_end_ = 0;  // [H, H + bound_end_) is bound on every PE
  std::unique_ptr<MulticastObject> object_;
};

// The all-PE agreement every step ends with: Ok when every PE's status is ok; else, on every PE,
// Code::kUnsupported naming the first PE that failed, the step and its cause.
Status agree_on_step(Bootstrap& bootstrap, MulticastStep step, const Status& mine);

}  // namespace vshmem
