// The request ring between device code and the PE's proxy thread (DESIGN.md, transport): device
// calls to a PE that this GPU cannot map post requests here; the proxy thread
// (runtime/transport/device_proxy.hpp) drains them into the remote path.
//
// Layout (one ring per PE):
//   tickets - one counter that producers fetch-and-add (GPU memory on the GPU: an atomic on
//             device memory, not across PCIe); ticket t owns slot t % n_slots; beside it
//             (tickets[1]) the highest `consumed` a producer has read, so that a producer whose
//             slot that value already shows free does not read it across PCIe again;
//   slots   - n_slots request slots in pinned host memory mapped into the GPU;
//   control - the proxy's progress (consumed: every ticket below it has left the ring) and its
//             failure report, in the same pinned memory.
// A producer takes a ticket, waits until its slot is free (back-pressure, with a time limit),
// writes the request, then publishes it by storing seq = ticket + 1 after a system fence. The
// proxy handles tickets in order: operations to one PE are performed in the order of their
// tickets. A request whose producer waits (a fetching atomic, a get, quiet) is answered in the
// slot (result, status, then done = ticket + 1 with the status in its top byte, so that the
// producer learns both from one read across PCIe); the producer reads the answer and acknowledges
// (ack = ticket + 1); only then may the proxy hand the slot to ticket + n_slots.
//
// The producer side is written once, for the device and for host threads (the unit tests drive
// the proxy with host producers through exactly this code).
#pragma once

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define VSHMEMI_RING_HD __host__ __device__ __forceinline__
#else
#define VSHMEMI_RING_HD inline
#endif

#if !defined(__CUDA_ARCH__)
#include <sched.h>
#include <time.h>
#endif

namespace vshmem::proxy {

enum Op : uint32_t {
  kOpPut = 1,     // pe's dest <- source (inline bytes, or local memory the proxy stages)
  kOpGet = 2,     // local dest <- pe's source (inline answer, or the proxy writes dest)
  kOpAtomic = 3,  // AtomicOp `aop` (runtime/memory/memory.hpp numbering) on pe's dest
  kOpSignal = 4,  // after every earlier request is complete: signal set (aop 0) / add (aop 1)
  kOpFence = 5,   // orders the earlier requests before the later ones
  kOpQuiet = 6,   // completes every earlier request at its target
};

// The AtomicOp values the device uses (runtime/memory/memory.hpp AtomicOp, same order).
enum AtomicCode : uint32_t {
  kAmoFetch = 0,
  kAmoSet = 1,
  kAmoSwap = 2,
  kAmoCompareSwap = 3,
  kAmoFetchAdd = 4,
  kAmoFetchAnd = 5,
  kAmoFetchOr = 6,
  kAmoFetchXor = 7,
};

enum Flags : uint32_t {
  kFlagInline = 1u,  // the data travels in the slot (puts: from the producer; gets: the answer)
  kFlagWait = 2u,    // the producer waits for done and acknowledges
  // A barrier's notification (kOpSignal, add): a count the peer polls for, which no later quiet
  // needs to complete. The proxy sends it one-way (PeerPath::signal_add) after every earlier
  // request, instead of a fetching atomic that waits for the peer's answer.
  kFlagNotify = 4u,
};

// Status codes written by the proxy (Slot::status, Control::failed).
enum Error : int32_t {
  kOk = 0,
  kErrPath = 1,     // the remote path failed (the proxy printed why, naming the PE)
  kErrCopy = 2,     // staging through host memory failed (source/dest not reachable by copies)
  kErrBadOp = 3,    // a malformed request
  kErrStopped = 4,  // the proxy stopped (shmem_finalize) with the request in the ring
};

// Producer-side waits that ran out of time (returned by the functions below).
enum Wait : int {
  kWaitOk = 0,
  kWaitFull = 1,    // the slot stayed taken: the ring was full for the whole time limit
  kWaitNoDone = 2,  // the answer did not come within the time limit
  kWaitFailed = 3,  // the proxy reported a failure (Control::failed)
};

constexpr uint32_t kInlineBytes = 128;

struct alignas(64) Slot {
  uint64_t seq;  // ticket + 1 once the request is complete in the slot (written last)
  uint32_t op;
  uint32_t flags;
  int32_t pe;
  uint32_t aop;
  uint32_t width;  // atomics: 4 or 8
  uint32_t reserved;
  uint64_t dest;
  uint64_t source;
  uint64_t bytes;
  uint64_t operand;
  uint64_t compare;
  uint64_t done;    // proxy: ticket + 1 when the request is complete (kFlagWait)
  uint64_t result;  // proxy: an atomic's old value
  uint64_t ack;     // producer: ticket + 1 after reading the answer
  int32_t status;   // proxy: Error
  int32_t reserved2;
  uint64_t reserved3[2];
  unsigned char data[kInlineBytes];
};
static_assert(sizeof(Slot) == 256, "one slot is 256 bytes");

struct alignas(64) Control {
  uint64_t consumed;  // proxy: every ticket below it has left the ring
  uint64_t quieted;   // proxy: every request with a ticket below it is complete (quiet)
  uint64_t reserved[6];
  int32_t failed;     // proxy: first Error of a failed request, 0 while none
  int32_t failed_pe;  // the PE that request went to
  uint64_t failed_ticket;
  // RingView::tickets when the producers are host threads (tests): the counter and the
  // producers' view of consumed.
  uint64_t host_tickets[2];
};

// What producers and the proxy need to know about one ring; a trivially copyable value in the
// device state.
struct RingView {
  Slot* slots;        // n_slots (a power of two), pinned host memory, device-mapped
  Control* control;   // pinned host memory, device-mapped
  uint64_t* tickets;  // 2 words: GPU memory (device producers) or control->host_tickets (host)
  uint32_t n_slots;
  uint32_t reserved;
  uint64_t timeout_ns;  // how long a producer waits for a free slot or an answer
};

// ---- Primitive memory operations, for the device and for host threads. ----
VSHMEMI_RING_HD uint64_t ring_now_ns() {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
}

VSHMEMI_RING_HD uint64_t ring_take_ticket(uint64_t* tickets) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(reinterpret_cast<unsigned long long*>(tickets), 1ull);
#else
  return __atomic_fetch_add(tickets, 1, __ATOMIC_RELAXED);
#endif
}

