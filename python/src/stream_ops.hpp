// On-stream operations of the extension, without Python types: stream_ops.cu (CUDA builds) or
// stream_ops_none.cpp (builds without CUDA, where each call fails with a message saying so).
// Each returns 0, or non-zero after the runtime (or this layer, through shmemx_last_error's
// setter) has recorded a message.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vshmem::python::stream {

// True in CUDA builds.
bool available();
// kUnsupported: the dtype/op pair has no on-stream form.
constexpr int kUnsupported = -2;
int reduce(uintptr_t team, int op, int dtype, uintptr_t dest, uintptr_t source, size_t nreduce,
           uintptr_t stream, bool scatter);
int broadcast(uintptr_t team, uintptr_t dest, uintptr_t source, size_t bytes, int root,
              uintptr_t stream);
int fcollect(uintptr_t team, uintptr_t dest, uintptr_t source, size_t bytes, uintptr_t stream);
int alltoall(uintptr_t team, uintptr_t dest, uintptr_t source, size_t bytes, uintptr_t stream);
int putmem(uintptr_t dest, uintptr_t source, size_t bytes, int pe, uintptr_t stream);
int getmem(uintptr_t dest, uintptr_t source, size_t bytes, int pe, uintptr_t stream);
int putmem_signal(uintptr_t dest, uintptr_t source, size_t bytes, uintptr_t sig, uint64_t value,
                  int sig_op, int pe, uintptr_t stream);
int signal_op(uintptr_t sig, uint64_t value, int sig_op, int pe, uintptr_t stream);
int signal_wait_until(uintptr_t sig, int cmp, uint64_t value, uintptr_t stream);
int quiet(uintptr_t stream);
int barrier_all(uintptr_t stream);
int team_barrier(uintptr_t team, uintptr_t stream);
int synchronize(uintptr_t stream);
// 1 and *device set when addr is GPU memory, 0 when it is not (or there is no GPU).
int device_of(uintptr_t addr, int* device);
// What time_calls times: the on-stream all-reduce (the Python benchmark's C reference), and the
// pieces of its host time: an empty kernel launched as <<<>>> and as the device library launches
// (cudaLaunchKernelEx) and through the driver (cuLaunchKernel), and the device library's
// one-launch call shmemx_barrier_on_stream(team).
enum TimeWhat {
  kTimeReduce = 0,
  kTimeEmptyLaunch = 1,
  kTimeEmptyLaunchEx = 2,
  kTimeBarrier = 3,
  kTimeEmptyDriver = 4,
};
// Times `iters` back-to-back calls from C++: call_us[i], the host's time of call i (a clock read
// after each call, none between), and *gpu_us, the stream's time per call between CUDA events
// around the loop (the stream drained at the end).
int time_calls(int what, uintptr_t team, int op, int dtype, uintptr_t dest, uintptr_t source,
               size_t nreduce, uintptr_t stream, int iters, double* call_us, double* gpu_us);

}  // namespace vshmem::python::stream
