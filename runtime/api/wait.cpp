// Point-to-point synchronization: wait_until and test in their single, _all, _any, _some and
// _vector forms, and the deprecated shmem_wait family. Every wait polls with Backoff; on one node
// with a host heap it sleeps on the PE's data wake word, which the writers' puts and atomics wake
// (wait.hpp: data_backoff), so PEs that outnumber the cores still let the writer run.
#include <atomic>
#include <cstdint>

#include "runtime/api/runtime.hpp"
#include "runtime/api/wait.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

// The comparison operand of element i: one value for all, or one per element (_vector forms).
template <typename T>
struct Operand {
  T scalar;
  const T* vector;
  T at(size_t i) const { return vector != nullptr ? vector[i] : scalar; }
};

template <typename T>
Operand<T> vector_operand(const T* values) {
  return Operand<T>{T{}, values};
}

bool included(const int* status, size_t i) { return status == nullptr || status[i] == 0; }

template <typename T>
Runtime& validate(const char* call, const T* ivars, size_t nelems, int cmp,
                  const Operand<T>& operand, bool is_vector) {
  Runtime& rt = runtime_for(call);
  check_cmp(cmp, call);
  check_ivars(rt, ivars, nelems, call);
  if (is_vector && nelems > 0 && operand.vector == nullptr) fail(call, "cmp_values is NULL");
  return rt;
}

// _any does not always favour the lowest index: each search starts after the last hit, so one
// busy element cannot hide the others.
thread_local size_t t_any_start = 0;

template <typename T>
size_t test_any(Runtime& rt, const char* call, T* ivars, size_t nelems, const int* status, int cmp,
                const Operand<T>& operand) {
  for (size_t k = 0; k < nelems; ++k) {
    size_t i = (t_any_start + k) % nelems;
    if (included(status, i) && compare(load_ivar(rt, &ivars[i], call), cmp, operand.at(i))) {
      t_any_start = i + 1;
      std::atomic_thread_fence(std::memory_order_acquire);
      return i;
    }
  }
  return SIZE_MAX;
}

// Whether an included element meets the condition (no side effects: a wait's re-check before
// it sleeps).
template <typename T>
bool some_met(Runtime& rt, const char* call, T* ivars, size_t nelems, const int* status, int cmp,
              const Operand<T>& operand) {
  for (size_t i = 0; i < nelems; ++i) {
    if (included(status, i) && compare(load_ivar(rt, &ivars[i], call), cmp, operand.at(i))) {
      return true;
    }
  }
  return false;
}

template <typename T>
size_t test_some(Runtime& rt, const char* call, T* ivars, size_t nelems, size_t* indices,
                 const int* status, int cmp, const Operand<T>& operand) {
  size_t count = 0;
  for (size_t i = 0; i < nelems; ++i) {
    if (included(status, i) && compare(load_ivar(rt, &ivars[i], call), cmp, operand.at(i))) {
      indices[count++] = i;
    }
  }
  if (count > 0) std::atomic_thread_fence(std::memory_order_acquire);
  return count;
}

