// The inbound atomic mailbox (vshmem/device/impl/proxy_mailbox.h, runtime/memory/
// inbound_mailbox.hpp): target-side atomics on the GPU heap that a waiting kernel of this process
// performs when the GPU's queue is held, with the one-thread fallback kernel for when none waits.
// Host threads play the waiting kernels through the device's own server code (mailbox_serve), and
// a model of the GPU's queue plays the fallback launches (mailbox_fallback, the PTX kernel's
// protocol): post, claim, complete, fallback, exactly-once execution, time limits. The last tests
// run the cuda provider on the FAKE driver with its queue held, the situation that hung
// device_remote_team.4 on the H200: before the mailbox the provider's atomic kernel waited in the
// queue and the atomic was never performed.
#include "runtime/memory/inbound_mailbox.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/memory/cuda_provider.hpp"
#include "tests/support/fake_cuda_driver.hpp"

namespace vshmem {
namespace {

using proxy::Mailbox;
using proxy::MailboxView;

// Zeroed mailbox memory (the provider's is device-mapped host memory and GPU words), with the
// copies' bounce buffer.
struct MailboxMemory {
  Mailbox box{};
  uint64_t claimed[proxy::kMailboxGpuWords] = {};
  alignas(64) unsigned char bounce[proxy::kMailboxBounceBytes] = {};
  MailboxView view() { return MailboxView{&box, claimed}; }
};

// The GPU's queue as the fallback launches see it: launches run in order, at once (free) or only
// when released (held: this process's kernels occupy the queue).
class Queue {
 public:
  explicit Queue(MailboxView view, bool held) : view_(view), held_(held) {}
  Status launch(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    launched_at_.push_back(std::chrono::steady_clock::now());
    if (held_) {
      pending_.push_back(n);
      return Status::ok();
    }
    proxy::mailbox_fallback(view_, n);
    return Status::ok();
  }
  // Runs what waits in the queue; the queue stays as it was (held or free).
  int run_pending() {
    std::deque<uint64_t> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      run.swap(pending_);
    }
    for (uint64_t n : run) proxy::mailbox_fallback(view_, n);
    return static_cast<int>(run.size());
  }
  void set_held(bool held) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = held;
  }
  int launched() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(launched_at_.size());
  }
  // When launch number n (1, 2, ...) was made.
  std::chrono::steady_clock::time_point launched_at(int n) const {
    std::lock_guard<std::mutex> lock(mu_);
    return launched_at_.at(static_cast<size_t>(n - 1));
  }
  InboundMailbox::Launch launcher() {
    return [this](uint64_t n) { return launch(n); };
  }

 private:
  MailboxView view_;
  mutable std::mutex mu_;
  bool held_;
  std::deque<uint64_t> pending_;
  std::vector<std::chrono::steady_clock::time_point> launched_at_;  // one per launch
};

// The GPU finishing this process's kernels at random moments: releases a held queue's launches now
// and then until stopped; stop() also runs what is still pending.
class RandomReleaser {
 public:
  explicit RandomReleaser(Queue& queue)
      : queue_(queue), thread_([this] {
          std::mt19937 rng(std::random_device{}());
          while (!stop_.load()) {
            if (rng() % 4 == 0) queue_.run_pending();
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
          }
        }) {}
  ~RandomReleaser() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    stop_.store(true);
    thread_.join();
    queue_.run_pending();
  }

 private:
  Queue& queue_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once the members it reads exist
};

