#include "runtime/ipc/handle_exchange.hpp"

#include <cstring>

#include "runtime/common/log.hpp"

namespace vshmem {

HandleExchange::HandleExchange(HandleKind kind, FdExchange* fds, Allgather allgather,
                               std::vector<int> members, int my_pe)
    : kind_(kind),
      fds_(fds),
      allgather_(std::move(allgather)),
      members_(std::move(members)),
      my_pe_(my_pe) {}

Result<HandleExchange::Received> HandleExchange::exchange(const std::vector<int>& peers,
                                                          const std::vector<ShareableHandle>& mine,
                                                          const Status& exported, size_t max_count,
                                                          uint64_t tag) {
  Status usable = exported;
  if (usable.is_ok() && mine.size() > max_count) {
    usable = error(Code::kInvalidArgument,
                   log::format("%zu handles to send, at most %zu", mine.size(), max_count));
  }
  for (size_t i = 0; i < mine.size() && usable.is_ok(); ++i) {
    if (mine[i].kind() != kind_) {
      usable = error(Code::kInvalidArgument,
                     log::format("a %s handle in a %s exchange", handle_kind_name(mine[i].kind()),
                                 handle_kind_name(kind_)));
    }
  }
  if (kind_ == HandleKind::kFabric) {
    static const std::vector<ShareableHandle> kNone;
    Result<Received> got = exchange_fabric(peers, usable.is_ok() ? mine : kNone, max_count);
    VSHMEM_RETURN_IF_ERROR(usable);
    return got;
  }
  if (kind_ != HandleKind::kPosixFd) {
    return error(Code::kUnsupported,
                 log::format("no %s handles can be exchanged", handle_kind_name(kind_)));
  }
  VSHMEM_RETURN_IF_ERROR(usable);
  return exchange_fds(peers, mine, tag);
}

Result<HandleExchange::Received> HandleExchange::exchange_fds(
    const std::vector<int>& peers, const std::vector<ShareableHandle>& mine, uint64_t tag) {
  if (peers.empty()) return Received{};
  if (fds_ == nullptr) return error(Code::kState, "peers to exchange with but no handle sockets");
  std::vector<int> raw;
  raw.reserve(mine.size());
  for (const ShareableHandle& h : mine) raw.push_back(h.fd());
  std::map<int, std::vector<int>> got;
  VSHMEM_ASSIGN_OR_RETURN(got, fds_->exchange(peers, raw, tag));
  Received out;  // owns every descriptor before anything can fail
  for (auto& [pe, fds] : got) {
    auto& handles = out[pe];
    for (int fd : fds) handles.push_back(ShareableHandle::from_fd(fd));
  }
  return out;
}

Result<HandleExchange::Received> HandleExchange::exchange_fabric(
    const std::vector<int>& peers, const std::vector<ShareableHandle>& mine, size_t max_count) {
  if (!allgather_) return error(Code::kState, "fabric handles to exchange but no allgather");
  // Per member: the number of handles, then max_count handle slots.
  constexpr size_t kHb = ShareableHandle::kFabricBytes;
  const size_t row = sizeof(uint64_t) + max_count * kHb;
  std::vector<uint8_t> own(row, 0), all(members_.size() * row);
  const uint64_t count = mine.size();
  std::memcpy(own.data(), &count, sizeof(count));
  for (size_t i = 0; i < mine.size(); ++i) {
    std::memcpy(&own[sizeof(uint64_t) + i * kHb], mine[i].fabric().data(), kHb);
  }
  VSHMEM_RETURN_IF_ERROR(allgather_(own.data(), all.data(), row));
  Received out;
  for (int pe : peers) {
    size_t index = 0;
    while (index < members_.size() && members_[index] != pe) ++index;
    if (index == members_.size()) {
      return error(Code::kInvalidArgument,
                   log::format("PE %d is not a member of the handle exchange", pe));
    }
    const uint8_t* r = &all[index * row];
    uint64_t n = 0;
    std::memcpy(&n, r, sizeof(n));
    if (n > max_count) {
      return error(Code::kPeerFailure,
                   log::format("PE %d sent %llu fabric handles (at most %zu)", pe,
                               static_cast<unsigned long long>(n), max_count));
    }
    auto& handles = out[pe];
    for (uint64_t i = 0; i < n; ++i) {
      handles.push_back(ShareableHandle::from_fabric(r + sizeof(uint64_t) + i * kHb));
    }
  }
  return out;
}

Result<std::vector<ShareableHandle>> HandleExchange::take(Received& received, int pe, size_t count,
                                                          const char* what) {
  auto it = received.find(pe);
  const size_t got = it == received.end() ? 0 : it->second.size();
  if (got == 0 && count > 0) {
    return error(Code::kPeerFailure, log::format("PE %d sent no %s", pe, what));
  }
  if (got != count) {
    return error(Code::kPeerFailure,
                 log::format("PE %d sent %zu %ss, not %zu", pe, got, what, count));
  }
  if (it == received.end()) return std::vector<ShareableHandle>{};
  std::vector<ShareableHandle> out = std::move(it->second);
  received.erase(it);
  return out;
}

}  // namespace vshmem
