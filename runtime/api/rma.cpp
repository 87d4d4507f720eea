// RMA entry points: put, get, p, g, iput, iget in typed, sized and byte forms, blocking and
// _nbi, default and ctx. The blocking forms complete before they return; the _nbi forms go to the
// path's nbi entry points: the mapped path completes them at once, the remote path at quiet.
#include <cstring>

#include "runtime/api/runtime.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

// The bytes from the first to the end of the last of nelems elements `stride` elements apart;
// fails the call when that overflows (a wrapped extent would pass the heap check while the
// elements land outside it).
size_t strided_extent(const char* call, size_t nelems, ptrdiff_t stride, size_t elem) {
  size_t span, extent;
  if (__builtin_mul_overflow(nelems - 1, static_cast<size_t>(stride), &span) ||
      __builtin_add_overflow(span, 1, &span) || __builtin_mul_overflow(span, elem, &extent)) {
    fail(call, "%zu elements of %zu bytes at a stride of %td elements overflow size_t", nelems,
         elem, stride);
  }
  return extent;
}

// Strided copies: one element at a time through the same path as put/get.
void strided_put(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                 size_t nelems, size_t elem, int pe) {
  Runtime& rt = runtime_for(call);
  check_pe(rt, pe, call);
  if (nelems == 0) return;
  if (dst <= 0 || sst <= 0) fail(call, "strides must be positive (dst %td, sst %td)", dst, sst);
  check_symmetric(rt, dest, strided_extent(call, nelems, dst, elem), call, "dest");
  auto* d = static_cast<char*>(dest);
  auto* s = static_cast<const char*>(source);
  for (size_t i = 0; i < nelems; ++i) {
    rma_put(rt, d + i * dst * elem, s + i * sst * elem, elem, pe, call);
  }
}

void strided_get(const char* call, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                 size_t nelems, size_t elem, int pe) {
  Runtime& rt = runtime_for(call);
  check_pe(rt, pe, call);
  if (nelems == 0) return;
  if (dst <= 0 || sst <= 0) fail(call, "strides must be positive (dst %td, sst %td)", dst, sst);
  check_symmetric(rt, source, strided_extent(call, nelems, sst, elem), call, "source");
  auto* d = static_cast<char*>(dest);
  auto* s = static_cast<const char*>(source);
  for (size_t i = 0; i < nelems; ++i) {
    rma_get(rt, d + i * dst * elem, s + i * sst * elem, elem, pe, call);
  }
}

size_t bytes_of(const char* call, size_t nelems, size_t elem) {
  size_t bytes;
  if (__builtin_mul_overflow(nelems, elem, &bytes)) {
    fail(call, "%zu elements of %zu bytes overflow size_t", nelems, elem);
  }
  return bytes;
}

void put(const char* call, void* dest, const void* source, size_t nelems, size_t elem, int pe) {
  Runtime& rt = runtime_for(call);
  rma_put(rt, dest, source, bytes_of(call, nelems, elem), pe, call);
}

void get(const char* call, void* dest, const void* source, size_t nelems, size_t elem, int pe) {
  Runtime& rt = runtime_for(call);
  rma_get(rt, dest, source, bytes_of(call, nelems, elem), pe, call);
}

void put_nbi(const char* call, void* dest, const void* source, size_t nelems, size_t elem, int pe) {
  Runtime& rt = runtime_for(call);
  rma_put_nbi(rt, dest, source, bytes_of(call, nelems, elem), pe, call);
}

void get_nbi(const char* call, void* dest, const void* source, size_t nelems, size_t elem, int pe) {
  Runtime& rt = runtime_for(call);
  rma_get_nbi(rt, dest, source, bytes_of(call, nelems, elem), pe, call);
}

}  // namespace

