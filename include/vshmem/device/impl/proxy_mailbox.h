// The inbound atomic mailbox: target-side atomics on this PE's GPU heap that a remote PE asked for
// (through the remote path, runtime/memory/cuda_provider.cpp atomic()), performed by a kernel of
// this process that sits in a vshmem device wait, or else by a one-thread kernel.
//
// Why: the one-thread kernel alone can sit in a hardware queue behind this PE's own kernels (CUDA
// maps streams onto few queues, CUDA_DEVICE_MAX_CONNECTIONS, 8 by default), and those kernels may
// be waiting for the very PE whose atomic it carries: a deadlock. A kernel that waits (wait_until,
// signal wait, barriers, proxy answers: impl/signal.cuh, impl/sync.cuh, device/proxy.cu) needs no
// free queue: it already runs. So the host posts each request here and also launches the
// one-thread kernel ("the fallback"); whichever claims the request first performs it.
//
// Protocol (one request at a time: the host serializes them):
//   host:    writes the request's fields, then posted = seq (release; seq = 1, 2, 3, ...).
//   server:  reads posted (acquire); claims seq with a compare-and-swap of the claim word from
//            seq - 1 to seq (GPU memory: an atomic among the GPU's threads, not across PCIe);
//            the winner alone performs the atomic, writes result, then done = seq (release).
//   host:    waits for done == seq and reads result; only then posts seq + 1.
// The claim word holds the last claimed sequence, so a request is performed at most once: a
// server that read an older posted value fails its swap. A fallback kernel serves whatever is
// pending when it runs (it may run long after it was launched) and then records its launch number
// (fallback_ran); the host launches a new one only when none is queued and no server holds the
// request, so at most one fallback kernel waits in a queue.
//
// The server side is written once, for the device and for host threads (the unit tests play the
// waiting kernels with host threads through exactly this code); the fallback kernel is the same
// protocol in PTX (runtime/memory/cuda_atomic_ptx.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "vshmem/device/impl/proxy_ring.h"

namespace vshmem::proxy {

// Pinned host memory that the device maps at the host's address (one per process).
struct alignas(64) Mailbox {
  // Written by the host.
  uint64_t posted;   // the latest request's sequence (written last, release); 0: none yet
  uint32_t aop;      // AtomicCode
  uint32_t width;    // 4 or 8
  uint64_t address;  // the word on this GPU's heap
  uint64_t operand;  // zero-extended bits
  uint64_t compare;
  uint64_t reserved0[3];
  // Written by the servers (another cache line).
  alignas(64) uint64_t claimed_seen;  // the sequence a server claimed (the host's view of it)
  uint64_t result;                    // the old value of request `done`
  uint64_t done;                      // the sequence whose result is in `result` (release)
  uint64_t fallback_ran;              // launch number of the last fallback kernel that ran
  uint64_t served_waiting;            // requests performed by waiting kernels (statistics)
  uint64_t reserved1[3];
};
static_assert(sizeof(Mailbox) == 128, "the mailbox is two cache lines");

// What the device state holds (GpuState::inbound); box == nullptr: no mailbox.
struct MailboxView {
  Mailbox* box;       // pinned host memory, device-mapped
  uint64_t* claimed;  // GPU memory (device servers); host memory in the unit tests
};

// Byte offsets the PTX fallback kernel uses (runtime/memory/cuda_atomic_ptx.cpp).
static_assert(offsetof(Mailbox, posted) == 0 && offsetof(Mailbox, aop) == 8 &&
                  offsetof(Mailbox, width) == 12 && offsetof(Mailbox, address) == 16 &&
                  offsetof(Mailbox, operand) == 24 && offsetof(Mailbox, compare) == 32 &&
                  offsetof(Mailbox, claimed_seen) == 64 && offsetof(Mailbox, result) == 72 &&
                  offsetof(Mailbox, done) == 80 && offsetof(Mailbox, fallback_ran) == 88 &&
                  offsetof(Mailbox, served_waiting) == 96,
              "the fallback kernel's PTX names these offsets");

// How many polls of a device wait pass between two looks at the mailbox (a power of two). A poll
// of a word in L2 takes about half a microsecond, a look at the mailbox (pinned host memory) one
// to two: every 64th poll keeps the waits' own latency, and answers a stranded request within
// tens of microseconds.
constexpr unsigned kMailboxPollEvery = 64;

// Claims sequence seq: true for the one caller that moved the claim word from seq - 1 to seq.
VSHMEMI_RING_HD bool mailbox_claim(uint64_t* claimed, uint64_t seq) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(reinterpret_cast<unsigned long long*>(claimed), seq - 1, seq) == seq - 1;
#else
  uint64_t expected = seq - 1;
  return __atomic_compare_exchange_n(claimed, &expected, seq, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
#endif
}

VSHMEMI_RING_HD uint64_t mailbox_claimed(const uint64_t* claimed) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const volatile uint64_t*>(claimed);
#else
  return __atomic_load_n(claimed, __ATOMIC_ACQUIRE);
#endif
}

