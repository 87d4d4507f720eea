// The on-stream calls as Python functions (stream_ops.hpp does the work). Streams are passed as
// integers (cudaStream_t values); the package turns torch streams and __cuda_stream__ objects
// into them. The calls only enqueue work, so the GIL is kept.
#include <string>
#include <vector>

#include "python/src/bindings.hpp"
#include "python/src/stream_ops.hpp"
#include "shmemx.h"

namespace vshmem::python {
namespace {

void run(int rc, const char* call) {
  if (rc == stream::kUnsupported) {
    raise_error(std::string("vshmem: ") + call +
                ": no on-stream form for this dtype and operation");
  }
  check(rc, call);
}

}  // namespace

void bind_stream(py::module_& m) {
  m.attr("HAVE_CUDA") = stream::available();
  m.def("has_stream_reduce", [](int dtype, int op, bool scatter) {
    // Asking with a null team answers from the table alone, without a call.
    return stream::available() && dtype >= 0 && dtype < kDtypeCount && op >= 0 &&
           op < kReduceOpCount && !(dtype == 0 || dtype == 1 || dtype == 4 || dtype == 5) &&
           !(op >= 4 && dtype >= 8);
  });
  m.def("reduce_on_stream", [](uintptr_t team, int op, int dtype, uintptr_t d, uintptr_t s,
                               size_t n, uintptr_t st, bool scatter) {
    shmemx_clear_last_error();
    run(stream::reduce(team, op, dtype, d, s, n, st, scatter),
        scatter ? "reducescatter_on_stream" : "reduce_on_stream");
  });
  m.def("broadcast_on_stream",
        [](uintptr_t team, uintptr_t d, uintptr_t s, size_t n, int root, uintptr_t st) {
          shmemx_clear_last_error();
          run(stream::broadcast(team, d, s, n, root, st), "shmemx_broadcastmem_on_stream");
        });
  m.def("fcollect_on_stream", [](uintptr_t team, uintptr_t d, uintptr_t s, size_t n, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::fcollect(team, d, s, n, st), "shmemx_fcollectmem_on_stream");
  });
  m.def("alltoall_on_stream", [](uintptr_t team, uintptr_t d, uintptr_t s, size_t n, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::alltoall(team, d, s, n, st), "shmemx_alltoallmem_on_stream");
  });
  m.def("putmem_on_stream", [](uintptr_t d, uintptr_t s, size_t n, int pe, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::putmem(d, s, n, pe, st), "shmemx_putmem_on_stream");
  });
  m.def("getmem_on_stream", [](uintptr_t d, uintptr_t s, size_t n, int pe, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::getmem(d, s, n, pe, st), "shmemx_getmem_on_stream");
  });
  m.def("putmem_signal_on_stream", [](uintptr_t d, uintptr_t s, size_t n, uintptr_t sig,
                                      uint64_t value, int op, int pe, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::putmem_signal(d, s, n, sig, value, op, pe, st), "shmemx_putmem_signal_on_stream");
  });
  m.def("signal_op_on_stream", [](uintptr_t sig, uint64_t value, int op, int pe, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::signal_op(sig, value, op, pe, st), "shmemx_signal_op_on_stream");
  });
  m.def("signal_wait_until_on_stream", [](uintptr_t sig, int cmp, uint64_t value, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::signal_wait_until(sig, cmp, value, st), "shmemx_signal_wait_until_on_stream");
  });
  m.def("quiet_on_stream", [](uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::quiet(st), "shmemx_quiet_on_stream");
  });
  m.def("barrier_all_on_stream", [](uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::barrier_all(st), "shmemx_barrier_all_on_stream");
  });
  m.def("team_barrier_on_stream", [](uintptr_t team, uintptr_t st) {
    shmemx_clear_last_error();
    run(stream::team_barrier(team, st), "shmemx_barrier_on_stream");
  });
  m.def("stream_synchronize", [](uintptr_t st) {
    shmemx_clear_last_error();
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = stream::synchronize(st);
    }
    run(rc, "cudaStreamSynchronize");
  });
  // (is GPU memory, device ordinal)
  m.def("device_of", [](uintptr_t addr) {
    int device = -1;
    const bool gpu = stream::device_of(addr, &device) == 1;
    return py::make_tuple(gpu, device);
  });
  // The benchmark's C reference (bench/python_allreduce.py): `iters` calls from a C++ loop, what
  // being stream::TimeWhat. Returns ([host us of each call], GPU us per call).
  m.attr("TIME_REDUCE") = static_cast<int>(stream::kTimeReduce);
  m.attr("TIME_EMPTY_LAUNCH") = static_cast<int>(stream::kTimeEmptyLaunch);
  m.attr("TIME_EMPTY_LAUNCH_EX") = static_cast<int>(stream::kTimeEmptyLaunchEx);
  m.attr("TIME_BARRIER") = static_cast<int>(stream::kTimeBarrier);
  m.attr("TIME_EMPTY_LAUNCH_DRIVER") = static_cast<int>(stream::kTimeEmptyDriver);
  m.def("time_calls_from_c", [](int what, uintptr_t team, int op, int dtype, uintptr_t d,
                                uintptr_t s, size_t n, uintptr_t st, int iters) {
    if (what < stream::kTimeReduce || what > stream::kTimeEmptyDriver) {
      raise_error("vshmem: time_calls_from_c: unknown TIME_* value " + std::to_string(what));
    }
    shmemx_clear_last_error();
    std::vector<double> call_us(static_cast<size_t>(iters > 0 ? iters : 0));
    double gpu_us = 0;
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = stream::time_calls(what, team, op, dtype, d, s, n, st, iters, call_us.data(), &gpu_us);
    }
    run(rc, "time_calls_from_c");
    py::list out;
    for (double us : call_us) out.append(us);
    return py::make_tuple(out, gpu_us);
  });
}

}  // namespace vshmem::python
