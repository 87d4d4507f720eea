// Symmetric memory management: shmem_malloc, calloc, align, realloc, free, malloc_with_hints,
// and the application's own GPU memory joining the heap (shmemx_buffer_register_symmetric).
// Each is collective; each ends with a barrier so that no PE touches a peer's new object before
// the peer has it.
#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/api/runtime.hpp"
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

void* allocate(size_t size, size_t alignment, const char* call) {
  Runtime& rt = runtime_for(call);
  auto r = rt.heap->allocate(size, alignment, call);
  void* out = nullptr;
  if (r) {
    out = *r;
  } else {
    report_failure(call, r.status());
  }
  shmem_barrier_all();
  return out;
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
  shmem_barrier_all();
  return out;
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
