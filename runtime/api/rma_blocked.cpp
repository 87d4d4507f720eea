// Blocked strided RMA (OpenSHMEM 1.6 shmem_ibput / shmem_ibget): nblocks blocks of bsize
// contiguous elements, block k at source + k * sst and dest + k * dst elements. Each block moves
// as one contiguous transfer through the same path as put/get, so a block is one copy (or one
// remote-path request), not bsize element copies.
#include <cstddef>

#include "runtime/api/runtime.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

// Bytes from the first element of the first block to the end of the last block, for blocks
// `stride` elements apart; fails the call when that overflows size_t.
size_t blocked_extent(const char* call, size_t nblocks, ptrdiff_t stride, size_t bsize,
                      size_t elem) {
  size_t span, extent;
  if (__builtin_mul_overflow(nblocks - 1, static_cast<size_t>(stride), &span) ||
      __builtin_add_overflow(span, bsize, &span) || __builtin_mul_overflow(span, elem, &extent)) {
    fail(call,
         "%zu blocks of %zu elements of %zu bytes at a stride of %td elements overflow "
         "size_t",
         nblocks, bsize, elem, stride);
  }
  return extent;
}

enum class Direction { kPut, kGet };

void blocked(Direction dir, const char* call, void* dest, const void* source, ptrdiff_t dst,
             ptrdiff_t sst, size_t bsize, size_t nblocks, size_t elem, int pe) {
  Runtime& rt = runtime_for(call);
  check_pe(rt, pe, call);
  if (nblocks == 0 || bsize == 0) return;
  if (dst < 1 || sst < 1) fail(call, "strides must be at least 1 (dst %td, sst %td)", dst, sst);
  // The symmetric side is checked whole, so that no block moves when a later one is outside it.
  if (dir == Direction::kPut) {
    check_symmetric(rt, dest, blocked_extent(call, nblocks, dst, bsize, elem), call, "dest");
  } else {
    check_symmetric(rt, source, blocked_extent(call, nblocks, sst, bsize, elem), call, "source");
  }
  blocked_extent(call, nblocks, dir == Direction::kPut ? sst : dst, bsize, elem);
  auto* d = static_cast<char*>(dest);
  auto* s = static_cast<const char*>(source);
  const size_t block_bytes = bsize * elem;
  for (size_t k = 0; k < nblocks; ++k) {
    char* to = d + k * static_cast<size_t>(dst) * elem;
    const char* from = s + k * static_cast<size_t>(sst) * elem;
    if (dir == Direction::kPut) {
      rma_put(rt, to, from, block_bytes, pe, call);
    } else {
      rma_get(rt, to, from, block_bytes, pe, call);
    }
  }
}

}  // namespace

extern "C" {

#define VSHMEM_DEFINE_RMA_BLOCKED(NAME, TYPE, ELEM)                                                \
  void shmem_##NAME##ibput(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,           \
                           size_t bsize, size_t nblocks, int pe) {                                 \
    blocked(Direction::kPut, "shmem_" #NAME "ibput", dest, source, dst, sst, bsize, nblocks, ELEM, \
            pe);                                                                                   \
  }                                                                                                \
  void shmem_##NAME##ibget(TYPE* dest, const TYPE* source, ptrdiff_t dst, ptrdiff_t sst,           \
                           size_t bsize, size_t nblocks, int pe) {                                 \
    blocked(Direction::kGet, "shmem_" #NAME "ibget", dest, source, dst, sst, bsize, nblocks, ELEM, \
            pe);                                                                                   \
  }                                                                                                \
  void shmem_ctx_##NAME##ibput(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst,     \
                               ptrdiff_t sst, size_t bsize, size_t nblocks, int pe) {              \
    blocked(Direction::kPut, "shmem_ctx_" #NAME "ibput", dest, source, dst, sst, bsize, nblocks,   \
            ELEM, ctx_pe(ctx, pe, "shmem_ctx_" #NAME "ibput"));                                    \
  }                                                                                                \
  void shmem_ctx_##NAME##ibget(shmem_ctx_t ctx, TYPE* dest, const TYPE* source, ptrdiff_t dst,     \
                               ptrdiff_t sst, size_t bsize, size_t nblocks, int pe) {              \
    blocked(Direction::kGet, "shmem_ctx_" #NAME "ibget", dest, source, dst, sst, bsize, nblocks,   \
            ELEM, ctx_pe(ctx, pe, "shmem_ctx_" #NAME "ibget"));                                    \
  }

#define VSHMEM_DEFINE_RMA_BLOCKED_TYPED(NAME, TYPE) \
  VSHMEM_DEFINE_RMA_BLOCKED(NAME##_, TYPE, sizeof(TYPE))
VSHMEM_RMA_TYPES(VSHMEM_DEFINE_RMA_BLOCKED_TYPED)

// shmem_ibput8 & co: the size comes after the name.
#define VSHMEM_DEFINE_RMA_BLOCKED_SIZED(BITS, BYTES)                                             \
  void shmem_ibput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,           \
                         size_t bsize, size_t nblocks, int pe) {                                 \
    blocked(Direction::kPut, "shmem_ibput" #BITS, dest, source, dst, sst, bsize, nblocks, BYTES, \
            pe);                                                                                 \
  }                                                                                              \
  void shmem_ibget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,           \
                         size_t bsize, size_t nblocks, int pe) {                                 \
    blocked(Direction::kGet, "shmem_ibget" #BITS, dest, source, dst, sst, bsize, nblocks, BYTES, \
            pe);                                                                                 \
  }                                                                                              \
  void shmem_ctx_ibput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,     \
                             ptrdiff_t sst, size_t bsize, size_t nblocks, int pe) {              \
    blocked(Direction::kPut, "shmem_ctx_ibput" #BITS, dest, source, dst, sst, bsize, nblocks,    \
            BYTES, ctx_pe(ctx, pe, "shmem_ctx_ibput" #BITS));                                    \
  }                                                                                              \
  void shmem_ctx_ibget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,     \
                             ptrdiff_t sst, size_t bsize, size_t nblocks, int pe) {              \
    blocked(Direction::kGet, "shmem_ctx_ibget" #BITS, dest, source, dst, sst, bsize, nblocks,    \
            BYTES, ctx_pe(ctx, pe, "shmem_ctx_ibget" #BITS));                                    \
  }
VSHMEM_RMA_SIZES(VSHMEM_DEFINE_RMA_BLOCKED_SIZED)

}  // extern "C"
