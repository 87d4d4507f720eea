// Device code loaded at run time (nvshmem_cubin.cu): built into a cubin and device-linked with
// libvshmem_device, so that the module holds its own copy of the device state.
#include <nvshmem.h>

// Each PE writes value + its PE number into its right neighbour's *dest, and reports what the
// device state says about the job.
extern "C" __global__ void cubin_ring(int* dest, int value, int* seen) {
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  nvshmem_int_p(dest, value + me, (me + 1) % n);
  nvshmem_quiet();
  seen[0] = me;
  seen[1] = n;
  seen[2] = nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE);
}

// Only reads the state (safe with an empty one).
extern "C" __global__ void cubin_query(int* seen) {
  seen[0] = nvshmem_my_pe();
  seen[1] = nvshmem_n_pes();
}