template <typename T>
int test_all(Runtime& rt, const char* call, T* ivars, size_t nelems, const int* status, int cmp,
             const Operand<T>& operand) {
  for (size_t i = 0; i < nelems; ++i) {
    if (included(status, i) && !compare(load_ivar(rt, &ivars[i], call), cmp, operand.at(i))) {
      return 0;
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  return 1;
}

bool any_included(size_t nelems, const int* status) {
  for (size_t i = 0; i < nelems; ++i) {
    if (included(status, i)) return true;
  }
  return false;
}

template <typename T>
void wait_all(const char* call, T* ivars, size_t nelems, const int* status, int cmp,
              const Operand<T>& operand, bool is_vector) {
  Runtime& rt = validate(call, ivars, nelems, cmp, operand, is_vector);
  // Element by element: once an element has satisfied the condition it is not waited on again,
  // even if a later update changes it.
  for (size_t i = 0; i < nelems; ++i) {
    if (!included(status, i)) continue;
    Backoff backoff = data_backoff(rt, call, ivars, nelems * sizeof(T), rt.my_pe);
    auto met = [&] { return compare(load_ivar(rt, &ivars[i], call), cmp, operand.at(i)); };
    while (!met()) backoff.pause(met);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

template <typename T>
size_t wait_any(const char* call, T* ivars, size_t nelems, const int* status, int cmp,
                const Operand<T>& operand, bool is_vector) {
  Runtime& rt = validate(call, ivars, nelems, cmp, operand, is_vector);
  if (!any_included(nelems, status)) return SIZE_MAX;
  Backoff backoff = data_backoff(rt, call, ivars, nelems * sizeof(T), rt.my_pe);
  auto met = [&] { return some_met(rt, call, ivars, nelems, status, cmp, operand); };
  for (;;) {
    size_t i = test_any(rt, call, ivars, nelems, status, cmp, operand);
    if (i != SIZE_MAX) return i;
    backoff.pause(met);
  }
}

template <typename T>
size_t wait_some(const char* call, T* ivars, size_t nelems, size_t* indices, const int* status,
                 int cmp, const Operand<T>& operand, bool is_vector) {
  Runtime& rt = validate(call, ivars, nelems, cmp, operand, is_vector);
  if (!any_included(nelems, status)) return 0;
  if (indices == nullptr) fail(call, "indices is NULL");
  Backoff backoff = data_backoff(rt, call, ivars, nelems * sizeof(T), rt.my_pe);
  auto met = [&] { return some_met(rt, call, ivars, nelems, status, cmp, operand); };
  for (;;) {
    size_t n = test_some(rt, call, ivars, nelems, indices, status, cmp, operand);
    if (n > 0) return n;
    backoff.pause(met);
  }
}

}  // namespace

extern "C" {

#define VSHMEM_DEFINE_WAIT(NAME, TYPE)                                                             \
  void shmem_##NAME##_wait_until(TYPE* ivar, int cmp, TYPE cmp_value) {                            \
    wait_until_one<TYPE>("shmem_" #NAME "_wait_until", ivar, cmp, cmp_value);                      \
  }                                                                                                \
  void shmem_##NAME##_wait_until_all(TYPE* ivars, size_t nelems, const int* status, int cmp,       \
                                     TYPE cmp_value) {                                             \
    wait_all<TYPE>("shmem_" #NAME "_wait_until_all", ivars, nelems, status, cmp,                   \
                   {cmp_value, nullptr}, false);                                                   \
  }                                                                                                \
  size_t shmem_##NAME##_wait_until_any(TYPE* ivars, size_t nelems, const int* status, int cmp,     \
                                       TYPE cmp_value) {                                           \
    return wait_any<TYPE>("shmem_" #NAME "_wait_until_any", ivars, nelems, status, cmp,            \
                          {cmp_value, nullptr}, false);                                            \
  }                                                                                                \
  size_t shmem_##NAME##_wait_until_some(TYPE* ivars, size_t nelems, size_t* indices,               \
                                        const int* status, int cmp, TYPE cmp_value) {              \
    return wait_some<TYPE>("shmem_" #NAME "_wait_until_some", ivars, nelems, indices, status, cmp, \
                           {cmp_value, nullptr}, false);                                           \
  }                                                                                                \
  void shmem_##NAME##_wait_until_all_vector(TYPE* ivars, size_t nelems, const int* status,         \
                                            int cmp, TYPE* cmp_values) {                           \
    wait_all<TYPE>("shmem_" #NAME "_wait_until_all_vector", ivars, nelems, status, cmp,            \
                   vector_operand<TYPE>(cmp_values), true);                                        \
  }                                                                                                \
  size_t shmem_##NAME##_wait_until_any_vector(TYPE* ivars, size_t nelems, const int* status,       \
                                              int cmp, TYPE* cmp_values) {                         \
    return wait_any<TYPE>("shmem_" #NAME "_wait_until_any_vector", ivars, nelems, status, cmp,     \
                          vector_operand<TYPE>(cmp_values), true);                                 \
  }                                                                                                \
  size_t shmem_##NAME##_wait_until_some_vector(TYPE* ivars, size_t nelems, size_t* indices,        \
                                               const int* status, int cmp, TYPE* cmp_values) {     \
    return wait_some<TYPE>("shmem_" #NAME "_wait_until_some_vector", ivars, nelems, indices,       \
                           status, cmp, vector_operand<TYPE>(cmp_values), true);                   \
  }                                                                                                \
  int shmem_##NAME##_test(TYPE* ivar, int cmp, TYPE cmp_value) {                                   \
    constexpr const char* kCall = "shmem_" #NAME "_test";                                          \
    Operand<TYPE> operand{cmp_value, nullptr};                                                     \
    Runtime& rt = validate(kCall, ivar, 1, cmp, operand, false);                                   \
    return test_all(rt, kCall, ivar, 1, nullptr, cmp, operand);                                    \
  }                                                                                                \
  int shmem_##NAME##_test_all(TYPE* ivars, size_t nelems, const int* status, int cmp,              \
                              TYPE cmp_value) {                                                    \
    constexpr const char* kCall = "shmem_" #NAME "_test_all";                                      \
    Operand<TYPE> operand{cmp_value, nullptr};                                                     \
    Runtime& rt = validate(kCall, ivars, nelems, cmp, operand, false);                             \
    return test_all(rt, kCall, ivars, nelems, status, cmp, operand);                               \
  }                                                                                                \
  size_t shmem_##NAME##_test_any(TYPE* ivars, size_t nelems, const int* status, int cmp,           \
                                 TYPE cmp_value) {                                                 \
    constexpr const char* kCall = "shmem_" #NAME "_test_any";                                      \
    Operand<TYPE> operand{cmp_value, nullptr};                                                     \
    Runtime& rt = validate(kCall, ivars, nelems, cmp, operand, false);                             \
    return test_any(rt, kCall, ivars, nelems, status, cmp, operand);                               \
  }                                                                                                \
  size_t shmem_##NAME##_test_some(TYPE* ivars, size_t nelems, size_t* indices, const int* status,  \
                                  int cmp, TYPE cmp_value) {                                       \
    constexpr const char* kCall = "shmem_" #NAME "_test_some";                                     \
    Operand<TYPE> operand{cmp_value, nullptr};                                                     \
    Runtime& rt = validate(kCall, ivars, nelems, cmp, operand, false);                             \
    if (nelems > 0 && indices == nullptr) fail(kCall, "indices is NULL");                          \
    return test_some(rt, kCall, ivars, nelems, indices, status, cmp, operand);                     \
  }                                                                                                \
  int shmem_##NAME##_test_all_vector(TYPE* ivars, size_t nelems, const int* status, int cmp,       \
                                     TYPE* cmp_values) {                                           \
    constexpr const char* kCall = "shmem_" #NAME "_test_all_vector";                               \
    Operand<TYPE> operand = vector_operand<TYPE>(cmp_values);                                      \
    Runtime& rt = validate(kCall, ivars, nelems, cmp, operand, true);                              \
    return test_all(rt, kCall, ivars, nelems, status, cmp, operand);                               \
  }                                                                                                \
  size_t shmem_##NAME##_test_any_vector(TYPE* ivars, size_t nelems, const int* status, int cmp,    \
                                        TYPE* cmp_values) {                                        \
    constexpr const char* kCall = "shmem_" #NAME "_test_any_vector";                               \
    Operand<TYPE> operand = vector_operand<TYPE>(cmp_values);                                      \
    Runtime& rt = validate(kCall, ivars, nelems, cmp, operand, true);                              \
    return test_any(rt, kCall, ivars, nelems, status, cmp, operand);                               \
  }                                                                                                \
  size_t shmem_##NAME##_test_some_vector(TYPE* ivars, size_t nelems, size_t* indices,              \
                                         const int* status, int cmp, TYPE* cmp_values) {           \
    constexpr const char* kCall = "shmem_" #NAME "_test_some_vector";                              \
    Operand<TYPE> operand = vector_operand<TYPE>(cmp_values);                                      \
    Runtime& rt = validate(kCall, ivars, nelems, cmp, operand, true);                              \
    if (nelems > 0 && indices == nullptr) fail(kCall, "indices is NULL");                          \
    return test_some(rt, kCall, ivars, nelems, indices, status, cmp, operand);                     \
  }
VSHMEM_P2P_TYPES(VSHMEM_DEFINE_WAIT)

#define VSHMEM_DEFINE_WAIT_DEPRECATED(NAME, TYPE)                                \
  void shmem_##NAME##_wait(TYPE* ivar, TYPE cmp_value) {                         \
    wait_until_one<TYPE>("shmem_" #NAME "_wait", ivar, SHMEM_CMP_NE, cmp_value); \
  }
VSHMEM_DEFINE_WAIT_DEPRECATED(short, short)
VSHMEM_DEFINE_WAIT_DEPRECATED(int, int)
VSHMEM_DEFINE_WAIT_DEPRECATED(long, long)
VSHMEM_DEFINE_WAIT_DEPRECATED(longlong, long long)

void shmem_wait(long* ivar, long cmp_value) {
  wait_until_one<long>("shmem_wait", ivar, SHMEM_CMP_NE, cmp_value);
}

void shmem_wait_until(long* ivar, int cmp, long cmp_value) {
  wait_until_one<long>("shmem_wait_until", ivar, cmp, cmp_value);
}

}  // extern "C"
