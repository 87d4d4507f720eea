// The device proxy end to end without a GPU (issue #14): the request ring lives in ordinary
// memory, host threads post through the producer protocol device code uses
// (vshmem/device/impl/proxy_ring.h), and the runtime's proxy thread - started by shmem_init on
// the ring given to it as the device library gives it, stopped by shmem_finalize - drains it into
// the real transport: UCX to the other simulated node, the mapped path within a node.
//   - every thread puts its own words (inline) and one staged block to every PE, then quiets;
//   - contended fetch_adds on PE 0's counter from every thread of every PE: the old values are
//     a permutation of [start, start + total);
//   - a staged put then a signal add to the next PE, which waits for the signal and checks the
//     data (the signal never overtakes it); a staged get back;
//   - pairs of PEs on different nodes at once ({0, 2} and {1, 3} with 4 PEs) run a barrier ring
//     through the ring (put, one-way notification, wait by polling memory only);
//   - puts posted and never quieted by the producer are complete at the host's
//     shmem_barrier_all (as after a kernel whose device puts the host then synchronizes with).
#include <shmem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "vshmem/device/impl/proxy_ring.h"
#include "vshmem/device_hooks.h"

using namespace vshmem::proxy;

namespace {

constexpr int kThreads = 4;
constexpr int kWords = 50;
constexpr int kFetches = 40;
constexpr size_t kBlock = 3000;  // staged (above the 128 inline bytes), several stage pieces

#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), __FILE__, __LINE__, \
                   #cond);                                                                        \
      std::fprintf(stderr, __VA_ARGS__);                                                          \
      std::fprintf(stderr, "\n");                                                                 \
      shmem_global_exit(1);                                                                       \
    }                                                                                             \
  } while (0)

Slot g_slots[32];  // small: the producers wrap it and meet back-pressure
Control g_control;
RingView g_ring;
unsigned char g_stage[2048];

int host_copy(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return 0;
}

// One request; waits for the answer when `wait`. Returns the slot's status.
int32_t post(uint32_t op, uint32_t flags, int pe, const void* dest, const void* source,
             uint64_t bytes, uint32_t aop = 0, uint64_t operand = 0, uint64_t* result = nullptr,
             void* inline_out = nullptr) {
  uint64_t t;
  Slot* s;
  CHECK(ring_acquire(g_ring, &t, &s) == kWaitOk, "no ring slot");
  s->op = op;
  s->flags = flags;
  s->pe = pe;
  s->aop = aop;
  s->width = 8;
  s->dest = reinterpret_cast<uint64_t>(dest);
  s->source = reinterpret_cast<uint64_t>(source);
  s->bytes = bytes;
  s->operand = operand;
  if (op == kOpPut && (flags & kFlagInline)) std::memcpy(s->data, source, bytes);
  ring_publish(s, t);
  if (!(flags & kFlagWait)) return kOk;
  CHECK(ring_wait_done(g_ring, s, t) == kWaitOk, "no answer from the proxy");
  const int32_t status = s->status;
  if (result != nullptr) *result = s->result;
  if (inline_out != nullptr) std::memcpy(inline_out, s->data, bytes);
  ring_release(s, t);
  return status;
}

