// On-stream operations for the Python package: dispatch by dtype and operation to
// libvshmem_device's shmemx_*_on_stream calls. Compiled by nvcc so that the extension gets the
// device link step libvshmem_device needs; no Python types here.
#include <cuda.h>  // driver types only: the driver call goes through the runtime's entry point
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "python/src/bindings_dtype.hpp"
#include "python/src/stream_ops.hpp"
#include "shmemx.h"
#include "vshmem/device_hooks.h"

namespace vshmem::python::stream {
namespace {

cudaStream_t cs(uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }
void* vp(uintptr_t a) { return reinterpret_cast<void*>(a); }
shmem_team_t team_of(uintptr_t t) { return reinterpret_cast<shmem_team_t>(t); }

using ReduceFn = int (*)(shmem_team_t, void*, const void*, size_t, cudaStream_t);

#define VSHMEM_PY_FN(NAME, TYPE, OP, KIND)                                          \
  reinterpret_cast<ReduceFn>(                                                       \
      static_cast<int (*)(shmem_team_t, TYPE*, const TYPE*, size_t, cudaStream_t)>( \
          &shmemx_##NAME##_##OP##_##KIND##_on_stream))
#define VSHMEM_PY_ARITH(NAME, TYPE, KIND)                                    \
  VSHMEM_PY_FN(NAME, TYPE, sum, KIND), VSHMEM_PY_FN(NAME, TYPE, prod, KIND), \
      VSHMEM_PY_FN(NAME, TYPE, min, KIND), VSHMEM_PY_FN(NAME, TYPE, max, KIND)
#define VSHMEM_PY_ALL(NAME, TYPE, KIND)                                         \
  {                                                                             \
    VSHMEM_PY_ARITH(NAME, TYPE, KIND), VSHMEM_PY_FN(NAME, TYPE, and, KIND),     \
        VSHMEM_PY_FN(NAME, TYPE, or, KIND), VSHMEM_PY_FN(NAME, TYPE, xor, KIND) \
  }
#define VSHMEM_PY_REAL(NAME, TYPE, KIND) \
  { VSHMEM_PY_ARITH(NAME, TYPE, KIND), nullptr, nullptr, nullptr }
#define VSHMEM_PY_NONE \
  { nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr }
#define VSHMEM_PY_TABLE(KIND)                                                             \
  {                                                                                       \
    VSHMEM_PY_NONE, VSHMEM_PY_NONE, VSHMEM_PY_ALL(int32, int32_t, KIND),                  \
        VSHMEM_PY_ALL(int64, int64_t, KIND), VSHMEM_PY_NONE, VSHMEM_PY_NONE,              \
        VSHMEM_PY_ALL(uint32, uint32_t, KIND), VSHMEM_PY_ALL(uint64, uint64_t, KIND),     \
        VSHMEM_PY_REAL(float, float, KIND), VSHMEM_PY_REAL(double, double, KIND),         \
        VSHMEM_PY_REAL(half, __half, KIND), VSHMEM_PY_REAL(bfloat16, __nv_bfloat16, KIND) \
  }

// Indexed by Dtype, then ReduceOp (bindings_dtype.hpp): int8/int16/uint8/uint16 have no
// on-stream reductions.
const ReduceFn kReduce[kDtypeCount][kReduceOpCount] = VSHMEM_PY_TABLE(reduce);
const ReduceFn kReduceScatter[kDtypeCount][kReduceOpCount] = VSHMEM_PY_TABLE(reducescatter);

int cuda_failed(const char* call, cudaError_t e) {
  char line[512];
  std::snprintf(line, sizeof(line), "vshmem: PE %d: %s: %s", shmem_my_pe(), call,
                cudaGetErrorString(e));
  vshmemi_set_last_error(line);
  return 1;
}

ReduceFn reduce_fn(int op, int dtype, bool scatter) {
  if (dtype < 0 || dtype >= kDtypeCount || op < 0 || op >= kReduceOpCount) return nullptr;
  return scatter ? kReduceScatter[dtype][op] : kReduce[dtype][op];
}

}  // namespace

bool available() { return true; }

int reduce(uintptr_t team, int op, int dtype, uintptr_t dest, uintptr_t source, size_t nreduce,
           uintptr_t stream, bool scatter) {
  ReduceFn fn = reduce_fn(op, dtype, scatter);
  if (fn == nullptr) return kUnsupported;
  return fn(team_of(team), vp(dest), vp(source), nreduce, cs(stream));
}

int broadcast(uintptr_t team, uintptr_t dest, uintptr_t source, size_t bytes, int root,
              uintptr_t stream) {
  return shmemx_broadcastmem_on_stream(team_of(team), vp(dest), vp(source), bytes, root,
                                       cs(stream));
}
int fcollect(uintptr_t team, uintptr_t dest, uintptr_t source, size_t bytes, uintptr_t stream) {
  return shmemx_fcollectmem_on_stream(team_of(team), vp(dest), vp(source), bytes, cs(stream));
}
int alltoall(uintptr_t team, uintptr_t dest, uintptr_t source, size_t bytes, uintptr_t stream) {
  return shmemx_alltoallmem_on_stream(team_of(team), vp(dest), vp(source), bytes, cs(stream));
}
int putmem(uintptr_t dest, uintptr_t source, size_t bytes, int pe, uintptr_t stream) {
  return shmemx_putmem_on_stream(vp(dest), vp(source), bytes, pe, cs(stream));
}
int getmem(uintptr_t dest, uintptr_t source, size_t bytes, int pe, uintptr_t stream) {
  return shmemx_getmem_on_stream(vp(dest), vp(source), bytes, pe, cs(stream));
}
int putmem_signal(uintptr_t dest, uintptr_t source, size_t bytes, uintptr_t sig, uint64_t value,
                  int sig_op, int pe, uintptr_t stream) {
  return shmemx_putmem_signal_on_stream(
      vp(dest), vp(source), bytes, static_cast<uint64_t*>(vp(sig)), value, sig_op, pe, cs(stream));
}
int signal_op(uintptr_t sig, uint64_t value, int sig_op, int pe, uintptr_t stream) {
  return shmemx_signal_op_on_stream(static_cast<uint64_t*>(vp(sig)), value, sig_op, pe, cs(stream));
}
int signal_wait_until(uintptr_t sig, int cmp, uint64_t value, uintptr_t stream) {
  return shmemx_signal_wait_until_on_stream(static_cast<uint64_t*>(vp(sig)), cmp, value,
                                            cs(stream));
}
int quiet(uintptr_t stream) { return shmemx_quiet_on_stream(cs(stream)); }
int barrier_all(uintptr_t stream) { return shmemx_barrier_all_on_stream(cs(stream)); }
int team_barrier(uintptr_t team, uintptr_t stream) {
  return shmemx_barrier_on_stream(team_of(team), cs(stream));
}
int synchronize(uintptr_t stream) {
  cudaError_t e = cudaStreamSynchronize(cs(stream));
  return e == cudaSuccess ? 0 : cuda_failed("cudaStreamSynchronize", e);
}

int device_of(uintptr_t addr, int* device) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, vp(addr)) != cudaSuccess) {
    cudaGetLastError();  // no driver or not a CUDA pointer: host memory
    return 0;
  }
  if (attr.type != cudaMemoryTypeDevice) return 0;
  *device = attr.device;
  return 1;
}