// The atomic itself (AtomicCode aop, width 4 or 8 bytes); returns the old value, zero-extended.
template <class T>
VSHMEMI_RING_HD T mailbox_apply(T* p, uint32_t aop, T operand, T compare) {
#if defined(__CUDA_ARCH__)
  using U = typename std::conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type;
  U* q = reinterpret_cast<U*>(p);
  switch (aop) {
    case kAmoFetch: {
      T v;
      if constexpr (sizeof(T) == 8) {
        asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
      } else {
        asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
      }
      return v;
    }
    case kAmoSet:
    case kAmoSwap: return static_cast<T>(atomicExch_system(q, static_cast<U>(operand)));
    case kAmoCompareSwap:
      return static_cast<T>(atomicCAS_system(q, static_cast<U>(compare), static_cast<U>(operand)));
    case kAmoFetchAdd: return static_cast<T>(atomicAdd_system(q, static_cast<U>(operand)));
    case kAmoFetchAnd: return static_cast<T>(atomicAnd_system(q, static_cast<U>(operand)));
    case kAmoFetchOr: return static_cast<T>(atomicOr_system(q, static_cast<U>(operand)));
    case kAmoFetchXor: return static_cast<T>(atomicXor_system(q, static_cast<U>(operand)));
    default: return 0;
  }
#else
  switch (aop) {
    case kAmoFetch: return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    case kAmoSet:
    case kAmoSwap: return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
    case kAmoCompareSwap: {
      T old = compare;
      __atomic_compare_exchange_n(p, &old, operand, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      return old;
    }
    case kAmoFetchAdd: return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
    case kAmoFetchAnd: return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
    case kAmoFetchOr: return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
    case kAmoFetchXor: return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
    default: return 0;
  }
#endif
}

// One look at the mailbox by a server: performs the pending request if this caller wins its
// claim. waiting: the caller is a kernel in a vshmem wait (counted in served_waiting) rather than
// the fallback. True when it performed one.
VSHMEMI_RING_HD bool mailbox_serve(const MailboxView& m, bool waiting) {
  Mailbox* b = m.box;
  const uint64_t seq = ring_load(&b->posted);
  // Nothing posted, or already claimed (the cheap read first: the swap is the authority).
  if (seq == 0 || mailbox_claimed(m.claimed) != seq - 1) return false;
  if (!mailbox_claim(m.claimed, seq)) return false;
  ring_store(&b->claimed_seen, seq);
  // The fields are seq's: the host rewrites them only after done == seq, which only we write.
  const uint32_t aop = *reinterpret_cast<volatile uint32_t*>(&b->aop);
  const uint32_t width = *reinterpret_cast<volatile uint32_t*>(&b->width);
  const uint64_t address = *reinterpret_cast<volatile uint64_t*>(&b->address);
  const uint64_t operand = *reinterpret_cast<volatile uint64_t*>(&b->operand);
  const uint64_t compare = *reinterpret_cast<volatile uint64_t*>(&b->compare);
  uint64_t old;
  if (width == 4) {
    old = mailbox_apply<uint32_t>(reinterpret_cast<uint32_t*>(address), aop,
                                  static_cast<uint32_t>(operand), static_cast<uint32_t>(compare));
  } else {
    old = mailbox_apply<uint64_t>(reinterpret_cast<uint64_t*>(address), aop, operand, compare);
  }
  *reinterpret_cast<volatile uint64_t*>(&b->result) = old;
  if (waiting) {  // one server at a time holds a request: a plain increment
    volatile uint64_t* n = &b->served_waiting;
    *n = *n + 1;
  }
  ring_store(&b->done, seq);
  return true;
}

// What the fallback kernel with launch number `launch` does (the PTX kernel vshmem_mailbox_serve
// is this function): serves the pending request, if any is unclaimed, then records that it ran.
VSHMEMI_RING_HD void mailbox_fallback(const MailboxView& m, uint64_t launch) {
  mailbox_serve(m, false);
  ring_store(&m.box->fallback_ran, launch);
}

}  // namespace vshmem::proxy
