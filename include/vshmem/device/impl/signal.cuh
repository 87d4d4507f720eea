// Device signals (put-with-signal, signal fetch/wait/op) and point-to-point synchronization
// (wait_until*, test*).
//
// A signal never overtakes the data it follows: the group's stores are ordered before the
// signal by a group synchronization and a release fence (fence.acq_rel, at the scope of
// memory.cuh) in the signalling thread (fence cumulativity carries the other members' stores
// along). Waits poll with acquire loads at the scope of memory.cuh
// (several-location waits: relaxed loads, then a fence), so the data a signal covers is visible
// to the waiting thread when the wait returns. Every wait loop looks at the inbound atomic mailbox
// now and then when PEs sit behind the proxy (SlowPoll, impl/proxy.cuh).
#pragma once

#include "vshmem/device/impl/rma.cuh"
#include "vshmem/shmem_signal.h"
#include "vshmem/shmem_wait.h"

#ifdef __CUDACC__

namespace vshmem::device {

__device__ __forceinline__ void signal_op(const char* call, uint64_t* sig_addr, uint64_t signal,
                                          int sig_op, int pe) {
  const int64_t d = peer_delta(pe);
  check_symmetric(call, sig_addr, sizeof(uint64_t));
  if (unmapped(d)) {  // cold: through the proxy, after the requests before it (impl/proxy.cuh)
    fence_release();  // the group's mapped stores too
    vshmemi_proxy_signal(call, sig_addr, signal, sig_op, pe);
    return;
  }
  uint64_t* target = at_delta(sig_addr, d);
  if (sig_op != 0 && sig_op != 1) {
    vshmemi_device_fail(call, "sig_op is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD");
  }
  in_scope([&](auto sc) {  // one scope for the fence and the signal
    using Sc = decltype(sc);
    fence_release<Sc>();
    if (sig_op == 0) {  // SHMEM_SIGNAL_SET
      st_relaxed<Sc>(target, signal);
    } else {  // SHMEM_SIGNAL_ADD
      red_add<Sc>(target, signal);
    }
  });
}

template <class G>
__device__ __forceinline__ void put_signal_group(const char* call, void* dest, const void* source,
                                                 size_t bytes, uint64_t* sig_addr, uint64_t signal,
                                                 int sig_op, int pe) {
  G::sync();
  const int64_t d = peer_delta(pe);
  check_symmetric(call, dest, bytes);
  if (unmapped(d)) {  // cold: data then signal through the proxy, in ticket order
    if (G::rank() == 0) {
      vshmemi_proxy_rma(call, 0, dest, source, bytes, pe);
      vshmemi_proxy_signal(call, sig_addr, signal, sig_op, pe);
    }
    G::sync();
    return;
  }
  copy_bytes_at(at_delta(static_cast<char*>(dest), d), source, bytes, G::rank(), G::size(),
                reinterpret_cast<uintptr_t>(dest), reinterpret_cast<uintptr_t>(source));
  G::sync();
  if (G::rank() == 0) signal_op(call, sig_addr, signal, sig_op, pe);
  G::sync();
}

template <class T>
__device__ __forceinline__ T wait_value(const char* call, T* ivar, int cmp, T cmp_value) {
  check_cmp(call, cmp);
  check_symmetric(call, ivar, sizeof(T));
  // Each poll is an acquire load: the one that satisfies the wait needs no fence after it (a
  // fence would also wait for this thread's own earlier stores, such as the signal it just sent
  // in a ping-pong).
  // The scope is chosen once, outside the polling loop.
  return in_scope([&](auto sc) {
    T v;
    SlowPoll slow;
    while (!compare(v = load_acquire<T, decltype(sc)>(ivar), cmp, cmp_value)) {
      slow(call);
    }
    return v;
  });
}

__device__ __forceinline__ bool included(const int* status, size_t i) {
  return status == nullptr || status[i] == 0;
}

// Vector or scalar comparison values.
template <class T>
struct CmpValues {
  const T* values;
  T value;
  __device__ __forceinline__ T operator[](size_t i) const {
    return values != nullptr ? values[i] : value;
  }
};

// With checks on, ivar must be symmetric (the loads are global-space instructions).
template <class T, class Sc = DynScope>
__device__ __forceinline__ bool test_one(const char* call, T* ivar, int cmp, T value) {
  check_symmetric(call, ivar, sizeof(T));
  return compare(load_sys<T, Sc>(ivar), cmp, value);
}

template <class T>
__device__ __forceinline__ void wait_all(const char* call, T* ivars, size_t n, const int* status,
                                         int cmp, CmpValues<T> values) {
  for (size_t i = 0; i < n; ++i) {
    if (included(status, i)) wait_value(call, ivars + i, cmp, values[i]);
  }
}

// One pass of test_any in the scope Sc (its caller chose it once: a single test or a wait's loop).
template <class T, class Sc>
__device__ __forceinline__ size_t test_any_in(const char* call, T* ivars, size_t n,
                                              const int* status, int cmp, CmpValues<T> values) {
  for (size_t i = 0; i < n; ++i) {
    if (included(status, i) && test_one<T, Sc>(call, ivars + i, cmp, values[i])) {
      fence_acquire<Sc>();
      return i;
    }
  }
  return SIZE_MAX;
}

template <class T>
__device__ __forceinline__ size_t test_any(const char* call, T* ivars, size_t n, const int* status,
                                           int cmp, CmpValues<T> values) {
  check_cmp(call, cmp);
  return in_scope(
      [&](auto sc) { return test_any_in<T, decltype(sc)>(call, ivars, n, status, cmp, values); });
}

__device__ __forceinline__ bool any_included(const int* status, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (included(status, i)) return true;
  }
  return false;
}