namespace {

// The launch floor of this machine, for the benchmark's account of the C call's host time: a
// kernel that does nothing, launched as <<<>>> and as the device library launches its kernels
// (cudaLaunchKernelEx with a launch configuration).
__global__ void empty_kernel() {}

int launch_empty(cudaStream_t stream, bool ex) {
  cudaError_t e;
  if (ex) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(1);
    config.stream = stream;
    e = cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(&empty_kernel), nullptr);
  } else {
    empty_kernel<<<1, 1, 0, stream>>>();
    e = cudaPeekAtLastError();
  }
  return e == cudaSuccess ? 0 : cuda_failed(ex ? "cudaLaunchKernelExC" : "empty kernel launch", e);
}

// The same kernel through the driver's cuLaunchKernel with its CUfunction looked up once: what a
// launch costs without the runtime's layer.
int launch_empty_driver(cudaStream_t stream) {
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
  static Launch launch = nullptr;
  static cudaFunction_t fn = nullptr;
  if (launch == nullptr) {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &q);
    if (e == cudaSuccess && q != cudaDriverEntryPointSuccess) e = cudaErrorSymbolNotFound;
    if (e != cudaSuccess) return cuda_failed("cudaGetDriverEntryPointByVersion(cuLaunchKernel)", e);
    e = cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&empty_kernel));
    if (e != cudaSuccess) return cuda_failed("cudaGetFuncBySymbol", e);
    launch = reinterpret_cast<Launch>(entry);
  }
  const CUresult r = launch(reinterpret_cast<CUfunction>(fn), 1, 1, 1, 1, 1, 1, 0,
                            reinterpret_cast<CUstream>(stream), nullptr, nullptr);
  if (r == CUDA_SUCCESS) return 0;
  char line[160];
  std::snprintf(line, sizeof(line), "vshmem: PE %d: cuLaunchKernel: CUresult %d", shmem_my_pe(),
                static_cast<int>(r));
  vshmemi_set_last_error(line);
  return 1;
}

}  // namespace

