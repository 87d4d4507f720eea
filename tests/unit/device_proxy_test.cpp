// The device proxy (runtime/transport/device_proxy.hpp) driven by host threads that post through
// the producer protocol device code uses (vshmem/device/impl/proxy_ring.h), against a fake remote
// path whose puts land only at fence/quiet (as a network's may), so that ordering bugs show.
#include "runtime/transport/device_proxy.hpp"

#include "runtime/common/stall_watch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace vshmem {
namespace {

using namespace proxy;

constexpr int kPes = 4;
constexpr size_t kHeap = 1 << 20;

// Remote memory of kPes PEs; symmetric addresses are addresses in `local` (our heap). Puts are
// kept pending until fence/quiet/atomic-after-fence flushes them, like a network's
// locally-complete puts.
class FakeRemote : public PeerPath {
 public:
  FakeRemote() : local(kHeap), mem(kPes, std::vector<unsigned char>(kHeap)) {}
  const char* name() const override { return "fake"; }
  size_t off(const void* sym) const {
    return static_cast<size_t>(static_cast<const unsigned char*>(sym) - local.data());
  }
  Status put(int pe, void* dest, const void* source, size_t bytes) override {
    std::lock_guard<std::mutex> l(m);
    if (pe == fail_pe) return error(Code::kPeerFailure, "PE " + std::to_string(pe) + " is gone");
    Pending p{pe, off(dest), std::vector<unsigned char>(bytes)};
    std::memcpy(p.data.data(), source, bytes);
    pending.push_back(std::move(p));
    ++puts;
    return Status::ok();
  }
  Status get(int pe, void* dest, const void* source, size_t bytes) override {
    std::lock_guard<std::mutex> l(m);
    if (pe == fail_pe) return error(Code::kPeerFailure, "PE " + std::to_string(pe) + " is gone");
    flush_locked();  // a get after a put to the same PE sees it (the path orders them)
    std::memcpy(dest, mem[pe].data() + off(source), bytes);
    return Status::ok();
  }
  Status atomic(int pe, const AtomicRequest& r, uint64_t* result) override {
    std::lock_guard<std::mutex> l(m);
    if (pe == fail_pe) return error(Code::kPeerFailure, "PE " + std::to_string(pe) + " is gone");
    ++atomics;
    if (r.op == AtomicOp::kSet || r.op == AtomicOp::kFetchAdd) {
      // A signal-like update: record whether data was still in flight when it landed.
      if (!pending.empty()) ++atomics_with_pending;
    }
    unsigned char* w = mem[pe].data() + off(r.address);
    uint64_t old = 0;
    std::memcpy(&old, w, r.width);
    uint64_t nv = old;
    switch (r.op) {
      case AtomicOp::kFetch: break;
      case AtomicOp::kSet:
      case AtomicOp::kSwap: nv = r.operand; break;
      case AtomicOp::kCompareSwap:
        if (old == r.compare) nv = r.operand;
        break;
      case AtomicOp::kFetchAdd: nv = old + r.operand; break;
      case AtomicOp::kFetchAnd: nv = old & r.operand; break;
      case AtomicOp::kFetchOr: nv = old | r.operand; break;
      case AtomicOp::kFetchXor: nv = old ^ r.operand; break;
      default: return error(Code::kInvalidArgument, "bad op");
    }
    std::memcpy(w, &nv, r.width);
    *result = old;
    return Status::ok();
  }
  // One-way: counted apart from the atomics, so that tests see which way a signal went.
  Status signal_add(int pe, uint64_t* word, uint64_t value) override {
    std::lock_guard<std::mutex> l(m);
    if (pe == fail_pe) return error(Code::kPeerFailure, "PE " + std::to_string(pe) + " is gone");
    if (!pending.empty()) ++atomics_with_pending;
    unsigned char* w = mem[pe].data() + off(word);
    uint64_t v = 0;
    std::memcpy(&v, w, 8);
    v += value;
    std::memcpy(w, &v, 8);
    ++signal_adds;
    return Status::ok();
  }
  Status fence() override {
    std::lock_guard<std::mutex> l(m);
    ++fences;
    flush_locked();
    return Status::ok();
  }
  Status quiet() override {
    std::lock_guard<std::mutex> l(m);
    ++quiets;
    flush_locked();
    return Status::ok();
  }
  void flush_locked() {
    for (auto& p : pending) std::memcpy(mem[p.pe].data() + p.off, p.data.data(), p.data.size());
    pending.clear();
  }
  template <class T>
  T read(int pe, const void* sym) {
    std::lock_guard<std::mutex> l(m);
    T v;
    std::memcpy(&v, mem[pe].data() + off(sym), sizeof(T));
    return v;
  }

