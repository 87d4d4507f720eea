// Teams: the predefined teams, splitting, translation, destruction, and the pairwise signal
// counters every collective synchronizes with (the design is described in team.hpp).
#include "runtime/api/team.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "runtime/api/wait_policy.hpp"
#include "vshmem/device/impl/mc_barrier.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace vshmem::detail {

// Team objects live in a table indexed by slot: a PE is a member of at most one team per slot,
// so the slot number both names the team's symmetric resources and its handle here.
vshmem_team_s g_team_table[kTeamSlots];

namespace {

// Per slot, what a team's members exchange while they make or grow its multicast region (the
// region's step reports: runtime/heap/multicast_region.cpp).
constexpr size_t kAgreeBytes = 512;

struct Pool {
  uint64_t* signals = nullptr;   // [kTeamSlots][n_pes], symmetric
  uint64_t* words = nullptr;     // [kTeamSlots][kSlotWords], symmetric
  char* agree = nullptr;         // [kTeamSlots][kAgreeBytes], symmetric
  std::vector<uint64_t> seen;    // [kTeamSlots][n_pes]: signals consumed so far, per sender
  std::vector<uint64_t> posted;  // [kTeamSlots][n_pes]: signals sent so far, per receiver
  // every_pe_spins() and a host heap: signals to mapped peers are plain stores (group_post).
  bool stored_signals = false;
  unsigned char* flat = nullptr;     // [kFlatSlots][2][n_pes][kFlatCellBytes], symmetric
  std::vector<uint32_t> flat_calls;  // [kFlatSlots][n_pes]: flat calls made with each PE
  int n_pes = 0;
};
Pool g_pool;

uint64_t load_counter(Runtime& rt, uint64_t* addr, const char* call) {
  return read_own(rt, addr, call);
}

void init_team(vshmem_team_s& t, int slot, std::vector<int> members, int my_pe, int n_pes) {
  t.group.slot = slot;
  t.group.members = std::move(members);
  t.group.my_index = -1;
  t.index_of_world.assign(n_pes, -1);
  for (int i = 0; i < t.group.size(); ++i) {
    t.index_of_world[t.group.members[i]] = i;
    if (t.group.members[i] == my_pe) t.group.my_index = i;
  }
  t.config = shmem_team_config_t{};
  t.config_mask = 0;
  t.magic = kTeamMagic;
}

void reset_team(vshmem_team_s& t) {
  t.mc_region.reset();  // unbinds our chunks and releases the object
  t.magic = 0;
  t.group = Group{};
  t.index_of_world.clear();
}

// Collective over parent: `count` slots that are free on every member of the parent (so on
// every member of any team split off it), lowest first; empty when there are not enough.
// What a split call asks for, packed in two words: every member of the parent team must pass the
// same, and a member whose own checks failed says so here instead of leaving the rest waiting.
struct SplitArgs {
  uint64_t a = 0, b = 0;
  bool operator==(const SplitArgs& o) const { return a == o.a && b == o.b; }
};
SplitArgs pack_args(int64_t x, int64_t y, int64_t z, bool valid) {
  return {(static_cast<uint64_t>(static_cast<uint32_t>(x)) << 32) | static_cast<uint32_t>(y),
          (static_cast<uint64_t>(static_cast<uint32_t>(z)) << 32) | (valid ? 1u : 0u)};
}

// Collective over the parent team: the lowest `count` team slots free on every member, and
// whether the members agree on the arguments. Empty slots when they disagree, when some member's
// arguments are invalid (each says why), or when too few slots are free (`*why` tells which).
std::vector<int> agree_free_slots(Runtime& rt, const Group& parent, int count, SplitArgs args,
                                  const char* call, bool* args_ok) {
  static_assert(kSlotWords >= 4, "the slot words hold the bitmap and the split's arguments");
  uint64_t mine[kSlotWords] = {};
  static_assert(kTeamSlots <= 64 * 2, "the used-slot bitmap must fit two slot words");
  for (int s = 0; s < kTeamSlots; ++s) {
    if (s <= kLastPredefinedSlot || g_team_table[s].magic == kTeamMagic)
      mine[s / 64] |= 1ull << (s % 64);
  }
  mine[2] = args.a;
  mine[3] = args.b;
  uint64_t used[2] = {mine[0], mine[1]};
  uint64_t* words = group_words(parent);
  local_copy(rt, words, mine, sizeof(mine), call);
  group_barrier(rt, parent, call);
  *args_ok = (args.b & 1u) != 0;
  for (int i = 0; i < parent.size(); ++i) {
    if (i == parent.my_index) continue;
    uint64_t theirs[kSlotWords];
    rma_get(rt, theirs, words, sizeof(theirs), parent.members[i], call);
    used[0] |= theirs[0];
    used[1] |= theirs[1];
    SplitArgs other{theirs[2], theirs[3]};
    if (!(other == args) && *args_ok) {
      // Report the first disagreement once, from this PE's point of view.
      log::message(log::Level::kError,
                   "%s: the PEs of the parent team disagree on the arguments (PE %d passed "
                   "%d, %d, %d; this PE %d, %d, %d) or PE %d's were invalid; nothing was done",
                   call, parent.members[i], static_cast<int>(other.a >> 32),
                   static_cast<int>(other.a & 0xffffffffu), static_cast<int>(other.b >> 32),
                   static_cast<int>(args.a >> 32), static_cast<int>(args.a & 0xffffffffu),
                   static_cast<int>(args.b >> 32), parent.members[i]);
      *args_ok = false;
    }
  }
  // Nobody rewrites its words (next split or collect over this slot) before all have read.
  group_barrier(rt, parent, call);
  std::vector<int> slots;
  if (!*args_ok) return slots;
  for (int s = 0; s < kTeamSlots && static_cast<int>(slots.size()) < count; ++s) {
    if (!(used[s / 64] & (1ull << (s % 64)))) slots.push_back(s);
  }
  if (static_cast<int>(slots.size()) < count) slots.clear();
  return slots;
}

bool config_ok(const shmem_team_config_t* config, long mask, const char* call) {
  if (mask & ~SHMEM_TEAM_NUM_CONTEXTS) {
    log::message(log::Level::kError, "%s: unknown config_mask bits %#lx", call,
                 mask & ~SHMEM_TEAM_NUM_CONTEXTS);
    return false;
  }
  if (mask != 0 && config == nullptr) {
    log::message(log::Level::kError, "%s: config_mask %#lx given with a NULL config", call, mask);
    return false;
  }
  if ((mask & SHMEM_TEAM_NUM_CONTEXTS) && config->num_contexts < 0) {
    log::message(log::Level::kError, "%s: config num_contexts %d is negative", call,
                 config->num_contexts);
    return false;
  }
  return true;
}

// A team's members agree through the team's pool: each writes its part into its copy of the
// slot's agreement bytes, all meet at the team barrier, each reads every member's part, and a
// second barrier frees the bytes again.
class TeamRegionGroup final : public RegionGroup {
 public:
  TeamRegionGroup(Runtime& rt, const Group& group, uint64_t tag, const char* call)
      : rt_(rt), group_(group), tag_(tag), call_(call) {}
  const std::vector<int>& members() const override { return group_.members; }
  int my_index() const override { return group_.my_index; }
  Status allgather(const void* mine, void* all, size_t bytes) override {
    if (bytes > kAgreeBytes) {
      return error(Code::kInvalidArgument,
                   log::format("%s: %zu bytes exceed a team's agreement area", call_, bytes));
    }
    char* area = g_pool.agree + static_cast<size_t>(group_.slot) * kAgreeBytes;
    local_copy(rt_, area, mine, bytes, call_);
    group_barrier(rt_, group_, call_);
    for (int i = 0; i < group_.size(); ++i) {
      char* to = static_cast<char*>(all) + static_cast<size_t>(i) * bytes;
      if (i == group_.my_index) {
        std::memcpy(to, mine, bytes);
      } else {
        rma_get(rt_, to, area, bytes, group_.members[i], call_);
      }
    }
    group_barrier(rt_, group_, call_);
    return Status::ok();
  }
  uint64_t exchange_tag() const override { return tag_; }

