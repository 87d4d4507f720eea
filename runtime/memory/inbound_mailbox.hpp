// The host side of the inbound atomic mailbox (vshmem/device/impl/proxy_mailbox.h): how a
// host-issued atomic on GPU memory (a remote PE's atomic arriving through the remote path, or a
// host atomic on a mapped peer) reaches the GPU without needing a free hardware queue. The request
// is posted in the mailbox, where any kernel of this process that waits in a vshmem call performs
// it, and a one-thread fallback kernel is kept queued for when none waits. The memory (the
// mailbox and its claim word) and the fallback launch are the provider's; this class holds the
// protocol, so that unit tests can run it with host threads playing the kernels.
#pragma once

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
  // mailbox is not used again).
  InboundMailbox(const proxy::MailboxView& view, uint64_t timeout_ns, Launch launch)
      : view_(view), timeout_ns_(timeout_ns), launch_(std::move(launch)) {}

  // Performs the atomic (width 4 or 8, operands zero-extended) and writes the old value to
  // *result when result is not null. Any thread; requests are performed one at a time.
  Status perform(const AtomicRequest& request, uint64_t* result);

  const proxy::MailboxView& view() const { return view_; }
  // Requests performed so far, and how many of them waiting kernels performed.
  uint64_t requests() const;
  uint64_t served_waiting() const;
  // Fallback kernels launched so far.
  uint64_t launches() const;

 private:
  proxy::MailboxView view_;
  uint64_t timeout_ns_;
  Launch launch_;
  mutable std::mutex mu_;  // one request in the mailbox at a time
  uint64_t seq_ = 0;       // the last posted sequence
  uint64_t launched_ = 0;  // the last fallback launch number
  std::string broken_;     // why the mailbox is out of use (a request timed out); empty: in use
};

}  // namespace vshmem