  struct Pending {
    int pe;
    size_t off;
    std::vector<unsigned char> data;
  };
  std::vector<unsigned char> local;
  std::vector<std::vector<unsigned char>> mem;
  std::vector<Pending> pending;
  std::mutex m;
  int fail_pe = -1;
  int fences = 0, quiets = 0, puts = 0, atomics_with_pending = 0, signal_adds = 0, atomics = 0;
};

class FakeBackend : public ProxyBackend {
 public:
  explicit FakeBackend(FakeRemote& r) : remote(r) {}
  PeerPath* path(int pe) override { return pe >= 0 && pe < kPes ? &remote : nullptr; }
  Status fence() override { return remote.fence(); }
  Status quiet() override { return remote.quiet(); }
  Status copy(void* dst, const void* src, size_t bytes) override {
    if (src == nullptr || dst == nullptr) return error(Code::kInvalidArgument, "null buffer");
    std::memcpy(dst, src, bytes);
    ++copies;
    return Status::ok();
  }
  bool path_stages_local(int) override { return stages_local; }
  // A peer's request waiting for this PE to move the network: progress() performs it.
  void progress() override {
    progress_calls.fetch_add(1, std::memory_order_relaxed);
    if (std::function<void()> f = take_peer_request()) f();
  }
  void give_peer_request(std::function<void()> f) {
    std::lock_guard<std::mutex> l(peer_m);
    peer_request = std::move(f);
  }
  std::function<void()> take_peer_request() {
    std::lock_guard<std::mutex> l(peer_m);
    return std::exchange(peer_request, nullptr);
  }
  FakeRemote& remote;
  std::atomic<int> copies{0};
  std::atomic<long> progress_calls{0};
  bool stages_local = false;
  std::mutex peer_m;
  std::function<void()> peer_request;
};

// A ring in ordinary memory, host tickets.
struct Ring {
  explicit Ring(uint32_t n, uint64_t timeout_ns = 5'000'000'000ull) : slots(n), control() {
    view.slots = slots.data();
    view.control = &control;
    view.tickets = control.host_tickets;
    view.n_slots = n;
    view.timeout_ns = timeout_ns;
  }
  std::vector<Slot> slots;
  Control control;
  RingView view{};
};

// The producer side, as impl/proxy.cuh's device functions do it.
int post(const RingView& r, uint32_t op, uint32_t flags, int pe, uint64_t dest, uint64_t source,
         uint64_t bytes, uint32_t aop = 0, uint64_t operand = 0, uint64_t compare = 0,
         uint64_t* result = nullptr, void* inline_out = nullptr, int32_t* status = nullptr) {
  uint64_t t;
  Slot* s;
  if (int w = ring_acquire(r, &t, &s); w != kWaitOk) return w;
  s->op = op;
  s->flags = flags;
  s->pe = pe;
  s->aop = aop;
  s->width = 8;
  s->dest = dest;
  s->source = source;
  s->bytes = bytes;
  s->operand = operand;
  s->compare = compare;
  if (op == kOpPut && (flags & kFlagInline)) {
    std::memcpy(s->data, reinterpret_cast<const void*>(source), bytes);
  }
  ring_publish(s, t);
  if (!(flags & kFlagWait)) return kWaitOk;
  int32_t answered = -1;  // the status the done word carries (what a device producer reads)
  if (int w = ring_wait_done(r, s, t, RingNoIdle{}, &answered); w != kWaitOk) return w;
  EXPECT_EQ(answered, s->status) << "the done word of ticket " << t << " names another status";
  if (status != nullptr) *status = answered;
  if (result != nullptr) *result = s->result;
  if (inline_out != nullptr) std::memcpy(inline_out, s->data, bytes);
  ring_release(s, t);
  return kWaitOk;
}

uint64_t sym(FakeRemote& f, size_t off) { return reinterpret_cast<uint64_t>(f.local.data() + off); }

TEST(DeviceProxy, ManyProducersPutsLandInOrderAndQuietCompletesThem) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(16);  // small: producers wrap the ring many times and meet back-pressure
  DeviceProxy proxy(ring.view, backend, 0, 4096);
  proxy.start();
  constexpr int kThreads = 4, kPer = 400;
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t salt = rng();
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::vector<uint64_t> big(1000);  // staged (not inline): 8000 bytes, two stage buffers
      for (int i = 0; i < kPer; ++i) {
        const int pe = (th + i) % kPes;
        const uint64_t v = salt ^ (static_cast<uint64_t>(th) << 32 | static_cast<uint64_t>(i));
        // Each thread overwrites its own word: the last value must win (order per producer).
        ASSERT_EQ(post(ring.view, kOpPut, kFlagInline, pe, sym(remote, 64 * th),
                       reinterpret_cast<uint64_t>(&v), 8),
                  kWaitOk);
        if (i % 50 == 0) {
          for (size_t k = 0; k < big.size(); ++k) big[k] = v + k;
          ASSERT_EQ(post(ring.view, kOpPut, kFlagWait, pe, sym(remote, 4096 + 8192 * th),
                         reinterpret_cast<uint64_t>(big.data()), big.size() * 8),
                    kWaitOk);
        }
      }
      int32_t st = -1;
      ASSERT_EQ(post(ring.view, kOpQuiet, kFlagWait, 0, 0, 0, 0, 0, 0, 0, nullptr, nullptr, &st),
                kWaitOk);
      EXPECT_EQ(st, kOk);
    });
  }
  for (auto& t : threads) t.join();
  // The producers' view of consumed: raised as they wrapped the ring, never ahead of the proxy.
  // The proxy still runs and may retire the last acknowledged slots now: read consumed as the
  // producers do, atomically.
  EXPECT_GT(ring.control.host_tickets[1], 0u);
  EXPECT_LE(ring.control.host_tickets[1],
            __atomic_load_n(&ring.control.consumed, __ATOMIC_ACQUIRE));
  for (int th = 0; th < kThreads; ++th) {
    // The last put of thread th went to PE (th + kPer - 1) % kPes with i = kPer - 1.
    const int pe = (th + kPer - 1) % kPes;
    const uint64_t want = salt ^ (static_cast<uint64_t>(th) << 32 | (kPer - 1));
    EXPECT_EQ(remote.read<uint64_t>(pe, remote.local.data() + 64 * th), want) << "thread " << th;
    const int big_pe = (th + 350) % kPes;  // i = 350: the last big put
    const uint64_t bv = salt ^ (static_cast<uint64_t>(th) << 32 | 350u);
    for (size_t k = 0; k < 1000; k += 97) {
      EXPECT_EQ(remote.read<uint64_t>(big_pe, remote.local.data() + 4096 + 8192 * th + 8 * k),
                bv + k);
    }
  }
  EXPECT_GT(backend.copies.load(), 0);
  EXPECT_EQ(remote.pending.size(), 0u);
  EXPECT_EQ(proxy.failure(), "");
  proxy.stop();
  EXPECT_EQ(ring.control.consumed, proxy.handled());
}

