#include "runtime/api/peer_watch.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

// The start time of a process (field 22 of /proc/<pid>/stat, clock ticks since boot), or 0:
// with the pid it names one process, also if the pid is reused or names another PID namespace.
uint64_t start_time(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  int field = 2;
  for (; *p != 0 && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  return std::strtoull(p, nullptr, 10);
}

}  // namespace

Result<std::unique_ptr<PeerWatch>> PeerWatch::create(Bootstrap& bootstrap,
                                                     const Topology& topology) {
  std::unique_ptr<PeerWatch> w(new PeerWatch());
  const int n = bootstrap.size();
  const uint64_t mine[2] = {static_cast<uint64_t>(getpid()), start_time(getpid())};
  std::vector<uint64_t> all(2 * static_cast<size_t>(n));
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(mine, all.data(), sizeof(mine)));
  w->pids_.resize(n);
  w->pidfds_.assign(n, -1);
  for (int pe = 0; pe < n; ++pe) {
    w->pids_[pe] = static_cast<pid_t>(all[2 * pe]);
    if (pe == bootstrap.rank() || topology.node_of_pe[pe] != topology.my_node) continue;
    // Watched only when this PE sees the very process the peer is (same pid, same start time):
    // never a stranger that happens to carry its pid in another PID namespace.
    const int fd = open_pidfd(w->pids_[pe]);
    if (fd >= 0 && all[2 * pe + 1] != 0 && start_time(w->pids_[pe]) == all[2 * pe + 1]) {
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
