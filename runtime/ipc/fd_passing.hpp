// Passing POSIX file descriptors (shareable memory handles) between the PEs of one node, over
// Unix-domain sockets in the abstract namespace (nothing on disk to clean up, gone when the
// process dies) with SCM_RIGHTS. A message is accepted only from a process of the same user
// (SO_PEERCRED) that knows the job secret.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/status.hpp"

namespace vshmem {

class FdExchange {
 public:
  // Starts listening as PE `my_pe` of job `job_id`. Every PE of the node must have called this
  // (and the bootstrap must have synchronised) before anyone exchanges.
  static Result<std::unique_ptr<FdExchange>> create(const std::string& job_id,
                                                    const std::string& secret, int my_pe,
                                                    std::chrono::milliseconds timeout);
  ~FdExchange();
  FdExchange(const FdExchange&) = delete;
  FdExchange& operator=(const FdExchange&) = delete;

  // Collective among `peers` (which must not include my_pe): sends `fds` (not consumed) to every
  // peer and returns, per peer, the descriptors it sent (owned by the caller), for exchange `tag`.
  // Tags must increase from call to call; a message for a later tag that arrives early is kept.
  Result<std::map<int, std::vector<int>>> exchange(const std::vector<int>& peers,
                                                   const std::vector<int>& fds, uint64_t tag);

  // The socket name of a PE (without the leading NUL), for tests and messages.
  static std::string socket_name(const std::string& job_id, int pe);

 private:
  FdExchange(int listen_fd, std::string job_id, std::string secret, int my_pe,
             std::chrono::milliseconds timeout);
  Status send_to(int peer, const std::vector<int>& fds, uint64_t tag);
  Status receive_one(std::chrono::steady_clock::time_point deadline);

  int listen_fd_;
  std::string job_id_;
  std::string secret_;
  int my_pe_;
  std::chrono::milliseconds timeout_;
  // (tag, source PE) -> descriptors received and not yet handed out.
  std::map<std::pair<uint64_t, int>, std::vector<int>> pending_;
};

}  // namespace vshmem