TEST(DeviceProxy, ContendedFetchAddsReturnDistinctOldValues) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  proxy.start();
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t base = rng() >> 8;
  {
    uint64_t r = 0;
    ASSERT_EQ(
        post(ring.view, kOpAtomic, kFlagWait, 2, sym(remote, 128), 0, 0, kAmoSet, base, 0, &r),
        kWaitOk);
  }
  constexpr int kThreads = 4, kPer = 300;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < kPer; ++i) {
        uint64_t old = 0;
        ASSERT_EQ(post(ring.view, kOpAtomic, kFlagWait, 2, sym(remote, 128), 0, 0, kAmoFetchAdd, 1,
                       0, &old),
                  kWaitOk);
        got[th].push_back(old);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<uint64_t> all;
  for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], base + i);
  EXPECT_EQ(remote.read<uint64_t>(2, remote.local.data() + 128), base + kThreads * kPer);
  // compare-swap, fetch, and a get answered in the slot
  uint64_t old = 0;
  ASSERT_EQ(post(ring.view, kOpAtomic, kFlagWait, 2, sym(remote, 128), 0, 0, kAmoCompareSwap, 7,
                 base + kThreads * kPer, &old),
            kWaitOk);
  EXPECT_EQ(old, base + kThreads * kPer);
  uint64_t got_back = 0;
  ASSERT_EQ(post(ring.view, kOpGet, kFlagWait | kFlagInline, 2, 0, sym(remote, 128), 8, 0, 0, 0,
                 nullptr, &got_back),
            kWaitOk);
  EXPECT_EQ(got_back, 7u);
}

