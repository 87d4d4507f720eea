#include "runtime/transport/host_wake.hpp"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>

namespace vshmem {
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

}  // namespace wake_detail

void wake(const WakeWord& w) {
  // The caller's store (often a relaxed-looking RMW through another path) comes before our load of
  // the sleeper count, as the protocol needs.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (__atomic_load_n(w.sleepers, __ATOMIC_SEQ_CST) == 0) return;
  __atomic_fetch_add(w.seq, 1, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, w.seq, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace vshmem
