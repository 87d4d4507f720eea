// Atomic memory operations: every AMO of OpenSHMEM 1.5 over its type table, the _nbi fetching
// forms, the ctx forms and the deprecated names. All of them become one provider atomic on the
// raw bits of the value (4 or 8 bytes), through rma_atomic: so an AMO is atomic with respect to
// every other AMO on the location, whichever PE or path issued it (device code included on the
// CUDA backend). On the host an AMO completes before it returns, so the _nbi forms are the
// blocking ones.
#include <cstring>
#include <type_traits>

#include "runtime/api/runtime.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

template <typename T>
uint64_t bits_of(T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "AMOs act on 4- and 8-byte types");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));  // little-endian: the low bytes hold the value
  return bits;
}

template <typename T>
T value_of(uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

template <typename T>
T amo(const char* call, AtomicOp op, const T* dest, T operand, T compare, int pe) {
  Runtime& rt = runtime_for(call);
  AtomicRequest r{op, const_cast<T*>(dest), sizeof(T), bits_of(operand), bits_of(compare)};
  return value_of<T>(rma_atomic(rt, r, pe, call));
}

// The _nbi forms deliver the fetched value to a local buffer that may be device memory.
template <typename T>
void deliver(const char* call, T* fetch, T value) {
  Runtime& rt = runtime_for(call);
  if (fetch == nullptr) fail(call, "fetch is NULL");
  Status st = rt.transport->copy_local(fetch, &value, sizeof(T));
  if (!st) fail(call, st);
}

}  // namespace

extern "C" {

#define VSHMEM_AMO_CALL(NAME, OPNAME) "shmem_" #NAME "_atomic_" #OPNAME
#define VSHMEM_AMO_CTX_CALL(NAME, OPNAME) "shmem_ctx_" #NAME "_atomic_" #OPNAME
#define VSHMEM_CTX_PE(OPNAME, NAME) ctx_pe(ctx, pe, VSHMEM_AMO_CTX_CALL(NAME, OPNAME))

#define VSHMEM_DEFINE_AMO_EXTENDED(NAME, TYPE)                                                  \
  TYPE shmem_##NAME##_atomic_fetch(const TYPE* source, int pe) {                                \
    return amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch), AtomicOp::kFetch, source, 0, 0, pe);         \
  }                                                                                             \
  void shmem_##NAME##_atomic_set(TYPE* dest, TYPE value, int pe) {                              \
    amo<TYPE>(VSHMEM_AMO_CALL(NAME, set), AtomicOp::kSet, dest, value, 0, pe);                  \
  }                                                                                             \
  TYPE shmem_##NAME##_atomic_swap(TYPE* dest, TYPE value, int pe) {                             \
    return amo<TYPE>(VSHMEM_AMO_CALL(NAME, swap), AtomicOp::kSwap, dest, value, 0, pe);         \
  }                                                                                             \
  void shmem_##NAME##_atomic_fetch_nbi(TYPE* fetch, const TYPE* source, int pe) {               \
    deliver(VSHMEM_AMO_CALL(NAME, fetch_nbi), fetch,                                            \
            amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch_nbi), AtomicOp::kFetch, source, 0, 0, pe));   \
  }                                                                                             \
  void shmem_##NAME##_atomic_swap_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe) {            \
    deliver(VSHMEM_AMO_CALL(NAME, swap_nbi), fetch,                                             \
            amo<TYPE>(VSHMEM_AMO_CALL(NAME, swap_nbi), AtomicOp::kSwap, dest, value, 0, pe));   \
  }                                                                                             \
  TYPE shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE* source, int pe) {           \
    return amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch), AtomicOp::kFetch, source, 0, 0,          \
                     VSHMEM_CTX_PE(fetch, NAME));                                               \
  }                                                                                             \
  void shmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe) {         \
    amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, set), AtomicOp::kSet, dest, value, 0,                   \
              VSHMEM_CTX_PE(set, NAME));                                                        \
  }                                                                                             \
  TYPE shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe) {        \
    return amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, swap), AtomicOp::kSwap, dest, value, 0,          \
                     VSHMEM_CTX_PE(swap, NAME));                                                \
  }                                                                                             \
  void shmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, TYPE* fetch, const TYPE* source,    \
                                           int pe) {                                            \
    deliver(VSHMEM_AMO_CTX_CALL(NAME, fetch_nbi), fetch,                                        \
            amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch_nbi), AtomicOp::kFetch, source, 0, 0,     \
                      VSHMEM_CTX_PE(fetch_nbi, NAME)));                                         \
  }                                                                                             \
  void shmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest, TYPE value, \
                                          int pe) {                                             \
    deliver(VSHMEM_AMO_CTX_CALL(NAME, swap_nbi), fetch,                                         \
            amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, swap_nbi), AtomicOp::kSwap, dest, value, 0,     \
                      VSHMEM_CTX_PE(swap_nbi, NAME)));                                          \
  }
