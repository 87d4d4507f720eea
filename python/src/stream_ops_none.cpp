// A build without CUDA: the package's GPU paths fail with this message.
#include "python/src/stream_ops.hpp"
#include "vshmem/device_hooks.h"

namespace vshmem::python::stream {
namespace {
int none() {
  vshmemi_set_last_error(
      "vshmem: this vshmem was built without CUDA (no nvcc at build time): on-stream calls and "
      "GPU tensors are not available");
  return 1;
}
}  // namespace

bool available() { return false; }
int reduce(uintptr_t, int, int, uintptr_t, uintptr_t, size_t, uintptr_t, bool) { return none(); }
int broadcast(uintptr_t, uintptr_t, uintptr_t, size_t, int, uintptr_t) { return none(); }
int fcollect(uintptr_t, uintptr_t, uintptr_t, size_t, uintptr_t) { return none(); }
int alltoall(uintptr_t, uintptr_t, uintptr_t, size_t, uintptr_t) { return none(); }
int putmem(uintptr_t, uintptr_t, size_t, int, uintptr_t) { return none(); }
int getmem(uintptr_t, uintptr_t, size_t, int, uintptr_t) { return none(); }
int putmem_signal(uintptr_t, uintptr_t, size_t, uintptr_t, uint64_t, int, int, uintptr_t) {
  return none();
}
int signal_op(uintptr_t, uint64_t, int, int, uintptr_t) { return none(); }
int signal_wait_until(uintptr_t, int, uint64_t, uintptr_t) { return none(); }
int quiet(uintptr_t) { return none(); }
int barrier_all(uintptr_t) { return none(); }
int team_barrier(uintptr_t, uintptr_t) { return none(); }
int synchronize(uintptr_t) { return none(); }
int device_of(uintptr_t, int*) { return 0; }
int time_calls(int, uintptr_t, int, int, uintptr_t, uintptr_t, size_t, uintptr_t, int, double*,
               double*) {
  return none();
}

}  // namespace vshmem::python::stream