template <class T>
__device__ __forceinline__ size_t wait_any(const char* call, T* ivars, size_t n, const int* status,
                                           int cmp, CmpValues<T> values) {
  check_cmp(call, cmp);
  if (!any_included(status, n)) return SIZE_MAX;
  return in_scope([&](auto sc) {  // the scope is chosen once, outside the polling loop
    SlowPoll slow;
    for (;;) {
      size_t i = test_any_in<T, decltype(sc)>(call, ivars, n, status, cmp, values);
      if (i != SIZE_MAX) return i;
      slow(call);
    }
  });
}

// One pass of test_some in the scope Sc (chosen once by its caller, as for test_any_in).
template <class T, class Sc>
__device__ __forceinline__ size_t test_some_in(const char* call, T* ivars, size_t n,
                                               size_t* indices, const int* status, int cmp,
                                               CmpValues<T> values) {
  size_t found = 0;
  for (size_t i = 0; i < n; ++i) {
    if (included(status, i) && test_one<T, Sc>(call, ivars + i, cmp, values[i])) {
      indices[found++] = i;
    }
  }
  if (found > 0) fence_acquire<Sc>();
  return found;
}

template <class T>
__device__ __forceinline__ size_t test_some(const char* call, T* ivars, size_t n, size_t* indices,
                                            const int* status, int cmp, CmpValues<T> values) {
  check_cmp(call, cmp);
  return in_scope([&](auto sc) {
    return test_some_in<T, decltype(sc)>(call, ivars, n, indices, status, cmp, values);
  });
}

template <class T>
__device__ __forceinline__ size_t wait_some(const char* call, T* ivars, size_t n, size_t* indices,
                                            const int* status, int cmp, CmpValues<T> values) {
  check_cmp(call, cmp);
  if (!any_included(status, n)) return size_t{0};
  return in_scope([&](auto sc) {  // the scope is chosen once, outside the polling loop
    SlowPoll slow;
    for (;;) {
      size_t found = test_some_in<T, decltype(sc)>(call, ivars, n, indices, status, cmp, values);
      if (found > 0) return found;
      slow(call);
    }
  });
}

template <class T>
__device__ __forceinline__ int test_all(const char* call, T* ivars, size_t n, const int* status,
                                        int cmp, CmpValues<T> values) {
  check_cmp(call, cmp);
  return in_scope([&](auto sc) {
    using Sc = decltype(sc);
    for (size_t i = 0; i < n; ++i) {
      if (included(status, i) && !test_one<T, Sc>(call, ivars + i, cmp, values[i])) return 0;
    }
    fence_acquire<Sc>();
    return 1;
  });
}

}  // namespace vshmem::device

// Point-to-point synchronization types (OpenSHMEM 1.5 Table 13).
#define VSHMEMI_DEV_P2P_TYPES(X) VSHMEM_P2P_TYPES(X)

