// Distributed locks: a ticket lock in PE 0's copy of the symmetric long. The high 32 bits hold
// the next ticket to hand out, the low 32 bits the ticket now served; the lock is free when they
// are equal (so the required initial value 0 is a free lock). Tickets are served in the order
// they were taken, which makes the lock fair under contention. Taking a ticket adds 1 << 32:
// a wrap of the high half falls off the top and never disturbs the low half.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "runtime/api/wait.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

constexpr int kLockHome = 0;
constexpr uint64_t kTicket = 1ull << 32;

uint32_t next_ticket(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
uint32_t serving(uint64_t v) { return static_cast<uint32_t>(v); }

// Locks this PE holds, to report a second set_lock (a certain deadlock) or a clear of a lock
// this PE does not hold, instead of hanging or corrupting the lock.
std::mutex g_held_mutex;
std::vector<const long*> g_held;

bool holds(const long* lock) {
  std::lock_guard<std::mutex> guard(g_held_mutex);
  return std::find(g_held.begin(), g_held.end(), lock) != g_held.end();
}

void set_held(const long* lock, bool held) {
  std::lock_guard<std::mutex> guard(g_held_mutex);
  auto it = std::find(g_held.begin(), g_held.end(), lock);
  if (held && it == g_held.end()) g_held.push_back(lock);
  if (!held && it != g_held.end()) g_held.erase(it);
}

uint64_t lock_atomic(Runtime& rt, AtomicOp op, long* lock, uint64_t operand, uint64_t compare,
                     const char* call) {
  return rma_atomic(rt, AtomicRequest{op, lock, sizeof(long), operand, compare}, kLockHome, call);
}

Runtime& check_lock(long* lock, const char* call) {
  Runtime& rt = runtime_for(call);
  if (lock == nullptr) fail(call, "lock is NULL");
  check_symmetric(rt, lock, sizeof(long), call, "lock");
  return rt;
}

}  // namespace

extern "C" {

void shmem_set_lock(long* lock) {
  constexpr const char* kCall = "shmem_set_lock";
  Runtime& rt = check_lock(lock, kCall);
  if (holds(lock)) fail(kCall, "this PE already holds lock %p (it would wait for itself)", lock);
  const uint32_t ticket =
      next_ticket(lock_atomic(rt, AtomicOp::kFetchAdd, lock, kTicket, 0, kCall));
  // Sleeps on the lock's home PE's data wake word: the holder's release is an atomic on it.
  Backoff backoff = data_backoff(rt, kCall, lock, sizeof(long), kLockHome);
  auto met = [&] {
    return serving(lock_atomic(rt, AtomicOp::kFetch, lock, 0, 0, kCall)) == ticket;
  };
  while (!met()) backoff.pause(met);
  std::atomic_thread_fence(std::memory_order_acquire);
  set_held(lock, true);
}

int shmem_test_lock(long* lock) {
  constexpr const char* kCall = "shmem_test_lock";
  Runtime& rt = check_lock(lock, kCall);
  if (holds(lock)) return 1;
  uint64_t v = lock_atomic(rt, AtomicOp::kFetch, lock, 0, 0, kCall);
  // Only a free lock is taken, with one compare-and-swap; a race lost to another PE reports the
  // lock as held, which it is.
  if (next_ticket(v) != serving(v)) return 1;
  if (lock_atomic(rt, AtomicOp::kCompareSwap, lock, v + kTicket, v, kCall) != v) return 1;
  std::atomic_thread_fence(std::memory_order_acquire);
  set_held(lock, true);
  return 0;
}

void shmem_clear_lock(long* lock) {
  constexpr const char* kCall = "shmem_clear_lock";
  Runtime& rt = check_lock(lock, kCall);
  if (!holds(lock)) fail(kCall, "this PE does not hold lock %p", lock);
  // The holder's updates must be complete before the next holder can see the lock free.
  quiet(rt, kCall);
  set_held(lock, false);
  // Serve the next ticket. Other PEs only ever change the high half (taking tickets), so retry
  // the compare-and-swap until it lands; the low half wraps within itself.
  uint64_t v = lock_atomic(rt, AtomicOp::kFetch, lock, 0, 0, kCall);
  for (;;) {
    uint64_t next = (v & ~0xffffffffull) | static_cast<uint32_t>(serving(v) + 1);
    uint64_t seen = lock_atomic(rt, AtomicOp::kCompareSwap, lock, next, v, kCall);
    if (seen == v) break;
    v = seen;
  }
}

}  // extern "C"
