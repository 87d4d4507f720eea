#include "runtime/transport/host_sync.hpp"

#include "runtime/common/log.hpp"
#include "runtime/ipc/handle_exchange.hpp"

namespace vshmem {
namespace {

// The handle exchange's tags below this are the heap's growth steps; this one is ours.
constexpr uint64_t kExchangeTag = 1ull << 62;

Result<std::unique_ptr<Mapping>> map_anywhere(MemoryProvider& provider,
                                              std::shared_ptr<PhysicalAllocation> physical) {
  const size_t bytes = physical->size();
  uintptr_t where = 0;
  VSHMEM_ASSIGN_OR_RETURN(where, provider.find_free_range(bytes, provider.granularity()));
  std::shared_ptr<VirtualReservation> range;
  VSHMEM_ASSIGN_OR_RETURN(range, provider.reserve(where, bytes));
  return provider.map(std::move(range), 0, std::move(physical));
}

}  // namespace

Result<std::unique_ptr<HostSyncArea>> HostSyncArea::create(FdExchange& exchange,
                                                           const std::vector<int>& peers, int my_pe,
                                                           int n_pes) {
  std::unique_ptr<HostSyncArea> area(new HostSyncArea);
  area->provider_ = make_host_provider();
  MemoryProvider& provider = *area->provider_;
  area->base_.assign(n_pes, nullptr);
  const size_t bytes = provider.granularity();  // one page holds kCounters counters
  static_assert(kWakeOffset + 2 * sizeof(uint32_t) <= 4096);

  std::shared_ptr<PhysicalAllocation> own;
  VSHMEM_ASSIGN_OR_RETURN(own, provider.create(bytes));  // a fresh memfd is zeroed
  ShareableHandle handle;
  VSHMEM_ASSIGN_OR_RETURN(handle, own->export_handle(HandleKind::kPosixFd));
  std::unique_ptr<Mapping> own_map;
  VSHMEM_ASSIGN_OR_RETURN(own_map, map_anywhere(provider, own));
  area->base_[my_pe] = static_cast<uint64_t*>(own_map->address());
  area->mappings_.push_back(std::move(own_map));

  std::vector<ShareableHandle> mine;
  mine.push_back(std::move(handle));
  HandleExchange handles(&exchange, my_pe);
  HandleExchange::Received received;
  VSHMEM_ASSIGN_OR_RETURN(received, handles.exchange(peers, mine, Status::ok(), 1, kExchangeTag));
  for (int pe : peers) {
    std::vector<ShareableHandle> page;
    VSHMEM_ASSIGN_OR_RETURN(page, HandleExchange::take(received, pe, 1, "barrier page"));
    std::shared_ptr<PhysicalAllocation> phys;
    VSHMEM_ASSIGN_OR_RETURN(phys, provider.import(std::move(page[0]), bytes));
    std::unique_ptr<Mapping> m;
    VSHMEM_ASSIGN_OR_RETURN(m, map_anywhere(provider, std::move(phys)));
    area->base_[pe] = static_cast<uint64_t*>(m->address());
    area->mappings_.push_back(std::move(m));
  }
  return area;
}

}  // namespace vshmem
