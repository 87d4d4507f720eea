// Passing POSIX file descriptors (shareable memory handles) between the PEs of one node, over
// Unix-domain sockets with SCM_RIGHTS. Each PE listens at <dir>/pe<N>, in the job's private
// (0700) directory (runtime/common/private_dir.hpp): no other user can connect at all. A message
// opens with the authenticated hello of the connection substrate (job id and secret, compared in
// constant time) and is accepted only from a process of our uid (SO_PEERCRED).
//
// Nothing here waits without a limit: connects retry until the exchange's deadline (a full
// accept queue included), and the receiver serves every pending connection at once with a short
// deadline each, so a connection that sends nothing, or half a message, neither blocks the PE nor
// keeps a real peer out.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/connection.hpp"
#include "runtime/common/status.hpp"

namespace vshmem {

class FdExchange {
 public:
  // Starts listening as PE `my_pe` of job `job_id` in directory `dir` (which must be private to
  // us: check_private_dir). Every PE of the node must have called this (and the bootstrap must
  // have synchronised) before anyone exchanges.
  static Result<std::unique_ptr<FdExchange>> create(const std::string& dir,
                                                    const std::string& job_id,
                                                    const std::string& secret, int my_pe,
                                                    std::chrono::milliseconds timeout);
  ~FdExchange();
  FdExchange(const FdExchange&) = delete;
  FdExchange& operator=(const FdExchange&) = delete;

  // Collective among `peers` (which must not include my_pe): sends `fds` (not consumed) to every
  // peer and returns, per peer, the descriptors it sent (owned by the caller), for exchange `tag`.
  // Tags must increase from call to call; a message for a later tag that arrives early is kept.
  // Tags with kOneShotTag set are outside that order (a team's multicast handle: teams of
  // different members make theirs in any order): they neither drop nor are dropped by others, and
  // each is used once.
  // Bounded by the timeout given at create.
  Result<std::map<int, std::vector<int>>> exchange(const std::vector<int>& peers,
                                                   const std::vector<int>& fds, uint64_t tag);

  static constexpr uint64_t kOneShotTag = 1ull << 63;

  // Where PE `pe` listens, for tests and messages.
  static std::string socket_path(const std::string& dir, int pe);

  // How long one incoming connection may take to deliver its message once accepted.
  static constexpr std::chrono::milliseconds kConnectionDeadline{2000};
  // The listening socket's queue of connections not yet accepted. A sender retries while it is
  // full, and the receiver empties it whenever it waits for handles.
  static constexpr int kBacklog = 128;
  // At most this many accepted connections wait for their message; beyond it the oldest goes.
  static constexpr size_t kMaxIncoming = 128;

 private:
  struct Incoming;
  FdExchange(UniqueFd listen_fd, std::string dir, std::string job_id, std::string secret, int my_pe,
             std::chrono::milliseconds timeout);
  Status send_to(int peer, const std::vector<int>& fds, uint64_t tag, Deadline deadline);
  // Waits until one authenticated message has arrived (into pending_) or `deadline` passes.
  // A connection accepted meanwhile may deliver its message until kConnectionDeadline after its
  // accept or `exchange_deadline`, whichever comes first: not until `deadline`, which is a mere
  // 5 ms poll slice while this PE is still sending.
  Status receive_one(Deadline deadline, Deadline exchange_deadline);
  // Reads what `in` has; true when the connection is finished (message stored or dropped).
  bool serve(Incoming& in);

  UniqueFd listen_fd_;
  std::string dir_;
  std::string job_id_;
  std::string secret_;
  int my_pe_;
  std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<Incoming>> incoming_;
  std::string last_rejection_;
  Status own_failure_;  // a failure of this process (e.g. out of descriptors) seen while serving //
                        // why the last bad connection was dropped, for the timeout text
  // (tag, source PE) -> descriptors received and not yet handed out.
  std::map<std::pair<uint64_t, int>, std::vector<UniqueFd>> pending_;
};

}  // namespace vshmem
