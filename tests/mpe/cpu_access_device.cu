// A program that links the device library (it has a kernel using the device API): the default
// backend is GPU memory where a GPU is usable. It only reports; SHMEM_INFO says why the heap is
// where it is.
#include <shmem.h>

#include <cstdio>

__global__ void my_pe_kernel(int* out) { *out = shmem_my_pe(); }

int main() {
  shmem_init();
  const int me = shmem_my_pe();
  if (me == 0) std::printf("cpu_access_device: %s\n", shmem_n_pes() > 0 ? "OK" : "no PEs");
  shmem_finalize();
  // Never launched (a GPU may be absent): the kernel is here so that the device library is linked.
  if (me < 0) my_pe_kernel<<<1, 1>>>(nullptr);
  return 0;
}