// Kernels of this process waiting in vshmem calls: each looks at the mailbox on every poll.
class Waiters {
 public:
  Waiters(MailboxView view, int n) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, view] {
        while (!stop_.load(std::memory_order_acquire)) {
          if (proxy::mailbox_serve(view, true)) served_.fetch_add(1);
          std::this_thread::yield();
        }
      });
    }
  }
  ~Waiters() { stop(); }
  void stop() {
    stop_.store(true, std::memory_order_release);
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int served() const { return served_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::vector<std::thread> threads_;
};

uint64_t fresh(std::mt19937_64& rng) { return rng() | 1; }  // never zero

constexpr uint64_t kLong = 20'000'000'000ull;  // 20 s: never reached when the protocol works

AtomicRequest req(AtomicOp op, void* address, unsigned width, uint64_t operand,
                  uint64_t compare = 0) {
  AtomicRequest r;
  r.op = op;
  r.address = address;
  r.width = width;
  r.operand = operand;
  r.compare = compare;
  return r;
}

// Every operation at both widths, checked against the same operation done here.
void every_op(InboundMailbox& m, std::mt19937_64& rng) {
  alignas(8) uint64_t word = fresh(rng);
  alignas(4) uint32_t half = static_cast<uint32_t>(fresh(rng));
  const AtomicOp ops[] = {AtomicOp::kFetch,       AtomicOp::kSet,      AtomicOp::kSwap,
                          AtomicOp::kCompareSwap, AtomicOp::kFetchAdd, AtomicOp::kFetchAnd,
                          AtomicOp::kFetchOr,     AtomicOp::kFetchXor};
  for (int round = 0; round < 3; ++round) {
    for (AtomicOp op : ops) {
      const uint64_t operand = fresh(rng);
      // A compare-and-swap that matches in odd rounds, that does not in even ones.
      const uint64_t cmp64 = round % 2 == 1 ? word : word ^ 2;
      const uint32_t cmp32 = round % 2 == 1 ? half : half ^ 2u;
      uint64_t expect64 = word, after64 = word;
      uint32_t expect32 = half, after32 = half;
      const auto o32 = static_cast<uint32_t>(operand);
      switch (op) {
        case AtomicOp::kFetch: break;
        case AtomicOp::kSet:
        case AtomicOp::kSwap:
          after64 = operand;
          after32 = o32;
          break;
        case AtomicOp::kCompareSwap:
          after64 = word == cmp64 ? operand : word;
          after32 = half == cmp32 ? o32 : half;
          break;
        case AtomicOp::kFetchAdd:
          after64 = word + operand;
          after32 = half + o32;
          break;
        case AtomicOp::kFetchAnd:
          after64 = word & operand;
          after32 = half & o32;
          break;
        case AtomicOp::kFetchOr:
          after64 = word | operand;
          after32 = half | o32;
          break;
        case AtomicOp::kFetchXor:
          after64 = word ^ operand;
          after32 = half ^ o32;
          break;
      }
      uint64_t got = ~uint64_t{0};
      ASSERT_TRUE(m.perform(req(op, &word, 8, operand, cmp64), &got).is_ok());
      EXPECT_EQ(got, expect64) << "8-byte op " << static_cast<int>(op);
      EXPECT_EQ(word, after64) << "8-byte op " << static_cast<int>(op);
      got = ~uint64_t{0};
      ASSERT_TRUE(m.perform(req(op, &half, 4, o32, cmp32), &got).is_ok());
      EXPECT_EQ(got, uint64_t{expect32}) << "4-byte op " << static_cast<int>(op);
      EXPECT_EQ(half, after32) << "4-byte op " << static_cast<int>(op);
    }
  }
}

TEST(InboundMailbox, TheFallbackKernelPerformsWhenNoKernelWaits) {
  std::mt19937_64 rng(std::random_device{}());
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/false);
  InboundMailbox m(mem.view(), kLong, queue.launcher());
  every_op(m, rng);
  EXPECT_EQ(m.requests(), 48u);
  EXPECT_EQ(m.served_waiting(), 0u);
  EXPECT_EQ(queue.launched(), 48) << "one fallback kernel per request when the queue is free";
  EXPECT_EQ(mem.box.fallback_ran, 48u);
}

// The hang of device_remote_team.4: the fallback kernel never runs while this PE's kernels wait,
// and they wait for a PE that waits for this very atomic.
TEST(InboundMailbox, AWaitingKernelPerformsWhileTheQueueIsHeld) {
  std::mt19937_64 rng(std::random_device{}());
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/true);
  InboundMailbox m(mem.view(), kLong, queue.launcher());
  Waiters waiters(mem.view(), 1);
  every_op(m, rng);
  EXPECT_EQ(m.served_waiting(), 48u);
  EXPECT_EQ(waiters.served(), 48);
  EXPECT_EQ(queue.launched(), 1) << "a second fallback kernel behind a held one helps nobody";
  waiters.stop();
  // The kernels end; the held fallback runs, finds every request done, and only says it ran.
  alignas(8) uint64_t word = fresh(rng);
  const uint64_t before = word;
  const Mailbox copy = mem.box;
  EXPECT_EQ(queue.run_pending(), 1);
  EXPECT_EQ(word, before);
  EXPECT_EQ(mem.box.done, copy.done);
  EXPECT_EQ(mem.box.result, copy.result);
  EXPECT_EQ(mem.box.fallback_ran, 1u);
}

