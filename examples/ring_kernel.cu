// A ring inside one kernel: every PE passes a token around the ring `laps` times with
// shmem_int_p + shmem_signal (put_signal), each hop adding the PE number; the result is checked
// against the same computation done by one PE alone.
//   vshmemrun -n 4 ./ring_kernel [laps]
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>

#include <cstdio>
#include <cstdlib>

__global__ void ring(int* token, uint64_t* sig, int laps, int* result) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n;
  for (int lap = 0; lap < laps; ++lap) {
    int value;
    if (me == 0 && lap == 0) {
      value = 0;
    } else {
      // Hop number h = lap * n + me arrives with signal value h (PE 0 waits for the previous lap).
      shmem_signal_wait_until(sig, SHMEM_CMP_GE, static_cast<uint64_t>(lap * n + me));
      value = *token;
    }
    value += me + 1;
    const int hop = lap * n + me + 1;
    if (!(me == n - 1 && lap == laps - 1)) {
      shmem_int_put_signal(token, &value, 1, sig, static_cast<uint64_t>(hop), SHMEM_SIGNAL_SET,
                           next);
    } else {
      *result = value;
    }
  }
}

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("ring_kernel: no CUDA device, skipped\n");
    return 77;
  }
  const int laps = argc > 1 ? std::atoi(argv[1]) : 10;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  int* token = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  int* result = nullptr;
  cudaMalloc(&result, sizeof(int));
  cudaMemset(result, 0, sizeof(int));
  cudaDeviceSynchronize();
  shmem_barrier_all();
  ring<<<1, 1>>>(token, sig, laps, result);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "PE %d: ring kernel: %s\n", me, cudaGetErrorString(e));
    shmem_global_exit(1);
  }
  int got = 0;
  cudaMemcpy(&got, result, sizeof(int), cudaMemcpyDeviceToHost);
  // The single-PE reference: the same hops, in order, in one loop.
  int want = 0;
  for (int lap = 0; lap < laps; ++lap) {
    for (int pe = 0; pe < n; ++pe) want += pe + 1;
  }
  int status = 0;
  if (me == n - 1) {
    std::printf("ring_kernel: %d PEs, %d laps: token %d (reference %d)\n", n, laps, got, want);
    status = got == want ? 0 : 1;
  }
  shmem_barrier_all();
  shmem_free(token);
  shmem_free(sig);
  cudaFree(result);
  shmem_finalize();
  return status;
}
