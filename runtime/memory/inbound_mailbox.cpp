#include "runtime/memory/inbound_mailbox.hpp"

#include <sched.h>
#include <time.h>

#include "runtime/common/log.hpp"

namespace vshmem {

namespace {

uint64_t load_acquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

void nap(uint64_t waited_ns) {
  // The fallback kernel answers in microseconds when the GPU's queue is free; beyond that a
  // waiting kernel must come round to the mailbox (tens of microseconds): yield, then sleep a
  // little, so that a long wait does not hold a core the waiting PEs' host threads need.
  if (waited_ns < 200'000) {
    sched_yield();
    return;
  }
  const timespec ts{0, 20'000};
  nanosleep(&ts, nullptr);
}

}  // namespace

Status InboundMailbox::perform(const AtomicRequest& request, uint64_t* result) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_.empty()) {
    return error(Code::kTimeout,
                 log::format("atomic(%p): the GPU's inbound atomics are out of use: %s",
                             request.address, broken_.c_str()));
  }
  proxy::Mailbox* box = view_.box;
  const uint64_t seq = ++seq_;
  box->aop = static_cast<uint32_t>(request.op);  // AtomicOp and proxy::AtomicCode agree
  box->width = request.width;
  box->address = reinterpret_cast<uint64_t>(request.address);
  box->operand = request.operand;
  box->compare = request.compare;
  __atomic_store_n(&box->posted, seq, __ATOMIC_RELEASE);

  const uint64_t start = proxy::ring_now_ns();
  for (;;) {
    if (load_acquire(&box->done) == seq) {
      if (result != nullptr) *result = __atomic_load_n(&box->result, __ATOMIC_RELAXED);
      return Status::ok();
    }
    // Keep one fallback kernel queued while nobody holds the request: a new one only when the
    // last one ran (it then found nothing to claim, or ran before this request was posted).
    if (load_acquire(&box->fallback_ran) == launched_ && load_acquire(&box->claimed_seen) != seq) {
      if (Status st = launch_(launched_ + 1); !st) {
        broken_ = "the fallback kernel could not be launched: " + st.message();
        return st.with_context(log::format("atomic(%p): ", request.address));
      }
      ++launched_;
    }
    const uint64_t waited = proxy::ring_now_ns() - start;
    if (waited > timeout_ns_) {
      broken_ = log::format(
          "an atomic at %p was not performed within %.1f s: no kernel of this process waited in "
          "a vshmem call to perform it, and the one-thread kernel queued for it did not run "
          "(the GPU's queue is held by kernels that wait outside vshmem)",
          request.address, static_cast<double>(timeout_ns_) / 1e9);
      return error(Code::kTimeout, log::format("atomic(%p): %s", request.address, broken_.c_str()));
    }
    nap(waited);
  }
}

uint64_t InboundMailbox::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

uint64_t InboundMailbox::served_waiting() const {
  return __atomic_load_n(&view_.box->served_waiting, __ATOMIC_ACQUIRE);
}

uint64_t InboundMailbox::launches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return launched_;
}

}  // namespace vshmem