// A request handed over after the held fallback ran: the host launches a new one for it.
TEST(InboundMailbox, ANewFallbackOnceTheLastOneRan) {
  std::mt19937_64 rng(std::random_device{}());
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/true);
  InboundMailbox m(mem.view(), kLong, queue.launcher());
  alignas(8) uint64_t word = fresh(rng);
  const uint64_t start = word;
  {
    Waiters waiters(mem.view(), 2);
    ASSERT_TRUE(m.perform(req(AtomicOp::kFetchAdd, &word, 8, 5), nullptr).is_ok());
  }
  EXPECT_EQ(queue.launched(), 1);
  queue.run_pending();  // ran, nothing left to do
  queue.set_held(false);
  uint64_t got = 0;
  ASSERT_TRUE(m.perform(req(AtomicOp::kFetchAdd, &word, 8, 7), &got).is_ok());
  EXPECT_EQ(got, start + 5);
  EXPECT_EQ(word, start + 12);
  EXPECT_EQ(queue.launched(), 2);
  EXPECT_EQ(mem.box.fallback_ran, 2u);
}

// Many servers race for every request (waiting kernels, fallbacks run at random moments), while
// several host threads issue requests: each is performed exactly once.
TEST(InboundMailbox, EveryRequestIsPerformedExactlyOnce) {
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/true);
  InboundMailbox m(mem.view(), kLong, queue.launcher());
  alignas(8) uint64_t counter = std::random_device{}() | 1;
  const uint64_t start = counter;
  RandomReleaser releaser(queue);
  constexpr int kThreads = 3, kEach = 400;
  std::vector<std::vector<uint64_t>> fetched(kThreads);
  {
    Waiters waiters(mem.view(), 3);
    std::vector<std::thread> issuers;
    for (int t = 0; t < kThreads; ++t) {
      issuers.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          uint64_t got = 0;
          Status st = m.perform(req(AtomicOp::kFetchAdd, &counter, 8, 1), &got);
          if (!st) {
            ADD_FAILURE() << st.message();
            return;
          }
          fetched[t].push_back(got);
        }
      });
    }
    for (auto& t : issuers) t.join();
  }
  releaser.stop();
  std::set<uint64_t> seen;
  for (const auto& v : fetched) seen.insert(v.begin(), v.end());
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kEach)) << "a value fetched twice";
  EXPECT_EQ(counter, start + kThreads * kEach) << "an add performed twice or not at all";
  EXPECT_EQ(mem.claimed[0], static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ(mem.box.done, mem.claimed[0]);
  EXPECT_GT(m.served_waiting(), 0u);
}

// A server that comes round to a request that is already done (a fallback kernel that ran late, a
// waiting kernel's next look) performs nothing.
TEST(InboundMailbox, ALateServerPerformsNothing) {
  std::mt19937_64 rng(std::random_device{}());
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/false);
  InboundMailbox m(mem.view(), kLong, queue.launcher());
  alignas(8) uint64_t word = fresh(rng);
  ASSERT_TRUE(m.perform(req(AtomicOp::kFetchXor, &word, 8, 0xff), nullptr).is_ok());
  const uint64_t after = word;
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(proxy::mailbox_serve(mem.view(), true));
    proxy::mailbox_fallback(mem.view(), 100 + i);
  }
  EXPECT_EQ(word, after);
  EXPECT_EQ(mem.box.done, 1u);
  // A claim is won once: by the first server to move the word from seq - 1 to seq.
  uint64_t claimed = 6;
  EXPECT_FALSE(proxy::mailbox_claim(&claimed, 6));
  EXPECT_TRUE(proxy::mailbox_claim(&claimed, 7));
  EXPECT_FALSE(proxy::mailbox_claim(&claimed, 7));
  EXPECT_EQ(claimed, 7u);
}

