// What the runtime tells the device library (device/state.h): which GPU holds this PE's heap
// (-1 for host memory) and how many node-local PEs share it. The device library trusts these
// rather than asking the driver about heap addresses, so they must be right on every backend.
#include <shmem.h>

#include <cstdlib>
#include <cstring>

#include "device/state.h"
#include "mpe_check.h"
#include "vshmem/device_hooks.h"

namespace {
vshmem::DeviceState g_seen{};
int g_calls = 0;
int g_incomplete = 0;  // states published as initialized without the synchronization area
void listener(const vshmem::DeviceState* s) {
  g_seen = *s;
  ++g_calls;
  if (s->initialized && s->sync_bytes == 0) ++g_incomplete;
}
}  // namespace

int main() {
  vshmemi_set_device_state_listener(&listener);
  shmem_init();
  const int me = shmem_my_pe();
  CHECK(g_calls >= 1 && g_seen.initialized == 1, "no device state published at init");
  CHECK(g_incomplete == 0, "%d states published before the device synchronization area existed",
        g_incomplete);
  CHECK(g_seen.my_pe == me && g_seen.n_pes == shmem_n_pes(), "PE %d of %d", g_seen.my_pe,
        g_seen.n_pes);
  const int node_local = shmem_team_n_pes(SHMEM_TEAM_SHARED);
  if (g_seen.cuda_device < 0) {
    // Host memory has one locality: every PE of the node shares it.
    CHECK(g_seen.pes_sharing_device == node_local, "%d PEs share the heap's memory, want %d",
          g_seen.pes_sharing_device, node_local);
  } else {
    CHECK(g_seen.pes_sharing_device >= 1 && g_seen.pes_sharing_device <= node_local,
          "%d PEs share GPU %d, %d PEs on this node", g_seen.pes_sharing_device, g_seen.cuda_device,
          node_local);
  }
  const char* backend = std::getenv("VSHMEM_BACKEND");
  if (backend != nullptr && std::strcmp(backend, "host") == 0) {
    CHECK(g_seen.cuda_device == -1, "host heap published as GPU %d", g_seen.cuda_device);
  } else if (backend != nullptr && std::strcmp(backend, "cuda") == 0) {
    CHECK(g_seen.cuda_device >= 0, "GPU heap published without a device");
  }
  long* x = static_cast<long*>(shmem_malloc(sizeof(long)));
  const auto a = reinterpret_cast<uint64_t>(x);
  CHECK(a >= g_seen.heap_base && a + sizeof(long) <= g_seen.heap_base + g_seen.heap_committed,
        "shmem_malloc result %#llx outside the published heap", (unsigned long long)a);
  shmem_free(x);
  shmem_finalize();
  CHECK(g_seen.initialized == 0, "shmem_finalize did not clear the device state");
  if (me == 0) printf("device_state: OK\n");
  return 0;
}
