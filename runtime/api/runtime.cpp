#include "runtime/api/runtime.hpp"

#include "runtime/api/deadlock.hpp"
#include "runtime/api/team.hpp"
#include "runtime/api/wait_policy.hpp"
#include "runtime/common/hot.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "runtime/common/log.hpp"
#include "shmem.h"
#include "vshmem/device_hooks.h"

namespace vshmem::detail {

Runtime* g_runtime = nullptr;

VSHMEM_HOT Runtime& runtime_for(const char* call) {
  if (g_runtime == nullptr) {
    fail(call, "called before shmem_init or after shmem_finalize");
  }
  return *g_runtime;
}

void fail(const char* call, const Status& status) {
  log::message(log::Level::kError, "%s: %s", call, status.message().c_str());
  shmem_global_exit(1);
  std::abort();  // not reached
}

void fail(const char* call, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string cause = log::vformat(fmt, ap);
  va_end(ap);
  fail(call, error(Code::kInvalidArgument, cause));
}

void check_symmetric(Runtime& rt, const void* addr, size_t bytes, const char* call,
                     const char* which) {
  if (!rt.heap->contains(addr, bytes)) {
    if (rt.statics.contains(addr, bytes)) return;
    if (rt.statics.contains(addr, 1)) {
      fail(call,
           "%s %p (+%zu bytes) runs past the end of the program's global and static variables "
           "[%#lx, %#lx)",
           which, addr, bytes, static_cast<unsigned long>(rt.statics.base),
           static_cast<unsigned long>(rt.statics.base + rt.statics.size));
    }
    fail(call,
         "%s %p (+%zu bytes) is not a symmetric object: only objects in the symmetric heap "
         "[%#lx, %#lx) (shmem_malloc & co.) and the program's global and static variables "
         "[%#lx, %#lx) are symmetric, not the stack, malloc'ed memory or a shared library's "
         "variables",
         which, addr, bytes, static_cast<unsigned long>(rt.heap->base()),
         static_cast<unsigned long>(rt.heap->base() + rt.heap->size()),
         static_cast<unsigned long>(rt.statics.base),
         static_cast<unsigned long>(rt.statics.base + rt.statics.size));
  }
  // The heap's VA budget is reserved but only its committed part is backed: an access beyond
  // it would fault (or reach a peer's proxy, which refuses it).
  const size_t offset = reinterpret_cast<uintptr_t>(addr) - rt.heap->base();
  if (offset + bytes > rt.heap->committed()) {
    fail(call,
         "%s %p (+%zu bytes) is not inside a symmetric allocation: it reaches past the %zu "
         "bytes of the symmetric heap in use",
         which, addr, bytes, rt.heap->committed());
  }
}

VSHMEM_HOT void rma_put(Runtime& rt, void* dest, const void* source, size_t bytes, int pe,
                        const char* call) {
  check_pe(rt, pe, call);
  if (bytes == 0) return;
  check_symmetric(rt, dest, bytes, call, "dest");
  if (source == nullptr) fail(call, "source is NULL (%zu bytes to put)", bytes);
  Status st = rt.transport->path(pe, dest).put(pe, dest, source, bytes);
  if (!st) fail(call, st);
}

VSHMEM_HOT void rma_get(Runtime& rt, void* dest, const void* source, size_t bytes, int pe,
                        const char* call) {
  check_pe(rt, pe, call);
  if (bytes == 0) return;
  check_symmetric(rt, source, bytes, call, "source");
  if (dest == nullptr) fail(call, "dest is NULL (%zu bytes to get)", bytes);
  Status st = rt.transport->path(pe, source).get(pe, dest, source, bytes);
  if (!st) fail(call, st);
}

VSHMEM_HOT void rma_put_nbi(Runtime& rt, void* dest, const void* source, size_t bytes, int pe,
                            const char* call) {
  check_pe(rt, pe, call);
  if (bytes == 0) return;
  check_symmetric(rt, dest, bytes, call, "dest");
  if (source == nullptr) fail(call, "source is NULL (%zu bytes to put)", bytes);
  Status st = rt.transport->path(pe, dest).put_nbi(pe, dest, source, bytes);
  if (!st) fail(call, st);
}

VSHMEM_HOT void rma_get_nbi(Runtime& rt, void* dest, const void* source, size_t bytes, int pe,
                            const char* call) {
  check_pe(rt, pe, call);
  if (bytes == 0) return;
  check_symmetric(rt, source, bytes, call, "source");
  if (dest == nullptr) fail(call, "dest is NULL (%zu bytes to get)", bytes);
  Status st = rt.transport->path(pe, source).get_nbi(pe, dest, source, bytes);
  if (!st) fail(call, st);
}

VSHMEM_HOT uint64_t rma_atomic(Runtime& rt, AtomicRequest request, int pe, const char* call) {
  check_pe(rt, pe, call);
  check_symmetric(rt, request.address, request.width, call, "dest");
  if (reinterpret_cast<uintptr_t>(request.address) % request.width != 0) {
    fail(call, "dest %p is not aligned to its %u-byte type", request.address, request.width);
  }
  uint64_t result = 0;
  Status st = rt.transport->path(pe, request.address).atomic(pe, request, &result);
  if (!st) fail(call, st);
  return result;
}

namespace {
constexpr uint64_t kActiveNs = 50'000'000;  // then nap: the wait is not a short one
// When the wait yields, it spins only briefly first: a CPU pause costs 10-150 ns depending on
// the processor (145 ns on the 2-core AMD EPYC VM of bench/RESULTS.md, where 64 of them held
// the core 9 us before every yield, while the PE we waited for had no core), and the PE we
// wait for needs a core more than we need an early look.
constexpr unsigned kYieldFirstSpins = 4;
constexpr unsigned kSpinFirstSpins = 64;
// The yields before a first sleep (Backoff's first_yields) end after this long: on a machine
// where other processes hold the cores one yield can give the core away for a whole time slice.
constexpr uint64_t kYieldPhaseNs = 50'000;
}  // namespace

Backoff::Backoff(const char* call, RemotePath* sleeper) : call_(call) {
  if (waits_spin()) {
    late_sleeper_ = sleeper;
    sleep_limit_ns_ = kBarrierSleepNs;
  } else {
    over_network_ = true;
    sleeper_ = sleeper;
  }
}

VSHMEM_HOT void Backoff::pause() {
  if (late_sleeping_) {
    late_sleep(monotonic_ns());
    return;
  }
  // A peer on another core answers in well under a microsecond: spin first. Measured on 2 cores
  // (bench/RESULTS.md, issue #15): yielding or napping while cores are free turns a 0.2 us
  // barrier into microseconds as soon as any other process runs; yielding while PEs outnumber
  // the cores lets the PE we wait for have this one.
  const bool spin = waits_spin() && !over_network_;
  ++spins_;
  const unsigned spin_first = spin ? kSpinFirstSpins : kYieldFirstSpins;
  if (spins_ < spin_first || (spin && spins_ % 256 != 0)) {
    cpu_pause();
    return;
  }
  // Past the first spins, the clock decides (read every 256 spins, or at every yield).
  const uint64_t now = monotonic_ns();
  if (since_ns_ == 0) since_ns_ = now;
  if (late_sleeper_ != nullptr && now - since_ns_ >= kNetworkSleepAfterNs) {
    // From now on every pause sleeps (not only every 256th, where the clock is read: the spins
    // in between, each progressing the network, cost a fifth of a core over TCP).
    late_sleeping_ = true;
    late_sleep(now);
    return;
  }
  if (now - since_ns_ < kActiveNs) {
    if (spin) {
      cpu_pause();
    } else if (sleeper_ != nullptr) {
      sleeper_->wait_event(1000);  // woken by the message; the bound covers a missed wake-up
    } else {
      sched_yield();
    }
    return;
  }
  if (sleeper_ != nullptr) {
    sleeper_->wait_event(static_cast<int>(kBarrierSleepNs / 1000));
  } else {
    timespec ts{0, 20000};  // long waits: 20 us naps keep an idle PE from burning a core
    nanosleep(&ts, nullptr);
  }
  // About once a second (a peer that ends the job itself, e.g. with shmem_global_exit, is left
  // the time to do so), and right after a peer was seen gone.
  if (exited_ < 0 && ++naps_ % (sleeper_ != nullptr ? 128u : 16384u) != 0) return;
  watch_peers();
}

VSHMEM_HOT void Backoff::late_sleep(uint64_t now) {
  const uint64_t us = std::max<uint64_t>(sleep_limit_ns_ / 1000, 1);
  // Where waits spin, the network's wait polls first while messages keep coming (a PE in a long
  // barrier serving a peer's gets and atomics answers each without a wake-up).
  late_sleeper_->wait_event(static_cast<int>(std::min<uint64_t>(us, 1'000'000)),
                            waits_spin() ? kNetworkSpinUs : 0);
  // About once a second, and right after a peer was seen gone (as the naps of pause()).
  if (exited_ < 0 && now - watched_ns_ < 1'000'000'000) return;
  watched_ns_ = now;
  watch_peers();
}

bool Backoff::sleep_next() {
  if (sleeping_) return true;
  if (waits_spin()) {
    // As pause(): spin while the wait is short; once it is not (the clock is read every 256
    // spins), sleep instead of napping. Measured (bench/RESULTS.md, issue #15): sleeping after
    // 50 us-1 ms of spinning made the 2-PE barrier 7-500x slower on a loaded machine, since a
    // woken PE queues for a core that a spinning one keeps.
    if ((spins_ + 1) % 256 != 0) return false;
    const uint64_t now = monotonic_ns();
    if (since_ns_ == 0) since_ns_ = now;
    sleeping_ = now - since_ns_ >= kActiveNs;
  } else {
    // PEs outnumber the cores: after the first spins (and first_yields_ yields), give the core
    // away until woken.
    // A yield that took long means other processes hold the cores: sleep from then on.
    sleeping_ = spins_ >= kYieldFirstSpins + first_yields_ ||
                (since_ns_ != 0 && monotonic_ns() - since_ns_ >= kYieldPhaseNs);
  }
  return sleeping_;
}

void Backoff::after_sleep() {
  const uint64_t now = monotonic_ns();
  if (since_ns_ == 0) since_ns_ = now;
  if (now - since_ns_ < kActiveNs) return;
  // About once a second, and right after a peer was seen gone (as the naps of pause()).
  if (exited_ < 0 && now - watched_ns_ < 1'000'000'000) return;
  watched_ns_ = now;
  watch_peers();
}

void Backoff::end_published() { end_long_wait(published_); }

void Backoff::watch_peers() {
  const Runtime* rt = g_runtime;
  if (rt == nullptr) return;
  note_long_wait(call_, since_ns_, &published_);
  if (rt->peer_watch == nullptr) return;
  const int gone = rt->peer_watch->exited_peer();
  if (gone >= 0 && gone == exited_) {
    fail(call_,
         "PE %d (pid %d, on this node) exited without shmem_finalize while this PE waited; the "
         "job cannot complete",
         gone, static_cast<int>(rt->peer_watch->pid_of(gone)));
  }
  exited_ = gone;
}

namespace {

// A ring a test gave (vshmemi_set_device_proxy): ordinary memory, host producers, its own copy.
struct ProxyRequest {
  bool set = false;
  proxy::RingView ring{};
  void* stage = nullptr;
  size_t stage_bytes = 0;
  int (*copy)(void*, const void*, size_t) = nullptr;
};
ProxyRequest g_proxy_request;

class TransportProxyBackend : public ProxyBackend {
 public:
  // Copies go through `provider` (the ring libvshmem made), or through `copy` (a test's ring).
  TransportProxyBackend(Transport& transport, int n_pes, MemoryProvider* provider,
                        int (*copy)(void*, const void*, size_t))
      : transport_(transport), n_pes_(n_pes), provider_(provider), copy_(copy) {}
  PeerPath* path(int pe) override {
    return pe >= 0 && pe < n_pes_ ? &transport_.path(pe) : nullptr;
  }
  Status fence() override { return transport_.fence(); }
  // The remote path only: the proxy serves unmapped peers, and the mapped path's quiet waits for
  // this process's default CUDA streams, where a kernel may be waiting for this very proxy.
  Status quiet() override {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return transport_.remote() != nullptr ? transport_.remote()->quiet() : Status::ok();
  }
  // The remote path stages GPU memory through its own page-locked buffers, pipelined (the UCX
  // plugin's target operations), as it does for the host API's puts and gets of GPU memory.
  bool path_stages_local(int pe) override {
    return transport_.remote() != nullptr && pe >= 0 && pe < n_pes_ &&
           &transport_.path(pe) == static_cast<PeerPath*>(transport_.remote());
  }
  void progress() override {
    if (RemotePath* remote = transport_.remote()) remote->progress();
  }
  // The provider's copy runs on its own non-blocking stream, in relaxed capture mode: it neither
  // waits for the application's kernels (one may wait for this very copy) nor breaks a graph
  // capture in an application thread.
  Status copy(void* dst, const void* src, size_t bytes) override {
    if (provider_ != nullptr) return provider_->copy(dst, src, bytes);
    if (copy_ == nullptr || copy_(dst, src, bytes) != 0) {
      return error(Code::kSystem, "the test's copy of " + std::to_string(bytes) + " bytes failed");
    }
    return Status::ok();
  }

 private:
  Transport& transport_;
  int n_pes_;
  MemoryProvider* provider_;
  int (*copy_)(void*, const void*, size_t);
};

}  // namespace

void start_device_proxy(Runtime& rt) {
  if (rt.device_proxy != nullptr || rt.transport == nullptr) return;
  const ProxyRequest& test = g_proxy_request;
  if (rt.proxy_ring == nullptr && !test.set) return;
  const ProxyRing* own = rt.proxy_ring.get();
  const proxy::RingView& ring = own != nullptr ? own->view() : test.ring;
  rt.proxy_backend = std::make_unique<TransportProxyBackend>(
      *rt.transport, rt.n_pes, own != nullptr ? rt.provider.get() : nullptr, test.copy);
  rt.device_proxy = std::make_unique<DeviceProxy>(
      ring, *rt.proxy_backend, rt.my_pe, own != nullptr ? own->stage_bytes() : test.stage_bytes,
      own != nullptr ? own->stage() : test.stage);
  rt.device_proxy->start();
  VSHMEM_INFO("PE %d: device proxy started (%u request slots)", rt.my_pe, ring.n_slots);
  if (cuda_loads_lazily()) {
    VSHMEM_WARN(
        "PE %d: shmem_init: CUDA loads kernels lazily in this process (CUDA started "
        "before shmem_init, or CUDA_MODULE_LOADING=LAZY): a kernel's first launch waits "
        "for the running kernels, so a kernel waiting for a PE behind the device proxy "
        "can deadlock with that PE; set CUDA_MODULE_LOADING=EAGER (vshmemrun does for "
        "jobs that span nodes)",
        rt.my_pe);
  }
}

void stop_device_proxy(Runtime& rt) {
  if (rt.device_proxy != nullptr) {
    rt.device_proxy->stop();
    rt.device_proxy.reset();
  }
  rt.proxy_backend.reset();
  g_proxy_request = ProxyRequest{};
}

}  // namespace vshmem::detail

extern "C" void vshmemi_set_device_proxy(const vshmem::proxy::RingView* ring, void* stage,
                                         size_t stage_bytes,
                                         int (*copy)(void* dst, const void* src, size_t bytes)) {
  vshmem::detail::ProxyRequest& r = vshmem::detail::g_proxy_request;
  if (ring == nullptr || ring->slots == nullptr) {
    r = vshmem::detail::ProxyRequest{};
    return;
  }
  r.set = true;
  r.ring = *ring;
  r.stage = stage;
  r.stage_bytes = stage_bytes;
  r.copy = copy;
}
