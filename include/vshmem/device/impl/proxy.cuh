// Device calls to PEs this GPU cannot map (another node, or no peer path): the cold path that
// posts them to the PE's proxy ring (impl/proxy_ring.h; the proxy thread drains it into the
// remote path, runtime/transport/device_proxy.hpp).
//
// The mapped fast path does not change: every call reads the peer's delta as before, and the
// branch that used to trap on kUnmappedDelta now calls one of the functions below instead
// (defined in libvshmem_device, device/proxy.cu, so their bodies stay out of the caller's code).
// They check that pe is a valid PE reached through the proxy, else they trap with the message
// vshmemi_device_fail_peer prints.
//
// Costs: a put of up to kInlineBytes travels in the request (the calling thread copies it to the
// pinned ring and returns); a larger put waits until the proxy has staged the source (GPU global
// memory or host memory, not a kernel's local variable); a get, a fetching atomic and quiet wait
// for the proxy's answer. The group forms post one request from the group's first thread.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vshmem/device/impl/state.h"

#ifdef __CUDACC__

extern "C" {
// kind: 0 put, 1 get.
__device__ void vshmemi_proxy_rma(const char* call, int kind, void* dest, const void* source,
                                  size_t bytes, int pe);
__device__ void vshmemi_proxy_strided(const char* call, int kind, void* dest, const void* source,
                                      ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem,
                                      int pe);
// p and g of one value of up to 8 bytes (its bits, zero-extended).
__device__ void vshmemi_proxy_p(const char* call, void* dest, uint64_t bits, unsigned width,
                                int pe);
__device__ uint64_t vshmemi_proxy_g(const char* call, const void* source, unsigned width, int pe);
// aop: vshmem::proxy::AtomicCode; the old value when fetch != 0.
__device__ uint64_t vshmemi_proxy_amo(const char* call, unsigned aop, void* dest, uint64_t operand,
                                      uint64_t compare, unsigned width, int fetch, int pe);
// sig_op: SHMEM_SIGNAL_SET (0) or SHMEM_SIGNAL_ADD (1). Delivered after every earlier request.
__device__ void vshmemi_proxy_signal(const char* call, uint64_t* sig_addr, uint64_t signal,
                                     int sig_op, int pe);
// A barrier's notification: adds 1 to the count at pe's *word after every earlier request, one-way
// (no later quiet completes it; the peer polls the word). Barrier flags that count the barriers
// entered with a peer use it instead of setting the new count: the word's only writer is this PE,
// which adds 1 per barrier, so the value is the same and the proxy need not wait for an answer.
__device__ void vshmemi_proxy_notify(const char* call, uint64_t* word, int pe);
// shmem_fence (quiet = 0) / shmem_quiet (quiet = 1) for the requests in the proxy ring.
__device__ void vshmemi_proxy_order(int quiet);
// The slow part of a device wait where PEs sit behind the proxy: once the shared look time has
// passed, performs a pending inbound atomic or copy (impl/proxy_mailbox.h), and traps, naming the
// PE and `call`, once the proxy has failed a request (a wait that depends on a PE behind a failed
// path would never end).
__device__ void vshmemi_proxy_wait_slow(const char* call);
}

namespace vshmem::device {

// Called once per poll in every device wait loop: every kMailboxPollEvery-th poll, when the job
// has a proxy, it calls vshmemi_proxy_wait_slow (which reads the clock and one GPU word, and looks
// at the mailbox at most once per Mailbox::look_ns). A counter and a branch not taken per poll,
// and no load: the mapped path's loops keep their loads (tests/unit/device_loops_ptx.cu).
struct SlowPoll {
  unsigned polls = 0;
  __device__ __forceinline__ void operator()(const char* call) {
    if ((++polls & (proxy::kMailboxPollEvery - 1)) == 0 &&
        vshmemi_device_state.proxy.control != nullptr) {
      vshmemi_proxy_wait_slow(call);
    }
  }
};

}  // namespace vshmem::device

#endif  // __CUDACC__