uint64_t pattern(uint64_t salt, int pe, uint64_t i) {
  uint64_t x = salt ^ (static_cast<uint64_t>(pe) << 40) ^ (i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

}  // namespace

int main() {
  g_ring.slots = g_slots;
  g_ring.control = &g_control;
  g_ring.tickets = g_control.host_tickets;
  g_ring.n_slots = 32;
  g_ring.timeout_ns = 30'000'000'000ull;
  vshmemi_set_device_proxy(&g_ring, g_stage, sizeof(g_stage), &host_copy);
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  auto* salt_p = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  if (me == 0) {
    const uint64_t s = std::random_device{}() * 0x100000001ull + 17;
    for (int pe = 0; pe < n; ++pe) shmem_putmem(salt_p, &s, sizeof(s), pe);
  }
  shmem_barrier_all();
  const uint64_t salt = *salt_p;
  int remote = 0;
  for (int pe = 0; pe < n; ++pe) remote += shmem_ptr(salt_p, pe) == nullptr;
  CHECK(remote > 0, "no remote peer: run with vshmemrun --simulate-nodes 2");

  const size_t n_words = static_cast<size_t>(n) * kThreads * kWords;
  auto* words = static_cast<uint64_t*>(shmem_malloc(n_words * sizeof(uint64_t)));
  auto* blocks =
      static_cast<unsigned char*>(shmem_malloc(static_cast<size_t>(n) * kThreads * kBlock));
  auto* counter = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  auto* olds = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t) * kThreads * kFetches));
  std::memset(words, 0xA5, n_words * sizeof(uint64_t));
  std::memset(blocks, 0xA5, static_cast<size_t>(n) * kThreads * kBlock);
  const uint64_t start = salt >> 16;
  *counter = start;
  shmem_barrier_all();

  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::vector<unsigned char> block(kBlock);
      for (int k = 0; k < n; ++k) {
        const int pe = (me + k) % n;
        for (int i = 0; i < kWords; ++i) {
          const uint64_t v = pattern(salt, me, static_cast<uint64_t>(th * kWords + i) * 64 + pe);
          const size_t at = (static_cast<size_t>(me) * kThreads + th) * kWords + i;
          CHECK(post(kOpPut, kFlagInline, pe, words + at, &v, 8) == kOk, "put to PE %d", pe);
        }
        for (size_t b = 0; b < kBlock; ++b) {
          block[b] = static_cast<unsigned char>(pattern(salt, me, b * 7 + th + pe) >> 11);
        }
        const size_t at = (static_cast<size_t>(me) * kThreads + th) * kBlock;
        CHECK(post(kOpPut, kFlagWait, pe, blocks + at, block.data(), kBlock) == kOk,
              "staged put to PE %d", pe);
      }
      for (int i = 0; i < kFetches; ++i) {
        uint64_t old = 0;
        CHECK(post(kOpAtomic, kFlagWait, 0, counter, nullptr, 0, kAmoFetchAdd, 1, &old) == kOk,
              "fetch_add on PE 0");
        olds[th * kFetches + i] = old;
      }
      CHECK(post(kOpQuiet, kFlagWait, me, nullptr, nullptr, 0) == kOk, "quiet");
    });
  }
  for (auto& t : threads) t.join();
  shmem_barrier_all();

  for (int from = 0; from < n; ++from) {
    for (int th = 0; th < kThreads; ++th) {
      for (int i = 0; i < kWords; ++i) {
        const size_t at = (static_cast<size_t>(from) * kThreads + th) * kWords + i;
        CHECK(words[at] == pattern(salt, from, static_cast<uint64_t>(th * kWords + i) * 64 + me),
              "word %d of thread %d from PE %d", i, th, from);
      }
      const size_t at = (static_cast<size_t>(from) * kThreads + th) * kBlock;
      for (size_t b = 0; b < kBlock; ++b) {
        CHECK(blocks[at + b] ==
                  static_cast<unsigned char>(pattern(salt, from, b * 7 + th + me) >> 11),
              "byte %zu of thread %d's block from PE %d", b, th, from);
      }
    }
  }
  if (me == 0) {
    const uint64_t total = static_cast<uint64_t>(n) * kThreads * kFetches;
    CHECK(*counter == start + total, "counter %llu, want %llu",
          static_cast<unsigned long long>(*counter),
          static_cast<unsigned long long>(start + total));
    std::vector<uint64_t> all(kThreads * kFetches), mine(kThreads * kFetches);
    std::vector<uint64_t> gathered;
    for (int pe = 0; pe < n; ++pe) {
      shmem_getmem(mine.data(), olds, mine.size() * sizeof(uint64_t), pe);
      gathered.insert(gathered.end(), mine.begin(), mine.end());
    }
    std::sort(gathered.begin(), gathered.end());
    for (size_t i = 0; i < gathered.size(); ++i) {
      CHECK(gathered[i] == start + i, "fetch_add old values are not a permutation at %zu", i);
    }
  }
  shmem_barrier_all();

  // Data then signal to the next PE through the ring; the target waits on the signal alone.
  auto* sig = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  auto* dst = static_cast<unsigned char*>(shmem_malloc(kBlock));
  *sig = 0;
  std::memset(dst, 0xA5, kBlock);
  shmem_barrier_all();
  std::vector<unsigned char> src(kBlock), back(kBlock, 0x5A);
  for (size_t b = 0; b < kBlock; ++b)
    src[b] = static_cast<unsigned char>(pattern(salt, me, b) >> 3);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  CHECK(post(kOpPut, kFlagWait, next, dst, src.data(), kBlock) == kOk, "put to PE %d", next);
  CHECK(post(kOpSignal, 0, next, sig, nullptr, 0, 1, 1) == kOk, "signal to PE %d", next);
  shmem_uint64_wait_until(sig, SHMEM_CMP_EQ, 1);
  for (size_t b = 0; b < kBlock; ++b) {
    CHECK(dst[b] == static_cast<unsigned char>(pattern(salt, prev, b) >> 3),
          "byte %zu before the signal from PE %d", b, prev);
  }
  // A staged get of what we put at the next PE.
  CHECK(post(kOpGet, kFlagWait, next, back.data(), dst, kBlock) == kOk, "get from PE %d", next);
  CHECK(back == src, "staged get from PE %d differs", next);
  uint64_t word = 0;
  CHECK(post(kOpGet, kFlagWait | kFlagInline, next, nullptr, sig, 8, 0, 0, nullptr, &word) == kOk,
        "g from PE %d", next);
  CHECK(word == 1, "g of PE %d's signal: %llu", next, static_cast<unsigned long long>(word));
  shmem_barrier_all();

  // Pairs across the nodes at once (with 4 PEs: {0, 2} and {1, 3}, as the even and odd teams of
  // the device suite), a barrier ring through the ring as a kernel's team barrier makes it: put
  // the round to the partner, notify its count (one-way, after the data), wait for our own count
  // by polling memory only (as a kernel does: nobody on this thread moves the network), check the
  // partner's put, then a second count so that nobody rewrites the box before it was read.
  {
    constexpr int kPairRounds = 300;
    auto* box = static_cast<uint64_t*>(shmem_malloc(2 * sizeof(uint64_t)));
    auto* counts = static_cast<uint64_t*>(shmem_malloc(2 * sizeof(uint64_t)));
    box[0] = box[1] = 0;
    counts[0] = counts[1] = 0;
    shmem_barrier_all();
    const int partner = (me + n / 2) % n;
    const uint64_t base = salt >> 20;
    auto wait_count = [&](int which, uint64_t want, int round) {
      const auto t0 = std::chrono::steady_clock::now();
      while (__atomic_load_n(&counts[which], __ATOMIC_ACQUIRE) < want) {
        CHECK(
            std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20),
            "round %d: PE %d's notification %d did not arrive within 20 s (count %llu, want %llu)",
            round, partner, which,
            static_cast<unsigned long long>(__atomic_load_n(&counts[which], __ATOMIC_ACQUIRE)),
            static_cast<unsigned long long>(want));
        std::this_thread::yield();
      }
    };
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 1; r <= kPairRounds; ++r) {
      const uint64_t v = base + static_cast<uint64_t>(r);
      CHECK(post(kOpPut, kFlagInline, partner, &box[r % 2], &v, 8) == kOk, "put to PE %d", partner);
      CHECK(post(kOpSignal, kFlagNotify, partner, &counts[0], nullptr, 0, 1, 1) == kOk,
            "notification to PE %d", partner);
      wait_count(0, static_cast<uint64_t>(r), r);
      CHECK(__atomic_load_n(&box[r % 2], __ATOMIC_ACQUIRE) == v,
            "round %d: PE %d's put had not landed before its notification", r, partner);
      CHECK(post(kOpSignal, kFlagNotify, partner, &counts[1], nullptr, 0, 1, 1) == kOk,
            "notification to PE %d", partner);
      wait_count(1, static_cast<uint64_t>(r), r);
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        kPairRounds;
    if (me == 0) std::printf("device_proxy_host: pair rounds across the nodes: %.1f us each\n", us);
    shmem_barrier_all();
  }

  // Posted puts, no producer quiet: the host barrier completes them. The proxy is idle first
  // (past its spinning phase, it naps between polls), so that the puts are still in the ring or
  // in flight when the barrier starts.
  constexpr int kPosted = 24;
  auto* late = static_cast<uint64_t*>(shmem_malloc(kPosted * sizeof(uint64_t)));
  std::memset(late, 0xA5, kPosted * sizeof(uint64_t));
  shmem_barrier_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  for (int i = 0; i < kPosted; ++i) {
    const uint64_t v = pattern(salt ^ 0x77, me, static_cast<uint64_t>(i));
    CHECK(post(kOpPut, kFlagInline, next, late + i, &v, 8) == kOk, "posted put to PE %d", next);
  }
  shmem_barrier_all();
  for (int i = 0; i < kPosted; ++i) {
    CHECK(late[i] == pattern(salt ^ 0x77, prev, static_cast<uint64_t>(i)),
          "posted put %d from PE %d had not landed at shmem_barrier_all", i, prev);
  }
  shmem_barrier_all();
  if (me == 0) std::printf("device_proxy_host: OK (%d PEs)\n", n);
  shmem_finalize();
  // The proxy stopped with shmem_finalize: a request now is never taken.
  return g_control.failed == kErrStopped ? 0 : 1;
}
