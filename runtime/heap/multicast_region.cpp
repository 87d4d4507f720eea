#include "runtime/heap/multicast_region.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/common/log.hpp"
#include "runtime/ipc/handle_exchange.hpp"

namespace vshmem {
namespace {

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The multicast handle moves on its own exchange tags, above the heap's growth steps and below
// the host synchronization area's (runtime/api/host_sync.cpp).
constexpr uint64_t kMulticastExchangeTag = 1ull << 61;

struct StepReport {
  int32_t failed;
  int32_t step;
  char cause[472];
};

class BootstrapGroup final : public RegionGroup {
 public:
  explicit BootstrapGroup(Bootstrap& bootstrap) : bootstrap_(bootstrap) {
    for (int p = 0; p < bootstrap.size(); ++p) members_.push_back(p);
  }
  const std::vector<int>& members() const override { return members_; }
  int my_index() const override { return bootstrap_.rank(); }
  Status allgather(const void* mine, void* all, size_t bytes) override {
    return bootstrap_.allgather(mine, all, bytes);
  }
  uint64_t exchange_tag() const override { return kMulticastExchangeTag; }

 private:
  Bootstrap& bootstrap_;
  std::vector<int> members_;
};

}  // namespace

std::unique_ptr<RegionGroup> bootstrap_group(Bootstrap& bootstrap) {
  return std::make_unique<BootstrapGroup>(bootstrap);
}

const char* multicast_step_name(MulticastStep step) {
  switch (step) {
    case MulticastStep::kCapability: return "capability check";
    case MulticastStep::kGranularity: return "cuMulticastGetGranularity";
    case MulticastStep::kCreate: return "cuMulticastCreate";
    case MulticastStep::kImport: return "handle import";
    case MulticastStep::kAddDevice: return "cuMulticastAddDevice";
    case MulticastStep::kBind: return "cuMulticastBindMem";
    case MulticastStep::kMap: return "map";
  }
  return "?";
}

Status agree_on_step(RegionGroup& group, MulticastStep step, const Status& mine) {
  StepReport report = {};
  report.failed = mine.is_ok() ? 0 : 1;
  report.step = static_cast<int32_t>(step);
  if (!mine.is_ok()) {
    std::snprintf(report.cause, sizeof(report.cause), "%s", mine.message().c_str());
  }
  const int n = static_cast<int>(group.members().size());
  std::vector<StepReport> all(n);
  VSHMEM_RETURN_IF_ERROR(group.allgather(&report, all.data(), sizeof(report)));
  for (int p = 0; p < n; ++p) {
    if (all[p].failed) {
      all[p].cause[sizeof(all[p].cause) - 1] = '\0';
      return error(
          Code::kUnsupported,
          log::format("PE %d failed at %s: %s", group.members()[p],
                      multicast_step_name(static_cast<MulticastStep>(all[p].step)), all[p].cause));
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<MulticastRegion>> MulticastRegion::create(MemoryProvider& provider,
                                                                 Bootstrap& bootstrap,
                                                                 const SymmetricHeap& heap,
                                                                 FdExchange* fd_exchange,
                                                                 bool enabled, std::string* why) {
  return create(provider, bootstrap_group(bootstrap), heap, fd_exchange, enabled, why);
}

Result<std::unique_ptr<MulticastRegion>> MulticastRegion::create(
    MemoryProvider& provider, std::unique_ptr<RegionGroup> members, const SymmetricHeap& heap,
    FdExchange* fd_exchange, bool enabled, std::string* why) {
  const int n = static_cast<int>(members->members().size());
  const int me = members->my_index();
  if (!enabled) {
    *why = "VSHMEM_ENABLE_MULTICAST is not set to 1";
    return std::unique_ptr<MulticastRegion>();
  }
  RegionGroup& group = *members;
  const std::vector<int> pes = members->members();
  std::unique_ptr<MulticastRegion> region(
      new MulticastRegion(std::move(members), heap.base(), heap.size()));
  // Each step: what this PE did, then what all PEs did. A kUnsupported from the agreement is the
  // fallback; anything else (the bootstrap failing) is an error of its own.
  auto off = [&](const Status& agreed) -> Result<std::unique_ptr<MulticastRegion>> {
    if (agreed.code() != Code::kUnsupported) return agreed;
    *why = agreed.message();
    return std::unique_ptr<MulticastRegion>();
  };
#define VSHMEM_MC_STEP(step, status)                     \
  do {                                                   \
    Status agreed_ = agree_on_step(group, step, status); \
    if (!agreed_.is_ok()) return off(agreed_);           \
  } while (0)

  MulticastSupport* mc = provider.multicast();
  Status capable;
  if (mc == nullptr) {
    capable = error(Code::kUnsupported,
                    log::format("the %s memory provider has no multicast", provider.name()));
  } else {
    capable = mc->usable();
  }
  if (capable.is_ok()) {
    for (int p = 0; p < n; ++p) {
      if (p != me && heap.peer_slots()[pes[p]] < 0) {
        capable = error(Code::kUnsupported,
                        log::format("PE %d's memory is not mapped here (multicast spans PEs that "
                                    "map each other)",
                                    pes[p]));
        break;
      }
    }
  }
  VSHMEM_MC_STEP(MulticastStep::kCapability, capable);

  // Every PE asks; the largest answer holds for all (they are normally equal).
  Status st;
  uint64_t gran = 0;
  if (auto g = mc->granularity(heap.size(), n)) {
    gran = g.value();
  } else {
    st = g.status();
  }
  std::vector<uint64_t> grans(n);
  VSHMEM_RETURN_IF_ERROR(group.allgather(&gran, grans.data(), sizeof(gran)));
  gran = *std::max_element(grans.begin(), grans.end());
  if (st.is_ok() && provider.granularity() % gran != 0) {
    st = error(Code::kUnsupported,
               log::format("heap chunks are multiples of %zu bytes, not of the multicast "
                           "granularity %llu (set VSHMEM_HEAP_CHUNK_SIZE to a multiple)",
                           provider.granularity(), static_cast<unsigned long long>(gran)));
  }
  for (const auto& [offset, chunk] : heap.own_chunks()) {
    if (st.is_ok() && (offset % gran != 0 || chunk->size() % gran != 0)) {
      st = error(Code::kUnsupported,
                 log::format("heap chunk at offset %zu (%zu bytes) is not on the multicast "
                             "granularity %llu",
                             offset, chunk->size(), static_cast<unsigned long long>(gran)));
    }
  }
  VSHMEM_MC_STEP(MulticastStep::kGranularity, st);
  region->granularity_ = gran;
  region->size_ = round_up(heap.size(), gran);

  const HandleKind kind =
      heap.handle_kind() == HandleKind::kFabric ? HandleKind::kFabric : HandleKind::kPosixFd;
  ShareableHandle exported;
  if (me == 0) {
    auto made = mc->create(region->size_, n, kind);
    if (made) {
      region->object_ = std::move(made).value();
      auto h = region->object_->export_handle(kind);
      if (h) {
        exported = std::move(h).value();
      } else {
        st = h.status();
      }
    } else {
      st = made.status();
    }
  }
  VSHMEM_MC_STEP(MulticastStep::kCreate, st);

  // Member 0's handle to every member: fabric handles in the group's allgather, a POSIX FD over
  // the handle sockets (the others send member 0 nothing).
  if (n > 1 && kind == HandleKind::kPosixFd && fd_exchange == nullptr) {
    st = error(Code::kState, "no handle exchange for the multicast handle");
  } else if (n > 1 || kind == HandleKind::kFabric) {
    HandleExchange handles(
        kind, fd_exchange,
        [&group](const void* mine, void* all, size_t bytes) {
          return group.allgather(mine, all, bytes);
        },
        pes, pes[me]);
    std::vector<ShareableHandle> mine;
    if (me == 0) mine.push_back(std::move(exported));
    const std::vector<int> peers =
        me == 0 ? std::vector<int>(pes.begin() + 1, pes.end()) : std::vector<int>{pes[0]};
    auto got = handles.exchange(peers, mine, Status::ok(), 1, group.exchange_tag());
    if (!got) {
      st = got.status();
    } else if (me != 0) {
      auto handle = HandleExchange::take(got.value(), pes[0], 1, "multicast handle");
      if (!handle) {
        st = handle.status();
      } else if (auto imported = mc->import(std::move(handle.value()[0]), region->size_)) {
        region->object_ = std::move(imported).value();
      } else {
        st = imported.status();
      }
    }
  }
  VSHMEM_MC_STEP(MulticastStep::kImport, st);

  VSHMEM_MC_STEP(MulticastStep::kAddDevice, region->object_->add_device());

  for (const auto& [offset, chunk] : heap.own_chunks()) {
    if (!st.is_ok()) break;
    st = region->object_->bind(offset, chunk);
    if (st.is_ok()) region->bound_end_ = std::max(region->bound_end_, offset + chunk->size());
  }
  VSHMEM_MC_STEP(MulticastStep::kBind, st);

  uintptr_t va = 0;
  if (auto mapped = region->object_->map()) {
    va = mapped.value();
  } else {
    st = mapped.status();
  }
  VSHMEM_MC_STEP(MulticastStep::kMap, st);
#undef VSHMEM_MC_STEP
  region->base_ = va;
  VSHMEM_INFO("multicast region: %zu bytes at %#lx for H=%#lx, granularity %zu, %d members",
              region->size_, static_cast<unsigned long>(va),
              static_cast<unsigned long>(heap.base()), region->granularity_, n);
  return region;
}

MulticastRegion::~MulticastRegion() = default;

Status MulticastRegion::bind_chunk(size_t offset, std::shared_ptr<PhysicalAllocation> chunk) {
  const size_t bytes = chunk->size();
  Status st = object_->bind(offset, std::move(chunk));
  VSHMEM_RETURN_IF_ERROR(agree_on_step(*group_, MulticastStep::kBind, st));
  bound_end_ = std::max(bound_end_, offset + bytes);
  return Status::ok();
}

void* MulticastRegion::translate(const void* sym) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(sym);
  if (base_ == 0 || a < heap_base_ || a - heap_base_ >= bound_end_) return nullptr;
  return reinterpret_cast<void*>(base_ + (a - heap_base_));
}

}  // namespace vshmem
