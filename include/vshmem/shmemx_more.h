/* vshmem GPU extensions implemented by libvshmem_device (link vshmem::device): collective
 * launch and on-stream host calls. The device-side shmemx calls (_warp/_block forms,
 * shmemx_signal_op, team barriers) come with shmem.h under nvcc (vshmem/device/shmem_device.h).
 *
 * On-stream calls enqueue their work on `stream` and return at once; they are ordered with the
 * stream's other work and may be captured into CUDA graphs (each replay performs the operation
 * again, barriers included). Every PE must enqueue the same sequence of collective on-stream
 * calls (barriers, syncs, collectives), in the same order as its in-kernel ones. Each returns 0,
 * or non-zero with a message naming the PE, the call and the cause. */
#ifndef VSHMEM_SHMEMX_MORE_H
#define VSHMEM_SHMEMX_MORE_H

#include "vshmem/shmem_types.h"
#include "vshmem/shmem_wait.h"

#if defined(__CUDACC__) || __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>

VSHMEM_BEGIN_C

/* Launches `func` with every block resident at once (cudaLaunchCooperativeKernel), which kernels
 * that wait on each other across blocks or PEs need. With k PEs sharing the GPU the grid may use
 * at most 1/k of what the GPU can hold, so that all PEs' grids fit together; a larger grid is
 * refused (non-zero return) rather than risking a deadlock. A zero grid (gridDims.x == 0) asks
 * for the largest grid allowed. */
int shmemx_collective_launch(const void* func, dim3 gridDims, dim3 blockDims, void** args,
                             size_t sharedMem, cudaStream_t stream);
/* *gridsize = the largest number of blocks of `func` shmemx_collective_launch accepts. */
int shmemx_collective_launch_query_gridsize(const void* func, dim3 blockDims, void** args,
                                            size_t sharedMem, int* gridsize);

/* RMA and signals on a stream. source is any memory the device can read. */
int shmemx_putmem_on_stream(void* dest, const void* source, size_t nelems, int pe,
                            cudaStream_t stream);
int shmemx_getmem_on_stream(void* dest, const void* source, size_t nelems, int pe,
                            cudaStream_t stream);
/* The signal is updated after the data has arrived, never before. */
int shmemx_putmem_signal_on_stream(void* dest, const void* source, size_t nelems,
                                   uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                   cudaStream_t stream);
int shmemx_signal_op_on_stream(uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                               cudaStream_t stream);
/* Later work on the stream waits until the local signal satisfies the comparison. */
int shmemx_signal_wait_until_on_stream(uint64_t* sig_addr, int cmp, uint64_t cmp_value,
                                       cudaStream_t stream);
/* The _nbi forms: on a stream every operation completes in stream order, so these are the blocking
 * forms (NVSHMEM's names). */
int shmemx_putmem_nbi_on_stream(void* dest, const void* source, size_t nelems, int pe,
                                cudaStream_t stream);
int shmemx_getmem_nbi_on_stream(void* dest, const void* source, size_t nelems, int pe,
                                cudaStream_t stream);
int shmemx_putmem_signal_nbi_on_stream(void* dest, const void* source, size_t nelems,
                                       uint64_t* sig_addr, uint64_t signal, int sig_op, int pe,
                                       cudaStream_t stream);
/* Typed RMA on a stream (nelems elements), the single-element put (`value` is captured when the
 * call is made), and the point-to-point wait: later work on the stream waits until the local
 * *ivar satisfies the comparison. */
#define VSHMEMX_DECLARE_RMA_ON_STREAM(NAME, TYPE)                                              \
  int shmemx_##NAME##_put_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe,     \
                                    cudaStream_t stream);                                      \
  int shmemx_##NAME##_get_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe,     \
                                    cudaStream_t stream);                                      \
  int shmemx_##NAME##_put_nbi_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe, \
                                        cudaStream_t stream);                                  \
  int shmemx_##NAME##_get_nbi_on_stream(TYPE* dest, const TYPE* source, size_t nelems, int pe, \
                                        cudaStream_t stream);                                  \
  int shmemx_##NAME##_p_on_stream(TYPE* dest, TYPE value, int pe, cudaStream_t stream);
VSHMEM_RMA_DEVICE_TYPES(VSHMEMX_DECLARE_RMA_ON_STREAM)
#define VSHMEMX_DECLARE_WAIT_ON_STREAM(NAME, TYPE)                              \
  int shmemx_##NAME##_wait_until_on_stream(TYPE* ivar, int cmp, TYPE cmp_value, \
                                           cudaStream_t stream);
VSHMEM_P2P_TYPES(VSHMEMX_DECLARE_WAIT_ON_STREAM)
/* NVSHMEM's team barrier on a stream: quiet, then synchronize the team. */
int shmemx_barrier_on_stream(shmem_team_t team, cudaStream_t stream);
int shmemx_quiet_on_stream(cudaStream_t stream);
int shmemx_barrier_all_on_stream(cudaStream_t stream);
int shmemx_sync_all_on_stream(cudaStream_t stream);
int shmemx_team_sync_on_stream(shmem_team_t team, cudaStream_t stream);

/* Collectives on a stream (any team of this PE), as their device forms. The team is looked up
 * when the operation runs on the stream: destroy a team only after the streams that use it (and
 * graphs that name it) are done with it. */