// Nobody performs the request (the queue stays held, no kernel waits in vshmem): the request fails
// within its time limit, naming the address and why, and so does every later one, at once. The
// fallback that runs late still performs the request once (it was posted), never twice.
TEST(InboundMailbox, ARequestNobodyPerformsTimesOutAndTheMailboxStaysOut) {
  std::mt19937_64 rng(std::random_device{}());
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/true);
  constexpr uint64_t kLimit = 100'000'000;  // 0.1 s
  InboundMailbox m(mem.view(), kLimit, queue.launcher());
  alignas(8) uint64_t word = fresh(rng);
  const uint64_t start = word;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = m.perform(req(AtomicOp::kFetchAdd, &word, 8, 3), nullptr);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), Code::kTimeout);
  char addr[32];
  std::snprintf(addr, sizeof(addr), "%p", static_cast<void*>(&word));
  EXPECT_NE(st.message().find(addr), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("not performed within 0.1 s"), std::string::npos) << st.message();
  EXPECT_GE(waited, 0.1);
  EXPECT_LT(waited, 5.0);
  EXPECT_EQ(word, start);

  const auto t1 = std::chrono::steady_clock::now();
  st = m.perform(req(AtomicOp::kFetchAdd, &word, 8, 3), nullptr);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 0.05);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("out of use"), std::string::npos) << st.message();
  EXPECT_EQ(queue.launched(), 1);

  queue.run_pending();
  EXPECT_EQ(word, start + 3);
  EXPECT_FALSE(proxy::mailbox_serve(mem.view(), true));
  EXPECT_EQ(word, start + 3);
}

TEST(InboundMailbox, AFailedLaunchFailsTheRequestNamingIt) {
  MailboxMemory mem;
  InboundMailbox m(mem.view(), kLong, [](uint64_t) {
    return error(Code::kSystem, "cuLaunchKernel(vshmem_mailbox_serve): CUDA_ERROR_LAUNCH_FAILED");
  });
  alignas(8) uint64_t word = 11;
  Status st = m.perform(req(AtomicOp::kFetchAdd, &word, 8, 1), nullptr);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos) << st.message();
  st = m.perform(req(AtomicOp::kFetchAdd, &word, 8, 1), nullptr);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("could not be launched"), std::string::npos) << st.message();
}

// Fresh bytes, never all zero.
std::vector<unsigned char> fresh_bytes(std::mt19937_64& rng, size_t n) {
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng() | 1);
  return v;
}

// Copies of every shape (lengths 1..4096, aligned and not) to "GPU memory" and back, through
// `m`; the bytes around each destination stay as they were.
void every_copy(InboundMailbox& m, std::mt19937_64& rng) {
  const size_t lengths[] = {1, 7, 8, 24, 64, 72, 200, 1000, 4096};
  for (size_t len : lengths) {
    for (size_t skew : {size_t{0}, size_t{3}}) {
      std::vector<unsigned char> gpu = fresh_bytes(rng, len + 16);
      const std::vector<unsigned char> gpu_before = gpu;
      const std::vector<unsigned char> src = fresh_bytes(rng, len);
      ASSERT_TRUE(m.copy(gpu.data() + 8 + skew, src.data(), len, /*to_device=*/true).is_ok());
      for (size_t i = 0; i < gpu.size(); ++i) {
        const bool inside = i >= 8 + skew && i < 8 + skew + len;
        ASSERT_EQ(gpu[i], inside ? src[i - 8 - skew] : gpu_before[i])
            << "to the device: " << len << " bytes at skew " << skew << ", byte " << i;
      }
      std::vector<unsigned char> back = fresh_bytes(rng, len + 2);
      const unsigned char edge0 = back[0], edge1 = back[len + 1];
      ASSERT_TRUE(m.copy(back.data() + 1, gpu.data() + 8 + skew, len, /*to_device=*/false).is_ok());
      EXPECT_EQ(back[0], edge0);
      EXPECT_EQ(back[len + 1], edge1);
      EXPECT_TRUE(std::equal(src.begin(), src.end(), back.begin() + 1))
          << "from the device: " << len << " bytes at skew " << skew;
    }
  }
}