 private:
  Runtime& rt_;
  Group group_;  // a copy: the region outlives nothing of the team, but keeps its own
  uint64_t tag_;
  const char* call_;
};

// Team regions made or tried so far by this PE: with the slot, it makes each region's handle
// exchange tag unique for every member (fd_passing.hpp, kOneShotTag).
uint64_t g_region_serial = 0;

// Collective over the members of the new team t (after make_team on each): its multicast region
// when multicast is asked for and the team is smaller than the world (which has its own);
// every member ends with a region or all without, and member 0 says why not.
void make_team_region(Runtime& rt, vshmem_team_s& t, const char* call) {
  const Group& g = t.group;
  if (!rt.multicast_enabled || g.size() < 2 || g.size() == rt.n_pes) return;
  // The members' serials: the largest names this region's exchange; all move past it.
  uint64_t serial = g_region_serial;
  std::vector<uint64_t> serials(static_cast<size_t>(g.size()));
  TeamRegionGroup probe(rt, g, 0, call);
  Status st = probe.allgather(&serial, serials.data(), sizeof(serial));
  if (!st) fail(call, st);
  serial = *std::max_element(serials.begin(), serials.end());
  g_region_serial = serial + 1;
  const uint64_t tag = FdExchange::kOneShotTag | (static_cast<uint64_t>(g.slot) << 40) |
                       (serial & ((1ull << 40) - 1));
  std::string why;
  auto made =
      MulticastRegion::create(*rt.provider, std::make_unique<TeamRegionGroup>(rt, g, tag, call),
                              *rt.heap, rt.fd_exchange.get(), true, &why);
  if (!made) fail(call, made.status());
  std::lock_guard<std::mutex> lock(device_state_mutex());
  t.mc_region = std::move(made).value();
  if (t.mc_region) {
    VSHMEM_INFO("%s: multicast region for the team in slot %d (%d members) at %#lx", call, g.slot,
                g.size(), static_cast<unsigned long>(t.mc_region->base()));
  } else if (g.my_index == 0) {
    VSHMEM_WARN(
        "%s: the new team of %d PEs (PE %d first) has no multicast region: %s; unicast "
        "algorithms on its members",
        call, g.size(), g.members[0], why.c_str());
  }
}

}  // namespace

