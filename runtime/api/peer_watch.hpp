// The processes of the node-local peers, watched while a PE waits for them.
//
// Host-side waits (barriers over the shared host pages, team signals, wait_until on the heap)
// spin without a time limit: a long computation between two barriers must not hit one. A peer
// that exits without shmem_finalize would then leave the others waiting forever under launchers
// that see a clean exit (mpirun, srun; vshmemrun stops the job itself). Each PE opens a pidfd for
// every node-local peer at init; a long wait asks, now and then, whether one of them has exited,
// and the wait's caller fails with a message naming it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/status.hpp"

namespace vshmem::detail {

class PeerWatch {
 public:
  // Collective: every PE passes its process id through the bootstrap.
  static Result<std::unique_ptr<PeerWatch>> create(Bootstrap& bootstrap, const Topology& topology);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // A node-local peer whose process has exited, or -1. Peers whose pidfd could not be opened
  // (an old kernel, another PID namespace) are never reported.
  int exited_peer() const;
  pid_t pid_of(int pe) const { return pids_[pe]; }

 private:
  PeerWatch() = default;
  std::vector<pid_t> pids_;  // per PE
  std::vector<int> pidfds_;  // per PE; -1 for this PE, remote PEs and unwatchable peers
};

}  // namespace vshmem::detail
