// Issue 19, item 9: a device trap on one PE ends the job on every PE the same way, naming it.
// After shmem_init, PE 1 launches a kernel that traps and then computes on the host without ever
// looking at CUDA; the other PEs launch a kernel that waits on the GPU for a flag PE 1 never sets,
// and sit in cudaStreamSynchronize. The runtime's job watch (runtime/api/job_watch.hpp) must end
// PE 1 naming its GPU and CUDA's error, and the others naming PE 1, within seconds. Run outside
// MPS (a trap under MPS ends every client).
//   device_trap       (any launcher; the PEs print "ready" first)
#include <chrono>
#include <cstdio>
#include <thread>

#include "device_test_util.cuh"

using namespace device_test;

__global__ void trap_now() { __trap(); }
__global__ void wait_for_flag(long* flag) { shmem_long_wait_until(flag, SHMEM_CMP_NE, 0); }

int main() {
  require_gpu();
  shmem_init();
  const int me = shmem_my_pe();
  if (shmem_n_pes() < 2) {
    std::printf("needs 2 PEs\n");
    return 2;
  }
  long* flag = static_cast<long*>(shmem_malloc(sizeof(long)));
  CUDA_OK(cudaMemset(flag, 0, sizeof(long)));
  CUDA_OK(cudaDeviceSynchronize());
  shmem_barrier_all();
  std::fprintf(stderr, "device_trap: PE %d ready\n", me);
  const auto t0 = std::chrono::steady_clock::now();
  if (me == 1) {
    trap_now<<<1, 1>>>();
    // Computes without a CUDA call: only the runtime can notice that its GPU is gone.
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "device_trap: PE 1: FAIL: still running 60 s after its kernel trapped\n");
    return 2;
  }
  wait_for_flag<<<1, 1>>>(flag);
  cudaError_t e = cudaStreamSynchronize(0);
  std::fprintf(stderr, "device_trap: PE %d: FAIL: the wait ended (%s) instead of the job\n", me,
               cudaGetErrorString(e));
  return 2;
}
