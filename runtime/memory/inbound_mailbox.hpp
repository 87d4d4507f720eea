// The host side of the inbound mailbox (vshmem/device/impl/proxy_mailbox.h): how a host-issued
// atomic on GPU memory (a remote PE's atomic arriving through the remote path, or a host atomic on
// a mapped peer), or a small copy between the GPU and host memory (the remote path's side of a
// remote PE's put or get, and of our own staged transfers), reaches the GPU without needing a free
// hardware queue. The request is posted in the mailbox, where any kernel of this process that
// waits in a vshmem call performs it, and a one-thread fallback kernel is kept queued for when none
// waits. The memory (the mailbox, its GPU words, the bounce buffer) and the fallback launch are
// the provider's; this class holds the protocol, so that unit tests can run it with host threads
// playing the kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/memory/memory.hpp"
#include "vshmem/device/impl/proxy_mailbox.h"

namespace vshmem {

class InboundMailbox {
 public:
  // Starts the fallback kernel numbered `launch` (1, 2, ...) asynchronously: it serves what is
  // pending when it runs, then sets fallback_ran = launch (proxy::mailbox_fallback).
  using Launch = std::function<Status(uint64_t launch)>;

  // view: zeroed memory (box device-mapped, claimed on the GPU). A request not performed within
  // timeout_ns fails, and so does every later one (the claim word may still move for it, so the
  // mailbox is not used again). look_ns: how often waiting kernels look (Mailbox::look_ns).
  // bounce: bounce_bytes of device-mapped host memory for copies (null: no copies).
  InboundMailbox(const proxy::MailboxView& view, uint64_t timeout_ns, Launch launch,
                 uint64_t look_ns = proxy::kMailboxLookNs, void* bounce = nullptr,
                 size_t bounce_bytes = 0);

  // Performs the atomic (width 4 or 8, operands zero-extended) and writes the old value to
  // *result when result is not null. Any thread; requests are performed one at a time.
  Status perform(const AtomicRequest& request, uint64_t* result);

  // Copies `bytes` (at most bounce_bytes()) from host memory to this GPU's memory (to_device) or
  // from this GPU's memory to host memory, through the bounce buffer: the host memory may be
  // pageable. Done when it returns.
  Status copy(void* dst, const void* src, size_t bytes, bool to_device);
  size_t bounce_bytes() const { return bounce_bytes_; }

  const proxy::MailboxView& view() const { return view_; }
  // Requests performed so far, and how many of them waiting kernels performed.
  uint64_t requests() const;
  uint64_t served_waiting() const;
  // Fallback kernels launched so far.
  uint64_t launches() const;
  // Where the time went (VSHMEM_DEBUG=info): requests of each kind, the time from posting one to
  // its completion summed and at most.
  struct Times {
    uint64_t atomics = 0, copies = 0, copy_bytes = 0;
    uint64_t total_ns = 0, max_ns = 0;
  };
  Times times() const;

 private:
  // Posts the request that fill() writes into the mailbox and waits for it; *result: its result.
  template <class Fill>
  Status post(const Fill& fill, const void* address, uint64_t* result);

  // The longest wait for a waiting kernel before a fallback is launched after all.
  static constexpr uint64_t kMaxGraceNs = 1'000'000;

  proxy::MailboxView view_;
  uint64_t timeout_ns_;
  Launch launch_;
  uint64_t look_ns_;
  unsigned char* bounce_;
  size_t bounce_bytes_;
  mutable std::mutex mu_;            // one request in the mailbox at a time
  uint64_t seq_ = 0;                 // the last posted sequence
  uint64_t launched_ = 0;            // the last fallback launch number
  uint64_t served_waiting_ = 0;      // requests a waiting kernel performed (Mailbox::waiter_done)
  bool waiter_served_last_ = false;  // the last request was performed by a waiting kernel
  std::string broken_;  // why the mailbox is out of use (a request timed out); empty: in use
  Times times_;
};

}  // namespace vshmem
