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

// Zeroed mailbox memory (the provider's is device-mapped host memory and a GPU word).
struct MailboxMemory {
  Mailbox box{};
  uint64_t claimed = 0;
  MailboxView view() { return MailboxView{&box, &claimed}; }
};

// The GPU's queue as the fallback launches see it: launches run in order, at once (free) or only
// when released (held: this process's kernels occupy the queue).
class Queue {
 public:
  explicit Queue(MailboxView view, bool held) : view_(view), held_(held) {}
  Status launch(uint64_t n) {
    launched_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
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
  int launched() const { return launched_.load(); }
  InboundMailbox::Launch launcher() {
    return [this](uint64_t n) { return launch(n); };
  }

 private:
  MailboxView view_;
  std::mutex mu_;
  bool held_;
  std::deque<uint64_t> pending_;
  std::atomic<int> launched_{0};
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
  std::atomic<bool> stop{false};
  std::thread releaser([&] {
    std::mt19937 rng(std::random_device{}());
    while (!stop.load()) {
      if (rng() % 4 == 0) queue.run_pending();
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
    }
  });
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
  stop.store(true);
  releaser.join();
  queue.run_pending();
  std::set<uint64_t> seen;
  for (const auto& v : fetched) seen.insert(v.begin(), v.end());
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kEach)) << "a value fetched twice";
  EXPECT_EQ(counter, start + kThreads * kEach) << "an add performed twice or not at all";
  EXPECT_EQ(mem.claimed, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ(mem.box.done, mem.claimed);
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

  auto view = h.provider->inbound_mailbox(kLong);
  ASSERT_TRUE(view.is_ok()) << view.status().message();
  EXPECT_EQ(testing::fake_host_alloc_flags(view->box),
            static_cast<int>(CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  EXPECT_EQ(testing::fake_device_alloc_bytes(view->claimed), sizeof(uint64_t));
  auto again = h.provider->inbound_mailbox(kLong);
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
}  // namespace
}  // namespace vshmem
