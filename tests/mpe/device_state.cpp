// The device state libvshmem builds whole (vshmem/device/impl/state.h): which GPU holds this PE's
// heap (-1 for host memory) and how many node-local PEs share it, every peer's delta, the team
// table, the predefined team handles, the address checks and the memory scope. The device
// library copies it as it is, so it must be right on every backend. Its tables are in the
// symmetric heap: read with shmem_getmem from this PE, as on a GPU heap.
//
// `device_state version_mismatch`: a device library built for another state is refused at
// shmem_init with a message naming both versions.
#include <shmem.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "mpe_check.h"
#include "vshmem/device/impl/mc_barrier.h"
#include "vshmem/device/impl/state.h"
#include "vshmem/device_hooks.h"

namespace {
using vshmem::device::GpuState;
using vshmem::device::GpuTeam;

GpuState g_seen{};
int g_writes = 0;
int g_incomplete = 0;  // states published as initialized without the synchronization area
int g_written_initialized = 0;
// Stands in for libvshmem_device: counts what it is given.
int write_state(const GpuState* s, const int64_t* /*host_deltas*/) {
  ++g_writes;
  const GpuState* built = vshmemi_device_state_built();
  if (built == nullptr || (built->initialized && built->sync_bytes == 0)) ++g_incomplete;
  g_written_initialized = s->initialized;
  return 0;
}

void refresh() {
  const GpuState* built = vshmemi_device_state_built();
  CHECK(built != nullptr, "no state built");
  g_seen = *built;
}
// The team table as the device library last saw it: every team this PE is in, at its slot.
int slot_of(shmem_team_t team) {
  const auto t = reinterpret_cast<uint64_t>(team);
  return static_cast<int>((t - g_seen.team_handle_base) / g_seen.team_handle_stride);
}
GpuTeam read_team(int slot) {
  GpuTeam t{};
  shmem_getmem(&t, g_seen.teams + slot, sizeof(t), shmem_my_pe());
  return t;
}

void check_team(shmem_team_t team, const char* name) {
  const int slot = slot_of(team);
  CHECK(slot >= 0 && slot < g_seen.team_slots &&
            reinterpret_cast<uint64_t>(team) ==
                g_seen.team_handle_base + slot * g_seen.team_handle_stride,
        "%s: handle %p is not a slot of the published table", name, static_cast<void*>(team));
  const GpuTeam d = read_team(slot);
  CHECK(d.size == shmem_team_n_pes(team) && d.my_index == shmem_team_my_pe(team),
        "%s (slot %d): published as PE %d of %d, the host says %d of %d", name, slot, d.my_index,
        d.size, shmem_team_my_pe(team), shmem_team_n_pes(team));
  std::vector<int32_t> members(static_cast<size_t>(d.size), -7);
  shmem_getmem(members.data(), d.members, members.size() * sizeof(int32_t), shmem_my_pe());
  for (int i = 0; i < d.size; ++i) {
    CHECK(members[i] == shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD),
          "%s: member %d published as PE %d", name, i, members[i]);
  }
}

void check_teams() {
  CHECK(g_seen.teams != nullptr && g_seen.team_slots > 2, "no team table published");
  const uint64_t sync_end = g_seen.sync_base + g_seen.sync_bytes;
  CHECK(g_seen.team_sync_base >= g_seen.sync_base &&
            g_seen.team_sync_base + g_seen.team_slots * g_seen.team_slot_bytes <= sync_end &&
            g_seen.team_slot_bytes > vshmem::device::TeamSlotLayout::scratch(g_seen.n_pes),
        "the team slots (%d x %llu bytes at %#llx) do not fit the synchronization area (%llu "
        "bytes at %#llx)",
        g_seen.team_slots, (unsigned long long)g_seen.team_slot_bytes,
        (unsigned long long)g_seen.team_sync_base, (unsigned long long)g_seen.sync_bytes,
        (unsigned long long)g_seen.sync_base);
  CHECK(slot_of(SHMEM_TEAM_WORLD) == 0 && slot_of(SHMEM_TEAM_SHARED) == 1,
        "the predefined teams are at slots %d and %d", slot_of(SHMEM_TEAM_WORLD),
        slot_of(SHMEM_TEAM_SHARED));
  // Device code names the predefined teams by these handles (SHMEM_TEAM_WORLD in a kernel).
  CHECK(g_seen.world_handle == SHMEM_TEAM_WORLD && g_seen.shared_handle == SHMEM_TEAM_SHARED,
        "team handles %p %p published, the host's are %p %p",
        static_cast<void*>(g_seen.world_handle), static_cast<void*>(g_seen.shared_handle),
        static_cast<void*>(SHMEM_TEAM_WORLD), static_cast<void*>(SHMEM_TEAM_SHARED));
  check_team(SHMEM_TEAM_WORLD, "SHMEM_TEAM_WORLD");
  check_team(SHMEM_TEAM_SHARED, "SHMEM_TEAM_SHARED");
}