// The declarations (__host__ __device__ under nvcc) are those of vshmem/shmem_signal.h and
// vshmem/shmem_wait.h; the device definitions follow.
#ifdef __CUDA_ARCH__
extern "C" {

#define VSHMEMI_DEV_SIGNAL_TYPED(NAME, TYPE)                                                       \
  __device__ __forceinline__ void shmem_##NAME##_put_signal(TYPE* dest, const TYPE* source,        \
                                                            size_t nelems, uint64_t* sig_addr,     \
                                                            uint64_t signal, int sig_op, int pe) { \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(ThreadGroup)>(                                  \
        "shmem_" #NAME "_put_signal", dest, source, nelems * sizeof(TYPE), sig_addr, signal,       \
        sig_op, pe);                                                                               \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_put_signal_nbi(                                   \
      TYPE* dest, const TYPE* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,          \
      int sig_op, int pe) {                                                                        \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(ThreadGroup)>(                                  \
        "shmem_" #NAME "_put_signal_nbi", dest, source, nelems * sizeof(TYPE), sig_addr, signal,   \
        sig_op, pe);                                                                               \
  }
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_SIGNAL_TYPED)
#undef VSHMEMI_DEV_SIGNAL_TYPED

#define VSHMEMI_DEV_SIGNAL_SIZED(BITS, BYTES)                                                     \
  __device__ __forceinline__ void shmem_put##BITS##_signal(void* dest, const void* source,        \
                                                           size_t nelems, uint64_t* sig_addr,     \
                                                           uint64_t signal, int sig_op, int pe) { \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(ThreadGroup)>(                                 \
        "shmem_put" #BITS "_signal", dest, source, nelems * BYTES, sig_addr, signal, sig_op, pe); \
  }                                                                                               \
  __device__ __forceinline__ void shmem_put##BITS##_signal_nbi(                                   \
      void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,         \
      int sig_op, int pe) {                                                                       \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(ThreadGroup)>("shmem_put" #BITS "_signal_nbi", \
                                                                 dest, source, nelems * BYTES,    \
                                                                 sig_addr, signal, sig_op, pe);   \
  }
VSHMEM_RMA_SIZES(VSHMEMI_DEV_SIGNAL_SIZED)
#undef VSHMEMI_DEV_SIGNAL_SIZED

__device__ __forceinline__ void shmem_putmem_signal(void* dest, const void* source, size_t nelems,
                                                    uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                    int pe) {
  vshmem::device::put_signal_group<VSHMEMI_DEV_G(ThreadGroup)>(
      "shmem_putmem_signal", dest, source, nelems, sig_addr, signal, sig_op, pe);
}
__device__ __forceinline__ void shmem_putmem_signal_nbi(void* dest, const void* source,
                                                        size_t nelems, uint64_t* sig_addr,
                                                        uint64_t signal, int sig_op, int pe) {
  vshmem::device::put_signal_group<VSHMEMI_DEV_G(ThreadGroup)>(
      "shmem_putmem_signal_nbi", dest, source, nelems, sig_addr, signal, sig_op, pe);
}

__device__ __forceinline__ uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  vshmem::device::check_symmetric("shmem_signal_fetch", sig_addr, sizeof(uint64_t));
  return vshmem::device::ld_acquire(sig_addr);
}

__device__ __forceinline__ uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp,
                                                            uint64_t cmp_value) {
  return vshmem::device::wait_value("shmem_signal_wait_until", sig_addr, cmp, cmp_value);
}

