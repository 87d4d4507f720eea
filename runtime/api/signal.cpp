// Put-with-signal and the signal queries. The data is copied first and has completed when the
// copy returns; a release fence then orders it before the signal AMO, so a PE that sees the
// signal also sees the data.
#include <atomic>

#include "runtime/api/runtime.hpp"
#include "runtime/api/wait.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

void put_signal(const char* call, void* dest, const void* source, size_t nelems, size_t elem,
                uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {
  Runtime& rt = runtime_for(call);
  AtomicOp op;
  switch (sig_op) {
    case SHMEM_SIGNAL_SET: op = AtomicOp::kSet; break;
    case SHMEM_SIGNAL_ADD: op = AtomicOp::kFetchAdd; break;
    default: fail(call, "unknown sig_op %d (use SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD)", sig_op);
  }
  size_t bytes;
  if (__builtin_mul_overflow(nelems, elem, &bytes)) {
    fail(call, "%zu elements of %zu bytes overflow size_t", nelems, elem);
  }
  auto d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(sig_addr);
  if (bytes > 0 && s < d + bytes && d < s + sizeof(uint64_t)) {
    fail(call, "sig_addr %p overlaps dest %p (+%zu bytes)", static_cast<void*>(sig_addr), dest,
         bytes);
  }
  rma_put(rt, dest, source, bytes, pe, call);
  // A global or static dest goes through another path than a heap signal (or the reverse): the
  // data must be in place before the signal can be seen. A fence orders one path's operations
  // only (the remote path's is ucp_worker_fence), so the data's path is quieted.
  PeerPath& data_path = rt.transport->path(pe, dest);
  if (bytes > 0 && &data_path != &rt.transport->path(pe, sig_addr)) {
    Status st = data_path.quiet();
    if (!st) fail(call, st);
  }
  std::atomic_thread_fence(std::memory_order_release);
  rma_atomic(rt, AtomicRequest{op, sig_addr, sizeof(uint64_t), signal, 0}, pe, call);
}

}  // namespace

extern "C" {

#define VSHMEM_DEFINE_PUT_SIGNAL(PREFIX, SUFFIX, ELEM)                                            \
  void shmem_##PREFIX##_signal##SUFFIX(void* dest, const void* source, size_t nelems,             \
                                       uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) { \
    put_signal("shmem_" #PREFIX "_signal" #SUFFIX, dest, source, nelems, ELEM, sig_addr, signal,  \
               sig_op, pe);                                                                       \
  }                                                                                               \
  void shmem_ctx_##PREFIX##_signal##SUFFIX(shmem_ctx_t ctx, void* dest, const void* source,       \
                                           size_t nelems, uint64_t* sig_addr, uint64_t signal,    \
                                           int sig_op, int pe) {                                  \
    put_signal("shmem_ctx_" #PREFIX "_signal" #SUFFIX, dest, source, nelems, ELEM, sig_addr,      \
               signal, sig_op, ctx_pe(ctx, pe, "shmem_ctx_" #PREFIX "_signal" #SUFFIX));          \
  }

#define VSHMEM_DEFINE_PUT_SIGNAL_TYPED(NAME, TYPE)                                                 \
  void shmem_##NAME##_put_signal(TYPE* dest, const TYPE* source, size_t nelems,                    \
                                 uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {        \
    put_signal("shmem_" #NAME "_put_signal", dest, source, nelems, sizeof(TYPE), sig_addr, signal, \
               sig_op, pe);                                                                        \
  }                                                                                                \
  void shmem_##NAME##_put_signal_nbi(TYPE* dest, const TYPE* source, size_t nelems,                \
                                     uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {    \
    put_signal("shmem_" #NAME "_put_signal_nbi", dest, source, nelems, sizeof(TYPE), sig_addr,     \
               signal, sig_op, pe);                                                                \
  }                                                                                                \
  void shmem_ctx_##NAME##_put_signal(shmem_ctx_t ctx, TYPE* dest, const TYPE* source,              \
                                     size_t nelems, uint64_t* sig_addr, uint64_t signal,           \
                                     int sig_op, int pe) {                                         \
    put_signal("shmem_ctx_" #NAME "_put_signal", dest, source, nelems, sizeof(TYPE), sig_addr,     \
               signal, sig_op, ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_put_signal"));                 \
  }                                                                                                \
  void shmem_ctx_##NAME##_put_signal_nbi(shmem_ctx_t ctx, TYPE* dest, const TYPE* source,          \
                                         size_t nelems, uint64_t* sig_addr, uint64_t signal,       \
                                         int sig_op, int pe) {                                     \
    put_signal("shmem_ctx_" #NAME "_put_signal_nbi", dest, source, nelems, sizeof(TYPE), sig_addr, \
               signal, sig_op, ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_put_signal_nbi"));             \
  }
VSHMEM_RMA_TYPES(VSHMEM_DEFINE_PUT_SIGNAL_TYPED)

#define VSHMEM_DEFINE_PUT_SIGNAL_SIZED(BITS, BYTES) \
  VSHMEM_DEFINE_PUT_SIGNAL(put##BITS, , BYTES)      \
  VSHMEM_DEFINE_PUT_SIGNAL(put##BITS, _nbi, BYTES)
VSHMEM_RMA_SIZES(VSHMEM_DEFINE_PUT_SIGNAL_SIZED)
VSHMEM_DEFINE_PUT_SIGNAL(putmem, , 1)
VSHMEM_DEFINE_PUT_SIGNAL(putmem, _nbi, 1)

uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  constexpr const char* kCall = "shmem_signal_fetch";
  Runtime& rt = runtime_for(kCall);
  return rma_atomic(rt, AtomicRequest{AtomicOp::kFetch, const_cast<uint64_t*>(sig_addr), 8, 0, 0},
                    rt.my_pe, kCall);
}

// OpenSHMEM 1.6: the signal update of a put-with-signal, without the data.
void shmem_signal_add(uint64_t* sig_addr, uint64_t signal, int pe) {
  constexpr const char* kCall = "shmem_signal_add";
  rma_atomic(runtime_for(kCall), AtomicRequest{AtomicOp::kFetchAdd, sig_addr, 8, signal, 0}, pe,
             kCall);
}
void shmem_signal_set(uint64_t* sig_addr, uint64_t signal, int pe) {
  constexpr const char* kCall = "shmem_signal_set";
  rma_atomic(runtime_for(kCall), AtomicRequest{AtomicOp::kSet, sig_addr, 8, signal, 0}, pe, kCall);
}
void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe) {
  constexpr const char* kCall = "shmem_ctx_signal_add";
  rma_atomic(runtime_for(kCall), AtomicRequest{AtomicOp::kFetchAdd, sig_addr, 8, signal, 0},
             ctx_pe(ctx, pe, kCall), kCall);
}
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe) {
  constexpr const char* kCall = "shmem_ctx_signal_set";
  rma_atomic(runtime_for(kCall), AtomicRequest{AtomicOp::kSet, sig_addr, 8, signal, 0},
             ctx_pe(ctx, pe, kCall), kCall);
}

uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  return wait_until_one<uint64_t>("shmem_signal_wait_until", sig_addr, cmp, cmp_value);
}

}  // extern "C"