// A team's own region (not the world's): the one made for it, or for SHMEMX_TEAM_NODE the shared
// team's when both have the same members (one multicast object serves both).
MulticastRegion* own_region(const vshmem_team_s& t) {
  if (t.mc_region) return t.mc_region.get();
  const vshmem_team_s& shared = g_team_table[kSharedSlot];
  if (t.group.slot == kNodeSlot && shared.magic == kTeamMagic &&
      shared.group.members == t.group.members) {
    return shared.mc_region.get();
  }
  return nullptr;
}

namespace {

void make_team(Runtime& rt, int slot, std::vector<int> members, const shmem_team_config_t* config,
               long mask, shmem_team_t* out) {
  vshmem_team_s& t = g_team_table[slot];
  std::lock_guard<std::mutex> lock(device_state_mutex());
  init_team(t, slot, std::move(members), rt.my_pe, rt.n_pes);
  if (mask & SHMEM_TEAM_NUM_CONTEXTS) t.config.num_contexts = config->num_contexts;
  t.config_mask = mask;
  *out = &t;
}

}  // namespace

Status api_init(Runtime& rt) {
  const size_t n = static_cast<size_t>(rt.n_pes);
  const size_t words =
      static_cast<size_t>(kTeamSlots) * n + static_cast<size_t>(kTeamSlots) * kSlotWords;
  const size_t bytes = words * sizeof(uint64_t) + kTeamSlots * kAgreeBytes;
  void* p = nullptr;
  VSHMEM_ASSIGN_OR_RETURN(p, rt.heap->allocate(bytes, 64, "shmem_init"));
  VSHMEM_RETURN_IF_ERROR(clear_init_object(rt, p, bytes));
  g_pool.signals = static_cast<uint64_t*>(p);
  g_pool.words = g_pool.signals + kTeamSlots * n;
  g_pool.agree =
      reinterpret_cast<char*>(g_pool.words + static_cast<size_t>(kTeamSlots) * kSlotWords);
  g_pool.seen.assign(kTeamSlots * n, 0);
  g_pool.posted.assign(kTeamSlots * n, 0);
  g_pool.stored_signals = every_pe_spins() && rt.transport->host_loads_reach_heap();
  g_pool.n_pes = rt.n_pes;
  // n is the same on every PE, so every PE makes (or skips) this allocation alike. Never read
  // before written: no fill.
  if (rt.n_pes > 1 && rt.n_pes <= kFlatMaxPes) {
    const size_t flat_bytes = static_cast<size_t>(kFlatSlots) * 2 * n * kFlatCellBytes;
    VSHMEM_ASSIGN_OR_RETURN(p, rt.heap->allocate(flat_bytes, 64, "shmem_init"));
    g_pool.flat = static_cast<unsigned char*>(p);
    g_pool.flat_calls.assign(kFlatSlots * n, 0);
  }

  std::vector<int> world(rt.n_pes);
  for (int i = 0; i < rt.n_pes; ++i) world[i] = i;
  init_team(g_team_table[kWorldSlot], kWorldSlot, std::move(world), rt.my_pe, rt.n_pes);
  // SHMEM_TEAM_SHARED: the transport plan's job-wide answer (the same set on every member, also
  // where GPU peer access is not transitive).
  init_team(g_team_table[kSharedSlot], kSharedSlot, rt.plan.shared_team, rt.my_pe, rt.n_pes);
  // SHMEMX_TEAM_NODE: every PE of this node, mapped or not (each node's team has the slot).
  init_team(g_team_table[kNodeSlot], kNodeSlot, rt.topology.local_pes, rt.my_pe, rt.n_pes);
  // SHMEM_TEAM_SHARED smaller than the world (a job over nodes that do not map each other): a
  // region of its own, made as a split team's is, by the members only (each node's at once);
  // SHMEMX_TEAM_NODE uses it when it has the same members (own_region). Every PE zeroes its own
  // pool above: none may signal a peer's before that peer has (the barrier; the variable agrees
  // on every PE).
  if (rt.multicast_enabled) {
    VSHMEM_RETURN_IF_ERROR(rt.bootstrap->barrier());
    make_team_region(rt, g_team_table[kSharedSlot], "shmem_init");
  }
  return Status::ok();
}