TEST(DeviceProxy, SignalLandsAfterTheDataAndGetsSeeEarlierPuts) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(32);
  DeviceProxy proxy(ring.view, backend, 0, 1000);  // 500-byte halves: 5 pieces a transfer
  proxy.start();
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 50; ++round) {
    std::vector<uint64_t> data(300);
    for (auto& d : data) d = rng();
    ASSERT_EQ(post(ring.view, kOpPut, kFlagWait, 1, sym(remote, 1024),
                   reinterpret_cast<uint64_t>(data.data()), data.size() * 8),
              kWaitOk);
    ASSERT_EQ(post(ring.view, kOpSignal, 0, 1, sym(remote, 512), 0, 0, /*add*/ 1, 1), kWaitOk);
    // A get of the data afterwards (large: written to `back` by the proxy's copy).
    std::vector<uint64_t> back(300, 0xdeadbeefull);
    ASSERT_EQ(post(ring.view, kOpGet, kFlagWait, 1, reinterpret_cast<uint64_t>(back.data()),
                   sym(remote, 1024), back.size() * 8),
              kWaitOk);
    EXPECT_EQ(back, data);
  }
  proxy.stop();
  EXPECT_EQ(remote.atomics_with_pending, 0) << "a signal overtook its data";
  EXPECT_EQ(remote.read<uint64_t>(1, remote.local.data() + 512), 50u);
  EXPECT_GE(remote.fences, 50);
}

TEST(DeviceProxy, FenceAndQuietReachThePath) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  const uint64_t v = 0x5eed5eed12345678ull ^ static_cast<uint64_t>(std::random_device{}());
  ASSERT_EQ(
      post(ring.view, kOpPut, kFlagInline, 3, sym(remote, 0), reinterpret_cast<uint64_t>(&v), 8),
      kWaitOk);
  ASSERT_EQ(post(ring.view, kOpFence, 0, 0, 0, 0, 0), kWaitOk);
  // Nothing runs until the proxy polls: the put is still in the ring.
  EXPECT_EQ(remote.puts, 0);
  EXPECT_EQ(proxy.poll(), 2u);
  EXPECT_EQ(remote.fences, 1);
  EXPECT_EQ(remote.read<uint64_t>(3, remote.local.data()), v);
  std::thread waiter([&] { EXPECT_EQ(post(ring.view, kOpQuiet, kFlagWait, 0, 0, 0, 0), kWaitOk); });
  while (proxy.poll() == 0) std::this_thread::yield();
  waiter.join();
  EXPECT_EQ(remote.quiets, 1);
  EXPECT_EQ(ring.control.quieted, 3u);  // tickets 0-2 (put, fence, quiet) are complete
  // The slot of the quiet goes back only after its producer acknowledged.
  proxy.poll();
  EXPECT_EQ(ring.control.consumed, 3u);
}

