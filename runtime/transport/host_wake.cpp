#include "runtime/transport/host_wake.hpp"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>

namespace vshmem {
namespace {

struct CopyWakes {
  bool sleepers_barrier = false;   // this kernel has MEMBARRIER_CMD_GLOBAL_EXPEDITED
  bool writer_registered = false;  // this process is a target of it: its writers need no fence
};

const CopyWakes& copy_wakes() {
  static const CopyWakes state = [] {
    CopyWakes s;
    const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0 ||
        (cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0) {
      return s;
    }
    s.sleepers_barrier = true;
    s.writer_registered =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
    return s;
  }();
  return state;
}

}  // namespace

namespace wake_detail {

SleepResult futex_sleep(uint32_t* seq, uint32_t expected, uint64_t timeout_ns) {
  timespec limit{static_cast<time_t>(timeout_ns / 1000000000ull),
                 static_cast<long>(timeout_ns % 1000000000ull)};
  // FUTEX_WAIT, not FUTEX_WAIT_PRIVATE: the word is in a page other processes map.
  const long rc = syscall(SYS_futex, seq, FUTEX_WAIT, expected, &limit, nullptr, 0);
  if (rc != 0 && errno == ETIMEDOUT) return SleepResult::kTimedOut;
  return SleepResult::kWoken;
}

void register_sleeper(const WakeWord& w) { __atomic_fetch_add(w.sleepers, 1, __ATOMIC_SEQ_CST); }

void unregister_sleeper(const WakeWord& w) { __atomic_fetch_sub(w.sleepers, 1, __ATOMIC_SEQ_CST); }

bool barrier_with_copy_writers() {
  // Without the command no process is registered, so every writer fences: nothing to do.
  if (!copy_wakes().sleepers_barrier) return true;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0;
}

}  // namespace wake_detail

void wake_sleepers(const WakeWord& w) {
  if (__atomic_load_n(w.sleepers, __ATOMIC_SEQ_CST) == 0) return;
  __atomic_fetch_add(w.seq, 1, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, w.seq, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool prepare_copy_wakes() { return copy_wakes().writer_registered; }

void wake(const WakeWord& w) {
  // The caller's store (often a relaxed-looking RMW through another path) comes before our load of
  // the sleeper count, as the protocol needs.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_sleepers(w);
}

void wake_after_copy(const WakeWord& w) {
  if (copy_wakes().writer_registered) {
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the sleeper's membarrier does the rest
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  wake_sleepers(w);
}

}  // namespace vshmem