VSHMEM_AMO_EXTENDED_TYPES(VSHMEM_DEFINE_AMO_EXTENDED)

#define VSHMEM_DEFINE_AMO_STANDARD(NAME, TYPE)                                                     \
  TYPE shmem_##NAME##_atomic_compare_swap(TYPE* dest, TYPE cond, TYPE value, int pe) {             \
    return amo<TYPE>(VSHMEM_AMO_CALL(NAME, compare_swap), AtomicOp::kCompareSwap, dest, value,     \
                     cond, pe);                                                                    \
  }                                                                                                \
  TYPE shmem_##NAME##_atomic_fetch_inc(TYPE* dest, int pe) {                                       \
    return amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch_inc), AtomicOp::kFetchAdd, dest, 1, 0, pe);       \
  }                                                                                                \
  void shmem_##NAME##_atomic_inc(TYPE* dest, int pe) {                                             \
    amo<TYPE>(VSHMEM_AMO_CALL(NAME, inc), AtomicOp::kFetchAdd, dest, 1, 0, pe);                    \
  }                                                                                                \
  TYPE shmem_##NAME##_atomic_fetch_add(TYPE* dest, TYPE value, int pe) {                           \
    return amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch_add), AtomicOp::kFetchAdd, dest, value, 0, pe);   \
  }                                                                                                \
  void shmem_##NAME##_atomic_add(TYPE* dest, TYPE value, int pe) {                                 \
    amo<TYPE>(VSHMEM_AMO_CALL(NAME, add), AtomicOp::kFetchAdd, dest, value, 0, pe);                \
  }                                                                                                \
  void shmem_##NAME##_atomic_compare_swap_nbi(TYPE* fetch, TYPE* dest, TYPE cond, TYPE value,      \
                                              int pe) {                                            \
    deliver(VSHMEM_AMO_CALL(NAME, compare_swap_nbi), fetch,                                        \
            amo<TYPE>(VSHMEM_AMO_CALL(NAME, compare_swap_nbi), AtomicOp::kCompareSwap, dest,       \
                      value, cond, pe));                                                           \
  }                                                                                                \
  void shmem_##NAME##_atomic_fetch_inc_nbi(TYPE* fetch, TYPE* dest, int pe) {                      \
    deliver(VSHMEM_AMO_CALL(NAME, fetch_inc_nbi), fetch,                                           \
            amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch_inc_nbi), AtomicOp::kFetchAdd, dest, 1, 0, pe)); \
  }                                                                                                \
  void shmem_##NAME##_atomic_fetch_add_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe) {          \
    deliver(                                                                                       \
        VSHMEM_AMO_CALL(NAME, fetch_add_nbi), fetch,                                               \
        amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch_add_nbi), AtomicOp::kFetchAdd, dest, value, 0, pe)); \
  }                                                                                                \
  TYPE shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE* dest, TYPE cond, TYPE value,  \
                                              int pe) {                                            \
    return amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, compare_swap), AtomicOp::kCompareSwap, dest, value, \
                     cond, VSHMEM_CTX_PE(compare_swap, NAME));                                     \
  }                                                                                                \
  TYPE shmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, TYPE* dest, int pe) {                  \
    return amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch_inc), AtomicOp::kFetchAdd, dest, 1, 0,        \
                     VSHMEM_CTX_PE(fetch_inc, NAME));                                              \
  }                                                                                                \
  void shmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, TYPE* dest, int pe) {                        \
    amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, inc), AtomicOp::kFetchAdd, dest, 1, 0,                     \
              VSHMEM_CTX_PE(inc, NAME));                                                           \
  }                                                                                                \
  TYPE shmem_ctx_##NAME##_atomic_fetch_add(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe) {      \
    return amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch_add), AtomicOp::kFetchAdd, dest, value, 0,    \
                     VSHMEM_CTX_PE(fetch_add, NAME));                                              \
  }                                                                                                \
  void shmem_ctx_##NAME##_atomic_add(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe) {            \
    amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, add), AtomicOp::kFetchAdd, dest, value, 0,                 \
              VSHMEM_CTX_PE(add, NAME));                                                           \
  }                                                                                                \
  void shmem_ctx_##NAME##_atomic_compare_swap_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest,        \
                                                  TYPE cond, TYPE value, int pe) {                 \
    deliver(VSHMEM_AMO_CTX_CALL(NAME, compare_swap_nbi), fetch,                                    \
            amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, compare_swap_nbi), AtomicOp::kCompareSwap, dest,   \
                      value, cond, VSHMEM_CTX_PE(compare_swap_nbi, NAME)));                        \
  }                                                                                                \
  void shmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest, int pe) { \
    deliver(VSHMEM_AMO_CTX_CALL(NAME, fetch_inc_nbi), fetch,                                       \
            amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch_inc_nbi), AtomicOp::kFetchAdd, dest, 1, 0,   \
                      VSHMEM_CTX_PE(fetch_inc_nbi, NAME)));                                        \
  }                                                                                                \
  void shmem_ctx_##NAME##_atomic_fetch_add_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest,           \
                                               TYPE value, int pe) {                               \
    deliver(VSHMEM_AMO_CTX_CALL(NAME, fetch_add_nbi), fetch,                                       \
            amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch_add_nbi), AtomicOp::kFetchAdd, dest, value,  \
                      0, VSHMEM_CTX_PE(fetch_add_nbi, NAME)));                                     \
  }