void api_finalize(Runtime& rt) {
  for (int s = 0; s < kTeamSlots; ++s) {
    if (g_team_table[s].magic == kTeamMagic) destroy_team_contexts(&g_team_table[s]);
    reset_team(g_team_table[s]);
  }
  g_pool = Pool{};
}

void bind_team_regions(Runtime& rt, size_t offset,
                       const std::shared_ptr<PhysicalAllocation>& chunk) {
  for (int s = kWorldSlot + 1; s < kTeamSlots; ++s) {  // the world's region is not a team's
    vshmem_team_s& t = g_team_table[s];
    if (t.magic != kTeamMagic || !t.mc_region) continue;
    Status bound = t.mc_region->bind_chunk(offset, chunk);
    if (bound.is_ok()) continue;
    // Every member got the same answer and drops the region with it.
    if (t.group.my_index == 0) {
      VSHMEM_WARN(
          "the team of %d PEs in slot %d has no multicast region from now on: %s; unicast "
          "algorithms on its members",
          t.group.size(), s, bound.message().c_str());
    }
    std::lock_guard<std::mutex> lock(device_state_mutex());
    t.mc_region.reset();
  }
}

size_t team_slot_bytes(int n_pes) {
  return static_cast<size_t>(device::TeamSlotLayout::bytes(n_pes, kTeamScratchBytes));
}

size_t team_sync_bytes(int n_pes) { return kTeamSlots * team_slot_bytes(n_pes); }