// Host shmem_quiet drains the ring (api/sync.cpp), then quiets the transport. With nothing
// waiting in the ring the drain does not involve the proxy thread (which may be napping): no
// quiet of its own on the path; a published request is handled before drain returns; an earlier
// failure is still reported.
TEST(DeviceProxy, DrainOfAnIdleRingSkipsTheProxyThread) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  proxy.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the thread naps by now
  ASSERT_TRUE(proxy.drain().is_ok());
  {
    std::lock_guard<std::mutex> l(remote.m);
    EXPECT_EQ(remote.quiets, 0) << "an idle drain went through the proxy thread";
  }
  const uint64_t v = 0x1d1e0000ull ^ static_cast<uint64_t>(std::random_device{}());
  for (int round = 0; round < 50; ++round) {
    const uint64_t w = v + static_cast<uint64_t>(round);
    ASSERT_EQ(post(ring.view, kOpPut, kFlagInline, 2, sym(remote, 8 * (round % 4)),
                   reinterpret_cast<uint64_t>(&w), 8),
              kWaitOk);
    ASSERT_TRUE(proxy.drain().is_ok());
    // What sync.cpp does next: the transport's quiet. The put was handled by then.
    ASSERT_TRUE(backend.quiet().is_ok());
    EXPECT_EQ(remote.read<uint64_t>(2, remote.local.data() + 8 * (round % 4)), w) << round;
  }
  remote.fail_pe = 1;
  ASSERT_EQ(
      post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 0), reinterpret_cast<uint64_t>(&v), 8),
      kWaitOk);
  while (__atomic_load_n(&ring.control.failed, __ATOMIC_ACQUIRE) == 0) std::this_thread::yield();
  Status st = proxy.drain();
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("PE 1"), std::string::npos) << st.message();
  proxy.stop();
}

TEST(DeviceProxy, FullRingWaitsThenTimesOutWithoutAProxy) {
  FakeRemote remote;
  Ring ring(4, 50'000'000ull);  // 50 ms
  const uint64_t v = 42;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 8 * i),
                   reinterpret_cast<uint64_t>(&v), 8),
              kWaitOk);
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(
      post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 64), reinterpret_cast<uint64_t>(&v), 8),
      kWaitFull);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(50));
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST(DeviceProxy, FullRingBlocksUntilTheProxyDrainsIt) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(4);
  DeviceProxy proxy(ring.view, backend, 0);
  const uint64_t v = 0x1234;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 8 * i),
                   reinterpret_cast<uint64_t>(&v), 8),
              kWaitOk);
  }
  std::atomic<bool> posted{false};
  std::thread late([&] {
    EXPECT_EQ(
        post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 64), reinterpret_cast<uint64_t>(&v), 8),
        kWaitOk);
    posted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(posted.load());  // back-pressure: slot 0 is still taken
  proxy.start();
  late.join();
  EXPECT_TRUE(posted.load());
  proxy.stop();
  EXPECT_EQ(proxy.handled(), 5u);
}

TEST(DeviceProxy, AFailedPeerAnswersEveryWaiterAndStopsProducersWaitingForSlots) {
  FakeRemote remote;
  remote.fail_pe = 2;
  FakeBackend backend(remote);
  Ring ring(4);
  DeviceProxy proxy(ring.view, backend, 5);
  proxy.start();
  uint64_t old = 0;
  int32_t st = 0;
  ASSERT_EQ(post(ring.view, kOpAtomic, kFlagWait, 2, sym(remote, 0), 0, 0, kAmoFetchAdd, 1, 0, &old,
                 nullptr, &st),
            kWaitOk);
  EXPECT_EQ(st, kErrPath);
  EXPECT_EQ(ring.control.failed, kErrPath);
  EXPECT_EQ(ring.control.failed_pe, 2);
  EXPECT_NE(proxy.failure().find("atomic to PE 2: PE 2 is gone"), std::string::npos)
      << proxy.failure();
  // Later requests, even to healthy PEs, are answered with the failure (no waiting on a dead job).
  st = 0;
  ASSERT_EQ(post(ring.view, kOpQuiet, kFlagWait, 0, 0, 0, 0, 0, 0, 0, nullptr, nullptr, &st),
            kWaitOk);
  EXPECT_EQ(st, kErrPath);
}