VSHMEM_AMO_STANDARD_TYPES(VSHMEM_DEFINE_AMO_STANDARD)

#define VSHMEM_DEFINE_AMO_BITWISE_OP(NAME, TYPE, OP, KIND)                                     \
  TYPE shmem_##NAME##_atomic_fetch_##OP(TYPE* dest, TYPE value, int pe) {                      \
    return amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch_##OP), KIND, dest, value, 0, pe);             \
  }                                                                                            \
  void shmem_##NAME##_atomic_##OP(TYPE* dest, TYPE value, int pe) {                            \
    amo<TYPE>(VSHMEM_AMO_CALL(NAME, OP), KIND, dest, value, 0, pe);                            \
  }                                                                                            \
  void shmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE* fetch, TYPE* dest, TYPE value, int pe) {   \
    deliver(VSHMEM_AMO_CALL(NAME, fetch_##OP##_nbi), fetch,                                    \
            amo<TYPE>(VSHMEM_AMO_CALL(NAME, fetch_##OP##_nbi), KIND, dest, value, 0, pe));     \
  }                                                                                            \
  TYPE shmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe) { \
    return amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch_##OP), KIND, dest, value, 0,              \
                     VSHMEM_CTX_PE(fetch_##OP, NAME));                                         \
  }                                                                                            \
  void shmem_ctx_##NAME##_atomic_##OP(shmem_ctx_t ctx, TYPE* dest, TYPE value, int pe) {       \
    amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, OP), KIND, dest, value, 0, VSHMEM_CTX_PE(OP, NAME));   \
  }                                                                                            \
  void shmem_ctx_##NAME##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, TYPE* fetch, TYPE* dest,    \
                                                  TYPE value, int pe) {                        \
    deliver(VSHMEM_AMO_CTX_CALL(NAME, fetch_##OP##_nbi), fetch,                                \
            amo<TYPE>(VSHMEM_AMO_CTX_CALL(NAME, fetch_##OP##_nbi), KIND, dest, value, 0,       \
                      VSHMEM_CTX_PE(fetch_##OP##_nbi, NAME)));                                 \
  }
#define VSHMEM_DEFINE_AMO_BITWISE(NAME, TYPE)                        \
  VSHMEM_DEFINE_AMO_BITWISE_OP(NAME, TYPE, and, AtomicOp::kFetchAnd) \
  VSHMEM_DEFINE_AMO_BITWISE_OP(NAME, TYPE, or, AtomicOp::kFetchOr)   \
  VSHMEM_DEFINE_AMO_BITWISE_OP(NAME, TYPE, xor, AtomicOp::kFetchXor)
VSHMEM_AMO_BITWISE_TYPES(VSHMEM_DEFINE_AMO_BITWISE)

#define VSHMEM_DEFINE_AMO_DEPRECATED(NAME, TYPE)                                              \
  TYPE shmem_##NAME##_cswap(TYPE* dest, TYPE cond, TYPE value, int pe) {                      \
    return amo<TYPE>("shmem_" #NAME "_cswap", AtomicOp::kCompareSwap, dest, value, cond, pe); \
  }                                                                                           \
  TYPE shmem_##NAME##_finc(TYPE* dest, int pe) {                                              \
    return amo<TYPE>("shmem_" #NAME "_finc", AtomicOp::kFetchAdd, dest, 1, 0, pe);            \
  }                                                                                           \
  void shmem_##NAME##_inc(TYPE* dest, int pe) {                                               \
    amo<TYPE>("shmem_" #NAME "_inc", AtomicOp::kFetchAdd, dest, 1, 0, pe);                    \
  }                                                                                           \
  TYPE shmem_##NAME##_fadd(TYPE* dest, TYPE value, int pe) {                                  \
    return amo<TYPE>("shmem_" #NAME "_fadd", AtomicOp::kFetchAdd, dest, value, 0, pe);        \
  }                                                                                           \
  void shmem_##NAME##_add(TYPE* dest, TYPE value, int pe) {                                   \
    amo<TYPE>("shmem_" #NAME "_add", AtomicOp::kFetchAdd, dest, value, 0, pe);                \
  }
VSHMEM_AMO_DEPRECATED_TYPES(VSHMEM_DEFINE_AMO_DEPRECATED)

#define VSHMEM_DEFINE_AMO_DEPRECATED_EXTENDED(NAME, TYPE)                          \
  TYPE shmem_##NAME##_swap(TYPE* dest, TYPE value, int pe) {                       \
    return amo<TYPE>("shmem_" #NAME "_swap", AtomicOp::kSwap, dest, value, 0, pe); \
  }                                                                                \
  TYPE shmem_##NAME##_fetch(const TYPE* source, int pe) {                          \
    return amo<TYPE>("shmem_" #NAME "_fetch", AtomicOp::kFetch, source, 0, 0, pe); \
  }                                                                                \
  void shmem_##NAME##_set(TYPE* dest, TYPE value, int pe) {                        \
    amo<TYPE>("shmem_" #NAME "_set", AtomicOp::kSet, dest, value, 0, pe);          \
  }
VSHMEM_AMO_DEPRECATED_EXTENDED_TYPES(VSHMEM_DEFINE_AMO_DEPRECATED_EXTENDED)

}  // extern "C"
