// Symmetric memory management: shmem_malloc, calloc, align, realloc, free, malloc_with_hints,
// and the application's own GPU memory joining the heap (shmemx_buffer_register_symmetric).
// Each is collective; each ends with a barrier so that no PE touches a peer's new object before
// the peer has it.
#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/api/runtime.hpp"
#include "runtime/transport/host_sync.hpp"
#include "runtime/transport/transport.hpp"
#include "shmem.h"
#include "shmemx.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

// A failed allocation returns NULL on every PE (the failure is agreed), and the call's closing
// barrier keeps the PEs together. When a peer did not arrive or is gone (the bootstrap timed out
// or lost it), that barrier would wait for it forever: end this PE with the cause instead.
void report_failure(const char* call, const Status& st) {
  if (st.code() == Code::kTimeout || st.code() == Code::kPeerFailure) {
    const std::string named = std::string(call) + ": ";
    const std::string& text = st.message();
    // The heap's causes already start with the call's name: say it once.
    fail(call, text.rfind(named, 0) == 0 ? Status(st.code(), text.substr(named.size())) : st);
  }
  log::message(log::Level::kError, "%s", st.message().c_str());
}

// The arguments of a collective allocation, compared across a one-node job where the heap does
// not check them before the call (VSHMEM_CHECK_SYMMETRY, a bootstrap collective per call): each
// PE posts them in its shared host sync page before the call's closing barrier and reads every
// node-local peer's after it, so that every PE sees a mismatch, undoes its allocation and
// returns NULL, instead of the PEs going on with heaps laid out differently (the next object at
// different offsets: puts land in the wrong object). Costs a store before the barrier and a
// read of each peer's line after it. A mismatch that makes one PE grow the heap and not the
// others is not caught here: growth is a collective of its own, which then ends at the
// bootstrap's time limit with its own message.
class ArgsCheck {
 public:
  ArgsCheck(Runtime& rt, uint64_t size, uint64_t alignment) : size_(size), alignment_(alignment) {
    if (rt.n_pes < 2 || rt.heap->checks_symmetry() || rt.transport == nullptr) return;
    pages_ = rt.transport->mapped().node_barrier();  // null unless every PE is on this node
    if (pages_ == nullptr) return;
    number_ = rt.allocations.fetch_add(1, std::memory_order_relaxed) + 1;
    HostSyncArea::AllocRecord* mine = pages_->alloc_record(rt.my_pe, number_);
    mine->size.store(size, std::memory_order_relaxed);
    mine->alignment.store(alignment, std::memory_order_relaxed);
    mine->number.store(number_, std::memory_order_release);
  }
  // After the closing barrier: true when every PE passed the same; else reports the first
  // difference (naming this PE, the peer and both values).
  bool agrees(const Runtime& rt, const char* call) const {
    if (pages_ == nullptr) return true;
    for (int pe = 0; pe < rt.n_pes; ++pe) {
      if (pe == rt.my_pe) continue;
      const HostSyncArea::AllocRecord* r = pages_->alloc_record(pe, number_);
      const uint64_t number = r->number.load(std::memory_order_acquire);
      const uint64_t size = r->size.load(std::memory_order_relaxed);
      const uint64_t alignment = r->alignment.load(std::memory_order_relaxed);
      const char* what = number != number_         ? "how many allocations they made"
                         : size != size_           ? "the size"
                         : alignment != alignment_ ? "the alignment"
                                                   : nullptr;
      if (what == nullptr) continue;
      log::message(log::Level::kError,
                   "%s: PEs disagree on %s (this PE %d: allocation %llu, %llu bytes, alignment "
                   "%llu; PE %d: allocation %llu, %llu bytes, alignment %llu); nothing was "
                   "allocated, every PE returns NULL",
                   call, what, rt.my_pe, static_cast<unsigned long long>(number_),
                   static_cast<unsigned long long>(size_),
                   static_cast<unsigned long long>(alignment_), pe,
                   static_cast<unsigned long long>(number), static_cast<unsigned long long>(size),
                   static_cast<unsigned long long>(alignment));
      return false;
    }
    return true;
  }

 private:
  HostSyncArea* pages_ = nullptr;
  uint64_t number_ = 0;
  uint64_t size_;
  uint64_t alignment_;
};

// The call's closing barrier, then the arguments' check: our object back to the heap and NULL
// when the PEs disagree.
void* close_allocation(Runtime& rt, const ArgsCheck& check, void* out, const char* call) {
  shmem_barrier_all();
  if (check.agrees(rt, call)) return out;
  if (out != nullptr) {
    Status st = rt.heap->free(out, call);
    if (!st) fail(call, st);
  }
  return nullptr;
}

