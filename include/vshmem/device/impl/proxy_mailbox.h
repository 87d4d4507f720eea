// The inbound mailbox: target-side atomics on this PE's GPU heap that a remote PE asked for
// (through the remote path, runtime/memory/cuda_provider.cpp atomic()), and small copies between
// this GPU's memory and host memory that the remote path needs (a remote PE's small put into our
// heap or get from it, our side of a staged transfer: cuda_provider.cpp copy_start()), performed
// by a kernel of this process that sits in a vshmem device wait, or else by a one-thread kernel.
//
// Why: the one-thread kernel, or a copy on a stream, alone can sit in a hardware queue behind this
// PE's own kernels (CUDA maps streams onto few queues, CUDA_DEVICE_MAX_CONNECTIONS, 8 by default),
// and those kernels may be waiting for the very PE whose atomic or data it carries: a deadlock. A
// kernel that waits (wait_until, signal wait, barriers, proxy answers: impl/signal.cuh,
// impl/sync.cuh, device/proxy.cu) needs no free queue: it already runs. So the host posts each
// request here and also launches the one-thread kernel ("the fallback"); whichever claims the
// request first performs it.
//
// Protocol (one request at a time: the host serializes them):
//   host:    writes the request's fields, then posted = seq (release; seq = 1, 2, 3, ...).
//   server:  reads posted (acquire); claims seq with a compare-and-swap of the claim word from
//            seq - 1 to seq (GPU memory: an atomic among the GPU's threads, not across PCIe);
//            the winner alone performs the atomic or the copy, writes result, then done = seq
//            (release: a copy's bytes are visible before it).
//   host:    waits for done == seq and reads result; only then posts seq + 1.
// The claim word holds the last claimed sequence, so a request is performed at most once: a
// server that read an older posted value fails its swap. A fallback kernel serves whatever is
// pending when it runs (it may run long after it was launched) and then records its launch number
// (fallback_ran); the host launches a new one only when none is queued and no server holds the
// request, so at most one fallback kernel waits in a queue.
//
// Waiting kernels look at the mailbox at most once per Mailbox::look_ns between them all: a GPU
// word beside the claim word holds the time before which nobody looks again, so one waiter or a
// thousand cost the same PCIe reads, and a request waits about look_ns for a waiter.
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
  uint32_t aop;      // AtomicCode, or kMailboxCopy
  uint32_t width;    // 4 or 8
  uint64_t address;  // the word on this GPU's heap (a copy: its destination)
  uint64_t operand;  // zero-extended bits (a copy: its source)
  uint64_t compare;  // (a copy: its length in bytes)
  // Written once, before the first request: how often (ns) waiting kernels look at the mailbox.
  uint64_t look_ns;
  uint64_t reserved0[2];
  // Written by the servers (another cache line).
  alignas(64) uint64_t claimed_seen;  // the sequence a server claimed (the host's view of it)
  uint64_t result;                    // the old value of request `done`
  uint64_t done;                      // the sequence whose result is in `result` (release)
  uint64_t fallback_ran;              // launch number of the last fallback kernel that ran
  uint64_t waiter_done;  // the last sequence a waiting kernel performed (the host counts them)
  uint64_t reserved1[3];
};
static_assert(sizeof(Mailbox) == 128, "the mailbox is two cache lines");

// What the device state holds (GpuState::inbound); box == nullptr: no mailbox.
struct MailboxView {
  Mailbox* box;       // pinned host memory, device-mapped
  uint64_t* claimed;  // kMailboxGpuWords words of GPU memory (host memory in the unit tests)
};

// claimed[0]: the claim word; claimed[1]: the globaltimer value before which no waiting kernel
// looks at the mailbox again (device/proxy.cu, vshmemi_proxy_wait_slow).
constexpr unsigned kMailboxGpuWords = 2;

// A copy request (aop == kMailboxCopy): `bytes` (compare) from `source` (operand) to `address`,
// each GPU memory of this device or device-mapped host memory (the host copies pageable memory
// through a page-locked bounce buffer of kMailboxBounceBytes). result is 0.
constexpr uint32_t kMailboxCopy = 8;
constexpr uint64_t kMailboxBounceBytes = 4096;

// Byte offsets the PTX fallback kernel uses (runtime/memory/cuda_atomic_ptx.cpp).
static_assert(offsetof(Mailbox, posted) == 0 && offsetof(Mailbox, aop) == 8 &&
                  offsetof(Mailbox, width) == 12 && offsetof(Mailbox, address) == 16 &&
                  offsetof(Mailbox, operand) == 24 && offsetof(Mailbox, compare) == 32 &&
                  offsetof(Mailbox, look_ns) == 40 && offsetof(Mailbox, claimed_seen) == 64 &&
                  offsetof(Mailbox, result) == 72 && offsetof(Mailbox, done) == 80 &&
                  offsetof(Mailbox, fallback_ran) == 88 && offsetof(Mailbox, waiter_done) == 96,
              "the fallback kernel's PTX names these offsets");