TEST(DeviceProxy, StopReturnsWhenAProducerDiedHoldingATicket) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  proxy.start();
  uint64_t t;
  Slot* s;
  ASSERT_EQ(ring_acquire(ring.view, &t, &s), kWaitOk);  // taken, never published (a trap)
  const uint64_t v = 9;
  ASSERT_EQ(
      post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 0), reinterpret_cast<uint64_t>(&v), 8),
      kWaitOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(proxy.handled(), 0u);  // stuck behind the dead ticket, but not hung:
  const auto t0 = std::chrono::steady_clock::now();
  proxy.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(ring.control.failed, kErrStopped);  // producers waiting for slots give up
}

TEST(DeviceProxy, BadRequestsAreRejectedNamingThePe) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  int32_t st = 0;
  std::thread p([&] {
    EXPECT_EQ(post(ring.view, kOpAtomic, kFlagWait, 9, sym(remote, 0), 0, 0, kAmoFetchAdd, 1, 0,
                   nullptr, nullptr, &st),
              kWaitOk);
  });
  while (proxy.poll() == 0) std::this_thread::yield();
  p.join();
  EXPECT_EQ(st, kErrBadOp);
  EXPECT_NE(proxy.failure().find("atomic to PE 9: not a valid PE"), std::string::npos);
}

TEST(DeviceProxy, AnAnsweredSlotIsNotReusedBeforeItsProducerReadTheAnswer) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(2);
  DeviceProxy proxy(ring.view, backend, 0);
  const uint64_t start = 0x7700000000ull ^ static_cast<uint64_t>(std::random_device{}());
  {
    uint64_t r;
    std::thread p([&] {
      EXPECT_EQ(
          post(ring.view, kOpAtomic, kFlagWait, 1, sym(remote, 0), 0, 0, kAmoSet, start, 0, &r),
          kWaitOk);
    });
    while (proxy.poll() == 0) std::this_thread::yield();
    p.join();
  }
  // A fetch whose producer has its answer but has not read it yet (no ack).
  uint64_t t;
  Slot* s;
  ASSERT_EQ(ring_acquire(ring.view, &t, &s), kWaitOk);
  s->op = kOpAtomic;
  s->flags = kFlagWait;
  s->pe = 1;
  s->aop = kAmoFetchAdd;
  s->width = 8;
  s->dest = sym(remote, 0);
  s->operand = 5;
  ring_publish(s, t);
  EXPECT_EQ(proxy.poll(), 1u);
  ASSERT_EQ(ring_wait_done(ring.view, s, t), kWaitOk);
  // Two more requests want the ring's two slots; the second needs the unread one.
  const uint64_t v = 1;
  ASSERT_EQ(
      post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 64), reinterpret_cast<uint64_t>(&v), 8),
      kWaitOk);
  std::atomic<bool> through{false};
  std::thread late([&] {
    uint64_t old = 0;
    EXPECT_EQ(
        post(ring.view, kOpAtomic, kFlagWait, 1, sym(remote, 0), 0, 0, kAmoFetchAdd, 1, 0, &old),
        kWaitOk);
    EXPECT_EQ(old, start + 5);
    through = true;
  });
  for (int i = 0; i < 20; ++i) {
    proxy.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_FALSE(through.load());  // the slot is still the unread answer's
  EXPECT_EQ(s->result, start);   // and the answer is intact
  ring_release(s, t);
  while (!through.load()) {
    proxy.poll();
    std::this_thread::yield();
  }
  late.join();
}

