// The UCX plugin's worker lock (runtime/transport/worker_lock.hpp): recursive for its holder, a
// try_lock that fails while another thread holds it and succeeds once released, and mutual
// exclusion under contention (a count that only the holder touches comes out exact).
#include "runtime/transport/worker_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace vshmem {
namespace {

TEST(WorkerLock, TheHolderTakesItAgain) {
  WorkerLock l;
  EXPECT_FALSE(l.held());
  l.lock();
  EXPECT_TRUE(l.try_lock());  // a callback inside ucp_worker_progress
  l.lock();
  EXPECT_TRUE(l.held());
  l.unlock();
  l.unlock();
  EXPECT_TRUE(l.held());  // still the outer hold
  l.unlock();
  EXPECT_FALSE(l.held());
}

TEST(WorkerLock, AnotherThreadSkipsItsTurnUntilReleased) {
  WorkerLock l;
  std::unique_lock<WorkerLock> mine(l);
  bool taken = true;
  std::thread([&] {
    std::unique_lock<WorkerLock> turn(l, std::try_to_lock);
    taken = turn.owns_lock();
  }).join();
  EXPECT_FALSE(taken);
  mine.unlock();
  std::thread([&] {
    std::unique_lock<WorkerLock> turn(l, std::try_to_lock);
    taken = turn.owns_lock();
    EXPECT_TRUE(l.held());
  }).join();
  EXPECT_TRUE(taken);
  EXPECT_FALSE(l.held());
}

TEST(WorkerLock, OneHolderAtATime) {
  WorkerLock l;
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  long count = 0;  // unsynchronized but for the lock: ThreadSanitizer sees any overlap
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        std::unique_lock<WorkerLock> hold(l, std::defer_lock);
        if ((i + t) % 3 == 0) {
          if (!hold.try_lock()) continue;
        } else {
          hold.lock();
        }
        std::lock_guard<WorkerLock> nested(l);
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        ++count;
        inside.fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(count, static_cast<long>(kThreads) * kRounds / 2);
  EXPECT_FALSE(l.held());
}

}  // namespace
}  // namespace vshmem
