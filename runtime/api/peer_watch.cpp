#include "runtime/api/peer_watch.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/common/process_info.hpp"

namespace vshmem::detail {

namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

}  // namespace

Result<std::unique_ptr<PeerWatch>> PeerWatch::create(Bootstrap& bootstrap,
                                                     const Topology& topology) {
  std::unique_ptr<PeerWatch> w(new PeerWatch());
  const int n = bootstrap.size();
  const uint64_t mine[2] = {static_cast<uint64_t>(getpid()), process_start_time(getpid())};
  std::vector<uint64_t> all(2 * static_cast<size_t>(n));
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(mine, all.data(), sizeof(mine)));
  w->pids_.resize(n);
  w->pidfds_.assign(n, -1);
  for (int pe = 0; pe < n; ++pe) {
    w->pids_[pe] = static_cast<pid_t>(all[2 * static_cast<size_t>(pe)]);
    if (pe == bootstrap.rank() || topology.node_of_pe[pe] != topology.my_node) continue;
    // Watched only when this PE sees the very process the peer is (same pid, same start time):
    // never a stranger that happens to carry its pid in another PID namespace.
    const int fd = open_pidfd(w->pids_[pe]);
    if (fd >= 0 && all[2 * pe + 1] != 0 && process_start_time(w->pids_[pe]) == all[2 * pe + 1]) {
      w->pidfds_[pe] = fd;
    } else if (fd >= 0) {
      close(fd);
    }
  }
  return w;
}

PeerWatch::~PeerWatch() {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
}

int PeerWatch::exited_peer() const {
  for (size_t pe = 0; pe < pidfds_.size(); ++pe) {
    if (pidfds_[pe] < 0) continue;
    pollfd p{pidfds_[pe], POLLIN, 0};
    // A pidfd becomes readable when its process exits (also while it is an unreaped zombie).
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0) return static_cast<int>(pe);
  }
  return -1;
}

}  // namespace vshmem::detail
