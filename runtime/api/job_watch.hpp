// Between shmem_init and shmem_finalize, a thread of each PE checks a few times a second that the
// job can still complete, and ends this PE with a message naming the cause when it cannot:
//   - a node-local peer's process exited (its pidfd, runtime/api/peer_watch.hpp);
//   - the network saw the connection to a peer on another node break (the remote path);
//   - this PE's GPU can run no more work (a kernel trapped, asserted or faulted: CUDA's sticky
//     error), which the application may never look at.
// Host-side waits already notice a node-local peer that is gone; this thread also covers a PE
// that computes, or waits inside a kernel on the GPU (the host then sits in the application's
// cudaStreamSynchronize), and peers on other nodes, under launchers that do not stop the job
// themselves (mpirun --enable-recovery, srun without --kill-on-bad-exit). A peer that is gone
// is reported only when it is still gone at the next check: one that ended the job itself
// (shmem_global_exit) has its launcher stop us first, with its own message. The watch stops at
// the start of shmem_finalize, and at exit() for a process that leaves without it.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <pthread.h>

namespace vshmem::detail {

struct Runtime;

class JobWatch {
 public:
  // Starts watching rt (which must outlive the watch).
  static std::unique_ptr<JobWatch> start(Runtime& rt);
  // Stops and joins the thread.
  ~JobWatch();
  JobWatch(const JobWatch&) = delete;
  JobWatch& operator=(const JobWatch&) = delete;

 private:
  explicit JobWatch(Runtime& rt) : rt_(rt) {}
  void run();
  void check_once();

  Runtime& rt_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  // A raw thread whose loop neither allocates nor frees: glibc gives a thread its own malloc
  // arena (64 MiB of address space) at its first malloc or free, which std::thread's start-up
  // state would cause, and each shmem_init would then grow the address space under contention.
  pthread_t thread_{};
  bool started_ = false;
  int local_gone_ = -1;   // node-local peer seen gone at the previous check
  int remote_gone_ = -1;  // remote peer seen failed at the previous check
};

}  // namespace vshmem::detail