int time_calls(int what, uintptr_t team, int op, int dtype, uintptr_t dest, uintptr_t source,
               size_t nreduce, uintptr_t stream, int iters, double* call_us, double* gpu_us) {
  ReduceFn fn = reduce_fn(op, dtype, false);
  if (what == kTimeReduce && fn == nullptr) return kUnsupported;
  if (iters < 1) return 0;
  cudaEvent_t start, stop;
  cudaError_t e = cudaEventCreate(&start);
  if (e != cudaSuccess) return cuda_failed("cudaEventCreate", e);
  e = cudaEventCreate(&stop);
  if (e != cudaSuccess) {
    cudaEventDestroy(start);
    return cuda_failed("cudaEventCreate", e);
  }
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> stamp(static_cast<size_t>(iters) + 1);
  int rc = 0;
  e = cudaEventRecord(start, cs(stream));
  stamp[0] = Clock::now();
  for (int i = 0; i < iters && rc == 0 && e == cudaSuccess; ++i) {
    switch (what) {
      case kTimeReduce: rc = fn(team_of(team), vp(dest), vp(source), nreduce, cs(stream)); break;
      case kTimeEmptyLaunch:
      case kTimeEmptyLaunchEx: rc = launch_empty(cs(stream), what == kTimeEmptyLaunchEx); break;
      case kTimeEmptyDriver: rc = launch_empty_driver(cs(stream)); break;
      default: rc = shmemx_barrier_on_stream(team_of(team), cs(stream)); break;
    }
    stamp[static_cast<size_t>(i) + 1] = Clock::now();
  }
  if (rc == 0 && e == cudaSuccess) e = cudaEventRecord(stop, cs(stream));
  if (rc == 0 && e == cudaSuccess) e = cudaEventSynchronize(stop);
  float ms = 0;
  if (rc == 0 && e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (rc != 0) return rc;
  if (e != cudaSuccess) return cuda_failed("time_calls", e);
  for (int i = 0; i < iters; ++i) {
    call_us[i] = std::chrono::duration<double, std::micro>(stamp[static_cast<size_t>(i) + 1] -
                                                           stamp[static_cast<size_t>(i)])
                     .count();
  }
  *gpu_us = 1000.0 * ms / iters;
  return 0;
}

}  // namespace vshmem::python::stream
