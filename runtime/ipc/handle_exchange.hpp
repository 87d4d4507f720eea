// Moving memory handles between PEs that map each other's memory, whatever their kind: POSIX file
// descriptors over the node's handle sockets (FdExchange), fabric handles as bytes in an allgather
// of the group. What a caller gets back is owned (ShareableHandle closes a descriptor nobody
// took), counted per peer, and checked against what the caller expected, so that "receive,
// import, map" is written once per caller and never handles a raw descriptor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {

class HandleExchange {
 public:
  // Collective among the group's members: every member's `bytes` at `mine`, in member order, into
  // `all` (the bootstrap's allgather for the whole job, a team's for a team).
  using Allgather = std::function<Status(const void* mine, void* all, size_t bytes)>;

  // `members`: the world PE numbers in the allgather's order; `my_pe` is among them. `fds` is
  // needed for kPosixFd with peers, `allgather` for kFabric.
  HandleExchange(HandleKind kind, FdExchange* fds, Allgather allgather, std::vector<int> members,
                 int my_pe);
  // A job-wide exchange of POSIX FDs only (no allgather).
  HandleExchange(FdExchange* fds, int my_pe)
      : HandleExchange(HandleKind::kPosixFd, fds, {}, {}, my_pe) {}

  // Per peer (world PE number), the handles it sent, in its order.
  using Received = std::map<int, std::vector<ShareableHandle>>;

  // Collective: sends this PE's handles `mine` (at most max_count; descriptors stay ours) to every
  // PE of `peers` (world numbers, never my_pe) and returns what each of them sent, owned.
  //  - kPosixFd: among `peers` only, tag as FdExchange::exchange says. A PE that could not export
  //    (`exported` not ok) returns that at once.
  //  - kFabric: every member takes part (the allgather keeps the group's collectives in step), a
  //    PE that could not export too: it sends none and then returns `exported`.
  Result<Received> exchange(const std::vector<int>& peers, const std::vector<ShareableHandle>& mine,
                            const Status& exported, size_t max_count, uint64_t tag);

  // Peer `pe`'s handles out of `received`, exactly `count` of them, else an error naming the PE
  // and `what` it should have sent ("memory handle", "barrier page", ...).
  static Result<std::vector<ShareableHandle>> take(Received& received, int pe, size_t count,
                                                   const char* what);

  HandleKind kind() const { return kind_; }

 private:
  Result<Received> exchange_fds(const std::vector<int>& peers,
                                const std::vector<ShareableHandle>& mine, uint64_t tag);
  Result<Received> exchange_fabric(const std::vector<int>& peers,
                                   const std::vector<ShareableHandle>& mine, size_t max_count);

  HandleKind kind_;
  FdExchange* fds_;
  Allgather allgather_;
  std::vector<int> members_;
  int my_pe_;
};

}  // namespace vshmem
