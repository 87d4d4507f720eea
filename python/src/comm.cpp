// Host-side communication: RMA, signals, ordering, barriers, collectives and reductions. The
// package has checked every argument; blocking calls release the GIL.
#include "python/src/bindings.hpp"
#include "shmemx.h"

namespace vshmem::python {
namespace {

void* vp(uintptr_t a) { return reinterpret_cast<void*>(a); }

}  // namespace

// shmem_T_OP_reduce for the element types NumPy has, by (dtype, op); nullptr where OpenSHMEM has
// no such reduction (bitwise ops on floating point, any 16-bit float).
HostReduceFn host_reduce_fn(int dtype, int op) {
#define VSHMEM_PY_FN(NAME, TYPE, OP)                                                             \
  reinterpret_cast<HostReduceFn>(static_cast<int (*)(shmem_team_t, TYPE*, const TYPE*, size_t)>( \
      &shmem_##NAME##_##OP##_reduce))
#define VSHMEM_PY_ALL(NAME, TYPE)                                                                 \
  {                                                                                               \
    VSHMEM_PY_FN(NAME, TYPE, sum), VSHMEM_PY_FN(NAME, TYPE, prod), VSHMEM_PY_FN(NAME, TYPE, min), \
        VSHMEM_PY_FN(NAME, TYPE, max), VSHMEM_PY_FN(NAME, TYPE, and),                             \
        VSHMEM_PY_FN(NAME, TYPE, or), VSHMEM_PY_FN(NAME, TYPE, xor)                               \
  }
#define VSHMEM_PY_REAL(NAME, TYPE)                                                                \
  {                                                                                               \
    VSHMEM_PY_FN(NAME, TYPE, sum), VSHMEM_PY_FN(NAME, TYPE, prod), VSHMEM_PY_FN(NAME, TYPE, min), \
        VSHMEM_PY_FN(NAME, TYPE, max), nullptr, nullptr, nullptr                                  \
  }
  static const HostReduceFn table[][kReduceOpCount] = {
      VSHMEM_PY_ALL(int8, int8_t),     VSHMEM_PY_ALL(int16, int16_t),
      VSHMEM_PY_ALL(int32, int32_t),   VSHMEM_PY_ALL(int64, int64_t),
      VSHMEM_PY_ALL(uint8, uint8_t),   VSHMEM_PY_ALL(uint16, uint16_t),
      VSHMEM_PY_ALL(uint32, uint32_t), VSHMEM_PY_ALL(uint64, uint64_t),
      VSHMEM_PY_REAL(float, float),    VSHMEM_PY_REAL(double, double),
  };
#undef VSHMEM_PY_REAL
#undef VSHMEM_PY_ALL
#undef VSHMEM_PY_FN
  if (dtype < 0 || op < 0 || op >= kReduceOpCount) return nullptr;
  if (dtype >= static_cast<int>(sizeof(table) / sizeof(table[0]))) return nullptr;
  return table[dtype][op];
}

namespace {

// Runs a blocking call without the GIL and raises with the runtime's message on failure.
template <typename F>
void blocking(const char* call, F&& f) {
  shmemx_clear_last_error();
  int rc;
  {
    py::gil_scoped_release nogil;
    rc = f();
  }
  check(rc, call);
}

}  // namespace

void bind_comm(py::module_& m) {
  m.def("putmem", [](uintptr_t d, uintptr_t s, size_t n, int pe) {
    py::gil_scoped_release nogil;
    shmem_putmem(vp(d), vp(s), n, pe);
  });
  m.def("getmem", [](uintptr_t d, uintptr_t s, size_t n, int pe) {
    py::gil_scoped_release nogil;
    shmem_getmem(vp(d), vp(s), n, pe);
  });
  m.def("putmem_nbi", [](uintptr_t d, uintptr_t s, size_t n, int pe) {
    py::gil_scoped_release nogil;
    shmem_putmem_nbi(vp(d), vp(s), n, pe);
  });
  m.def("getmem_nbi", [](uintptr_t d, uintptr_t s, size_t n, int pe) {
    py::gil_scoped_release nogil;
    shmem_getmem_nbi(vp(d), vp(s), n, pe);
  });
  m.def("putmem_signal", [](uintptr_t d, uintptr_t s, size_t n, uintptr_t sig, uint64_t value,
                            int op, int pe, bool nbi) {
    py::gil_scoped_release nogil;
    auto* sa = static_cast<uint64_t*>(vp(sig));
    if (nbi) {
      shmem_putmem_signal_nbi(vp(d), vp(s), n, sa, value, op, pe);
    } else {
      shmem_putmem_signal(vp(d), vp(s), n, sa, value, op, pe);
    }
  });
  m.def("signal_op", [](uintptr_t sig, uint64_t value, int op, int pe) {
    py::gil_scoped_release nogil;
    auto* sa = static_cast<uint64_t*>(vp(sig));
    if (op == SHMEM_SIGNAL_ADD) {
      shmem_uint64_atomic_add(sa, value, pe);
    } else {
      shmem_uint64_atomic_set(sa, value, pe);
    }
  });
  m.def("signal_fetch",
        [](uintptr_t sig) { return shmem_signal_fetch(static_cast<uint64_t*>(vp(sig))); });
  m.def("signal_wait_until", [](uintptr_t sig, int cmp, uint64_t value) {
    py::gil_scoped_release nogil;
    return shmem_signal_wait_until(static_cast<uint64_t*>(vp(sig)), cmp, value);
  });
  m.def("quiet", [] {
    py::gil_scoped_release nogil;
    shmem_quiet();
  });
  m.def("fence", [] { shmem_fence(); });
  m.def("barrier_all", [] {
    py::gil_scoped_release nogil;
    shmem_barrier_all();
  });
  m.def("sync_all", [] {
    py::gil_scoped_release nogil;
    shmem_sync_all();
  });
  m.def("broadcastmem", [](uintptr_t team, uintptr_t d, uintptr_t s, size_t n, int root) {
    blocking("shmem_broadcastmem",
             [&] { return shmem_broadcastmem(team_of(team), vp(d), vp(s), n, root); });
  });
  m.def("fcollectmem", [](uintptr_t team, uintptr_t d, uintptr_t s, size_t n) {
    blocking("shmem_fcollectmem",
             [&] { return shmem_fcollectmem(team_of(team), vp(d), vp(s), n); });
  });
  m.def("alltoallmem", [](uintptr_t team, uintptr_t d, uintptr_t s, size_t n) {
    blocking("shmem_alltoallmem",
             [&] { return shmem_alltoallmem(team_of(team), vp(d), vp(s), n); });
  });
  m.def("has_host_reduce", [](int dtype, int op) { return host_reduce_fn(dtype, op) != nullptr; });
  m.def("reduce", [](uintptr_t team, int op, int dtype, uintptr_t d, uintptr_t s, size_t n) {
    HostReduceFn fn = host_reduce_fn(dtype, op);
    if (fn == nullptr) raise_error("vshmem: no host reduction for this dtype and operation");
    blocking("shmem_reduce", [&] { return fn(team_of(team), vp(d), vp(s), n); });
  });
  m.attr("SIGNAL_SET") = SHMEM_SIGNAL_SET;
  m.attr("SIGNAL_ADD") = SHMEM_SIGNAL_ADD;
  m.attr("CMP_EQ") = SHMEM_CMP_EQ;
  m.attr("CMP_NE") = SHMEM_CMP_NE;
  m.attr("CMP_GT") = SHMEM_CMP_GT;
  m.attr("CMP_GE") = SHMEM_CMP_GE;
  m.attr("CMP_LT") = SHMEM_CMP_LT;
  m.attr("CMP_LE") = SHMEM_CMP_LE;
}

}  // namespace vshmem::python
