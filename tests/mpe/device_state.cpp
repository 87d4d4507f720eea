// What the runtime tells the device library (device/state.h): which GPU holds this PE's heap
// (-1 for host memory) and how many node-local PEs share it. The device library trusts these
// rather than asking the driver about heap addresses, so they must be right on every backend.
#include <shmem.h>

#include <cstdlib>
#include <cstring>

#include "device/state.h"
#include "mpe_check.h"
#include "vshmem/device/impl/mc_barrier.h"
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
// The team table as the device library last saw it: every team this PE is in, at its slot.
int slot_of(shmem_team_t team) {
  const auto t = reinterpret_cast<uint64_t>(team);
  return static_cast<int>((t - g_seen.team_handle_base) / g_seen.team_handle_stride);
}

void check_team(shmem_team_t team, const char* name) {
  const int slot = slot_of(team);
  CHECK(slot >= 0 && slot < g_seen.team_slots &&
            reinterpret_cast<uint64_t>(team) ==
                g_seen.team_handle_base + slot * g_seen.team_handle_stride,
        "%s: handle %p is not a slot of the published table", name, static_cast<void*>(team));
  const vshmem::DeviceTeam& d = g_seen.teams[slot];
  CHECK(d.size == shmem_team_n_pes(team) && d.my_index == shmem_team_my_pe(team),
        "%s (slot %d): published as PE %d of %d, the host says %d of %d", name, slot, d.my_index,
        d.size, shmem_team_my_pe(team), shmem_team_n_pes(team));
  for (int i = 0; i < d.size; ++i) {
    CHECK(d.members[i] == shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD),
          "%s: member %d published as PE %d", name, i, d.members[i]);
  }
}

void check_teams() {
  CHECK(g_seen.teams != nullptr && g_seen.team_slots > 2, "no team table published");
  CHECK(g_seen.team_sync_offset >= g_seen.sync_offset &&
            g_seen.team_sync_offset + g_seen.team_slots * g_seen.team_slot_bytes <=
                g_seen.sync_offset + g_seen.sync_bytes &&
            g_seen.team_slot_bytes > vshmem::device::TeamSlotLayout::scratch(g_seen.n_pes),
        "the team slots (%d x %llu bytes at %llu) do not fit the synchronization area (%llu "
        "bytes at %llu)",
        g_seen.team_slots, (unsigned long long)g_seen.team_slot_bytes,
        (unsigned long long)g_seen.team_sync_offset, (unsigned long long)g_seen.sync_bytes,
        (unsigned long long)g_seen.sync_offset);
  CHECK(slot_of(SHMEM_TEAM_WORLD) == 0 && slot_of(SHMEM_TEAM_SHARED) == 1,
        "the predefined teams are at slots %d and %d", slot_of(SHMEM_TEAM_WORLD),
        slot_of(SHMEM_TEAM_SHARED));
  check_team(SHMEM_TEAM_WORLD, "SHMEM_TEAM_WORLD");
  check_team(SHMEM_TEAM_SHARED, "SHMEM_TEAM_SHARED");
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
  // VSHMEM_HEAP_INITIAL (bytes, here): that much is committed at init, and allocations within
  // it never grow the heap (no growth, no new device state).
  if (const char* e = std::getenv("VSHMEM_HEAP_INITIAL")) {
    const uint64_t initial = std::strtoull(e, nullptr, 0);
    CHECK(g_seen.heap_committed >= initial, "VSHMEM_HEAP_INITIAL=%s, %llu bytes committed", e,
          (unsigned long long)g_seen.heap_committed);
    const int calls = g_calls;
    void* big = shmem_malloc(initial / 2);
    CHECK(big != nullptr && g_calls == calls && g_seen.heap_committed >= initial,
          "a %llu-byte allocation grew the heap (%d new states)", (unsigned long long)initial / 2,
          g_calls - calls);
    shmem_free(big);
  }
  // Teams: published at init, after a split (only the members' tables gain it), after a destroy.
  check_teams();
  const int n = shmem_n_pes();
  shmem_team_t even = SHMEM_TEAM_INVALID, odd = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &even) == 0,
        "split even");
  if (n > 1) {
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &odd) == 0,
          "split odd");
  }
  shmem_team_t mine = me % 2 == 0 ? even : odd;
  check_teams();
  check_team(mine, "my parity team");
  const int mine_slot = slot_of(mine);
  shmem_team_destroy(mine);
  CHECK(g_seen.teams[mine_slot].size == 0, "a destroyed team (slot %d) is still published",
        mine_slot);
  shmem_barrier_all();
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