int shmemx_broadcastmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                  int PE_root, cudaStream_t stream);
int shmemx_fcollectmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                 cudaStream_t stream);
int shmemx_alltoallmem_on_stream(shmem_team_t team, void* dest, const void* source, size_t nelems,
                                 cudaStream_t stream);

/* Typed forms (nelems elements; NVSHMEM's names). */
#define VSHMEMX_DECLARE_COLL_ON_STREAM(NAME, TYPE)                                           \
  int shmemx_##NAME##_broadcast_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                          size_t nelems, int PE_root, cudaStream_t stream);  \
  int shmemx_##NAME##_fcollect_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source,  \
                                         size_t nelems, cudaStream_t stream);                \
  int shmemx_##NAME##_alltoall_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source,  \
                                         size_t nelems, cudaStream_t stream);
VSHMEM_RMA_DEVICE_TYPES(VSHMEMX_DECLARE_COLL_ON_STREAM)

#define VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, OP)                                         \
  int shmemx_##NAME##_##OP##_reduce_on_stream(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                              size_t nreduce, cudaStream_t stream);
#define VSHMEMX_DECLARE_REDUCE_ON_STREAM_ALL(NAME, TYPE) \
  VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, sum)      \
  VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, prod)     \
  VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, min)      \
  VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, max)
#define VSHMEMX_DECLARE_REDUCE_ON_STREAM_BITWISE(NAME, TYPE) \
  VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, and)          \
  VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, or)           \
  VSHMEMX_DECLARE_REDUCE_ON_STREAM(NAME, TYPE, xor)
/* On-stream reductions for the common types. */
#define VSHMEMX_REDUCE_ON_STREAM_TYPES(X) \
  X(int, int)                             \
  X(long, long)                           \
  X(longlong, long long)                  \
  X(float, float)                         \
  X(double, double)                       \
  X(int32, int32_t)                       \
  X(int64, int64_t)                       \
  X(uint32, uint32_t)                     \
  X(uint64, uint64_t)                     \
  X(size, size_t)
#define VSHMEMX_REDUCE_ON_STREAM_BITWISE_TYPES(X) \
  X(int32, int32_t)                               \
  X(int64, int64_t)                               \
  X(uint32, uint32_t)                             \
  X(uint64, uint64_t)                             \
  X(size, size_t)
VSHMEMX_REDUCE_ON_STREAM_TYPES(VSHMEMX_DECLARE_REDUCE_ON_STREAM_ALL)
VSHMEMX_REDUCE_ON_STREAM_BITWISE_TYPES(VSHMEMX_DECLARE_REDUCE_ON_STREAM_BITWISE)

/* Reduce-scatter on a stream (the types and operations of the on-stream reductions): source holds
 * one block of nreduce elements per team member; member j's dest receives the combination, in team
 * order, of block j of every member's source. dest and source must not overlap. */
#define VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, OP) \
  int shmemx_##NAME##_##OP##_reducescatter_on_stream(           \
      shmem_team_t team, TYPE* dest, const TYPE* source, size_t nreduce, cudaStream_t stream);
#define VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM_ALL(NAME, TYPE) \
  VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, sum)      \
  VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, prod)     \
  VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, min)      \
  VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, max)
#define VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM_BITWISE(NAME, TYPE) \
  VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, and)          \
  VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, or)           \
  VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM(NAME, TYPE, xor)
VSHMEMX_REDUCE_ON_STREAM_TYPES(VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM_ALL)
VSHMEMX_REDUCE_ON_STREAM_BITWISE_TYPES(VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM_BITWISE)

/* Kernels loaded at run time (cuModuleLoad*, cuLibraryLoad*: cubins, NVRTC, Triton) see the device
 * state once their module or library is registered here: its own copy of the state (the
 * __constant__ vshmemi_device_state, present when its device code was linked with
 * libvshmem_device) is filled now and after every change (heap growth, teams, finalize). Call
 * after shmem_init, and *_finalize before unloading the module. 0, or non-zero with a message
 * (for instance when the module does not define the state). */
#if __has_include(<cuda.h>)
#include <cuda.h>
int shmemx_cumodule_init(CUmodule module);
int shmemx_cumodule_finalize(CUmodule module);
int shmemx_culibrary_init(CUlibrary library);
int shmemx_culibrary_finalize(CUlibrary library);
#endif

/* 1 when this PE shares its GPU with another PE of the job and no MPS server serves the GPU
 * (cross-PE waits in kernels then cost a time slice, ~2 ms, each); 0 otherwise. Valid after
 * shmem_init. */
int shmemx_gpu_shared_without_mps(void);
/* How many PEs of the job (this one included) have their heap on this PE's GPU; 0 before
 * shmem_init. */
int shmemx_pes_sharing_gpu(void);

VSHMEM_END_C

/* 16-bit floating point (C++ only: the CUDA types are C++ classes): reductions and reduce-scatters
 * on a stream, combining in float and rounding once (the device forms are in shmem.h under nvcc).
 */
#if defined(__cplusplus) && __has_include(<cuda_fp16.h>) && __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define VSHMEMX_HALF_ON_STREAM_TYPES(X) X(half, __half) X(bfloat16, __nv_bfloat16)
extern "C" {
VSHMEMX_HALF_ON_STREAM_TYPES(VSHMEMX_DECLARE_REDUCE_ON_STREAM_ALL)
VSHMEMX_HALF_ON_STREAM_TYPES(VSHMEMX_DECLARE_REDUCESCATTER_ON_STREAM_ALL)
}
#endif

#endif /* CUDA headers */
#endif