extern "C" {

#define VSHMEM_DEFINE_RMA_TYPED(NAME, TYPE)                                                       \
  void shmem_##NAME##_put(TYPE* dest, const TYPE* source, size_t nelems, int pe) {                \
    put("shmem_" #NAME "_put", dest, source, nelems, sizeof(TYPE), pe);                           \
  }                                                                                               \
  void shmem_##NAME##_get(TYPE* dest, const TYPE* source, size_t nelems, int pe) {                \
    get("shmem_" #NAME "_get", dest, source, nelems, sizeof(TYPE), pe);                           \
  }                                                                                               \
  void shmem_##NAME##_put_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe) {            \
    put_nbi("shmem_" #NAME "_put_nbi", dest, source, nelems, sizeof(TYPE), pe);                   \
  }                                                                                               \
  void shmem_##NAME##_get_nbi(TYPE* dest, const TYPE* source, size_t nelems, int pe) {            \
    get_nbi("shmem_" #NAME "_get_nbi", dest, source, nelems, sizeof(TYPE), pe);                   \
  }                                                                                               \
  void shmem_##NAME##_p(TYPE* dest, TYPE value, int pe) {                                         \
    put("shmem_" #NAME "_p", dest, &value, 1, sizeof(TYPE), pe);                                  \
  }                                                                                               \
  TYPE shmem_##NAME##_g(const TYPE* source, int pe) {                                             \
    TYPE value;                                                                                   \
    get("shmem_" #NAME "_g", &value, source, 1, sizeof(TYPE), pe);                                \
    return value;                                                                                 \
  }                                                                                               \
  void shmem_##NAME##_iput(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,          \
                           size_t nelems, int pe) {                                               \
    strided_put("shmem_" #NAME "_iput", dest, source, dst, sst, nelems, sizeof(TYPE), pe);        \
  }                                                                                               \
  void shmem_##NAME##_iget(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,          \
                           size_t nelems, int pe) {                                               \
    strided_get("shmem_" #NAME "_iget", dest, source, dst, sst, nelems, sizeof(TYPE), pe);        \
  }                                                                                               \
  void shmem_ctx_##NAME##_put(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems,     \
                              int pe) {                                                           \
    put("shmem_ctx_" #NAME "_put", dest, source, nelems, sizeof(TYPE),                            \
        ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_put"));                                              \
  }                                                                                               \
  void shmem_ctx_##NAME##_get(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems,     \
                              int pe) {                                                           \
    get("shmem_ctx_" #NAME "_get", dest, source, nelems, sizeof(TYPE),                            \
        ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_get"));                                              \
  }                                                                                               \
  void shmem_ctx_##NAME##_put_nbi(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems, \
                                  int pe) {                                                       \
    put_nbi("shmem_ctx_" #NAME "_put_nbi", dest, source, nelems, sizeof(TYPE),                    \
            ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_put_nbi"));                                      \
  }                                                                                               \
  void shmem_ctx_##NAME##_get_nbi(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, size_t nelems, \
                                  int pe) {                                                       \
    get_nbi("shmem_ctx_" #NAME "_get_nbi", dest, source, nelems, sizeof(TYPE),                    \
            ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_get_nbi"));                                      \
  }                                                                                               \
  void shmem_ctx_##NAME##_p(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe) {                    \
    put("shmem_ctx_" #NAME "_p", dest, &value, 1, sizeof(TYPE),                                   \
        ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_p"));                                                \
  }                                                                                               \
  TYPE shmem_ctx_##NAME##_g(shmem_ctx_t ctx, const TYPE* source, int pe) {                        \
    TYPE value;                                                                                   \
    get("shmem_ctx_" #NAME "_g", &value, source, 1, sizeof(TYPE),                                 \
        ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_g"));                                                \
    return value;                                                                                 \
  }                                                                                               \
  void shmem_ctx_##NAME##_iput(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst,    \
                               ptrdiff_t sst, size_t nelems, int pe) {                            \
    strided_put("shmem_ctx_" #NAME "_iput", dest, source, dst, sst, nelems, sizeof(TYPE),         \
                ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_iput"));                                     \
  }                                                                                               \
  void shmem_ctx_##NAME##_iget(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst,    \
                               ptrdiff_t sst, size_t nelems, int pe) {                            \
    strided_get("shmem_ctx_" #NAME "_iget", dest, source, dst, sst, nelems, sizeof(TYPE),         \
                ctx_pe(ctx, pe, "shmem_ctx_" #NAME "_iget"));                                     \
  }
VSHMEM_RMA_TYPES(VSHMEM_DEFINE_RMA_TYPED)

#define VSHMEM_DEFINE_RMA_SIZED(BITS, BYTES)                                                     \
  void shmem_put##BITS(void* dest, const void* source, size_t nelems, int pe) {                  \
    put("shmem_put" #BITS, dest, source, nelems, BYTES, pe);                                     \
  }                                                                                              \
  void shmem_get##BITS(void* dest, const void* source, size_t nelems, int pe) {                  \
    get("shmem_get" #BITS, dest, source, nelems, BYTES, pe);                                     \
  }                                                                                              \
  void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe) {            \
    put_nbi("shmem_put" #BITS "_nbi", dest, source, nelems, BYTES, pe);                          \
  }                                                                                              \
  void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe) {            \
    get_nbi("shmem_get" #BITS "_nbi", dest, source, nelems, BYTES, pe);                          \
  }                                                                                              \
  void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,            \
                        size_t nelems, int pe) {                                                 \
    strided_put("shmem_iput" #BITS, dest, source, dst, sst, nelems, BYTES, pe);                  \
  }                                                                                              \
  void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,            \
                        size_t nelems, int pe) {                                                 \
    strided_get("shmem_iget" #BITS, dest, source, dst, sst, nelems, BYTES, pe);                  \
  }                                                                                              \
  void shmem_ctx_put##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,       \
                           int pe) {                                                             \
    put("shmem_ctx_put" #BITS, dest, source, nelems, BYTES,                                      \
        ctx_pe(ctx, pe, "shmem_ctx_put" #BITS));                                                 \
  }                                                                                              \
  void shmem_ctx_get##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,       \
                           int pe) {                                                             \
    get("shmem_ctx_get" #BITS, dest, source, nelems, BYTES,                                      \
        ctx_pe(ctx, pe, "shmem_ctx_get" #BITS));                                                 \
  }                                                                                              \
  void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, \
                                 int pe) {                                                       \
    put_nbi("shmem_ctx_put" #BITS "_nbi", dest, source, nelems, BYTES,                           \
            ctx_pe(ctx, pe, "shmem_ctx_put" #BITS "_nbi"));                                      \
  }                                                                                              \
  void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, \
                                 int pe) {                                                       \
    get_nbi("shmem_ctx_get" #BITS "_nbi", dest, source, nelems, BYTES,                           \
            ctx_pe(ctx, pe, "shmem_ctx_get" #BITS "_nbi"));                                      \
  }                                                                                              \
  void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,      \
                            ptrdiff_t sst, size_t nelems, int pe) {                              \
    strided_put("shmem_ctx_iput" #BITS, dest, source, dst, sst, nelems, BYTES,                   \
                ctx_pe(ctx, pe, "shmem_ctx_iput" #BITS));                                        \
  }                                                                                              \
  void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,      \
                            ptrdiff_t sst, size_t nelems, int pe) {                              \
    strided_get("shmem_ctx_iget" #BITS, dest, source, dst, sst, nelems, BYTES,                   \
                ctx_pe(ctx, pe, "shmem_ctx_iget" #BITS));                                        \
  }
VSHMEM_RMA_SIZES(VSHMEM_DEFINE_RMA_SIZED)

void shmem_putmem(void* dest, const void* source, size_t nelems, int pe) {
  put("shmem_putmem", dest, source, nelems, 1, pe);
}
void shmem_getmem(void* dest, const void* source, size_t nelems, int pe) {
  get("shmem_getmem", dest, source, nelems, 1, pe);
}
void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  put_nbi("shmem_putmem_nbi", dest, source, nelems, 1, pe);
}
void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  get_nbi("shmem_getmem_nbi", dest, source, nelems, 1, pe);
}
void shmem_ctx_putmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {
  put("shmem_ctx_putmem", dest, source, nelems, 1, ctx_pe(ctx, pe, "shmem_ctx_putmem"));
}
void shmem_ctx_getmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {
  get("shmem_ctx_getmem", dest, source, nelems, 1, ctx_pe(ctx, pe, "shmem_ctx_getmem"));
}
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {
  put_nbi("shmem_ctx_putmem_nbi", dest, source, nelems, 1, ctx_pe(ctx, pe, "shmem_ctx_putmem_nbi"));
}
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe) {
  get_nbi("shmem_ctx_getmem_nbi", dest, source, nelems, 1, ctx_pe(ctx, pe, "shmem_ctx_getmem_nbi"));
}

}  // extern "C"
