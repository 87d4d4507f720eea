// Device calls to PEs this GPU cannot map (impl/proxy.cuh): the cold functions that post them to
// the PE's request ring (impl/proxy_ring.h), whose memory libvshmem makes and names in the device
// state (runtime/transport/proxy_ring.hpp) and whose proxy thread drains it
// (runtime/transport/device_proxy.hpp).
#include <cuda_runtime.h>

#include <cstdio>

#include "device/device_runtime.hpp"
#include "vshmem/device/impl/state.cuh"

using vshmem::device::GpuState;
using namespace vshmem::proxy;

namespace {

__device__ __noinline__ __attribute__((noreturn)) void proxy_fail(const char* call, int pe,
                                                                  const char* what,
                                                                  unsigned long long ms) {
  const GpuState& s = vshmemi_device_state;
  printf(
      "vshmem: PE %d: %s (block %d,%d,%d thread %d,%d,%d): request to PE %d through the device "
      "proxy: %s (%llu ms)\n",
      s.my_pe, call, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, pe,
      what, ms);
  __trap();
  __builtin_unreachable();
}

__device__ void wait_failed(const char* call, int w, int pe) {
  const GpuState& s = vshmemi_device_state;
  const unsigned long long ms = s.proxy.timeout_ns / 1000000ull;
  if (w == kWaitFull) {
    proxy_fail(call, pe,
               "the request ring stayed full for the time limit: the proxy thread is not draining "
               "it (VSHMEM_PROXY_TIMEOUT)",
               ms);
  } else if (w == kWaitNoDone) {
    proxy_fail(call, pe, "no answer from the proxy within the time limit (VSHMEM_PROXY_TIMEOUT)",
               ms);
  }
  proxy_fail(call, pe,
             "the proxy failed an earlier request (the host printed the cause, naming the PE) or "
             "stopped (shmem_finalize)",
             0);
}

// pe is a valid PE reached through the proxy and [addr, addr + bytes) is symmetric (always
// checked here: the proxy hands the address to the remote path).
__device__ void check_remote(const char* call, int pe, const void* addr, size_t bytes) {
  const GpuState& s = vshmemi_device_state;
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(s.n_pes) || s.proxy.slots == nullptr) {
    vshmemi_device_fail_peer(call, pe);
  }
  const uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (a < s.heap_base || a - s.heap_base > s.heap_committed ||
      bytes > s.heap_committed - (a - s.heap_base)) {
    vshmemi_device_fail_address(call, addr, bytes);
  }
}

// A producer waiting for a free slot or an answer looks at the inbound atomic mailbox now and then:
// the PE it waits for may itself wait for an atomic on our GPU (impl/proxy_mailbox.h).
struct ServeInbound {
  vshmem::device::SlowPoll* slow;
  const char* call;
  // Host and device, as the ring's functions it is passed to; only device code instantiates it.
  __host__ __device__ void operator()() const {
#ifdef __CUDA_ARCH__
    (*slow)(call);
#endif
  }
};

__device__ Slot* begin(const char* call, int pe, uint32_t op, uint32_t flags, uint64_t* ticket) {
  Slot* slot = nullptr;
  vshmem::device::SlowPoll slow;
  if (int w = ring_acquire(vshmemi_device_state.proxy, ticket, &slot, ServeInbound{&slow, call});
      w != kWaitOk) {
    wait_failed(call, w, pe);
  }
  slot->op = op;
  slot->flags = flags;
  slot->pe = pe;
  return slot;
}

// Waits for the answer of a kFlagWait request; the caller reads it, then releases the slot.
__device__ void await(const char* call, Slot* slot, uint64_t ticket, int pe) {
  vshmem::device::SlowPoll slow;
  int32_t status = kOk;  // from the done word: no second read across PCIe
  if (int w = ring_wait_done(vshmemi_device_state.proxy, slot, ticket, ServeInbound{&slow, call},
                             &status);
      w != kWaitOk) {
    wait_failed(call, w, pe);
  }
  if (status == kOk) return;
  ring_release(slot, ticket);
  proxy_fail(call, pe,
             status == kErrCopy
                 ? "staging the local buffer failed: it must be GPU global memory or host memory "
                   "(not a kernel's local variable) for transfers above 128 bytes"
             : status == kErrStopped ? "the proxy stopped (shmem_finalize) before answering"
                                     : "the remote path failed (the host printed the cause)",
             0);
}

__device__ void copy_in(unsigned char* to, const unsigned char* from, size_t bytes) {
  if (((reinterpret_cast<uintptr_t>(from) | bytes) & 7) == 0) {
    for (size_t i = 0; i < bytes; i += 8) {
      *reinterpret_cast<uint64_t*>(to + i) = *reinterpret_cast<const uint64_t*>(from + i);
    }
    return;
  }
  for (size_t i = 0; i < bytes; ++i) to[i] = from[i];
}