void* allocate(size_t size, size_t alignment, const char* call) {
  Runtime& rt = runtime_for(call);
  const ArgsCheck check(rt, size, alignment);
  auto r = rt.heap->allocate(size, alignment, call);
  void* out = nullptr;
  if (r) {
    out = *r;
  } else {
    report_failure(call, r.status());
  }
  return close_allocation(rt, check, out, call);
}

}  // namespace

extern "C" {

void* shmem_malloc(size_t size) { return allocate(size, Allocator::kMinAlignment, "shmem_malloc"); }

void* shmem_malloc_with_hints(size_t size, long hints) {
  constexpr long kKnown = SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE;
  if (hints & ~kKnown) {
    // Hints are advisory: an unknown one is reported and otherwise ignored.
    VSHMEM_WARN("shmem_malloc_with_hints(%zu, %#lx): unknown hint bits %#lx ignored", size, hints,
                hints & ~kKnown);
  }
  return allocate(size, Allocator::kMinAlignment, "shmem_malloc_with_hints");
}

void* shmem_calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    Runtime& rt = runtime_for("shmem_calloc");
    log::message(log::Level::kError, "shmem_calloc(%zu, %zu): the product overflows size_t", count,
                 size);
    shmem_barrier_all();
    (void)rt;
    return nullptr;
  }
  Runtime& rt = runtime_for("shmem_calloc");
  const ArgsCheck check(rt, bytes, Allocator::kMinAlignment);
  auto r = rt.heap->allocate(bytes, Allocator::kMinAlignment, "shmem_calloc");
  void* out = nullptr;
  if (r) {
    out = *r;
    if (out != nullptr) {
      Status st = rt.provider->fill(out, 0, bytes);
      if (!st) fail("shmem_calloc", st);
    }
  } else {
    report_failure("shmem_calloc", r.status());
  }
  return close_allocation(rt, check, out, "shmem_calloc");
}

void* shmem_align(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    runtime_for("shmem_align");
    log::message(log::Level::kError, "shmem_align(%zu, %zu): alignment is not a power of two",
                 alignment, size);
    shmem_barrier_all();
    return nullptr;
  }
  return allocate(size, alignment, "shmem_align");
}

void shmem_free(void* ptr) {
  Runtime& rt = runtime_for("shmem_free");
  // Everyone must be done with the object before anyone reuses its memory.
  shmem_barrier_all();
  Status st = rt.heap->free(ptr, "shmem_free");
  if (!st) fail("shmem_free", st);
}

void* shmem_realloc(void* ptr, size_t size) {
  Runtime& rt = runtime_for("shmem_realloc");
  if (ptr == nullptr) return allocate(size, Allocator::kMinAlignment, "shmem_realloc");
  if (size == 0) {
    shmem_free(ptr);
    return nullptr;
  }
  auto old_size = rt.heap->block_size(ptr);
  if (!old_size) fail("shmem_realloc", old_size.status());
  shmem_barrier_all();  // peers may still be writing into the old object
  auto r = rt.heap->allocate(size, Allocator::kMinAlignment, "shmem_realloc");
  if (!r) {
    // The old object stays valid, as with realloc(3).
    report_failure("shmem_realloc", r.status());
    shmem_barrier_all();
    return nullptr;
  }
  Status st = rt.provider->copy(*r, ptr, std::min(*old_size, size));
  if (!st) fail("shmem_realloc", st);
  st = rt.heap->free(ptr, "shmem_realloc");
  if (!st) fail("shmem_realloc", st);
  shmem_barrier_all();
  return *r;
}

void* shmemx_buffer_register_symmetric(void* buf, size_t size, int flags) {
  const char* call = "shmemx_buffer_register_symmetric";
  Runtime& rt = runtime_for(call);
  auto r = rt.heap->register_buffer(buf, size, flags, call);
  void* out = nullptr;
  if (r) {
    out = *r;
  } else {
    report_failure(call, r.status());
  }
  shmem_barrier_all();
  return out;
}

int shmemx_buffer_unregister_symmetric(void* ptr, size_t size) {
  const char* call = "shmemx_buffer_unregister_symmetric";
  Runtime& rt = runtime_for(call);
  // Every PE's transfers to and from the buffer are complete before its mappings go.
  shmem_barrier_all();
  Status st = rt.heap->unregister_buffer(ptr, size, call);
  if (!st) {
    report_failure(call, st);
    return 1;
  }
  return 0;
}

void* shmalloc(size_t size) { return shmem_malloc(size); }
void shfree(void* ptr) { shmem_free(ptr); }
void* shrealloc(void* ptr, size_t size) { return shmem_realloc(ptr, size); }
void* shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }

}  // extern "C"