// A barrier's notification (kFlagNotify) goes one-way, after the data before it; a signal that a
// quiet must complete (put_signal) still waits for the peer's answer.
TEST(DeviceProxy, BarrierNotificationsGoOneWayAfterTheData) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(16);
  DeviceProxy proxy(ring.view, backend, 0);
  proxy.start();
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t start = rng() >> 4;
  uint64_t r = 0;
  ASSERT_EQ(post(ring.view, kOpAtomic, kFlagWait, 1, sym(remote, 256), 0, 0, kAmoSet, start, 0, &r),
            kWaitOk);
  const int atomics_before = remote.atomics;
  constexpr int kRounds = 40;
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t v = rng();
    ASSERT_EQ(
        post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 0), reinterpret_cast<uint64_t>(&v), 8),
        kWaitOk);
    ASSERT_EQ(post(ring.view, kOpSignal, kFlagNotify, 1, sym(remote, 256), 0, 0, /*add*/ 1, 1),
              kWaitOk);
  }
  ASSERT_EQ(post(ring.view, kOpSignal, 0, 1, sym(remote, 264), 0, 0, /*add*/ 1, 7), kWaitOk);
  ASSERT_EQ(post(ring.view, kOpQuiet, kFlagWait, 0, 0, 0, 0), kWaitOk);
  proxy.stop();
  EXPECT_EQ(remote.read<uint64_t>(1, remote.local.data() + 256), start + kRounds);
  EXPECT_EQ(remote.read<uint64_t>(1, remote.local.data() + 264), 7u);
  EXPECT_EQ(remote.signal_adds, kRounds) << "notifications did not go one-way";
  EXPECT_EQ(remote.atomics - atomics_before, 1) << "only the put_signal-like signal waits";
  EXPECT_EQ(remote.atomics_with_pending, 0) << "a notification overtook its data";
}

// A path that stages local memory itself gets a large put or get in one call, from and to the
// producer's own buffer: no piece-by-piece copies through the proxy's stage buffer.
TEST(DeviceProxy, LargeTransfersGoWholeToAPathThatStagesThemItself) {
  FakeRemote remote;
  FakeBackend backend(remote);
  backend.stages_local = true;
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0, 1000);  // a small stage: 8 pieces if it were used
  proxy.start();
  std::mt19937_64 rng(std::random_device{}());
  std::vector<uint64_t> data(1000);
  for (auto& d : data) d = rng();
  ASSERT_EQ(post(ring.view, kOpPut, kFlagWait, 3, sym(remote, 8192),
                 reinterpret_cast<uint64_t>(data.data()), data.size() * 8),
            kWaitOk);
  std::vector<uint64_t> back(1000, 0xfeedfacecafebeefull);
  ASSERT_EQ(post(ring.view, kOpGet, kFlagWait, 3, reinterpret_cast<uint64_t>(back.data()),
                 sym(remote, 8192), back.size() * 8),
            kWaitOk);
  proxy.stop();
  EXPECT_EQ(back, data);
  EXPECT_EQ(remote.puts, 1) << "the put went in pieces";
  EXPECT_EQ(backend.copies.load(), 0) << "the proxy staged what the path stages itself";
}

// While a producer's requests flow, the proxy thread moves the network: a peer's request to this
// PE (here: a store to a word the producer then polls, as a kernel polls a barrier flag) is
// performed without anyone else progressing the network.
TEST(DeviceProxy, TheProxyThreadServesPeersWhileRequestsFlow) {
  FakeRemote remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  proxy.start();
  std::mt19937_64 rng(std::random_device{}());
  std::atomic<uint64_t> flag{0};
  for (int round = 1; round <= 30; ++round) {
    const uint64_t v = rng() | 1;
    ASSERT_EQ(
        post(ring.view, kOpPut, kFlagInline, 2, sym(remote, 0), reinterpret_cast<uint64_t>(&v), 8),
        kWaitOk);
    backend.give_peer_request([&flag, round] { flag.store(round, std::memory_order_release); });
    const auto t0 = std::chrono::steady_clock::now();
    auto last_post = t0;
    while (flag.load(std::memory_order_acquire) != static_cast<uint64_t>(round)) {
      const auto now = std::chrono::steady_clock::now();
      ASSERT_LT(now - t0, std::chrono::seconds(2))
          << "round " << round << ": nobody moved the network for the peer's request";
      if (now - last_post > std::chrono::milliseconds(5)) {  // a kernel still posting
        ASSERT_EQ(post(ring.view, kOpPut, kFlagInline, 2, sym(remote, 0),
                       reinterpret_cast<uint64_t>(&v), 8),
                  kWaitOk);
        last_post = now;
      }
      std::this_thread::yield();
    }
  }
  proxy.stop();
  EXPECT_GT(backend.progress_calls.load(), 0);
}