void describe_teams(int n_pes, device::GpuTeam* teams, int32_t* members, uintptr_t members_device,
                    uint64_t* handle_base, uint64_t* handle_stride) {
  static_assert(sizeof(int) == sizeof(int32_t), "members are handed over as int32_t");
  const size_t n = static_cast<size_t>(n_pes);
  for (int s = 0; s < kTeamSlots; ++s) {
    teams[s] = device::GpuTeam{};
    const vshmem_team_s& t = g_team_table[s];
    if (t.magic != kTeamMagic || t.group.my_index < 0) continue;
    const int size = t.group.size();
    if (size <= 0 || static_cast<size_t>(size) > n) continue;
    teams[s].size = size;
    teams[s].my_index = t.group.my_index;
    std::memcpy(members + s * n, t.group.members.data(), static_cast<size_t>(size) * sizeof(int));
    teams[s].members = reinterpret_cast<const int32_t*>(members_device) + s * n;
    const MulticastRegion* region = own_region(t);
    teams[s].mc_base = region != nullptr ? region->base() : 0;
  }
  *handle_base = reinterpret_cast<uintptr_t>(&g_team_table[0]);
  *handle_stride = sizeof(vshmem_team_s);
}

vshmem_team_s* team_lookup(shmem_team_t team) {
  auto a = reinterpret_cast<uintptr_t>(team);
  auto base = reinterpret_cast<uintptr_t>(&g_team_table[0]);
  if (a < base || a >= base + sizeof(g_team_table) || (a - base) % sizeof(vshmem_team_s) != 0) {
    return nullptr;
  }
  vshmem_team_s* t = team;
  return t->magic == kTeamMagic ? t : nullptr;
}

vshmem_team_s& team_for(shmem_team_t team, const char* call) {
  runtime_for(call);
  vshmem_team_s* t = team_lookup(team);
  if (t == nullptr) {
    if (team == SHMEM_TEAM_INVALID) fail(call, "the team is SHMEM_TEAM_INVALID");
    fail(call, "%p is not a valid team of this PE (destroyed, or never created here)",
         static_cast<void*>(team));
  }
  return *t;
}

uint64_t* group_words(const Group& g) {
  return g_pool.words + static_cast<size_t>(g.slot) * kSlotWords;
}

unsigned char* flat_cell(const Group& g, int parity, int writer_world) {
  if (g_pool.flat == nullptr || g.slot >= kFlatSlots) return nullptr;
  const size_t n = static_cast<size_t>(g_pool.n_pes);
  return g_pool.flat +
         ((static_cast<size_t>(g.slot) * 2 + parity) * n + writer_world) * kFlatCellBytes;
}

int flat_parity(const Group& g, int peer_world) {
  return static_cast<int>(g_pool.flat_calls[g.slot * g_pool.n_pes + peer_world] & 1u);
}

void advance_flat_parity(const Group& g, int peer_world) {
  ++g_pool.flat_calls[g.slot * g_pool.n_pes + peer_world];
}

// Our counter on PE to_world is written by us alone, so we know its next value: where every PE's
// waits spin and the peer's heap is host memory mapped here, the signal is a release store of it
// (the data written before it visible to whoever sees it), and group_wake needs no fence either
// (the sleepers' membarrier stands in for it: node_wake_word). Neither an atomic
// read-modify-write nor a fence then waits for the peer's cache lines: the root's part of a
// 2-PE broadcast of 8 bytes took 0.40-0.50 us, 170-780 cycles of it in the fetch-add alone
// (bench/RESULTS.md, issue #15 session 11). Elsewhere (remote peers, a GPU heap, or waits that
// yield and so sleep often: a membarrier per sleep costs 70-80 us on a 2-core VM) it is an atomic
// add through the peer's path, and the wake is fenced.
void group_post(Runtime& rt, const Group& g, int to_world, const char* call) {
  const size_t n = static_cast<size_t>(g_pool.n_pes);
  uint64_t* counter = &g_pool.signals[g.slot * n + rt.my_pe];
  const uint64_t value = ++g_pool.posted[g.slot * n + to_world];
  if (g_pool.stored_signals) {
    if (auto* peer = static_cast<uint64_t*>(rt.heap->translate(counter, to_world))) {
      __atomic_store_n(peer, value, __ATOMIC_RELEASE);
      return;
    }
  }
  AtomicRequest add{AtomicOp::kFetchAdd, counter, 8, 1, 0};
  // Data this PE wrote before the signal must be visible to whoever sees the signal.
  std::atomic_thread_fence(std::memory_order_release);
  rma_atomic(rt, add, to_world, call);
}