#define VSHMEMI_DEV_P2P(NAME, TYPE)                                                                \
  __device__ __forceinline__ void shmem_##NAME##_wait_until(TYPE* ivar, int cmp, TYPE cmp_value) { \
    vshmem::device::wait_value("shmem_" #NAME "_wait_until", ivar, cmp, cmp_value);                \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_wait_until_all(                                   \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE cmp_value) {                    \
    vshmem::device::wait_all("shmem_" #NAME "_wait_until_all", ivars, nelems, status, cmp,         \
                             vshmem::device::CmpValues<TYPE>{nullptr, cmp_value});                 \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_wait_until_any(                                 \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE cmp_value) {                    \
    return vshmem::device::wait_any("shmem_" #NAME "_wait_until_any", ivars, nelems, status, cmp,  \
                                    vshmem::device::CmpValues<TYPE>{nullptr, cmp_value});          \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_wait_until_some(                                \
      TYPE* ivars, size_t nelems, size_t* indices, const int* status, int cmp, TYPE cmp_value) {   \
    return vshmem::device::wait_some("shmem_" #NAME "_wait_until_some", ivars, nelems, indices,    \
                                     status, cmp,                                                  \
                                     vshmem::device::CmpValues<TYPE>{nullptr, cmp_value});         \
  }                                                                                                \
  __device__ __forceinline__ void shmem_##NAME##_wait_until_all_vector(                            \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE* cmp_values) {                  \
    vshmem::device::wait_all("shmem_" #NAME "_wait_until_all_vector", ivars, nelems, status, cmp,  \
                             vshmem::device::CmpValues<TYPE>{cmp_values, static_cast<TYPE>(0)});   \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_wait_until_any_vector(                          \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE* cmp_values) {                  \
    return vshmem::device::wait_any(                                                               \
        "shmem_" #NAME "_wait_until_any_vector", ivars, nelems, status, cmp,                       \
        vshmem::device::CmpValues<TYPE>{cmp_values, static_cast<TYPE>(0)});                        \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_wait_until_some_vector(                         \
      TYPE* ivars, size_t nelems, size_t* indices, const int* status, int cmp, TYPE* cmp_values) { \
    return vshmem::device::wait_some(                                                              \
        "shmem_" #NAME "_wait_until_some_vector", ivars, nelems, indices, status, cmp,             \
        vshmem::device::CmpValues<TYPE>{cmp_values, static_cast<TYPE>(0)});                        \
  }                                                                                                \
  __device__ __forceinline__ int shmem_##NAME##_test(TYPE* ivar, int cmp, TYPE cmp_value) {        \
    return vshmem::device::test_all("shmem_" #NAME "_test", ivar, 1, nullptr, cmp,                 \
                                    vshmem::device::CmpValues<TYPE>{nullptr, cmp_value});          \
  }                                                                                                \
  __device__ __forceinline__ int shmem_##NAME##_test_all(                                          \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE cmp_value) {                    \
    return vshmem::device::test_all("shmem_" #NAME "_test_all", ivars, nelems, status, cmp,        \
                                    vshmem::device::CmpValues<TYPE>{nullptr, cmp_value});          \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_test_any(                                       \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE cmp_value) {                    \
    return vshmem::device::test_any("shmem_" #NAME "_test_any", ivars, nelems, status, cmp,        \
                                    vshmem::device::CmpValues<TYPE>{nullptr, cmp_value});          \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_test_some(                                      \
      TYPE* ivars, size_t nelems, size_t* indices, const int* status, int cmp, TYPE cmp_value) {   \
    return vshmem::device::test_some("shmem_" #NAME "_test_some", ivars, nelems, indices, status,  \
                                     cmp, vshmem::device::CmpValues<TYPE>{nullptr, cmp_value});    \
  }                                                                                                \
  __device__ __forceinline__ int shmem_##NAME##_test_all_vector(                                   \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE* cmp_values) {                  \
    return vshmem::device::test_all(                                                               \
        "shmem_" #NAME "_test_all_vector", ivars, nelems, status, cmp,                             \
        vshmem::device::CmpValues<TYPE>{cmp_values, static_cast<TYPE>(0)});                        \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_test_any_vector(                                \
      TYPE* ivars, size_t nelems, const int* status, int cmp, TYPE* cmp_values) {                  \
    return vshmem::device::test_any(                                                               \
        "shmem_" #NAME "_test_any_vector", ivars, nelems, status, cmp,                             \
        vshmem::device::CmpValues<TYPE>{cmp_values, static_cast<TYPE>(0)});                        \
  }                                                                                                \
  __device__ __forceinline__ size_t shmem_##NAME##_test_some_vector(                               \
      TYPE* ivars, size_t nelems, size_t* indices, const int* status, int cmp, TYPE* cmp_values) { \
    return vshmem::device::test_some(                                                              \
        "shmem_" #NAME "_test_some_vector", ivars, nelems, indices, status, cmp,                   \
        vshmem::device::CmpValues<TYPE>{cmp_values, static_cast<TYPE>(0)});                        \
  }
VSHMEMI_DEV_P2P_TYPES(VSHMEMI_DEV_P2P)
#undef VSHMEMI_DEV_P2P

}  // extern "C"
#endif  // __CUDA_ARCH__

// ---- shmemx: signal op, and the _warp / _block forms of put-with-signal (device only). ----
extern "C" {

// Atomically updates pe's signal at sig_addr (SHMEM_SIGNAL_SET / SHMEM_SIGNAL_ADD), after
// every store this thread issued before (as the signal of shmem_put_signal).
__device__ __forceinline__ void shmemx_signal_op(uint64_t* sig_addr, uint64_t signal, int sig_op,
                                                 int pe) {
  vshmem::device::signal_op("shmemx_signal_op", sig_addr, signal, sig_op, pe);
}

#define VSHMEMI_DEV_SIGNAL_TYPED_GROUP(NAME, TYPE, SUFFIX, G)                                      \
  __device__ __forceinline__ void shmemx_##NAME##_put_signal_##SUFFIX(                             \
      TYPE* dest, const TYPE* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,          \
      int sig_op, int pe) {                                                                        \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(G)>("shmemx_" #NAME "_put_signal_" #SUFFIX,     \
                                                       dest, source, nelems * sizeof(TYPE),        \
                                                       sig_addr, signal, sig_op, pe);              \
  }                                                                                                \
  __device__ __forceinline__ void shmemx_##NAME##_put_signal_nbi_##SUFFIX(                         \
      TYPE* dest, const TYPE* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,          \
      int sig_op, int pe) {                                                                        \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(G)>("shmemx_" #NAME "_put_signal_nbi_" #SUFFIX, \
                                                       dest, source, nelems * sizeof(TYPE),        \
                                                       sig_addr, signal, sig_op, pe);              \
  }