// device_remote_queued's first phase on the H200: a remote PE's staged get needs a copy out of this
// GPU while this PE's kernels wait for that PE (its stream copy sat behind them). A waiting kernel
// performs it.
TEST(InboundMailbox, AWaitingKernelCopiesWhileTheQueueIsHeld) {
  std::mt19937_64 rng(std::random_device{}());
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/true);
  InboundMailbox m(mem.view(), kLong, queue.launcher(), proxy::kMailboxLookNs, mem.bounce,
                   sizeof(mem.bounce));
  Waiters waiters(mem.view(), 2);
  every_copy(m, rng);
  EXPECT_EQ(m.served_waiting(), m.requests());
  EXPECT_EQ(queue.launched(), 1);
  const InboundMailbox::Times t = m.times();
  EXPECT_EQ(t.copies, m.requests());
  EXPECT_EQ(t.atomics, 0u);
}

TEST(InboundMailbox, TheFallbackKernelCopiesWhenNoKernelWaits) {
  std::mt19937_64 rng(std::random_device{}());
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/false);
  InboundMailbox m(mem.view(), kLong, queue.launcher(), proxy::kMailboxLookNs, mem.bounce,
                   sizeof(mem.bounce));
  every_copy(m, rng);
  EXPECT_EQ(m.served_waiting(), 0u);
  EXPECT_EQ(static_cast<uint64_t>(queue.launched()), m.requests());
}

// While a kernel waits and performs the requests, the host launches no fallback kernel per
// request (a launch costs the host microseconds in which it does not see the answer, and the
// kernel finds nothing to do): after a request a waiter performed, it gives the waiter a few look
// times first (4 look times + 4 us, at most 1 ms). Here every fallback runs late, after its request
// was done (the queue is free between requests): without the grace, each request launched one
// within microseconds of posting it. Judged by when each launch was made: none sooner than the
// grace after its request was posted. A loaded machine delays the waiter past the grace at times,
// and then a launch is what the host should do. (Judged before by the requests answered within the
// grace, which needs the waiter thread to get a CPU within 1 ms: CI's two loaded CPUs once answered
// none of 40 within it, 4 ms each.)
TEST(InboundMailbox, WhileAKernelWaitsNoFallbackIsLaunchedPerRequest) {
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/true);
  InboundMailbox m(mem.view(), kLong, queue.launcher(), /*look_ns=*/250'000);
  constexpr auto kGrace = std::chrono::microseconds(1000);
  alignas(8) uint64_t word = std::random_device{}() | 1;
  const uint64_t start = word;
  constexpr int kRequests = 40;
  {
    Waiters waiters(mem.view(), 1);
    for (int i = 0; i < kRequests; ++i) {
      const int before = queue.launched();
      const auto posted = std::chrono::steady_clock::now();
      ASSERT_TRUE(m.perform(req(AtomicOp::kFetchAdd, &word, 8, 1), nullptr).is_ok());
      // The first request has no grace: no waiter has answered one yet.
      if (i > 0 && queue.launched() > before) {
        const auto after = queue.launched_at(before + 1) - posted;
        EXPECT_GE(after, kGrace) << "request " << i << " launched a fallback "
                                 << std::chrono::duration<double, std::micro>(after).count()
                                 << " us after it was posted, within the grace";
      }
      queue.run_pending();  // the fallback of this request, if any, runs late and does nothing
    }
  }
  EXPECT_EQ(word, start + kRequests);
  EXPECT_EQ(m.served_waiting(), static_cast<uint64_t>(kRequests));
  // Once no kernel waits, the fallback performs the request after the grace.
  queue.set_held(false);
  const int launched = queue.launched();
  const auto posted = std::chrono::steady_clock::now();
  ASSERT_TRUE(m.perform(req(AtomicOp::kFetchAdd, &word, 8, 1), nullptr).is_ok());
  EXPECT_EQ(word, start + kRequests + 1);
  EXPECT_EQ(queue.launched(), launched + 1);
  EXPECT_GE(queue.launched_at(launched + 1) - posted, kGrace);
}

