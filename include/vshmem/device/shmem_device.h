/* The device API: under nvcc, shmem.h includes this header and every OpenSHMEM call that makes
 * sense in a kernel is also a device function with the same name (plus the shmemx _warp/_block
 * forms). Link vshmem::device (find_package(vshmem)) and set CUDA_SEPARABLE_COMPILATION ON on
 * the target with the kernels: vshmem::device adds -rdc=true to its consumers' CUDA sources, but
 * CMake device-links only targets that set the property themselves. By hand: nvcc -rdc=true
 * ... -lvshmem_device -lvshmem -lcudart.
 *
 * How host and device functions with one name coexist: shmem_*.h declare those calls with
 * VSHMEM_HOSTDEV, which is `__host__ __device__` under nvcc. The device definitions below are
 * inline (forceinline) and exist only in the device compilation pass (__CUDA_ARCH__); the host
 * pass sees declarations only, so host calls resolve to libvshmem's C functions and the C ABI
 * for host compilers is unchanged. A `__host__ __device__` function of the application may
 * call either.
 *
 * Requirements: the symmetric heap in GPU memory (VSHMEM_BACKEND=cuda or auto on a GPU); peers
 * reached by device code are those mapped in this PE's window (same node). Kernels reach the
 * symmetric heap only: global and static variables are host memory, symmetric for host calls
 * only (pass heap memory to kernels instead). Device code traps
 * with a message naming the PE, the call, the block and the thread on an invalid PE or an
 * unmapped peer, and, with VSHMEM_DEBUG_DEVICE=1 or in a build without NDEBUG, on addresses
 * outside the symmetric heap. */
#ifndef VSHMEM_DEVICE_SHMEM_DEVICE_H
#define VSHMEM_DEVICE_SHMEM_DEVICE_H

#if defined(__CUDACC__) && defined(__cplusplus)

#include "vshmem/shmem_types.h"

/* Some host declarations may lack VSHMEM_HOSTDEV; redeclaring them __host__ __device__ is what we
 * mean, so the notes about it are silenced here (and only here). */
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20039
#pragma nv_diag_suppress 20040

#include "vshmem/device/impl/state.cuh"
#include "vshmem/device/impl/memory.cuh"
#include "vshmem/device/impl/rma.cuh"
#include "vshmem/device/impl/amo.cuh"
#include "vshmem/device/impl/signal.cuh"
#include "vshmem/device/impl/sync.cuh"
#include "vshmem/device/impl/coll.cuh"
#include "vshmem/device/impl/half.cuh"

#pragma nv_diagnostic pop

#endif
#endif