WakeWord node_wake_word(const HostSyncArea* node, int pe) {
  if (node == nullptr) return {};
  WakeWord w = node->wake_word(pe);
  w.copy_writers = every_pe_spins();
  return w;
}

void group_wake(Runtime& rt, const int* to_world, int count) {
  const HostSyncArea* node = rt.transport->mapped().node_barrier();
  if (node == nullptr || count == 0) return;
  if (g_pool.stored_signals) {
    for (int i = 0; i < count; ++i) wake_after_copy(node_wake_word(node, to_world[i]));
    return;
  }
  // One fence orders every post before the loads of the sleeper counts (host_wake.hpp).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int i = 0; i < count; ++i) wake_sleepers(node->wake_word(to_world[i]));
}

void group_post_all(Runtime& rt, const Group& g, const std::vector<int>& to_world,
                    const char* call) {
  for (int to : to_world) group_post(rt, g, to, call);
  group_wake(rt, to_world.data(), static_cast<int>(to_world.size()));
}

void group_signal(Runtime& rt, const Group& g, int to_world, const char* call) {
  group_post(rt, g, to_world, call);
  // A PE of this node may be asleep waiting for it (Backoff with a wake word).
  group_wake(rt, &to_world, 1);
}

void group_wait(Runtime& rt, const Group& g, int from_world, const char* call) {
  const size_t idx = g.slot * static_cast<size_t>(g_pool.n_pes) + from_world;
  const uint64_t want = ++g_pool.seen[idx];
  uint64_t* counter = &g_pool.signals[idx];
  const HostSyncArea* node = rt.transport->mapped().node_barrier();
  auto met = [&] { return load_counter(rt, counter, call) >= want; };
  if (!met() && !yield_until(met)) {
    Backoff backoff(call, node_wake_word(node, rt.my_pe));
    while (!met()) backoff.pause(met);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

int group_take_ready(Runtime& rt, const Group& g, std::vector<int>& from_world, const char* call) {
  const size_t n = static_cast<size_t>(g_pool.n_pes), base = g.slot * n;
  // Partitions from_world: not yet arrived first, arrived last (their signals consumed).
  auto take = [&] {
    int pending = static_cast<int>(from_world.size()), ready = 0;
    for (int i = pending - 1; i >= 0; --i) {
      const int from = from_world[i];
      if (load_counter(rt, &g_pool.signals[base + from], call) <= g_pool.seen[base + from]) {
        continue;
      }
      ++g_pool.seen[base + from];
      ++ready;
      std::swap(from_world[i], from_world[--pending]);
    }
    return ready;
  };
  int ready = take();
  if (ready == 0 && !from_world.empty()) {
    auto any = [&] {
      for (int from : from_world) {
        if (load_counter(rt, &g_pool.signals[base + from], call) > g_pool.seen[base + from]) {
          return true;
        }
      }
      return false;
    };
    if (!yield_until(any)) {
      const HostSyncArea* node = rt.transport->mapped().node_barrier();
      Backoff backoff(call, node_wake_word(node, rt.my_pe));
      while (!any()) backoff.pause(any);
    }
    ready = take();
  }
  if (ready > 0) std::atomic_thread_fence(std::memory_order_acquire);
  return ready;
}

void group_barrier(Runtime& rt, const Group& g, const char* call) {
  const int n = g.size();
  for (int dist = 1; dist < n; dist <<= 1) {
    group_signal(rt, g, g.members[(g.my_index + dist) % n], call);
    group_wait(rt, g, g.members[(g.my_index - dist + n) % n], call);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void local_copy(Runtime& rt, void* dst, const void* src, size_t bytes, const char* call) {
  if (bytes == 0 || dst == src) return;
  Status st = rt.transport->copy_local(dst, src, bytes);
  if (!st) fail(call, st);
}

}  // namespace vshmem::detail

extern "C" {

shmem_team_t SHMEM_TEAM_WORLD = &vshmem::detail::g_team_table[vshmem::detail::kWorldSlot];
shmem_team_t SHMEM_TEAM_SHARED = &vshmem::detail::g_team_table[vshmem::detail::kSharedSlot];
shmem_team_t SHMEMX_TEAM_NODE = &vshmem::detail::g_team_table[vshmem::detail::kNodeSlot];

int shmem_team_my_pe(shmem_team_t team) {
  vshmem_team_s* t = team_lookup(team);
  return t != nullptr ? t->group.my_index : -1;
}

int shmem_team_n_pes(shmem_team_t team) {
  vshmem_team_s* t = team_lookup(team);
  return t != nullptr ? t->group.size() : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config) {
  vshmem_team_s* t = team_lookup(team);
  if (t == nullptr || config == nullptr) return 1;
  if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = t->config.num_contexts;
  return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  vshmem_team_s* s = team_lookup(src_team);
  vshmem_team_s* d = team_lookup(dest_team);
  if (s == nullptr || d == nullptr || src_pe < 0 || src_pe >= s->group.size()) return -1;
  return d->index_of_world[s->group.members[src_pe]];
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t* config, long config_mask,
                             shmem_team_t* new_team) {
  constexpr const char* kCall = "shmem_team_split_strided";
  Runtime& rt = runtime_for(kCall);
  if (new_team == nullptr) fail(kCall, "new_team is NULL");
  *new_team = SHMEM_TEAM_INVALID;
  vshmem_team_s* parent = team_lookup(parent_team);
  if (parent == nullptr) {
    if (parent_team != SHMEM_TEAM_INVALID) {
      log::message(log::Level::kError, "%s: parent team %p is not a valid team of this PE", kCall,
                   static_cast<void*>(parent_team));
    }
    return 1;
  }
  const int n = parent->group.size();
  const long long last = start + static_cast<long long>(size - 1) * stride;
  bool valid = true;
  if (size < 1) {
    log::message(log::Level::kError,
                 "%s(start %d, stride %d, size %d): size must be at least 1 (a team has at least "
                 "one member)",
                 kCall, start, stride, size);
    valid = false;
  } else if (stride == 0 && size > 1) {
    log::message(log::Level::kError,
                 "%s(start %d, stride %d, size %d): stride 0 repeats PE %d of the parent team",
                 kCall, start, stride, size, start);
    valid = false;
  } else if (start < 0 || start >= n || last < 0 || last >= n) {
    log::message(log::Level::kError,
                 "%s(start %d, stride %d, size %d): the PEs do not all lie in the parent team "
                 "(PEs 0..%d)",
                 kCall, start, stride, size, n - 1);
    valid = false;
  }
  if (!config_ok(config, config_mask, kCall)) valid = false;
  // Checked with the whole parent team, so that a PE with bad arguments fails together with the
  // others instead of leaving them waiting for it.
  bool args_ok = false;
  std::vector<int> slots = agree_free_slots(rt, parent->group, 1,
                                            pack_args(start, stride, size, valid), kCall, &args_ok);
  if (!args_ok) return 1;
  if (slots.empty()) {
    log::message(log::Level::kError,
                 "%s: every one of the %d team slots is in use on some PE of "
                 "the parent team; destroy teams that are no longer needed",
                 kCall, kTeamSlots);
    return 1;
  }
  std::vector<int> members(size);
  bool member = false;
  for (int k = 0; k < size; ++k) {
    members[k] = parent->group.members[start + k * stride];
    member |= members[k] == rt.my_pe;
  }
  if (member) {
    make_team(rt, slots[0], std::move(members), config, config_mask, new_team);
    make_team_region(rt, **new_team, kCall);
    publish_device_state(rt);  // kernels can use the team as soon as the split returns
  }
  return 0;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t* xaxis_config, long xaxis_mask,
                        shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team) {
  constexpr const char* kCall = "shmem_team_split_2d";
  Runtime& rt = runtime_for(kCall);
  if (xaxis_team == nullptr || yaxis_team == nullptr) fail(kCall, "a team output is NULL");
  *xaxis_team = SHMEM_TEAM_INVALID;
  *yaxis_team = SHMEM_TEAM_INVALID;
  vshmem_team_s* parent = team_lookup(parent_team);
  if (parent == nullptr) {
    if (parent_team != SHMEM_TEAM_INVALID) {
      log::message(log::Level::kError, "%s: parent team %p is not a valid team of this PE", kCall,
                   static_cast<void*>(parent_team));
    }
    return 1;
  }
  bool valid = true;
  if (xrange < 1) {
    log::message(log::Level::kError, "%s: xrange %d must be positive", kCall, xrange);
    valid = false;
  }
  if (!config_ok(xaxis_config, xaxis_mask, kCall) || !config_ok(yaxis_config, yaxis_mask, kCall)) {
    valid = false;
  }
  const int n = parent->group.size();
  bool args_ok = false;
  std::vector<int> slots =
      agree_free_slots(rt, parent->group, 2, pack_args(xrange, 0, 0, valid), kCall, &args_ok);
  if (!args_ok) return 1;
  xrange = std::min(xrange, n);
  if (slots.empty()) {
    log::message(log::Level::kError,
                 "%s: fewer than 2 of the %d team slots are free on every "
                 "PE of the parent team; destroy teams that are no longer needed",
                 kCall, kTeamSlots);
    return 1;
  }
  const int me = parent->group.my_index;
  const int x = me % xrange, y = me / xrange;
  std::vector<int> row, column;
  for (int i = y * xrange; i < std::min(n, (y + 1) * xrange); ++i) {
    row.push_back(parent->group.members[i]);
  }
  for (int i = x; i < n; i += xrange) column.push_back(parent->group.members[i]);
  make_team(rt, slots[0], std::move(row), xaxis_config, xaxis_mask, xaxis_team);
  make_team(rt, slots[1], std::move(column), yaxis_config, yaxis_mask, yaxis_team);
  // Every PE is in one row and one column: all rows first, then all columns.
  make_team_region(rt, **xaxis_team, kCall);
  make_team_region(rt, **yaxis_team, kCall);
  publish_device_state(rt);
  return 0;
}

void shmem_team_destroy(shmem_team_t team) {
  constexpr const char* kCall = "shmem_team_destroy";
  Runtime& rt = runtime_for(kCall);
  if (team == SHMEM_TEAM_INVALID) return;
  if (team == SHMEM_TEAM_WORLD || team == SHMEM_TEAM_SHARED || team == SHMEMX_TEAM_NODE) {
    fail(kCall, "%s is predefined and cannot be destroyed",
         team == SHMEM_TEAM_WORLD    ? "SHMEM_TEAM_WORLD"
         : team == SHMEM_TEAM_SHARED ? "SHMEM_TEAM_SHARED"
                                     : "SHMEMX_TEAM_NODE");
  }
  vshmem_team_s& t = team_for(team, kCall);
  // Every signal of the team's collectives was consumed inside them, so the slot's counters
  // are consistent for whichever team takes the slot next; no synchronization is needed here.
  destroy_team_contexts(&t);
  {
    std::lock_guard<std::mutex> lock(device_state_mutex());
    reset_team(t);
  }
  publish_device_state(rt);
}

void* shmemx_mc_ptr(shmem_team_t team, const void* ptr) {
  Runtime* rt = g_runtime;
  vshmem_team_s* t = team_lookup(team);
  if (rt == nullptr || t == nullptr) return nullptr;
  // A team of every PE uses the world's region, a smaller one its own (made at its split).
  MulticastRegion* region = t->group.size() == rt->n_pes ? rt->multicast.get() : own_region(*t);
  return region != nullptr ? region->translate(ptr) : nullptr;
}

void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe) {
  vshmem_team_s* t = team_lookup(team);
  if (t == nullptr || pe < 0 || pe >= t->group.size()) return nullptr;
  return shmem_ptr(dest, t->group.members[pe]);
}

}  // extern "C"
