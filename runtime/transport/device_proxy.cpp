#include "runtime/transport/device_proxy.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>

#include "runtime/common/clock.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/stall_watch.hpp"

namespace vshmem {

using proxy::Slot;

namespace {

const char* op_name(uint32_t op) {
  switch (op) {
    case proxy::kOpPut: return "put";
    case proxy::kOpGet: return "get";
    case proxy::kOpAtomic: return "atomic";
    case proxy::kOpSignal: return "signal";
    case proxy::kOpFence: return "fence";
    case proxy::kOpQuiet: return "quiet";
    default: return "request";
  }
}

// For stall reports (string literals: the watch keeps the pointer).
const char* stall_name(uint32_t op) {
  switch (op) {
    case proxy::kOpPut: return "device proxy: put to a remote PE";
    case proxy::kOpGet: return "device proxy: get from a remote PE";
    case proxy::kOpAtomic: return "device proxy: atomic on a remote PE";
    case proxy::kOpSignal: return "device proxy: signal to a remote PE";
    case proxy::kOpFence: return "device proxy: fence";
    case proxy::kOpQuiet: return "device proxy: quiet";
    default: return "device proxy: request";
  }
}

uint64_t load_acquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store_release(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

}  // namespace

DeviceProxy::DeviceProxy(const proxy::RingView& ring, ProxyBackend& backend, int my_pe,
                         size_t stage_bytes, void* stage)
    : ring_(ring),
      backend_(backend),
      my_pe_(my_pe),
      own_stage_(stage == nullptr ? std::max<size_t>(stage_bytes, 1) : 0),
      stage_(stage != nullptr ? static_cast<unsigned char*>(stage) : own_stage_.data()),
      stage_bytes_(std::max<size_t>(stage_bytes, 1)),
      awaiting_ack_(ring.n_slots, 0) {
  head_ = retired_ = load_acquire(&ring_.control->consumed);
  head_seen_.store(head_, std::memory_order_release);
}

DeviceProxy::~DeviceProxy() { stop(); }

void DeviceProxy::start() {
  if (thread_.joinable()) return;
  // A request the proxy cannot complete, or a CUDA call that serves a peer and never returns
  // (work queued on the GPU behind a kernel that waits for a peer), is reported with what every
  // thread does, before the peers' time limits end the job (stall_watch.hpp).
  stall::start(kStallReport);
  watching_ = true;
  stop_.store(false);
  thread_ = std::thread([this] { run(); });
}

void DeviceProxy::stop() {
  if (thread_.joinable()) {
    stop_.store(true);
    thread_.join();
  }
  if (watching_) {
    stall::stop();
    watching_ = false;
  }
  retire();
  // Requests published but not handled: their producers (if any still run) get an answer.
  for (;;) {
    Slot& slot = ring_.slots[head_ & (ring_.n_slots - 1)];
    if (load_acquire(&slot.seq) != head_ + 1) break;
    slot.status = proxy::kErrStopped;
    store_release(&slot.done, proxy::ring_done_word(head_, proxy::kErrStopped));
    ++head_;
    head_seen_.store(head_, std::memory_order_release);
  }
  if (failed_ == 0) {
    __atomic_store_n(&ring_.control->failed, proxy::kErrStopped, __ATOMIC_RELEASE);
    failed_ = proxy::kErrStopped;
  }
  if (log::enabled(log::Level::kInfo)) {
    if (std::string t = times_summary(); !t.empty()) {
      VSHMEM_INFO("PE %d: device proxy: %s", my_pe_, t.c_str());
    }
  }
}

DeviceProxy::OpTimes DeviceProxy::times(uint32_t kind) const {
  std::lock_guard<std::mutex> lock(times_mutex_);
  return kind < kOpKinds ? times_[kind] : OpTimes{};
}

std::string DeviceProxy::times_summary() const {
  std::string out;
  for (uint32_t op = 1; op < kOpKinds; ++op) {
    const OpTimes t = times(op);
    if (t.count == 0) continue;
    const char* name = op == kInlinePut   ? "put (inline)"
                       : op == kInlineGet ? "get (inline)"
                                          : op_name(op);
    out += log::format("%s%s %llu (mean %.2f us, max %.1f us)", out.empty() ? "" : ", ", name,
                       static_cast<unsigned long long>(t.count),
                       static_cast<double>(t.total_ns) / 1e3 / static_cast<double>(t.count),
                       static_cast<double>(t.max_ns) / 1e3);
  }
  return out.empty() ? out : "time from taking up a request to answering it: " + out;
}

Status DeviceProxy::drain_here() {
  while (poll() > 0) {
  }
  if (failed_ != 0) {
    return error(Code::kPeerFailure, "the device proxy failed an earlier request: " + failure());
  }
  return backend_.quiet();
}

bool DeviceProxy::idle() const {
  // head_seen_ moves past a request only once it is handled, and a request's slot keeps its seq
  // until a later ticket reuses the slot: a request published before this call and not handled
  // yet is at head_seen_, or behind an unpublished ticket there (which poll() would stop at too).
  const uint64_t head = head_seen_.load(std::memory_order_acquire);
  const Slot& slot = ring_.slots[head & (ring_.n_slots - 1)];
  return load_acquire(&slot.seq) != head + 1;
}

Status DeviceProxy::drain() {
  // After stop() (shmem_finalize) nothing can be in flight: the ring's requests were answered.
  if (!thread_.joinable()) return failed_ == proxy::kErrStopped ? Status::ok() : drain_here();
  if (idle()) {
    const int32_t failed = __atomic_load_n(&ring_.control->failed, __ATOMIC_ACQUIRE);
    if (failed != 0 && failed != proxy::kErrStopped) {
      return error(Code::kPeerFailure, "the device proxy failed an earlier request: " + failure());
    }
    return Status::ok();
  }
  const auto limit = std::chrono::nanoseconds(ring_.timeout_ns);
  const uint64_t ticket = drain_asked_.fetch_add(1, std::memory_order_acq_rel) + 1;
  const auto start = std::chrono::steady_clock::now();
  int spins = 0;
  while (drain_done_.load(std::memory_order_acquire) < ticket) {
    if (std::chrono::steady_clock::now() - start > limit) {
      return error(
          Code::kTimeout,
          "the device proxy did not complete the requests in its ring within " +
              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
              " s (a kernel still posting, or a peer that does not answer; "
              "VSHMEM_PROXY_TIMEOUT)");
    }
    if (++spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  std::lock_guard<std::mutex> lock(drain_mutex_);
  return drain_status_;
}

std::string DeviceProxy::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

void DeviceProxy::run() {
  // Polls while requests come, moving the network between polls: a kernel that posted requests
  // usually waits next for what peers send it (a barrier's notification, a put), which the
  // network's own progress thread would perform only after waking up. After a quiet millisecond
  // yields between polls, after 20 ms it naps, so that an idle PE does not hold a core (the
  // network's progress thread then takes over).
  auto last = std::chrono::steady_clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    if (poll() > 0) {
      last = std::chrono::steady_clock::now();
      continue;
    }
    retire();
    const uint64_t asked = drain_asked_.load(std::memory_order_acquire);
    if (asked != drain_done_.load(std::memory_order_relaxed)) {
      // Everything published before the ask is in the ring now: handle it, then quiet.
      Status st = drain_here();
      {
        std::lock_guard<std::mutex> lock(drain_mutex_);
        drain_status_ = std::move(st);
      }
      drain_done_.store(asked, std::memory_order_release);
      last = std::chrono::steady_clock::now();
      continue;
    }
    const auto idle = std::chrono::steady_clock::now() - last;
    if (idle < std::chrono::milliseconds(1)) {
      backend_.progress();
      cpu_pause();
    } else if (idle < std::chrono::milliseconds(20)) {
      backend_.progress();
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

size_t DeviceProxy::poll() {
  size_t n = 0;
  for (;;) {
    Slot& slot = ring_.slots[head_ & (ring_.n_slots - 1)];
    if (load_acquire(&slot.seq) != head_ + 1) break;
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t status = failed_ != 0 ? failed_ : handle(slot);
    const uint64_t ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    uint32_t kind = slot.op;
    if ((slot.flags & proxy::kFlagInline) != 0 &&
        (kind == proxy::kOpPut || kind == proxy::kOpGet)) {
      kind = kind == proxy::kOpPut ? kInlinePut : kInlineGet;
    }
    if (kind < kOpKinds) {
      std::lock_guard<std::mutex> lock(times_mutex_);
      OpTimes& t = times_[kind];
      ++t.count;
      t.total_ns += ns;
      t.max_ns = std::max(t.max_ns, ns);
    }
    VSHMEM_TRACE("PE %d: device proxy: ticket %llu: %s to PE %d, %llu bytes: status %d", my_pe_,
                 static_cast<unsigned long long>(head_), op_name(slot.op), slot.pe,
                 static_cast<unsigned long long>(slot.bytes), status);
    slot.status = status;
    if (slot.flags & proxy::kFlagWait) {
      awaiting_ack_[head_ & (ring_.n_slots - 1)] = 1;
      store_release(&slot.done, proxy::ring_done_word(head_, status));
    }
    ++head_;
    head_seen_.store(head_, std::memory_order_release);
    ++n;
    retire();
  }
  retire();
  return n;
}

// Hands back the slots at the tail whose requests are handled and, for those a producer waits
// on, acknowledged.
void DeviceProxy::retire() {
  const uint64_t before = retired_;
  while (retired_ < head_) {
    const size_t i = retired_ & (ring_.n_slots - 1);
    if (awaiting_ack_[i]) {
      if (load_acquire(&ring_.slots[i].ack) != retired_ + 1) break;
      awaiting_ack_[i] = 0;
    }
    ++retired_;
  }
  if (retired_ != before) store_release(&ring_.control->consumed, retired_);
}

int32_t DeviceProxy::fail(int32_t code, int pe, uint64_t ticket, const std::string& message) {
  if (failed_ == 0) {
    failed_ = code;
    {
      std::lock_guard<std::mutex> lock(failure_mutex_);
      failure_ = message;
    }
    log::message(log::Level::kError, "PE %d: device proxy: %s", my_pe_, message.c_str());
    ring_.control->failed_pe = pe;
    ring_.control->failed_ticket = ticket;
    __atomic_store_n(&ring_.control->failed, code, __ATOMIC_RELEASE);
  }
  return code;
}

// Large transfers are staged through the two halves of the stage buffer, so that the copy of one
// piece between GPU and host memory overlaps the network transfer of the other.
template <class PathFailed, class CopyFailed>
int32_t DeviceProxy::staged_put(PeerPath& path, int pe, unsigned char* dest,
                                const unsigned char* source, uint64_t bytes,
                                const PathFailed& path_failed, const CopyFailed& copy_failed) {
  const size_t half = std::max<size_t>(stage_bytes_ / 2, 1);
  unsigned char* buf[2] = {stage_, stage_ + (stage_bytes_ >= 2 ? half : 0)};
  auto piece = [&](uint64_t off) {
    return static_cast<size_t>(std::min<uint64_t>(half, bytes - off));
  };
  if (Status st = backend_.copy(buf[0], source, piece(0)); !st) return copy_failed(st);
  for (uint64_t off = 0, k = 0; off < bytes; off += half, ++k) {
    const uint64_t next = off + half;
    std::future<Status> copying;
    if (next < bytes) {
      copying = std::async(std::launch::async, [&, next, k] {
        return backend_.copy(buf[(k + 1) & 1], source + next, piece(next));
      });
    }
    const Status sent = path.put(pe, dest + off, buf[k & 1], piece(off));
    const Status copied = copying.valid() ? copying.get() : Status::ok();
    if (!sent) return path_failed(sent);
    if (!copied) return copy_failed(copied);
  }
  return proxy::kOk;
}

template <class PathFailed, class CopyFailed>
int32_t DeviceProxy::staged_get(PeerPath& path, int pe, unsigned char* dest,
                                const unsigned char* source, uint64_t bytes,
                                const PathFailed& path_failed, const CopyFailed& copy_failed) {
  const size_t half = std::max<size_t>(stage_bytes_ / 2, 1);
  unsigned char* buf[2] = {stage_, stage_ + (stage_bytes_ >= 2 ? half : 0)};
  auto piece = [&](uint64_t off) {
    return static_cast<size_t>(std::min<uint64_t>(half, bytes - off));
  };
  if (Status st = path.get(pe, buf[0], source, piece(0)); !st) return path_failed(st);
  for (uint64_t off = 0, k = 0; off < bytes; off += half, ++k) {
    const uint64_t next = off + half;
    std::future<Status> copying = std::async(std::launch::async, [&, off, k] {
      return backend_.copy(dest + off, buf[k & 1], piece(off));
    });
    const Status got =
        next < bytes ? path.get(pe, buf[(k + 1) & 1], source + next, piece(next)) : Status::ok();
    const Status copied = copying.get();
    if (!copied) return copy_failed(copied);
    if (!got) return path_failed(got);
  }
  return proxy::kOk;
}

int32_t DeviceProxy::handle(Slot& slot) {
  const stall::Scope watched(stall_name(slot.op), slot.bytes);
  const uint64_t ticket = head_;
  const int pe = slot.pe;
  PeerPath* path = nullptr;
  if (slot.op == proxy::kOpPut || slot.op == proxy::kOpGet || slot.op == proxy::kOpAtomic ||
      slot.op == proxy::kOpSignal) {
    path = backend_.path(pe);
    if (path == nullptr) {
      return fail(
          proxy::kErrBadOp, pe, ticket,
          std::string(op_name(slot.op)) + " to PE " + std::to_string(pe) + ": not a valid PE");
    }
  }
  auto path_failed = [&](const Status& st) {
    return fail(
        proxy::kErrPath, pe, ticket,
        std::string(op_name(slot.op)) + " to PE " + std::to_string(pe) + ": " + st.message());
  };
  auto copy_failed = [&](const Status& st) {
    return fail(proxy::kErrCopy, pe, ticket,
                std::string(op_name(slot.op)) + " to PE " + std::to_string(pe) +
                    ": staging the local buffer through host memory failed (is it GPU global "
                    "memory or host memory, not a kernel's local variable?): " +
                    st.message());
  };
  auto* dest = reinterpret_cast<unsigned char*>(slot.dest);
  auto* source = reinterpret_cast<const unsigned char*>(slot.source);
  switch (slot.op) {
    case proxy::kOpPut:
      if (slot.flags & proxy::kFlagInline) {
        if (slot.bytes > proxy::kInlineBytes) break;
        if (Status st = path->put(pe, dest, slot.data, slot.bytes); !st) return path_failed(st);
        return proxy::kOk;
      }
      if (backend_.path_stages_local(pe)) {  // one call: the path pipelines its own staging
        if (Status st = path->put(pe, dest, source, slot.bytes); !st) return path_failed(st);
        return proxy::kOk;
      }
      return staged_put(*path, pe, dest, source, slot.bytes, path_failed, copy_failed);
    case proxy::kOpGet:
      if (slot.flags & proxy::kFlagInline) {
        if (slot.bytes > proxy::kInlineBytes) break;
        if (Status st = path->get(pe, slot.data, source, slot.bytes); !st) return path_failed(st);
        return proxy::kOk;
      }
      if (backend_.path_stages_local(pe)) {
        if (Status st = path->get(pe, dest, source, slot.bytes); !st) return path_failed(st);
        return proxy::kOk;
      }
      return staged_get(*path, pe, dest, source, slot.bytes, path_failed, copy_failed);
    case proxy::kOpAtomic: {
      if (slot.aop > proxy::kAmoFetchXor || (slot.width != 4 && slot.width != 8)) break;
      AtomicRequest req;
      req.op = static_cast<AtomicOp>(slot.aop);
      req.address = dest;
      req.width = slot.width;
      req.operand = slot.operand;
      req.compare = slot.compare;
      uint64_t old = 0;
      if (Status st = path->atomic(pe, req, &old); !st) return path_failed(st);
      slot.result = old;
      return proxy::kOk;
    }
    case proxy::kOpSignal: {
      if (slot.aop > 1) break;
      // Data before signal: every earlier request is complete at its target first.
      if (Status st = backend_.fence(); !st) return path_failed(st);
      if ((slot.flags & proxy::kFlagNotify) != 0 && slot.aop == 1) {
        // A barrier's count: one-way, no answer to wait for (the peer polls the word).
        if (Status st = path->signal_add(pe, reinterpret_cast<uint64_t*>(dest), slot.operand);
            !st) {
          return path_failed(st);
        }
        return proxy::kOk;
      }
      AtomicRequest req;
      req.op = slot.aop == 0 ? AtomicOp::kSet : AtomicOp::kFetchAdd;
      req.address = dest;
      req.width = 8;
      req.operand = slot.operand;
      uint64_t old = 0;
      if (Status st = path->atomic(pe, req, &old); !st) return path_failed(st);
      return proxy::kOk;
    }
    case proxy::kOpFence:
      if (Status st = backend_.fence(); !st) return path_failed(st);
      return proxy::kOk;
    case proxy::kOpQuiet:
      if (Status st = backend_.quiet(); !st) return path_failed(st);
      store_release(&ring_.control->quieted, ticket + 1);  // it and every earlier ticket
      return proxy::kOk;
    default: break;
  }
  return fail(proxy::kErrBadOp, pe, ticket,
              "malformed " + std::string(op_name(slot.op)) + " request (ticket " +
                  std::to_string(ticket) + ")");
}

}  // namespace vshmem