// Copies and atomics from several host threads, servers racing: each done exactly once.
TEST(InboundMailbox, CopiesAndAtomicsMixExactlyOnce) {
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/true);
  InboundMailbox m(mem.view(), kLong, queue.launcher(), proxy::kMailboxLookNs, mem.bounce,
                   sizeof(mem.bounce));
  alignas(8) uint64_t counter = std::random_device{}() | 1;
  const uint64_t start = counter;
  RandomReleaser releaser(queue);
  constexpr int kThreads = 3, kEach = 150;
  {
    Waiters waiters(mem.view(), 3);
    std::vector<std::thread> issuers;
    for (int t = 0; t < kThreads; ++t) {
      issuers.emplace_back([&, t] {
        std::mt19937_64 rng(std::random_device{}() + static_cast<unsigned>(t));
        for (int i = 0; i < kEach; ++i) {
          Status st = m.perform(req(AtomicOp::kFetchAdd, &counter, 8, 1), nullptr);
          const size_t len = 1 + rng() % proxy::kMailboxBounceBytes;
          std::vector<unsigned char> gpu(len), src = fresh_bytes(rng, len), back(len);
          if (st) st = m.copy(gpu.data(), src.data(), len, true);
          if (st) st = m.copy(back.data(), gpu.data(), len, false);
          if (!st) {
            ADD_FAILURE() << st.message();
            return;
          }
          if (back != src) {
            ADD_FAILURE() << "thread " << t << " copy " << i << " of " << len << " bytes";
            return;
          }
        }
      });
    }
    for (auto& t : issuers) t.join();
  }
  releaser.stop();
  EXPECT_EQ(counter, start + kThreads * kEach) << "an add performed twice or not at all";
  EXPECT_EQ(mem.claimed[0], static_cast<uint64_t>(3 * kThreads * kEach));
}

