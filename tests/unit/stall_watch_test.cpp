// The stall watch (runtime/common/stall_watch.hpp): a Scope that outlives the watch's limit is
// reported once, naming the call, its thread and every thread's state; a Scope is not tracked
// while no watch runs.
#include "runtime/common/stall_watch.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace vshmem::stall {
namespace {

using namespace std::chrono_literals;

// A thread inside a Scope until released.
class Blocked {
 public:
  explicit Blocked(const char* what) {
    thread_ = std::thread([this, what] {
      const Scope scope(what, 4096);
      tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)));
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [this] { return released_; });
    });
    while (tid_.load() == 0) std::this_thread::sleep_for(1ms);
  }
  ~Blocked() { release(); }
  void release() {
    {
      std::lock_guard<std::mutex> lock(m_);
      released_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  pid_t tid() const { return tid_.load(); }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool released_ = false;
  std::atomic<pid_t> tid_{0};
  std::thread thread_;
};

TEST(StallWatch, UntrackedWhileNoWatchRuns) {
  Blocked b("unwatched call");
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(in_flight_older_than(0ms).empty());
}

TEST(StallWatch, ListsCallsOlderThanTheLimitUntilTheyReturn) {
  start(1h);  // the watch thread never reports here: the test asks itself
  {
    Blocked b("test call: listed");
    std::this_thread::sleep_for(30ms);
    auto old = in_flight_older_than(20ms);
    ASSERT_EQ(old.size(), 1u);
    EXPECT_EQ(old[0].what, "test call: listed");
    EXPECT_EQ(old[0].bytes, 4096u);
    EXPECT_EQ(old[0].tid, b.tid());
    EXPECT_GE(old[0].seconds, 0.02);
    EXPECT_TRUE(in_flight_older_than(10s).empty());
    b.release();
    EXPECT_TRUE(in_flight_older_than(0ms).empty());
  }
  stop();
  Blocked after("after the watch stopped");
  EXPECT_TRUE(in_flight_older_than(0ms).empty());
}

TEST(StallWatch, ReportsAStalledCallOnceWithEveryThreadsState) {
  testing::internal::CaptureStderr();
  start(100ms);
  {
    Blocked b("test call: stalled");
    std::this_thread::sleep_for(900ms);  // several watch rounds past the limit
    b.release();
  }
  stop();
  const std::string err = testing::internal::GetCapturedStderr();
  const size_t first = err.find("test call: stalled (4096 bytes, thread ");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("test call: stalled", first + 1), std::string::npos) << "reported twice:\n"
                                                                          << err;
  EXPECT_NE(err.find("has not returned for"), std::string::npos) << err;
  EXPECT_NE(err.find("Threads of this process"), std::string::npos) << err;
  // Our own thread is among them, by its tid.
  EXPECT_NE(err.find("  " + std::to_string(::syscall(SYS_gettid)) + " "), std::string::npos) << err;
}

TEST(StallWatch, ThreadStatesNameEveryThread) {
  Blocked b("x");
  const std::string s = thread_states();
  EXPECT_NE(s.find("  " + std::to_string(b.tid()) + " "), std::string::npos) << s;
  EXPECT_NE(s.find("  " + std::to_string(::syscall(SYS_gettid)) + " "), std::string::npos) << s;
}

}  // namespace
}  // namespace vshmem::stall