// How many polls of a device wait pass between two calls of its slow part (a power of two), which
// reads the clock and the shared look time (GPU memory) and looks at the mailbox (pinned host
// memory, one to two microseconds) only once the look time has passed. Session 8 looked at every
// 64th poll, tens of microseconds apart with polls of about half a microsecond: a request that
// only a waiting kernel could perform (its fallback kernel queued behind that kernel) waited so
// long.
constexpr unsigned kMailboxPollEvery = 8;
// Mailbox::look_ns unless VSHMEM_INBOUND_LOOK_US says otherwise.
constexpr uint64_t kMailboxLookNs = 2000;

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

// Whether a waiting thread looks at the mailbox now (`now`: ring_now_ns()): the first to come
// once the shared look time (claimed[1]) has passed moves it look_ns on, and looks. Racing threads
// may both look; the claim keeps each request performed once.
VSHMEMI_RING_HD bool mailbox_look_due(const MailboxView& m, uint64_t now) {
#if defined(__CUDA_ARCH__)
  volatile uint64_t* next = m.claimed + 1;
  if (now < *next) return false;
  *next = now + *reinterpret_cast<volatile uint64_t*>(&m.box->look_ns);
#else
  if (now < __atomic_load_n(m.claimed + 1, __ATOMIC_RELAXED)) return false;
  __atomic_store_n(m.claimed + 1, now + __atomic_load_n(&m.box->look_ns, __ATOMIC_RELAXED),
                   __ATOMIC_RELAXED);
#endif
  return true;
}

// A copy request's bytes: 8-byte words, eight loads in flight before their stores (a load from
// host memory is a PCIe round trip), when both ends and the length are multiples of 8; else bytes.
// Not inlined on the device: the waits' slow part stays small.
#if defined(__CUDACC__)
inline __host__ __device__ __noinline__
#else
inline
#endif
    void
    mailbox_copy(unsigned char* dst, const unsigned char* src, uint64_t bytes) {
#if defined(__CUDA_ARCH__)
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes) & 7) == 0) {
    auto* d = reinterpret_cast<uint64_t*>(dst);
    const auto* s = reinterpret_cast<const uint64_t*>(src);
    const uint64_t n = bytes / 8;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) w[k] = s[i + k];
#pragma unroll
      for (int k = 0; k < 8; ++k) d[i + k] = w[k];
    }
    for (; i < n; ++i) d[i] = s[i];
    return;
  }
  for (uint64_t i = 0; i < bytes; ++i) dst[i] = src[i];
#else
  for (uint64_t i = 0; i < bytes; ++i) {  // byte by byte, as a kernel may: no library memcpy
    __atomic_store_n(dst + i, __atomic_load_n(src + i, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  }
#endif
}

// One look at the mailbox by a server: performs the pending request if this caller wins its
// claim (an atomic, or a copy: aop == kMailboxCopy). waiting: the caller is a kernel in a vshmem
// wait (recorded in waiter_done) rather than the fallback. True when it performed one.
VSHMEMI_RING_HD bool mailbox_serve(const MailboxView& m, bool waiting) {
  Mailbox* b = m.box;
  const uint64_t seq = ring_load(&b->posted);
  // Nothing posted, or already claimed (the cheap read first: the swap is the authority).
  if (seq == 0 || mailbox_claimed(m.claimed) != seq - 1) return false;
  if (!mailbox_claim(m.claimed, seq)) return false;
    // A hint for the host's launch decision, not an order: no fence (a system-scope release waits
    // for this thread's stores to reach host memory).
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<volatile uint64_t*>(&b->claimed_seen) = seq;
#else
  __atomic_store_n(&b->claimed_seen, seq, __ATOMIC_RELAXED);
#endif
  // The fields are seq's: the host rewrites them only after done == seq, which only we write.
  const uint32_t aop = *reinterpret_cast<volatile uint32_t*>(&b->aop);
  const uint32_t width = *reinterpret_cast<volatile uint32_t*>(&b->width);
  const uint64_t address = *reinterpret_cast<volatile uint64_t*>(&b->address);
  const uint64_t operand = *reinterpret_cast<volatile uint64_t*>(&b->operand);
  const uint64_t compare = *reinterpret_cast<volatile uint64_t*>(&b->compare);
  uint64_t old;
  if (aop == kMailboxCopy) {
    mailbox_copy(reinterpret_cast<unsigned char*>(address),
                 reinterpret_cast<const unsigned char*>(operand), compare);
    old = 0;
  } else if (width == 4) {
    old = mailbox_apply<uint32_t>(reinterpret_cast<uint32_t*>(address), aop,
                                  static_cast<uint32_t>(operand), static_cast<uint32_t>(compare));
  } else {
    old = mailbox_apply<uint64_t>(reinterpret_cast<uint64_t*>(address), aop, operand, compare);
  }
  *reinterpret_cast<volatile uint64_t*>(&b->result) = old;
  // A store, not an increment: no read across PCIe (done's release carries it to the host).
  if (waiting) *reinterpret_cast<volatile uint64_t*>(&b->waiter_done) = seq;
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
