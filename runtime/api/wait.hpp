// Waiting on local symmetric variables that other PEs update: shared by the point-to-point
// synchronization calls, shmem_signal_wait_until and the lock.
#pragma once

#include <atomic>
#include <cstdint>

#include "runtime/api/runtime.hpp"
#include "runtime/api/wait_policy.hpp"
#include "runtime/transport/mapped_path.hpp"
#include "shmem.h"

namespace vshmem::detail {

inline void check_cmp(int cmp, const char* call) {
  if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE) {
    fail(call, "unknown comparison %d (use SHMEM_CMP_EQ, _NE, _GT, _GE, _LT or _LE)", cmp);
  }
}

template <typename T>
bool compare(T value, int cmp, T operand) {
  switch (cmp) {
    case SHMEM_CMP_EQ: return value == operand;
    case SHMEM_CMP_NE: return value != operand;
    case SHMEM_CMP_GT: return value > operand;
    case SHMEM_CMP_GE: return value >= operand;
    case SHMEM_CMP_LT: return value < operand;
    default: return value <= operand;  // SHMEM_CMP_LE; check_cmp ran first
  }
}

// The ivars are symmetric and aligned: a PE updates them remotely only inside the heap.
template <typename T>
void check_ivars(Runtime& rt, const T* ivars, size_t nelems, const char* call) {
  if (nelems == 0) return;
  if (nelems > SIZE_MAX / sizeof(T)) fail(call, "%zu elements overflow size_t", nelems);
  check_symmetric(rt, ivars, nelems * sizeof(T), call, "ivars");
  if (reinterpret_cast<uintptr_t>(ivars) % alignof(T) != 0) {
    fail(call, "ivars %p is not aligned to its %zu-byte type", static_cast<const void*>(ivars),
         sizeof(T));
  }
}

// One atomic read of a local symmetric variable.
template <typename T>
T load_ivar(Runtime& rt, const T* addr, const char* call) {
  return read_own(rt, addr, call);
}

// What a wait for other PEs' updates of [addr, addr + bytes) on PE pe sleeps on: pe's data wake
// word, which puts and atomics through the mapped path wake (MappedPath::data_wake_word). Empty
// (the wait polls) for variables outside the heap (globals and statics are reached through
// another path) and where not every write goes through the mapped path.
inline WakeWord data_wake(Runtime& rt, const void* addr, size_t bytes, int pe) {
  if (rt.heap == nullptr || !rt.heap->contains(addr, bytes)) return {};
  return rt.transport->mapped().data_wake_word(pe);
}

// A Backoff for a wait on data of PE pe that other PEs update.
inline Backoff data_backoff(Runtime& rt, const char* call, const void* addr, size_t bytes, int pe) {
  // Our own data, written by remote peers only: a long wait sleeps in the network's wait.
  if (RemotePath* network = rt.transport->sole_writers_path();
      network != nullptr && pe == rt.my_pe) {
    return Backoff(call, network, data_sleep_limit_ns());
  }
  // A store through shmem_ptr wakes nobody: it is seen within VSHMEM_WAIT_LOOK_US.
  return Backoff(call, data_wake(rt, addr, bytes, pe), data_sleep_limit_ns(),
                 Backoff::kDataFirstYields);
}

template <typename T>
T wait_until_one(const char* call, T* ivar, int cmp, T cmp_value) {
  Runtime& rt = runtime_for(call);
  check_cmp(cmp, call);
  check_ivars(rt, ivar, 1, call);
  Backoff backoff = data_backoff(rt, call, ivar, sizeof(T), rt.my_pe);
  auto met = [&] { return compare(load_ivar(rt, ivar, call), cmp, cmp_value); };
  for (;;) {
    T v = load_ivar(rt, ivar, call);
    if (compare(v, cmp, cmp_value)) {
      std::atomic_thread_fence(std::memory_order_acquire);
      return v;
    }
    backoff.pause(met);
  }
}

}  // namespace vshmem::detail