__device__ void copy_out(unsigned char* to, const unsigned char* from, size_t bytes) {
  if (((reinterpret_cast<uintptr_t>(to) | bytes) & 7) == 0) {
    for (size_t i = 0; i < bytes; i += 8) {
      *reinterpret_cast<uint64_t*>(to + i) = *reinterpret_cast<const uint64_t*>(from + i);
    }
    return;
  }
  for (size_t i = 0; i < bytes; ++i) to[i] = from[i];
}

// One request of at most kInlineBytes whose data travels in the slot, or a larger one whose local
// buffer the proxy stages (GPU global or host memory).
__device__ __noinline__ void proxy_rma_one(const char* call, int kind, void* dest,
                                           const void* source, size_t bytes, int pe) {
  const bool small = bytes <= kInlineBytes;
  uint64_t t;
  if (kind == 0) {
    Slot* slot = begin(call, pe, kOpPut, small ? kFlagInline : kFlagWait, &t);
    slot->dest = reinterpret_cast<uint64_t>(dest);
    slot->source = reinterpret_cast<uint64_t>(source);
    slot->bytes = bytes;
    if (small) copy_in(slot->data, static_cast<const unsigned char*>(source), bytes);
    ring_publish(slot, t);
    if (!small) {  // the source may be reused once the proxy has staged it
      await(call, slot, t, pe);
      ring_release(slot, t);
    }
    return;
  }
  Slot* slot = begin(call, pe, kOpGet, kFlagWait | (small ? kFlagInline : 0u), &t);
  slot->dest = reinterpret_cast<uint64_t>(dest);
  slot->source = reinterpret_cast<uint64_t>(source);
  slot->bytes = bytes;
  ring_publish(slot, t);
  await(call, slot, t, pe);
  if (small) copy_out(static_cast<unsigned char*>(dest), slot->data, bytes);
  ring_release(slot, t);
}

// A waiting thread's look: performs a pending inbound request, and ends the wait once the proxy
// failed a request.
__device__ __noinline__ void proxy_look(const char* call) {
  const GpuState& s = vshmemi_device_state;
  if (s.inbound.box != nullptr) mailbox_serve(s.inbound, true);
  if (s.proxy.control == nullptr) return;
  const int32_t failed = ring_load32(&s.proxy.control->failed);
  // kErrStopped: shmem_finalize stopped the proxy; a kernel still waiting then is the caller's.
  if (failed == 0 || failed == kErrStopped) return;
  const int pe = *reinterpret_cast<volatile int32_t*>(&s.proxy.control->failed_pe);
  printf(
      "vshmem: PE %d: %s (block %d,%d,%d thread %d,%d,%d): the device proxy failed a request to "
      "PE %d (the host printed the cause): this wait may depend on PE %d and is ended\n",
      s.my_pe, call, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, pe,
      pe);
  __trap();
}

}  // namespace