TEST(InboundMailbox, ACopyAboveTheBounceBufferIsRefusedNamingIt) {
  MailboxMemory mem;
  Queue queue(mem.view(), /*held=*/false);
  InboundMailbox m(mem.view(), kLong, queue.launcher(), proxy::kMailboxLookNs, mem.bounce, 64);
  std::vector<unsigned char> a(65), b(65);
  Status st = m.copy(a.data(), b.data(), 65, true);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("65 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("64 bytes"), std::string::npos) << st.message();
  EXPECT_EQ(m.requests(), 0u);
  InboundMailbox none(mem.view(), kLong, queue.launcher());
  EXPECT_EQ(none.bounce_bytes(), 0u);
  EXPECT_FALSE(none.copy(a.data(), b.data(), 1, true).is_ok());
}

// Waiting kernels share one look time: one look per look_ns, whoever comes.
TEST(InboundMailbox, WaitingKernelsLookOncePerLookTime) {
  MailboxMemory mem;
  mem.box.look_ns = 1000;
  const MailboxView v = mem.view();
  EXPECT_TRUE(proxy::mailbox_look_due(v, 5000));
  EXPECT_FALSE(proxy::mailbox_look_due(v, 5000));
  EXPECT_FALSE(proxy::mailbox_look_due(v, 5999));
  EXPECT_TRUE(proxy::mailbox_look_due(v, 6000));
  EXPECT_EQ(mem.claimed[1], 7000u);
  mem.box.look_ns = 0;  // VSHMEM_INBOUND_LOOK_US=0: every time
  EXPECT_TRUE(proxy::mailbox_look_due(v, 7000));
  EXPECT_TRUE(proxy::mailbox_look_due(v, 7000));
  // The constructor sets the look time before the first request.
  Queue queue(v, false);
  InboundMailbox m(v, kLong, queue.launcher(), 12345);
  EXPECT_EQ(mem.box.look_ns, 12345u);
}

// The provider on the fake driver, its queue held: the remote PE's atomic reaches the heap through
// a waiting kernel. Before the mailbox, its one-thread kernel stayed in the queue (on the H200 the
// provider then waited in cuStreamSynchronize for good; the fake returns at once) and the atomic
// was not performed.
struct HeapWord {
  std::unique_ptr<MemoryProvider> provider;
  std::shared_ptr<VirtualReservation> va;
  std::unique_ptr<Mapping> mapping;
  uint64_t* word = nullptr;
};

HeapWord heap_word(testing::FakeDriverConfig cfg) {
  HeapWord h;
  auto made = detail::make_cuda_provider_with_driver(testing::fake_cuda_driver(cfg), {});
  EXPECT_TRUE(made.is_ok()) << made.status().message();
  if (!made.is_ok()) return h;
  h.provider = std::move(made).value();
  const size_t g = h.provider->granularity();
  auto addr = h.provider->find_free_range(g, g);
  EXPECT_TRUE(addr.is_ok());
  auto va = h.provider->reserve(*addr, g);
  EXPECT_TRUE(va.is_ok());
  h.va = *va;
  auto phys = h.provider->create(g);
  EXPECT_TRUE(phys.is_ok());
  auto mapping = h.provider->map(h.va, 0, *phys);
  EXPECT_TRUE(mapping.is_ok()) << mapping.status().message();
  h.mapping = std::move(mapping).value();
  h.word = static_cast<uint64_t*>(h.mapping->address());
  return h;
}

TEST(InboundMailboxProvider, AWaitingKernelPerformsTheProvidersAtomicWhileTheQueueIsHeld) {
  ASSERT_FALSE(testing::real_libcuda_loaded());
  testing::FakeDriverConfig cfg;
  HeapWord h = heap_word(cfg);
  ASSERT_NE(h.word, nullptr);
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t start = fresh(rng) >> 1;
  *h.word = start;

  MemoryProvider::InboundSettings settings;
  settings.timeout_ns = kLong;
  auto view = h.provider->inbound_mailbox(settings);
  ASSERT_TRUE(view.is_ok()) << view.status().message();
  EXPECT_EQ(testing::fake_host_alloc_flags(view->box),
            static_cast<int>(CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  EXPECT_EQ(testing::fake_device_alloc_bytes(view->claimed),
            proxy::kMailboxGpuWords * sizeof(uint64_t));
  EXPECT_EQ(view->box->look_ns, proxy::kMailboxLookNs);
  auto again = h.provider->inbound_mailbox(settings);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->box, view->box) << "one mailbox per provider";

  cfg.hold_kernels = true;
  testing::fake_cuda_driver(cfg);
  uint64_t expect = start;
  {
    Waiters waiters(*view, 1);
    for (int i = 0; i < 20; ++i) {
      const uint64_t add = fresh(rng) >> 8;
      uint64_t got = 0;
      AtomicRequest r = req(AtomicOp::kFetchAdd, h.word, 8, add);
      ASSERT_TRUE(h.provider->atomic(r, &got).is_ok());
      EXPECT_EQ(got, expect);
      expect += add;
      EXPECT_EQ(*h.word, expect) << "the atomic was not performed while the GPU's queue was held";
    }
    EXPECT_EQ(waiters.served(), 20);
  }
  cfg.hold_kernels = false;
  testing::fake_cuda_driver(cfg);
  EXPECT_EQ(testing::fake_run_held_kernels(), 1);
  EXPECT_EQ(*h.word, expect) << "the held fallback performed a request again";

  // With the queue free and nobody waiting, the fallback kernel performs it.
  uint64_t got = 0;
  ASSERT_TRUE(h.provider->atomic(req(AtomicOp::kCompareSwap, h.word, 8, 42, expect), &got).is_ok());
  EXPECT_EQ(got, expect);
  EXPECT_EQ(*h.word, 42u);
}

// The provider on the fake driver, its queue held: a remote PE's small put into the heap and get
// out of it (the remote path's copy_start) are made by a waiting kernel. Without the mailbox
// (copy_max 0, and the library of session 8) they are stream copies that wait behind the held
// kernels: device_remote_queued's stall.
TEST(InboundMailboxProvider, AWaitingKernelMakesTheProvidersSmallCopiesWhileTheQueueIsHeld) {
  ASSERT_FALSE(testing::real_libcuda_loaded());
  testing::FakeDriverConfig cfg;
  HeapWord h = heap_word(cfg);
  ASSERT_NE(h.word, nullptr);
  std::mt19937_64 rng(std::random_device{}());
  MemoryProvider::InboundSettings settings;
  settings.timeout_ns = kLong;
  auto view = h.provider->inbound_mailbox(settings);
  ASSERT_TRUE(view.is_ok()) << view.status().message();
  auto* heap = reinterpret_cast<unsigned char*>(h.word);

  cfg.hold_kernels = true;
  testing::fake_cuda_driver(cfg);
  const size_t n = proxy::kMailboxBounceBytes;
  const std::vector<unsigned char> put = fresh_bytes(rng, n);
  std::vector<unsigned char> got(n, 0);
  const std::vector<unsigned char> big = fresh_bytes(rng, n + 8);
  uint64_t big_ticket = 0;
  {
    Waiters waiters(*view, 1);
    auto t = h.provider->copy_start(heap + 8, put.data(), n);
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    EXPECT_EQ(*t, 0u) << "done when copy_start returns";
    EXPECT_TRUE(std::equal(put.begin(), put.end(), heap + 8))
        << "the put was not made while the GPU's queue was held";
    t = h.provider->copy_start(got.data(), heap + 8, n);
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    EXPECT_EQ(*t, 0u);
    EXPECT_EQ(got, put) << "the get was not made while the GPU's queue was held";
    EXPECT_EQ(waiters.served(), 2);
    // Above the mailbox's size: a stream copy, behind the held kernels.
    t = h.provider->copy_start(heap + 2 * n, big.data(), big.size());
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    big_ticket = *t;
    EXPECT_NE(big_ticket, 0u);
    auto done = h.provider->copy_test(big_ticket);
    ASSERT_TRUE(done.is_ok());
    EXPECT_FALSE(*done);
  }
  cfg.hold_kernels = false;
  testing::fake_cuda_driver(cfg);
  EXPECT_EQ(testing::fake_run_held_kernels(), 2) << "the fallback kernel and the large copy";
  auto done = h.provider->copy_test(big_ticket);
  ASSERT_TRUE(done.is_ok());
  EXPECT_TRUE(*done);
  EXPECT_TRUE(std::equal(big.begin(), big.end(), heap + 2 * n));
  EXPECT_TRUE(std::equal(put.begin(), put.end(), heap + 8)) << "the late fallback copied again";
}

// copy_max 0 (VSHMEM_INBOUND_COPY_MAX=0): copies are stream copies, as before the mailbox took
// them; held behind the kernels, they are not made.
TEST(InboundMailboxProvider, WithoutMailboxCopiesTheHeldQueueHoldsThem) {
  ASSERT_FALSE(testing::real_libcuda_loaded());
  testing::FakeDriverConfig cfg;
  HeapWord h = heap_word(cfg);
  ASSERT_NE(h.word, nullptr);
  std::mt19937_64 rng(std::random_device{}());
  MemoryProvider::InboundSettings settings;
  settings.timeout_ns = kLong;
  settings.copy_max = 0;
  auto view = h.provider->inbound_mailbox(settings);
  ASSERT_TRUE(view.is_ok()) << view.status().message();
  cfg.hold_kernels = true;
  testing::fake_cuda_driver(cfg);
  const std::vector<unsigned char> put = fresh_bytes(rng, 64);
  auto* heap = reinterpret_cast<unsigned char*>(h.word);
  {
    Waiters waiters(*view, 1);
    auto t = h.provider->copy_start(heap, put.data(), put.size());
    ASSERT_TRUE(t.is_ok());
    EXPECT_NE(*t, 0u);
    EXPECT_FALSE(std::equal(put.begin(), put.end(), heap));
    EXPECT_EQ(waiters.served(), 0);
  }
  cfg.hold_kernels = false;
  testing::fake_cuda_driver(cfg);
  EXPECT_EQ(testing::fake_run_held_kernels(), 1);
  EXPECT_TRUE(std::equal(put.begin(), put.end(), heap));
}
}  // namespace
}  // namespace vshmem
