#include "runtime/memory/inbound_mailbox.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "runtime/common/log.hpp"

namespace vshmem {

namespace {

uint64_t load_acquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

void nap(uint64_t waited_ns) {
  // The fallback kernel answers in microseconds when the GPU's queue is free; beyond that a
  // waiting kernel must come round to the mailbox (its look time): yield, then sleep a little,
  // so that a long wait does not hold a core the waiting PEs' host threads need.
  if (waited_ns < 200'000) {
    sched_yield();
    return;
  }
  const timespec ts{0, 20'000};
  nanosleep(&ts, nullptr);
}

}  // namespace

InboundMailbox::InboundMailbox(const proxy::MailboxView& view, uint64_t timeout_ns, Launch launch,
                               uint64_t look_ns, void* bounce, size_t bounce_bytes)
    : view_(view),
      timeout_ns_(timeout_ns),
      launch_(std::move(launch)),
      look_ns_(look_ns),
      bounce_(static_cast<unsigned char*>(bounce)),
      bounce_bytes_(bounce != nullptr ? bounce_bytes : 0) {
  // Before the first request, and before the device state names the mailbox.
  __atomic_store_n(&view_.box->look_ns, look_ns, __ATOMIC_RELEASE);
}

template <class Fill>
Status InboundMailbox::post(const Fill& fill, const void* address, uint64_t* result) {
  if (!broken_.empty()) {
    return error(Code::kTimeout, log::format("%p: the GPU's inbound mailbox is out of use: %s",
                                             address, broken_.c_str()));
  }
  proxy::Mailbox* box = view_.box;
  const uint64_t seq = ++seq_;
  fill(box);
  __atomic_store_n(&box->posted, seq, __ATOMIC_RELEASE);

  const uint64_t start = proxy::ring_now_ns();
  // When a waiting kernel performed the last request, one is likely still waiting: give it a few
  // of its look times before launching a fallback (a launch is microseconds of this thread, in
  // which it does not see the answer, and the kernel it queues would find nothing to do).
  const uint64_t grace =
      waiter_served_last_ ? std::min<uint64_t>(4 * look_ns_ + 4000, kMaxGraceNs) : 0;
  for (;;) {
    if (load_acquire(&box->done) == seq) {
      if (result != nullptr) *result = __atomic_load_n(&box->result, __ATOMIC_RELAXED);
      waiter_served_last_ = __atomic_load_n(&box->waiter_done, __ATOMIC_RELAXED) == seq;
      if (waiter_served_last_) ++served_waiting_;
      const uint64_t ns = proxy::ring_now_ns() - start;
      times_.total_ns += ns;
      times_.max_ns = std::max(times_.max_ns, ns);
      return Status::ok();
    }
    // Keep one fallback kernel queued while nobody holds the request: a new one only when the
    // last one ran (it then found nothing to claim, or ran before this request was posted).
    if (load_acquire(&box->fallback_ran) == launched_ && load_acquire(&box->claimed_seen) != seq &&
        (grace == 0 || proxy::ring_now_ns() - start >= grace)) {
      if (Status st = launch_(launched_ + 1); !st) {
        broken_ = "the fallback kernel could not be launched: " + st.message();
        return st.with_context(log::format("%p: ", address));
      }
      ++launched_;
    }
    const uint64_t waited = proxy::ring_now_ns() - start;
    if (waited > timeout_ns_) {
      broken_ = log::format(
          "a request at %p was not performed within %.1f s: no kernel of this process waited in "
          "a vshmem call to perform it, and the one-thread kernel queued for it did not run "
          "(the GPU's queue is held by kernels that wait outside vshmem)",
          address, static_cast<double>(timeout_ns_) / 1e9);
      return error(Code::kTimeout, log::format("%p: %s", address, broken_.c_str()));
    }
    nap(waited);
  }
}

Status InboundMailbox::perform(const AtomicRequest& request, uint64_t* result) {
  std::lock_guard<std::mutex> lock(mu_);
  ++times_.atomics;
  Status st = post(
      [&](proxy::Mailbox* box) {
        box->aop = static_cast<uint32_t>(request.op);  // AtomicOp and proxy::AtomicCode agree
        box->width = request.width;
        box->address = reinterpret_cast<uint64_t>(request.address);
        box->operand = request.operand;
        box->compare = request.compare;
      },
      request.address, result);
  return st ? st : st.with_context(log::format("atomic(%p): ", request.address));
}

Status InboundMailbox::copy(void* dst, const void* src, size_t bytes, bool to_device) {
  if (bytes > bounce_bytes_) {
    return error(Code::kInvalidArgument,
                 log::format("inbound copy(%p <- %p, %zu bytes): above the mailbox's %zu bytes",
                             dst, src, bytes, bounce_bytes_));
  }
  if (bytes == 0) return Status::ok();
  std::lock_guard<std::mutex> lock(mu_);
  ++times_.copies;
  times_.copy_bytes += bytes;
  if (to_device) std::memcpy(bounce_, src, bytes);
  const uint64_t from = reinterpret_cast<uint64_t>(to_device ? bounce_ : src);
  const uint64_t to = reinterpret_cast<uint64_t>(to_device ? dst : bounce_);
  Status st = post(
      [&](proxy::Mailbox* box) {
        box->aop = proxy::kMailboxCopy;
        box->width = 8;
        box->address = to;
        box->operand = from;
        box->compare = bytes;
      },
      to_device ? dst : src, nullptr);
  if (!st) {
    return st.with_context(log::format("inbound copy(%p <- %p, %zu bytes): ", dst, src, bytes));
  }
  if (!to_device) std::memcpy(dst, bounce_, bytes);
  return Status::ok();
}

uint64_t InboundMailbox::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

uint64_t InboundMailbox::served_waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return served_waiting_;
}

uint64_t InboundMailbox::launches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return launched_;
}

InboundMailbox::Times InboundMailbox::times() const {
  std::lock_guard<std::mutex> lock(mu_);
  return times_;
}

}  // namespace vshmem