// An acquire load at system scope: what follows it sees what the proxy wrote before the value.
VSHMEMI_RING_HD uint64_t ring_load(const uint64_t* p) {
#if defined(__CUDA_ARCH__)
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
VSHMEMI_RING_HD int32_t ring_load32(const int32_t* p) {
#if defined(__CUDA_ARCH__)
  int32_t v;
  asm volatile("ld.acquire.sys.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

// A release store at system scope: the proxy that sees the value sees what preceded it.
VSHMEMI_RING_HD void ring_store(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

// The producers' view of consumed (tickets[1]): an acquire load among this GPU's threads (the
// value came from the proxy's release through a producer's acquire, then that producer's release
// below), and the raise of it.
VSHMEMI_RING_HD uint64_t ring_seen_load(const uint64_t* p) {
#if defined(__CUDA_ARCH__)
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
VSHMEMI_RING_HD void ring_seen_raise(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("red.release.gpu.global.max.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (cur < v &&
         !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
#endif
}

// done: ticket + 1 in the low 56 bits, the request's status (Error) in the top byte.
constexpr unsigned kDoneStatusShift = 56;
constexpr uint64_t kDoneTicketMask = (uint64_t{1} << kDoneStatusShift) - 1;
VSHMEMI_RING_HD uint64_t ring_done_word(uint64_t ticket, int32_t status) {
  return ((ticket + 1) & kDoneTicketMask) |
         (static_cast<uint64_t>(static_cast<uint8_t>(status)) << kDoneStatusShift);
}

VSHMEMI_RING_HD void ring_pause() {
#if defined(__CUDA_ARCH__)
  __nanosleep(64);
#else
  sched_yield();  // host producers (tests) share few cores with the proxy thread
#endif
}

// ---- The producer protocol. ----

// What a producer does once per poll while it waits (device: look at the inbound atomic mailbox
// now and then, device/proxy.cu); nothing by default.
struct RingNoIdle {
  VSHMEMI_RING_HD void operator()() const {}
};

// Takes a ticket and waits (at most ring.timeout_ns) until its slot has left the ring. On
// kWaitOk *slot is the slot to fill and *ticket its ticket.
template <class Idle = RingNoIdle>
VSHMEMI_RING_HD int ring_acquire(const RingView& ring, uint64_t* ticket, Slot** slot,
                                 Idle idle = {}) {
  const uint64_t t = ring_take_ticket(ring.tickets);
  *ticket = t;
  *slot = &ring.slots[t & (ring.n_slots - 1)];
  if (t < ring.n_slots || ring_seen_load(ring.tickets + 1) > t - ring.n_slots) return kWaitOk;
  // Across PCIe: consumed, then the producers' view raised to it (a producer n_slots tickets on
  // reads it again, about once per n_slots requests while the proxy keeps up).
  const uint64_t consumed = ring_load(&ring.control->consumed);
  ring_seen_raise(ring.tickets + 1, consumed);
  if (consumed > t - ring.n_slots) return kWaitOk;
  const uint64_t start = ring_now_ns();
  for (;;) {
    if (ring_load(&ring.control->consumed) > t - ring.n_slots) return kWaitOk;
    if (ring_load32(&ring.control->failed) != 0) return kWaitFailed;
    if (ring_now_ns() - start > ring.timeout_ns) return kWaitFull;
    idle();
    ring_pause();
  }
}

// Hands the filled slot to the proxy.
VSHMEMI_RING_HD void ring_publish(Slot* slot, uint64_t ticket) {
  ring_store(&slot->seq, ticket + 1);
}

// Waits (at most ring.timeout_ns) for the proxy's answer to a kFlagWait request; *status (when
// not null): the request's Error, from the same read.
template <class Idle = RingNoIdle>
VSHMEMI_RING_HD int ring_wait_done(const RingView& ring, const Slot* slot, uint64_t ticket,
                                   Idle idle = {}, int32_t* status = nullptr) {
  const auto answered = [&] {
    const uint64_t d = ring_load(&slot->done);
    if ((d & kDoneTicketMask) != ((ticket + 1) & kDoneTicketMask)) return false;
    if (status != nullptr) *status = static_cast<int32_t>(d >> kDoneStatusShift);
    return true;
  };
  if (answered()) return kWaitOk;
  const uint64_t start = ring_now_ns();
  for (;;) {
    if (answered()) return kWaitOk;
    if (ring_now_ns() - start > ring.timeout_ns) {
      return ring_load32(&ring.control->failed) != 0 ? kWaitFailed : kWaitNoDone;
    }
    idle();
    ring_pause();
  }
}

// Gives a kFlagWait slot back after its answer was read.
VSHMEMI_RING_HD void ring_release(Slot* slot, uint64_t ticket) {
  ring_store(&slot->ack, ticket + 1);
}

}  // namespace vshmem::proxy
