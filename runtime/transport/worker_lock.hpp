// The UCX plugin's lock over its worker. The worker is created UCS_THREAD_MODE_SERIALIZED: UCX
// then takes no lock of its own in each call, and every thread that calls into the worker (an
// application thread, the progress thread, the device proxy) holds this lock instead. UCX's
// multi-thread mode took a recursive spinlock in every call (pthread_self, the lock, an is-held
// check: about 1% of an 8-byte round trip over TCP, bench/RESULTS.md, issue #13 session 26); this
// one is a compare-and-swap and a store, with no library call.
//
// Recursive: UCX calls the plugin's callbacks from inside ucp_worker_progress, and they call UCX
// again (ucp_am_recv_data_nbx, ucp_request_free). try_lock() is the progress turn: a thread that
// finds another thread progressing the worker skips its turn instead of waiting (the other one
// moves the network for both). lock() spins, yielding now and then, for the short calls that
// post an operation. Header-only and free of any network type, as shared_completion.hpp.
#pragma once

#include <sched.h>

#include <atomic>

namespace vshmem {

class WorkerLock {
 public:
  bool try_lock() {
    void* const self = thread_id();
    void* owner = owner_.load(std::memory_order_relaxed);
    if (owner == self) {
      ++depth_;
      return true;
    }
    if (owner != nullptr || !owner_.compare_exchange_strong(owner, self, std::memory_order_acquire,
                                                            std::memory_order_relaxed)) {
      return false;
    }
    depth_ = 1;
    return true;
  }
  void lock() {
    if (!try_lock()) lock_contended();
  }
  void unlock() {
    if (--depth_ == 0) owner_.store(nullptr, std::memory_order_release);
  }
  // Whether the calling thread holds the lock.
  bool held() const { return owner_.load(std::memory_order_relaxed) == thread_id(); }

 private:
  static constexpr unsigned kYieldEvery = 64;
  __attribute__((noinline)) void lock_contended() {
    for (unsigned spins = 1; !try_lock(); ++spins) {
      // The holder may be descheduled where threads outnumber the CPUs: let it run.
      if (spins % kYieldEvery == 0) sched_yield();
    }
  }
  // Unique among live threads, one instruction (the thread's control block).
  static void* thread_id() { return __builtin_thread_pointer(); }
  std::atomic<void*> owner_{nullptr};
  unsigned depth_ = 0;  // the owner's nesting, read and written by the owner alone
};

}  // namespace vshmem
