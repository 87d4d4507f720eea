// A multicast region over the symmetric heap: one multicast object (NVLink SHARP) the size of H,
// to which every member (every PE for the world's region, the members of a team for a team's)
// binds each of its heap chunks at the chunk's offset, mapped on every member. A store to
// region + (a - H) reaches every member's copy of a; multimem.ld_reduce there combines them.
//
// Every step is agreed by all members: if any member fails any step (no
// CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, a driver call failing, a chunk not on the multicast
// granularity), every member learns which PE, which step and the driver's answer, releases what
// it made, and all continue with unicast algorithms together.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// The PEs a region spans and how they agree: the bootstrap for the world's region
// (bootstrap_group), the team's own exchange for a team's (runtime/api/team.cpp).
class RegionGroup {
 public:
  virtual ~RegionGroup() = default;
  // World PE numbers of the members, in the group's order; members()[my_index()] is this PE.
  virtual const std::vector<int>& members() const = 0;
  virtual int my_index() const = 0;
  // Collective among the members: every member's `bytes` at `mine`, in member order, into `all`.
  virtual Status allgather(const void* mine, void* all, size_t bytes) = 0;
  // The handle exchange's tag for this group's region (runtime/ipc/fd_passing.hpp): unique among
  // the exchanges each member takes part in.
  virtual uint64_t exchange_tag() const = 0;
};

// Every PE of the job, over the bootstrap.
std::unique_ptr<RegionGroup> bootstrap_group(Bootstrap& bootstrap);

class MulticastRegion {
 public:
  // Collective over the group's members: as below, for a team's region (the members must map
  // each other).
  static Result<std::unique_ptr<MulticastRegion>> create(MemoryProvider& provider,
                                                         std::unique_ptr<RegionGroup> group,
                                                         const SymmetricHeap& heap,
                                                         FdExchange* fd_exchange, bool enabled,
                                                         std::string* why);
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

  // Collective (every member, after every heap growth): binds this PE's new chunk. A failure
  // anywhere is reported on every member (the region must then be dropped by all:
  // Code::kUnsupported with the message); a failure of the group's exchange is returned as it is.
  Status bind_chunk(size_t offset, std::shared_ptr<PhysicalAllocation> chunk);

  // The multicast address of H (every PE's copy of H + x is reached through base() + x).
  uintptr_t base() const { return base_; }
  size_t size() const { return size_; }
  // The multicast address of symmetric address sym, or null outside the bound (committed) heap.
  void* translate(const void* sym) const;
  const RegionGroup& group() const { return *group_; }

 private:
  MulticastRegion(std::unique_ptr<RegionGroup> group, uintptr_t heap_base, size_t heap_size)
      : group_(std::move(group)), heap_base_(heap_base), heap_size_(heap_size) {}

  std::unique_ptr<RegionGroup> group_;
  uintptr_t heap_base_;
  size_t heap_size_;
  size_t granularity_ = 0;
  size_t size_ = 0;
  uintptr_t base_ = 0;
  size_t bound_end_ = 0;  // [H, H + bound_end_) is bound on every PE
  std::unique_ptr<MulticastObject> object_;
};

// The agreement every step ends with: Ok when every member's status is ok; else, on every member,
// Code::kUnsupported naming the first (world) PE that failed, the step and its cause.
Status agree_on_step(RegionGroup& group, MulticastStep step, const Status& mine);

}  // namespace vshmem