#define VSHMEMI_DEV_SIGNAL_TYPED_WARP(NAME, TYPE) \
  VSHMEMI_DEV_SIGNAL_TYPED_GROUP(NAME, TYPE, warp, WarpGroup)
#define VSHMEMI_DEV_SIGNAL_TYPED_BLOCK(NAME, TYPE) \
  VSHMEMI_DEV_SIGNAL_TYPED_GROUP(NAME, TYPE, block, BlockGroup)
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_SIGNAL_TYPED_WARP)
VSHMEMI_DEV_VALUE_TYPES(VSHMEMI_DEV_SIGNAL_TYPED_BLOCK)
#undef VSHMEMI_DEV_SIGNAL_TYPED_WARP
#undef VSHMEMI_DEV_SIGNAL_TYPED_BLOCK
#undef VSHMEMI_DEV_SIGNAL_TYPED_GROUP

#define VSHMEMI_DEV_SIGNAL_MEM_GROUP(SUFFIX, G)                                                   \
  __device__ __forceinline__ void shmemx_putmem_signal_##SUFFIX(                                  \
      void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,         \
      int sig_op, int pe) {                                                                       \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(G)>(                                           \
        "shmemx_putmem_signal_" #SUFFIX, dest, source, nelems, sig_addr, signal, sig_op, pe);     \
  }                                                                                               \
  __device__ __forceinline__ void shmemx_putmem_signal_nbi_##SUFFIX(                              \
      void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,         \
      int sig_op, int pe) {                                                                       \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(G)>(                                           \
        "shmemx_putmem_signal_nbi_" #SUFFIX, dest, source, nelems, sig_addr, signal, sig_op, pe); \
  }
VSHMEMI_DEV_SIGNAL_MEM_GROUP(warp, WarpGroup)
VSHMEMI_DEV_SIGNAL_MEM_GROUP(block, BlockGroup)
#undef VSHMEMI_DEV_SIGNAL_MEM_GROUP

#define VSHMEMI_DEV_SIGNAL_SIZED_GROUP(BITS, BYTES, SUFFIX, G)                                    \
  __device__ __forceinline__ void shmemx_put##BITS##_signal_##SUFFIX(                             \
      void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,         \
      int sig_op, int pe) {                                                                       \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(G)>("shmemx_put" #BITS "_signal_" #SUFFIX,     \
                                                       dest, source, nelems * BYTES, sig_addr,    \
                                                       signal, sig_op, pe);                       \
  }                                                                                               \
  __device__ __forceinline__ void shmemx_put##BITS##_signal_nbi_##SUFFIX(                         \
      void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,         \
      int sig_op, int pe) {                                                                       \
    vshmem::device::put_signal_group<VSHMEMI_DEV_G(G)>("shmemx_put" #BITS "_signal_nbi_" #SUFFIX, \
                                                       dest, source, nelems * BYTES, sig_addr,    \
                                                       signal, sig_op, pe);                       \
  }
#define VSHMEMI_DEV_SIGNAL_SIZED_WARP(BITS, BYTES) \
  VSHMEMI_DEV_SIGNAL_SIZED_GROUP(BITS, BYTES, warp, WarpGroup)
#define VSHMEMI_DEV_SIGNAL_SIZED_BLOCK(BITS, BYTES) \
  VSHMEMI_DEV_SIGNAL_SIZED_GROUP(BITS, BYTES, block, BlockGroup)
VSHMEM_RMA_SIZES(VSHMEMI_DEV_SIGNAL_SIZED_WARP)
VSHMEM_RMA_SIZES(VSHMEMI_DEV_SIGNAL_SIZED_BLOCK)
#undef VSHMEMI_DEV_SIGNAL_SIZED_WARP
#undef VSHMEMI_DEV_SIGNAL_SIZED_BLOCK
#undef VSHMEMI_DEV_SIGNAL_SIZED_GROUP

}  // extern "C"

#endif  // __CUDACC__
