// Sleeping and waking across the PEs of a node, on a wake word in each PE's host sync page
// (HostSyncArea).
//
// When PEs outnumber the cores, a PE that waits for another should give its core to it and get it
// back as soon as what it waits for is done. A yield loop does neither well: on Linux's EEVDF
// scheduler each sched_yield pushes the yielder's deadline back, so the waiter competes with every
// other runnable task when its peer finally signals. A futex sleep leaves the core at once, and
// the peer's wake makes the sleeper runnable immediately with the wake-up preference the
// scheduler gives sleepers.
//
// The protocol (one wake word per PE: `seq`, bumped by each wake that found a sleeper, and
// `sleepers`, the number of the PE's threads registered to sleep):
//   sleeper: s = seq; ++sleepers; if (the condition holds) done; else futex_wait(seq, s);
//   --sleepers waker:   (makes the condition true: a seq_cst store or read-modify-write); if
//   (sleepers != 0)
//            { ++seq; futex_wake(seq) }
// Both sides store then load with sequential consistency (Dekker): either the waker sees the
// sleeper registered, or the sleeper sees the condition true. A waker that sees the sleeper bumps
// seq after the sleeper read it, so the sleeper's futex_wait either returns at once (seq changed)
// or is woken. No wake-up is lost; a sleep also ends at its time limit, so that the caller keeps
// watching for peers that died.
//
// Words whose writers store with plain copies (puts: memcpy, then wake_after_copy) use the
// asymmetric form of the same Dekker pattern, so that a put that finds nobody asleep costs one
// load and no fence: the writer keeps only a compiler barrier between its store and its load of
// `sleepers`, and the sleeper, after registering, issues
// membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which runs a full memory barrier on every CPU
// running a thread of a registered process. Either the writer's load comes after that barrier (and
// sees the registration) or its store was drained by it (and the sleeper's re-check sees the
// value). A process writes without the fence only once it is registered (prepare_copy_wakes);
// without membarrier (old kernel, a seccomp filter) writers keep the fence and sleepers skip the
// call.
#pragma once

#include <cstdint>

namespace vshmem {

struct WakeWord {
  uint32_t* seq = nullptr;
  uint32_t* sleepers = nullptr;
  // Writers store with plain copies and wake with wake_after_copy (see above).
  bool copy_writers = false;
  explicit operator bool() const { return seq != nullptr; }
};

enum class SleepResult {
  kConditionMet,  // the condition held when re-checked after registering: no sleep
  kWoken,         // woken, or the word changed before the sleep began (re-check the condition)
  kTimedOut,      // no wake within the time limit
};

namespace wake_detail {
// futex_wait on `seq` while it holds `expected`, for at most timeout_ns (shared futex: the word
// lives in memory shared between processes). kWoken also for EAGAIN and EINTR.
SleepResult futex_sleep(uint32_t* seq, uint32_t expected, uint64_t timeout_ns);
void register_sleeper(const WakeWord& w);
void unregister_sleeper(const WakeWord& w);
// The sleeper's half of the asymmetric barrier: false if membarrier failed (the caller must not
// sleep then).
bool barrier_with_copy_writers();
}  // namespace wake_detail

// Registers this process so that its wake_after_copy needs no fence (once; cheap afterwards).
// Returns whether it did; every process writing to copy_writers words should call it at start-up.
bool prepare_copy_wakes();

// The sleeps of one wait on w. The thread registers at the first sleep and stays registered until
// the wait ends (the destructor): a wait whose sleeps end at their time limit (a store through
// shmem_ptr wakes nobody, so waits on data look again every VSHMEM_WAIT_LOOK_US) registers, and
// for copy_writers words issues the membarrier, once, not once per sleep. Measured on the 2-core
// VM (session 10): the membarrier costs 70-80 us of the sleeper's CPU there, so per sleep it made
// a 20 ms wait cost 1.3-1.6 ms of CPU. Staying registered keeps the protocol: a writer whose load
// of the sleeper count comes after the first registration (and barrier) sees it and wakes; a
// writer whose store came before is seen by every later look. Later sleeps read seq while
// registered, then the condition: a wake after the seq read changes seq, so the futex returns.
// Writers meanwhile pay the wake's system call for every store, as for any sleeper.
class WaitSleeps {
 public:
  explicit WaitSleeps(WakeWord w) : w_(w) {}
  ~WaitSleeps() { end(); }
  WaitSleeps(const WaitSleeps&) = delete;
  WaitSleeps& operator=(const WaitSleeps&) = delete;
  explicit operator bool() const { return static_cast<bool>(w_); }

  // Sleeps until a wake, the time limit, or `met()` is already true once this thread is
  // registered. met() reads the condition with at least acquire ordering.
  template <typename Met>
  SleepResult sleep_unless(Met&& met, uint64_t timeout_ns) {
    const uint32_t seq = __atomic_load_n(w_.seq, __ATOMIC_SEQ_CST);
    if (!registered_) {
      wake_detail::register_sleeper(w_);  // seq_cst read-modify-write: ordered before met()'s load
      if (w_.copy_writers && !wake_detail::barrier_with_copy_writers()) {
        wake_detail::unregister_sleeper(w_);
        return SleepResult::kWoken;  // cannot make the writers' stores visible: look again, awake
      }
      registered_ = true;
    }
    return met() ? SleepResult::kConditionMet : wake_detail::futex_sleep(w_.seq, seq, timeout_ns);
  }
  // The wait is over: unregisters (the destructor does it too).
  void end() {
    if (!registered_) return;
    wake_detail::unregister_sleeper(w_);
    registered_ = false;
  }
  // Whether the thread is registered (between a first sleep and end()).
  bool registered() const { return registered_; }

 private:
  WakeWord w_;
  bool registered_ = false;
};

// One sleep on w: until a wake, the time limit, or `met()` is already true once this thread is
// registered (a WaitSleeps of one sleep).
template <typename Met>
SleepResult sleep_unless(const WakeWord& w, Met&& met, uint64_t timeout_ns) {
  WaitSleeps sleeps(w);
  return sleeps.sleep_unless(met, timeout_ns);
}

// Called by a writer after the store that may satisfy a sleeper of w's PE. Costs one load of the
// sleeper count when nobody sleeps; a system call when somebody does.
void wake(const WakeWord& w);

// The end of wake() and wake_after_copy(): loads w's sleeper count and wakes them if there are
// any. For a writer that has ordered its store before this load itself (as those two do).
void wake_sleepers(const WakeWord& w);

// wake() for a writer that stored with a plain copy into a copy_writers word's PE: no fence once
// this process is registered (prepare_copy_wakes), the full fence otherwise.
void wake_after_copy(const WakeWord& w);

}  // namespace vshmem
