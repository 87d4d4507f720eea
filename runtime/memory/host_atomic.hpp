// An atomic on host memory with the CPU's own atomic instructions: what the host heap's provider
// does, and what the program's global and static variables get (they are host memory whatever
// the heap is).
#pragma once

#include <cstdint>

#include "runtime/memory/memory.hpp"

namespace vshmem {

template <typename T>
uint64_t host_atomic(const AtomicRequest& r) {
  T* p = static_cast<T*>(r.address);
  T operand = static_cast<T>(r.operand);
  switch (r.op) {
    case AtomicOp::kFetch: return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    case AtomicOp::kSet: __atomic_store_n(p, operand, __ATOMIC_SEQ_CST); return 0;
    case AtomicOp::kSwap: return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
    case AtomicOp::kCompareSwap: {
      T expected = static_cast<T>(r.compare);
      __atomic_compare_exchange_n(p, &expected, operand, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      return expected;
    }
    case AtomicOp::kFetchAdd: return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
    case AtomicOp::kFetchAnd: return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
    case AtomicOp::kFetchOr: return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
    case AtomicOp::kFetchXor: return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
  }
  return 0;
}

// 4 or 8 bytes, aligned (the caller checked).
inline uint64_t host_atomic_any(const AtomicRequest& r) {
  return r.width == 4 ? host_atomic<uint32_t>(r) : host_atomic<uint64_t>(r);
}

}  // namespace vshmem