// Every peer's delta, in the heap's table and (the first kInlinePeers) inline, is where shmem_ptr
// puts that peer's copy: 0 for this PE, kUnmappedDelta for a PE this one cannot map.
void check_deltas(long* x) {
  const int n = shmem_n_pes();
  std::vector<int64_t> table(static_cast<size_t>(n), 0x5a5a);
  shmem_getmem(table.data(), g_seen.peer_delta, table.size() * sizeof(int64_t), shmem_my_pe());
  for (int p = 0; p < n; ++p) {
    void* peer = shmem_ptr(x, p);
    const int64_t want = peer == nullptr ? vshmem::device::kUnmappedDelta
                                         : static_cast<int64_t>(reinterpret_cast<uint64_t>(peer) -
                                                                reinterpret_cast<uint64_t>(x));
    CHECK(table[p] == want, "PE %d's delta is %lld in the table, shmem_ptr says %lld", p,
          (long long)table[p], (long long)want);
    // Device copies take their alignment from the untranslated address (impl/memory.cuh).
    CHECK(want == vshmem::device::kUnmappedDelta ||
              static_cast<uint64_t>(want) % vshmem::device::kDeltaAlign == 0,
          "PE %d's delta %lld is not a multiple of %llu", p, (long long)want,
          (unsigned long long)vshmem::device::kDeltaAlign);
    if (p < vshmem::device::kInlinePeers) {
      CHECK(g_seen.inline_delta[p] == want, "PE %d's inline delta is %lld, shmem_ptr says %lld", p,
            (long long)g_seen.inline_delta[p], (long long)want);
    }
  }
  for (int p = n; p < vshmem::device::kInlinePeers; ++p) {
    CHECK(g_seen.inline_delta[p] == vshmem::device::kUnmappedDelta,
          "PE %d does not exist but has inline delta %lld", p, (long long)g_seen.inline_delta[p]);
  }
  CHECK(table[static_cast<size_t>(shmem_my_pe())] == 0, "this PE's own delta is not 0");
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && strcasecmp(v, value) == 0;
}

// Expected to fail (exit 1) with libvshmem's message naming both versions.
int version_mismatch() {
  static const vshmemi_device_library other = {vshmem::device::kGpuStateVersion + 1,
                                               sizeof(GpuState), &write_state};
  vshmemi_register_device_library(&other);
  if (shmem_init_thread(SHMEM_THREAD_SINGLE, nullptr) != 0) {
    if (g_writes != 0) fprintf(stderr, "FAIL: the refused library was written to\n");
    return 1;
  }
  fprintf(stderr, "FAIL: shmem_init accepted a device library of another state version\n");
  shmem_finalize();
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "version_mismatch") == 0) return version_mismatch();
  static const vshmemi_device_library library = {vshmem::device::kGpuStateVersion, sizeof(GpuState),
                                                 &write_state};
  vshmemi_register_device_library(&library);
  shmem_init();
  const int me = shmem_my_pe();
  refresh();
  CHECK(g_writes >= 1 && g_seen.initialized == 1, "no device state published at init");
  CHECK(g_incomplete == 0, "%d states published before the device synchronization area existed",
        g_incomplete);
  CHECK(g_seen.version == vshmem::device::kGpuStateVersion && g_seen.bytes == sizeof(GpuState),
        "state version %u (%u bytes)", g_seen.version, g_seen.bytes);
  CHECK(g_seen.my_pe == me && g_seen.n_pes == shmem_n_pes(), "PE %d of %d", g_seen.my_pe,
        g_seen.n_pes);
  // The device library is given the whole state on a GPU heap, the empty one on a host heap.
  CHECK(g_written_initialized == (g_seen.cuda_device >= 0 ? 1 : 0),
        "the device library was given an %s state for a heap on GPU %d",
        g_written_initialized ? "initialized" : "empty", g_seen.cuda_device);
  // VSHMEM_DEBUG_DEVICE and VSHMEM_DEVICE_SCOPE are read by libvshmem, once.
  CHECK(g_seen.debug_checks == (env_is("VSHMEM_DEBUG_DEVICE", "1") ? 1 : 0),
        "debug_checks %d with VSHMEM_DEBUG_DEVICE=%s", g_seen.debug_checks,
        std::getenv("VSHMEM_DEBUG_DEVICE") ? std::getenv("VSHMEM_DEBUG_DEVICE") : "(unset)");
  const int want_gpu_scope =
      g_seen.pes_sharing_device == g_seen.n_pes && !env_is("VSHMEM_DEVICE_SCOPE", "sys");
  CHECK(g_seen.gpu_scope == want_gpu_scope,
        "gpu_scope %d, want %d (%d of %d PEs share the heap's "
        "memory)",
        g_seen.gpu_scope, want_gpu_scope, g_seen.pes_sharing_device, g_seen.n_pes);
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
    const int writes = g_writes;
    void* big = shmem_malloc(initial / 2);
    refresh();
    CHECK(big != nullptr && g_writes == writes && g_seen.heap_committed >= initial,
          "a %llu-byte allocation grew the heap (%d new states)", (unsigned long long)initial / 2,
          g_writes - writes);
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
  refresh();
  check_teams();
  check_team(mine, "my parity team");
  const int mine_slot = slot_of(mine);
  shmem_team_destroy(mine);
  refresh();
  CHECK(read_team(mine_slot).size == 0, "a destroyed team (slot %d) is still published", mine_slot);
  shmem_barrier_all();
  long* x = static_cast<long*>(shmem_malloc(sizeof(long)));
  refresh();
  check_deltas(x);
  const auto a = reinterpret_cast<uint64_t>(x);
  CHECK(a >= g_seen.heap_base && a + sizeof(long) <= g_seen.heap_base + g_seen.heap_committed,
        "shmem_malloc result %#llx outside the published heap", (unsigned long long)a);
  shmem_free(x);
  shmem_finalize();
  refresh();
  CHECK(g_seen.initialized == 0 && g_written_initialized == 0,
        "shmem_finalize did not clear the device state");
  if (me == 0) printf("device_state: OK\n");
  return 0;
}
