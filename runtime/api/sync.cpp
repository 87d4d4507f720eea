// Ordering (fence, quiet) and the job-wide barrier.
#include <atomic>

#include "runtime/api/runtime.hpp"
#include "shmem.h"

namespace vshmem::detail {
namespace {

// The heap is host memory here (see sync_all): a plain acquire load sees the peers' atomics.
uint64_t load_own(const uint64_t* addr) { return __atomic_load_n(addr, __ATOMIC_ACQUIRE); }

}  // namespace

void quiet(Runtime& rt, const char* call) {
  Status st = rt.provider->quiet();
  if (!st) fail(call, st);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void sync_all(Runtime& rt, const char* call) {
  if (rt.n_pes == 1) return;
  if (!rt.host_memory) {
    // On the GPU heap the host cannot poll counters in device memory without launching work on
    // the GPU for every poll, which competes with the application's kernels (measured: 35 us
    // per barrier and slower device latencies on the PEs' shared GPU); the bootstrap waits in
    // the kernel instead.
    Status st = rt.bootstrap->barrier();
    if (!st) fail(call, st);
    return;
  }
  // Dissemination barrier over the heap, also with staged peers (their proxies serve the
  // atomics): unlike a bootstrap barrier it has no time limit, so a PE that computes for long
  // is waited for, as OpenSHMEM requires. ceil(log2 n) rounds; in round k PE i signals
  // PE (i + 2^k) mod n and waits for PE (i - 2^k) mod n. Counters only grow, so a signal that
  // arrives early for the next barrier is simply counted there.
  const uint64_t epoch = ++rt.barrier_epoch;
  for (int k = 0; (1 << k) < rt.n_pes; ++k) {
    int peer = (rt.my_pe + (1 << k)) % rt.n_pes;
    AtomicRequest add{AtomicOp::kFetchAdd, &rt.barrier_counters[k], 8, 1, 0};
    rma_atomic(rt, add, peer, call);
    Backoff backoff;
    while (load_own(&rt.barrier_counters[k]) < epoch) backoff.pause();
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace vshmem::detail

using namespace vshmem::detail;

extern "C" {

void shmem_fence(void) {
  // Host transfers complete in issue order before each call returns: a fence is a memory
  // barrier for this thread's plain stores through shmem_ptr.
  runtime_for("shmem_fence");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void shmem_ctx_fence(shmem_ctx_t ctx) {
  ctx_pe(ctx, 0, "shmem_ctx_fence");
  shmem_fence();
}

void shmem_quiet(void) { quiet(runtime_for("shmem_quiet"), "shmem_quiet"); }

void shmem_ctx_quiet(shmem_ctx_t ctx) {
  ctx_pe(ctx, 0, "shmem_ctx_quiet");
  shmem_quiet();
}

void shmem_barrier_all(void) {
  Runtime& rt = runtime_for("shmem_barrier_all");
  quiet(rt, "shmem_barrier_all");
  sync_all(rt, "shmem_barrier_all");
}

void shmem_sync_all(void) { sync_all(runtime_for("shmem_sync_all"), "shmem_sync_all"); }

}  // extern "C"