extern "C" {

__device__ __noinline__ void vshmemi_proxy_rma(const char* call, int kind, void* dest,
                                               const void* source, size_t bytes, int pe) {
  check_remote(call, pe, kind == 0 ? dest : source, bytes);
  if (bytes == 0) return;
  // The host cannot copy a block's shared memory or a thread's local array (the proxy thread
  // would take the address for a host one): such a buffer travels in the slots, a slot at a time.
  const void* local = kind == 0 ? source : dest;
  if (bytes > kInlineBytes && !__isGlobal(local)) {
    auto* d = static_cast<unsigned char*>(dest);
    auto* s = static_cast<const unsigned char*>(source);
    for (size_t off = 0; off < bytes; off += kInlineBytes) {
      const size_t piece = bytes - off < kInlineBytes ? bytes - off : kInlineBytes;
      proxy_rma_one(call, kind, d + off, s + off, piece, pe);
    }
    return;
  }
  proxy_rma_one(call, kind, dest, source, bytes, pe);
}

__device__ void vshmemi_proxy_strided(const char* call, int kind, void* dest, const void* source,
                                      ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem,
                                      int pe) {
  auto* d = static_cast<unsigned char*>(dest);
  auto* s = static_cast<const unsigned char*>(source);
  for (size_t i = 0; i < nelems; ++i) {
    vshmemi_proxy_rma(call, kind,
                      d + static_cast<ptrdiff_t>(i) * dst * static_cast<ptrdiff_t>(elem),
                      s + static_cast<ptrdiff_t>(i) * sst * static_cast<ptrdiff_t>(elem), elem, pe);
  }
}

__device__ void vshmemi_proxy_p(const char* call, void* dest, uint64_t bits, unsigned width,
                                int pe) {
  check_remote(call, pe, dest, width);
  uint64_t t;
  Slot* slot = begin(call, pe, kOpPut, kFlagInline, &t);
  slot->dest = reinterpret_cast<uint64_t>(dest);
  slot->bytes = width;
  *reinterpret_cast<uint64_t*>(slot->data) = bits;  // little-endian: the low `width` bytes
  ring_publish(slot, t);
}

__device__ uint64_t vshmemi_proxy_g(const char* call, const void* source, unsigned width, int pe) {
  check_remote(call, pe, source, width);
  uint64_t t;
  Slot* slot = begin(call, pe, kOpGet, kFlagWait | kFlagInline, &t);
  slot->source = reinterpret_cast<uint64_t>(source);
  slot->bytes = width;
  ring_publish(slot, t);
  await(call, slot, t, pe);
  uint64_t bits = *reinterpret_cast<volatile uint64_t*>(slot->data);
  ring_release(slot, t);
  return width >= 8 ? bits : bits & ((1ull << (8 * width)) - 1);
}

__device__ uint64_t vshmemi_proxy_amo(const char* call, unsigned aop, void* dest, uint64_t operand,
                                      uint64_t compare, unsigned width, int fetch, int pe) {
  check_remote(call, pe, dest, width);
  if (reinterpret_cast<uintptr_t>(dest) % width != 0) {
    vshmemi_device_fail(call, "the address is not aligned to its type");
  }
  uint64_t t;
  Slot* slot = begin(call, pe, kOpAtomic, fetch ? kFlagWait : 0u, &t);
  slot->aop = aop;
  slot->width = width;
  slot->dest = reinterpret_cast<uint64_t>(dest);
  slot->operand = width == 4 ? (operand & 0xffffffffull) : operand;
  slot->compare = width == 4 ? (compare & 0xffffffffull) : compare;
  ring_publish(slot, t);
  if (!fetch) return 0;
  await(call, slot, t, pe);
  const uint64_t old = *reinterpret_cast<volatile uint64_t*>(&slot->result);
  ring_release(slot, t);
  return old;
}

__device__ void vshmemi_proxy_signal(const char* call, uint64_t* sig_addr, uint64_t signal,
                                     int sig_op, int pe) {
  check_remote(call, pe, sig_addr, sizeof(uint64_t));
  if (sig_op != 0 && sig_op != 1) {
    vshmemi_device_fail(call, "sig_op is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD");
  }
  uint64_t t;
  Slot* slot = begin(call, pe, kOpSignal, 0u, &t);
  slot->aop = static_cast<uint32_t>(sig_op);
  slot->width = 8;
  slot->dest = reinterpret_cast<uint64_t>(sig_addr);
  slot->operand = signal;
  ring_publish(slot, t);
}

__device__ void vshmemi_proxy_notify(const char* call, uint64_t* word, int pe) {
  check_remote(call, pe, word, sizeof(uint64_t));
  uint64_t t;
  Slot* slot = begin(call, pe, kOpSignal, kFlagNotify, &t);
  slot->aop = 1;  // add
  slot->width = 8;
  slot->dest = reinterpret_cast<uint64_t>(word);
  slot->operand = 1;
  ring_publish(slot, t);
}

__device__ void vshmemi_proxy_order(int quiet) {
  const char* call = quiet ? "shmem_quiet" : "shmem_fence";
  const GpuState& s = vshmemi_device_state;
  const int me = s.my_pe;
  // Nothing to do when no request was posted since the last quiet completed (kernels that only
  // reach mapped peers in a job that has remote ones): this thread's requests all have tickets
  // below the counter it reads now.
  const uint64_t taken = *reinterpret_cast<volatile uint64_t*>(s.proxy.tickets);
  if (ring_load(&s.proxy.control->quieted) >= taken) return;
  uint64_t t;
  Slot* slot = begin(call, me, quiet ? kOpQuiet : kOpFence, quiet ? kFlagWait : 0u, &t);
  ring_publish(slot, t);
  if (!quiet) return;
  await(call, slot, t, me);
  ring_release(slot, t);
}

__device__ __noinline__ void vshmemi_proxy_wait_slow(const char* call) {
  const GpuState& s = vshmemi_device_state;
  // One look per look_ns between all waiting threads of this process (impl/proxy_mailbox.h): the
  // shared look time is a GPU word, the mailbox and the failure word are across PCIe. This part
  // runs at every kMailboxPollEvery-th poll, so it stays small (the look is a call of its own).
  if (s.inbound.box != nullptr && !mailbox_look_due(s.inbound, ring_now_ns())) return;
  proxy_look(call);
}

}  // extern "C"