// A request the remote path does not complete (a peer that stopped answering) is visible to the
// stall watch that the running proxy starts, named by its kind: the PE that waits then reports
// where it waits (stall_watch.hpp) before the peers' time limits end the job.
TEST(DeviceProxy, AStuckRequestIsListedByTheStallWatch) {
  struct StuckGet : public FakeRemote {
    Status get(int pe, void* dest, const void* source, size_t bytes) override {
      entered.store(true);
      while (!released.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return FakeRemote::get(pe, dest, source, bytes);
    }
    std::atomic<bool> entered{false}, released{false};
  } remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  EXPECT_TRUE(stall::in_flight_older_than(std::chrono::milliseconds(0)).empty());
  proxy.start();
  uint64_t got = 0;
  std::thread producer([&] {
    EXPECT_EQ(post(ring.view, kOpGet, kFlagWait | kFlagInline, 1, 0, sym(remote, 0), 8, 0, 0, 0,
                   nullptr, &got),
              kWaitOk);
  });
  while (!remote.entered.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto stuck = stall::in_flight_older_than(std::chrono::milliseconds(20));
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].what, "device proxy: get from a remote PE");
  EXPECT_EQ(stuck[0].bytes, 8u);
  remote.released.store(true);
  producer.join();
  EXPECT_TRUE(stall::in_flight_older_than(std::chrono::milliseconds(0)).empty());
  proxy.stop();
}

// The proxy keeps, per kind of request, how many it handled and how long each took (the remote
// path's share of a device call's latency, printed at VSHMEM_DEBUG=info when it stops).
TEST(DeviceProxy, CountsAndTimesEachKindOfRequest) {
  struct SlowPut : public FakeRemote {
    Status put(int pe, void* dest, const void* source, size_t bytes) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return FakeRemote::put(pe, dest, source, bytes);
    }
  } remote;
  FakeBackend backend(remote);
  Ring ring(8);
  DeviceProxy proxy(ring.view, backend, 0);
  proxy.start();
  std::mt19937_64 rng(std::random_device{}());
  const int puts = 3 + static_cast<int>(rng() % 5);
  for (int i = 0; i < puts; ++i) {
    const uint64_t v = rng();
    ASSERT_EQ(post(ring.view, kOpPut, kFlagInline, 1, sym(remote, 8 * i),
                   reinterpret_cast<uint64_t>(&v), 8),
              kWaitOk);
  }
  std::vector<uint64_t> big(40, rng());  // 320 bytes: not inline
  ASSERT_EQ(post(ring.view, kOpPut, kFlagWait, 1, sym(remote, 4096),
                 reinterpret_cast<uint64_t>(big.data()), big.size() * 8),
            kWaitOk);
  ASSERT_EQ(post(ring.view, kOpQuiet, kFlagWait, 0, 0, 0, 0), kWaitOk);
  proxy.stop();
  const DeviceProxy::OpTimes p = proxy.times(DeviceProxy::kInlinePut), q = proxy.times(kOpQuiet);
  EXPECT_EQ(proxy.times(kOpPut).count, 1u);  // the large one, apart
  EXPECT_EQ(p.count, static_cast<uint64_t>(puts));
  EXPECT_GE(p.total_ns, static_cast<uint64_t>(puts) * 2'000'000u);
  EXPECT_GE(p.max_ns, 2'000'000u);
  EXPECT_EQ(q.count, 1u);
  EXPECT_EQ(proxy.times(kOpGet).count, 0u);
  const std::string summary = proxy.times_summary();
  EXPECT_NE(summary.find("put (inline) " + std::to_string(puts) + " (mean "), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("put 1 (mean "), std::string::npos) << summary;
  EXPECT_NE(summary.find("quiet 1 (mean "), std::string::npos) << summary;
  EXPECT_EQ(summary.find("get "), std::string::npos) << summary;
}

}  // namespace
}  // namespace vshmem
