// Multicast regions and NVLink fabric domains, proven against the FAKE driver
// (tests/support/fake_cuda_driver): no libcuda is ever loaded here (checked), so nothing reaches a
// real cuMulticastCreate. VSHMEM_ENABLE_MULTICAST=1 is set inside this process only, after the
// fake table is in place, never in the test's environment.
//
// Modes (argv[1]):
//   ok                 every PE makes its part: one cuMulticastCreate (on PE 0), one
//                      cuMulticastAddDevice and one cuMulticastBindMem per chunk on every PE; data
//                      stored through PE 0's multicast mapping is read through every PE's; a heap
//                      growth binds the new chunk on every PE; teardown unbinds all.
//   ok_fabric          as ok with fabric handles (IMEX channel present): the multicast handle
//                      travels through the bootstrap.
//   bind_fails         the last PE's cuMulticastBindMem fails: every PE falls back, all name it.
//   grow_bind_fails    the last PE's bind of a growth chunk fails: every PE drops the region.
//   no_attribute       the last PE's device lacks the attribute: all fall back, no create call.
//   disabled           enabled=false: no multicast call at all on any PE.
//   fabric_same        --simulate-nodes 2, one clique: PEs of the other node are fabric peers,
//                      and a fabric handle exported on one node is imported and read on the other.
//                      The transport plan maps them (path "fabric"), the heap gives them window
//                      slots, and a heap growth maps their chunks: their random data is read
//                      through the window.
//   fabric_diff        --simulate-nodes 2, a clique per node: no fabric peers: the plan sends the
//                      other node's PEs to the remote path, the window has slots for the node.
//   imex_missing       no IMEX channel: fabric not offered, and VSHMEM_HANDLE_TYPE=fabric fails
//                      naming the channel directory.
//   runtime            shmem_init on the fake: shmemx_mc_ptr non-null for the world and outside
//                      the heap null; a smaller team gets its own region at the split (data
//                      stored by one member seen by all; growth binds; destroy unbinds); growth
//                      keeps the world's valid. The teams' multicast barriers (the device's
//                      counting, the switch emulated on the host) keep every member back until
//                      all arrived: for that team, for a team of other members reusing its slot,
//                      and for a split of every PE (through the world's region).
//   runtime_off        shmem_init on the fake without the variable: shmemx_mc_ptr is NULL and
//                      no multicast driver call is made.
//   runtime_bind_fails shmem_init on the fake with one PE's bind failing: shmemx_mc_ptr is null
//                      on every PE and RMA still works (unicast).
//   runtime_team_partial  the last PE lacks multicast: the world has no region, a team of the
//                      other PEs has one (its data seen by every member), a team with the last PE
//                      has none on any member.
//   runtime_team_bind_fails  the world has a region; the last PE's bind fails while a team of
//                      PEs 1..n-1 is made (no region on any member, the device state has none,
//                      one create, every bound chunk unbound) and later at a growth (a second such
//                      team drops its region on every member, the world keeps its).
//   runtime_disagree   only the last PE sets VSHMEM_ENABLE_MULTICAST=1: shmem_init fails on
//                      every PE naming the variable (instead of the others waiting for it).
//   runtime_shared     --simulate-nodes 2, no NVLink domain: no region over every PE, each node's
//                      SHMEM_TEAM_SHARED gets one at shmem_init (SHMEMX_TEAM_NODE shares it): data,
//                      emulated barriers, growth binding.
//   runtime_fabric     --simulate-nodes 2, one NVLink domain: shmem_init maps the other node's PEs
//                      (shmem_ptr non-NULL, SHMEM_TEAM_SHARED spans both nodes), puts and gets
//                      through the window, barriers without the node's shared host counters.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/config.hpp"
#include "runtime/common/private_dir.hpp"
#include "runtime/heap/multicast_region.hpp"
#include "runtime/heap/symmetric_heap.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/fabric_domain.hpp"
#include "runtime/transport/transport.hpp"
#include "shmem.h"
#include "shmemx.h"
#include "tests/support/fake_cuda_driver.hpp"
#include "vshmem/device/impl/mc_barrier.h"
#include "vshmem/device/impl/mc_select.h"
#include "vshmem/device/impl/state.h"
#include "vshmem/device_hooks.h"

namespace {

using namespace vshmem;
using testing::fake_calls;
using testing::FakeDriverConfig;

int g_pe = -1;
std::string g_mode;
// The device state libvshmem built last (vshmem/device/impl/state.h). The fake driver's "GPU"
// memory is host memory: its tables in the heap are read directly.
const vshmem::device::GpuState& published() { return *vshmemi_device_state_built(); }

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "multicast_fake %s: PE %d: FAILED: %s\n", g_mode.c_str(), g_pe,
               what.c_str());
  std::exit(1);
}
void check(bool ok, const std::string& what) {
  if (!ok) die(what);
}
void check(const Status& st, const char* what) {
  if (!st.is_ok()) die(std::string(what) + ": " + st.message());
}
bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A directory with one channel device stand-in, as the IMEX service would make.
std::string make_imex_dir(const std::string& job) {
  std::string dir = "/tmp/vshmem-fake-imex-" + job + "-" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  std::ofstream(dir + "/channel0") << "";
  return dir;
}

void remove_imex_dir(const std::string& dir) {
  ::unlink((dir + "/channel0").c_str());
  ::rmdir(dir.c_str());
}

// The in-process stack the runtime builds at shmem_init, on the fake driver.
struct Stack {
  std::unique_ptr<Bootstrap> boot;
  Topology topo;
  JobIdentity job;
  std::unique_ptr<MemoryProvider> provider;
  std::unique_ptr<FdExchange> fds;
  std::unique_ptr<SymmetricHeap> heap;
};

void build(Stack& s, const FakeDriverConfig& cfg, size_t chunks) {
  const detail::CudaDriver& drv = testing::fake_cuda_driver(cfg);
  check(drv.fake, "the driver table is the fake");
  auto provider = detail::make_cuda_provider_with_driver(drv, {s.topo.local_rank, 1});
  check(provider.status(), "cuda provider on the fake driver");
  s.provider = std::move(provider).value();
  const int n = s.boot->size();
  auto dir = job_socket_dir(s.job.id);
  check(dir.status(), "job_socket_dir");
  auto fds =
      FdExchange::create(dir.value(), s.job.id, s.job.secret, g_pe, std::chrono::seconds(30));
  check(fds.status(), "FdExchange::create");
  s.fds = std::move(fds).value();
  check(s.boot->barrier(), "barrier");
  std::vector<bool> mapped(n, true);
  mapped[g_pe] = false;
  HeapConfig config{64u << 20, cfg.granularity, true};
  auto heap = SymmetricHeap::create(*s.provider, *s.boot, s.topo, mapped, s.fds.get(), config);
  check(heap.status(), "SymmetricHeap::create");
  s.heap = std::move(heap).value();
  for (size_t c = 1; c <= chunks; ++c) {  // one chunk per growth
    check(s.heap->commit_at_least(c * cfg.granularity, "test"), "commit");
  }
  check(s.heap->own_chunks().size() == chunks, "own chunks");
}

void region_modes(Stack& s) {
  const int n = s.boot->size();
  const int last = n - 1;
  FakeDriverConfig cfg;
  const bool is_last = g_pe == last;
  if (g_mode == "bind_fails" && is_last) {
    cfg.multicast_bind_result = CUDA_ERROR_NOT_PERMITTED;
    cfg.multicast_bind_fail_from = 1;  // its second chunk
  }
  if (g_mode == "grow_bind_fails" && is_last) {
    cfg.multicast_bind_result = CUDA_ERROR_OUT_OF_MEMORY;
    cfg.multicast_bind_fail_from = 2;  // the growth after the two initial chunks
  }
  if (g_mode == "no_attribute" && is_last) cfg.multicast_supported = false;
  std::string imex;
  if (g_mode == "ok_fabric") {
    // Fabric handles everywhere: heap chunks and the multicast handle go through the bootstrap.
    imex = make_imex_dir(s.job.id);
    cfg.fabric_supported = true;
    cfg.imex_channel_dir = imex;
  }
  if (g_mode != "ok" && g_mode != "ok_fabric" && g_mode != "bind_fails" &&
      g_mode != "grow_bind_fails" && g_mode != "no_attribute" && g_mode != "disabled") {
    die("unknown mode");
  }
  build(s, cfg, 2);
  check((s.heap->handle_kind() == HandleKind::kFabric) == (g_mode == "ok_fabric"),
        "heap handle kind");
  const bool enabled = g_mode != "disabled";
  if (enabled) ::setenv("VSHMEM_ENABLE_MULTICAST", "1", 1);  // this process, the fake only
  (void)vshmem::config::load();  // the runtime reads the environment once, as shmem_init does
  std::string why;
  auto made = MulticastRegion::create(*s.provider, *s.boot, *s.heap, s.fds.get(), enabled, &why);
  check(made.status(), "MulticastRegion::create");
  std::unique_ptr<MulticastRegion> region = std::move(made).value();

  if (g_mode == "disabled") {
    check(region == nullptr, "a region although multicast was not enabled");
    check(contains(why, "VSHMEM_ENABLE_MULTICAST"), "reason: " + why);
    for (const char* call : {"cuMulticastCreate", "cuMulticastGetGranularity",
                             "cuMulticastAddDevice", "cuMulticastBindMem"}) {
      check(fake_calls(call) == 0, std::string(call) + " was called");
    }
    return;
  }
  if (g_mode == "no_attribute") {
    check(region == nullptr, "a region although PE " + std::to_string(last) + " lacks multicast");
    const std::string want = "PE " + std::to_string(last) + " failed at capability check";
    check(contains(why, want) && contains(why, "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED"),
          "reason: " + why);
    check(fake_calls("cuMulticastCreate") == 0, "cuMulticastCreate was called");
    return;
  }
  if (g_mode == "bind_fails") {
    check(region == nullptr, "a region although PE " + std::to_string(last) + "'s bind failed");
    const std::string want = "PE " + std::to_string(last) + " failed at cuMulticastBindMem";
    check(contains(why, want) && contains(why, "CUDA_ERROR_NOT_PERMITTED"), "reason: " + why);
    check(fake_calls("cuMulticastCreate") == (g_pe == 0 ? 1 : 0), "create count");
    // What was bound is unbound again and the object is released (the region is gone).
    check(fake_calls("cuMulticastUnbind") == (is_last ? 1 : 2),
          "unbinds: " + std::to_string(fake_calls("cuMulticastUnbind")));
    std::fprintf(stderr, "PE %d: fallback message: %s\n", g_pe, why.c_str());
    return;
  }

  // ok and grow_bind_fails: the region exists everywhere.
  check(region != nullptr, "no region: " + why);
  check(fake_calls("cuMulticastCreate") == (g_pe == 0 ? 1 : 0), "one create, on PE 0");
  check(fake_calls("cuMulticastAddDevice") == 1, "one AddDevice per PE");
  check(fake_calls("cuMulticastBindMem") == 2, "one bind per chunk");
  check(fake_calls("cuMemImportFromShareableHandle") >= (g_pe == 0 ? 0 : 1), "imported");
  if (!imex.empty()) remove_imex_dir(imex);
  const uintptr_t h = s.heap->base();
  check(region->translate(reinterpret_cast<void*>(h + 100)) ==
            reinterpret_cast<void*>(region->base() + 100),
        "translate");
  check(region->translate(reinterpret_cast<void*>(h + 2 * (64u << 10))) == nullptr,
        "translate beyond the bound chunks");
  check(region->translate(reinterpret_cast<void*>(h - 8)) == nullptr, "translate below H");

  // PE 0 stores fresh data through its multicast mapping; every PE sees it through its own (the
  // fake backs the object with one shared memory: the handle really went from PE 0 to each PE).
  uint64_t seed = std::random_device{}();
  check(s.boot->broadcast(&seed, sizeof(seed), 0), "broadcast");
  std::mt19937_64 gen(seed);
  std::vector<uint64_t> want(512);
  for (auto& w : want) w = gen();
  auto* mc = reinterpret_cast<uint64_t*>(region->base() + 4096);
  if (g_pe != 0) std::memset(mc, 0xa5, 8);  // poison, before PE 0 writes
  check(s.boot->barrier(), "barrier");
  if (g_pe == 0) std::memcpy(mc, want.data(), want.size() * 8);
  check(s.boot->barrier(), "barrier");
  check(std::memcmp(mc, want.data(), want.size() * 8) == 0, "multicast data differs");

  // Growth: the new chunk is bound on every PE (or, in grow_bind_fails, every PE learns that the
  // last PE's bind failed).
  const size_t before = s.heap->committed();
  s.heap->set_chunk_listener([&](size_t offset, std::shared_ptr<PhysicalAllocation> chunk) {
    Status st = region->bind_chunk(offset, std::move(chunk));
    if (g_mode != "grow_bind_fails") {
      check(st, "bind_chunk");
    } else {
      check(!st.is_ok() && st.code() == Code::kUnsupported, "the growth bind failure went unseen");
      const std::string want_msg = "PE " + std::to_string(last) + " failed at cuMulticastBindMem";
      check(contains(st.message(), want_msg) && contains(st.message(), "CUDA_ERROR_OUT_OF_MEMORY"),
            "reason: " + st.message());
      region.reset();
    }
  });
  check(s.heap->commit_at_least(before + (64u << 10), "test"), "grow");
  if (g_mode != "grow_bind_fails") {
    check(fake_calls("cuMulticastBindMem") == 3, "the growth chunk was not bound");
    check(region->translate(reinterpret_cast<void*>(h + before)) != nullptr,
          "the growth chunk has no multicast address");
    region.reset();
    check(fake_calls("cuMulticastUnbind") == 3, "teardown unbinds every chunk");
  } else {
    check(region == nullptr, "the region survived a failed growth bind");
  }
}

// The transport plan and the heap on the fabric: fabric peers are mapped into the window (slots
// numbered over the NVLink domain) and their chunks of a growth are read through it; other PEs
// of other nodes are remote and have no slot.
void fabric_window(Stack& s, const std::vector<bool>& fabric) {
  const int n = s.boot->size();
  auto plan = plan_transports(*s.boot, s.topo, *s.provider);
  check(plan.status(), "plan_transports");
  for (int p = 0; p < n; ++p) {
    const bool same_node = s.topo.node_of_pe[p] == s.topo.my_node;
    const PathKind want = p == g_pe                ? PathKind::kSelf
                          : same_node || fabric[p] ? PathKind::kMapped
                                                   : PathKind::kRemote;
    check(plan->path[p] == want, "PE " + std::to_string(p) + " path " +
                                     path_kind_name(plan->path[p]) + ", expected " +
                                     path_kind_name(want));
    check(plan->over_fabric[p] == fabric[p], "PE " + std::to_string(p) + " over_fabric wrong");
  }
  check(!plan->one_node, "the plan thinks the job is on one node");
  check(plan->job_has_remote == (g_mode == "fabric_diff"), "job_has_remote wrong");
  const size_t gran = s.provider->granularity();
  HeapConfig config{16 * gran, gran, true};
  auto heap = SymmetricHeap::create(*s.provider, *s.boot, s.topo, plan->mapped(), nullptr, config);
  check(heap.status(), "SymmetricHeap::create with fabric peers");
  s.heap = std::move(heap).value();
  check(s.heap->handle_kind() == HandleKind::kFabric, "the heap does not use fabric handles");
  int domain = 0;  // PEs we map, and ourselves
  for (int p = 0; p < n; ++p) domain += p == g_pe || plan->path[p] == PathKind::kMapped;
  check(s.heap->reserved_bytes() == s.heap->size() * static_cast<size_t>(domain + 1),
        "window slots: " + std::to_string(s.heap->reserved_bytes() / s.heap->size() - 1) +
            ", expected " + std::to_string(domain));
  check(s.heap->commit_at_least(2 * gran, "test"), "heap growth over the fabric");
  uint64_t seed = std::random_device{}() ^ (static_cast<uint64_t>(g_pe) << 48);
  std::vector<uint64_t> seeds(n);
  check(s.boot->allgather(&seed, seeds.data(), sizeof(seed)), "allgather seeds");
  auto* own = reinterpret_cast<uint64_t*>(s.heap->base());
  std::mt19937_64 gen(seed);
  for (size_t i = 0; i < 2 * gran / 8; ++i) own[i] = gen();
  check(s.boot->barrier(), "barrier");
  for (int p = 0; p < n; ++p) {
    if (p == g_pe) continue;
    const auto* at = static_cast<const uint64_t*>(s.heap->translate(own, p));
    if (plan->path[p] != PathKind::kMapped) {
      check(at == nullptr, "PE " + std::to_string(p) + " is remote but has a window address");
      continue;
    }
    check(at != nullptr, "mapped PE " + std::to_string(p) + " has no window address");
    std::mt19937_64 pg(seeds[p]);
    for (size_t i = 0; i < 2 * gran / 8; ++i) {
      check(at[i] == pg(), "PE " + std::to_string(p) +
                               "'s heap differs through the window at word " + std::to_string(i));
    }
  }
  check(s.boot->barrier(), "barrier");
}

void fabric_modes(Stack& s) {
  const int n = s.boot->size();
  FakeDriverConfig cfg;
  cfg.fabric_supported = true;
  cfg.fabric_info_result = CUDA_SUCCESS;
  cfg.fabric_info.registered = true;
  std::memset(cfg.fabric_info.cluster_uuid, 0x42, sizeof(cfg.fabric_info.cluster_uuid));
  cfg.fabric_info.clique_id = g_mode == "fabric_diff" ? 7 + s.topo.my_node : 7;
  std::string imex =
      g_mode == "imex_missing" ? "/nonexistent/vshmem-imex-" + s.job.id : make_imex_dir(s.job.id);
  cfg.imex_channel_dir = imex;
  const detail::CudaDriver& drv = testing::fake_cuda_driver(cfg);
  if (g_mode == "imex_missing") {
    ::setenv("VSHMEM_HANDLE_TYPE", "fabric", 1);
    (void)vshmem::config::load();
    auto refused = detail::make_cuda_provider_with_driver(drv, {});
    ::unsetenv("VSHMEM_HANDLE_TYPE");
    (void)vshmem::config::load();
    check(!refused.is_ok(), "VSHMEM_HANDLE_TYPE=fabric accepted without an IMEX channel");
    check(contains(refused.status().message(), "no IMEX channel: " + imex),
          "message: " + refused.status().message());
  }
  auto provider = detail::make_cuda_provider_with_driver(drv, {});
  check(provider.status(), "cuda provider on the fake driver");
  s.provider = std::move(provider).value();
  const std::vector<HandleKind> kinds = s.provider->handle_kinds();
  const bool has_fabric = !kinds.empty() && kinds[0] == HandleKind::kFabric;
  check(has_fabric == (g_mode != "imex_missing"), "fabric handles offered wrongly");

  FabricIdentity mine = s.provider->fabric_identity();
  std::vector<FabricIdentity> all(n);
  check(s.boot->allgather(&mine, all.data(), sizeof(mine)), "allgather");
  std::vector<bool> peers = fabric_peers(all, s.topo.node_of_pe, g_pe);
  for (int p = 0; p < n; ++p) {
    const bool other_node = s.topo.node_of_pe[p] != s.topo.my_node;
    const bool want = g_mode == "fabric_same" && other_node;
    check(peers[p] == want, "PE " + std::to_string(p) + " fabric peer: " +
                                std::to_string(peers[p]) + ", expected " + std::to_string(want));
  }

  if (g_mode == "fabric_same") {
    // A fabric handle crosses the (simulated) nodes through the bootstrap and maps there.
    const size_t gran = s.provider->granularity();
    auto mem = s.provider->create(gran);
    check(mem.status(), "create");
    auto range = s.provider->reserve(s.provider->find_free_range(gran, gran).value(), gran);
    check(range.status(), "reserve");
    auto own = s.provider->map(range.value(), 0, mem.value());
    check(own.status(), "map");
    uint64_t seed = std::random_device{}() ^ (static_cast<uint64_t>(g_pe) << 40);
    std::mt19937_64 gen(seed);
    std::vector<uint64_t> data(gran / 8);
    for (auto& d : data) d = gen();
    std::memcpy(own.value()->address(), data.data(), gran);
    auto h = mem.value()->export_handle(HandleKind::kFabric);
    check(h.status(), "export fabric");
    std::vector<uint8_t> handles(n * ShareableHandle::kFabricBytes);
    std::vector<uint64_t> seeds(n);
    check(
        s.boot->allgather(h.value().fabric().data(), handles.data(), ShareableHandle::kFabricBytes),
        "allgather handles");
    check(s.boot->allgather(&seed, seeds.data(), sizeof(seed)), "allgather seeds");
    for (int p = 0; p < n; ++p) {
      if (!peers[p]) continue;
      auto imported = s.provider->import(
          ShareableHandle::from_fabric(&handles[p * ShareableHandle::kFabricBytes]), gran);
      check(imported.status(), "import fabric");
      auto r2 = s.provider->reserve(s.provider->find_free_range(gran, gran).value(), gran);
      check(r2.status(), "reserve");
      auto m = s.provider->map(r2.value(), 0, imported.value());
      check(m.status(), "map peer");
      std::mt19937_64 pg(seeds[p]);
      const auto* got = static_cast<const uint64_t*>(m.value()->address());
      for (size_t i = 0; i < gran / 8; ++i) {
        check(got[i] == pg(),
              "PE " + std::to_string(p) + "'s memory differs at word " + std::to_string(i));
      }
    }
    check(s.boot->barrier(), "barrier");
  }
  if (g_mode != "imex_missing") fabric_window(s, peers);
  if (g_mode != "imex_missing") remove_imex_dir(imex);
}

// Member 0 of `team` stores fresh data through its multicast address `team_mc`; every member reads
// it through its own (the fake backs a multicast object with one shared memory, so this proves
// each member imported the team's object, not the world's).
void team_data_check(shmem_team_t team, long* team_mc, long* seed_sym) {
  const int me = shmem_team_my_pe(team);
  uint64_t seed = std::random_device{}();
  *seed_sym = static_cast<long>(seed >> 1);
  shmem_team_sync(team);
  seed = static_cast<uint64_t>(
      shmem_long_g(seed_sym, shmem_team_translate_pe(team, 0, SHMEM_TEAM_WORLD)));
  std::mt19937_64 gen(seed);
  std::vector<long> want(256);
  for (auto& w : want) w = static_cast<long>(gen() >> 1);
  if (me != 0) team_mc[8] = -1;  // poison, before member 0 stores
  shmem_team_sync(team);
  if (me == 0) std::memcpy(team_mc + 8, want.data(), want.size() * sizeof(long));
  shmem_team_sync(team);
  check(std::memcmp(team_mc + 8, want.data(), want.size() * sizeof(long)) == 0,
        "the team's multicast data differs");
  shmem_team_sync(team);
}

// The team's slot in the device state's team table.
int slot_of(shmem_team_t team) {
  return static_cast<int>((reinterpret_cast<uint64_t>(team) - published().team_handle_base) /
                          published().team_handle_stride);
}

// The words of the team's slot (impl/state.h, impl/mc_barrier.h), as the device code finds them.
uint64_t* slot_word(int slot, uint64_t offset) {
  return reinterpret_cast<uint64_t*>(published().team_sync_base +
                                     static_cast<uint64_t>(slot) * published().team_slot_bytes +
                                     offset);
}

// mc_barrier_count's operations with the switch played on the host: multimem.red adds 1 to every
// member's copy of the counter (here through the window, one atomic add per member); multimem is
// what no machine of CI has, the counting around it is the device code's own.
struct SwitchOnHost {
  std::vector<int> members;  // world PEs
  void before(bool) { std::atomic_thread_fence(std::memory_order_seq_cst); }
  void add_all(uint64_t* counter) {
    for (int pe : members) {
      auto* copy = static_cast<uint64_t*>(shmem_ptr(counter, pe));
      check(copy != nullptr, "PE " + std::to_string(pe) + "'s counter is not mapped here");
      __atomic_fetch_add(copy, 1, __ATOMIC_RELEASE);
    }
  }
  uint64_t load_acquire(const uint64_t* counter) {
    std::this_thread::yield();  // PEs share the CPUs of CI
    return __atomic_load_n(counter, __ATOMIC_ACQUIRE);
  }
};

// The team's multicast barrier as the device runs it (mc_barrier_count on the slot's words, which
// must lie in the team's region), emulated: `rounds` times every member publishes a fresh value
// after a random delay, passes the barrier, and must then see every member's value of the round
// (a barrier that lets a PE through early shows a stale one); a second barrier guards the reads.
void emulated_team_barriers(shmem_team_t team, long* vals, int rounds) {
  const int me = shmem_team_my_pe(team), m = shmem_team_n_pes(team), slot = slot_of(team);
  SwitchOnHost ops;
  for (int i = 0; i < m; ++i)
    ops.members.push_back(shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD));
  uint64_t* counter = slot_word(slot, device::TeamSlotLayout::kMcCounter);
  auto* target =
      reinterpret_cast<volatile uint64_t*>(slot_word(slot, device::TeamSlotLayout::kMcTarget));
  // The region the device's team barrier takes (mc_team): the world's for a team of every PE.
  const uint64_t mc =
      device::mc_team_base(published().mc_base, published().teams[slot].mc_base, m, shmem_n_pes());
  check(mc != 0, "the device state gives the team no multicast address");
  check(shmemx_mc_ptr(team, counter) ==
            reinterpret_cast<void*>(mc +
                                    (reinterpret_cast<uint64_t>(counter) - published().heap_base)),
        "the slot's multicast barrier counter is not in the team's region");
  check(reinterpret_cast<uint64_t>(target) - reinterpret_cast<uint64_t>(counter) >= 128 &&
            device::TeamSlotLayout::scratch(shmem_n_pes()) < published().team_slot_bytes,
        "the slot's words overlap");
  // No member adds before all are here (the first team sync): the counter is where this PE's
  // last multicast barrier in the slot (with this team or an earlier one) left it.
  const uint64_t start = *target;
  check(*counter == start, "the slot's counter (" + std::to_string(*counter) +
                               ") is not where this PE's last multicast barrier left it (" +
                               std::to_string(start) + ")");
  // Fresh values every run: member 0's seed.
  vals[me] = static_cast<long>(std::random_device{}() >> 1);
  shmem_team_sync(team);
  const long seed = *static_cast<long*>(shmem_ptr(vals, ops.members[0]));
  shmem_team_sync(team);
  std::mt19937 delay(static_cast<unsigned>(seed) + me);
  auto value = [&](int round, int member) {
    return seed ^ (static_cast<long>(round) << 20) ^ (static_cast<long>(member) << 8) ^ 0x5a5a;
  };
  for (int r = 0; r < rounds; ++r) {
    if (delay() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(delay() % 500));
    __atomic_store_n(&vals[me], value(r, me), __ATOMIC_RELAXED);
    device::mc_barrier_count(ops, counter, target, static_cast<uint64_t>(m), true);
    for (int j = 0; j < m; ++j) {
      const long got = __atomic_load_n(static_cast<long*>(shmem_ptr(vals, ops.members[j])) + j,
                                       __ATOMIC_RELAXED);
      check(got == value(r, j), "round " + std::to_string(r) + ": member " + std::to_string(j) +
                                    "'s value is not there: the barrier let this PE through early");
    }
    device::mc_barrier_count(ops, counter, target, static_cast<uint64_t>(m), false);
  }
  shmem_team_sync(team);  // every add has landed
  check(*target == start + 2ull * rounds * static_cast<uint64_t>(m) && *counter == *target,
        "counter " + std::to_string(*counter) + ", target " + std::to_string(*target) + " after " +
            std::to_string(2 * rounds) + " barriers of " + std::to_string(m) + " from " +
            std::to_string(start));
}

int runtime_modes(int argc, char** argv) {
  (void)argc;
  (void)argv;
  // The PE number is not known before shmem_init; the launcher's variable says it.
  const char* rank = std::getenv("VSHMEM_RANK");
  const int me = rank != nullptr ? std::atoi(rank) : -1;
  const char* size = std::getenv("VSHMEM_NPES");
  const int n = size != nullptr ? std::atoi(size) : -1;
  FakeDriverConfig cfg;
  cfg.granularity = 1 << 20;
  cfg.multicast_granularity = 1 << 20;
  std::string imex;
  if (g_mode == "runtime_fabric") {
    // One NVLink domain over both simulated nodes; this process's own IMEX channel stand-in.
    imex = "/tmp/vshmem-fake-imex-rt-" + std::to_string(::getpid());
    ::mkdir(imex.c_str(), 0700);
    std::ofstream(imex + "/channel0") << "";
    cfg.imex_channel_dir = imex;
    cfg.fabric_supported = true;
    cfg.fabric_info_result = CUDA_SUCCESS;
    cfg.fabric_info.registered = true;
    std::memset(cfg.fabric_info.cluster_uuid, 0x5a, sizeof(cfg.fabric_info.cluster_uuid));
    cfg.fabric_info.clique_id = 3;
  }
  if (g_mode == "runtime_team_partial" && me == n - 1) cfg.multicast_supported = false;
  if (g_mode == "runtime_bind_fails" && me == n - 1) {
    cfg.multicast_bind_result = CUDA_ERROR_NOT_PERMITTED;
    cfg.multicast_bind_fail_from = 0;
  }
  detail::use_fake_driver_for_tests(&testing::fake_cuda_driver(cfg));
  ::setenv("VSHMEM_BACKEND", "cuda", 1);
  if (g_mode == "runtime_off" || g_mode == "runtime_fabric" ||
      (g_mode == "runtime_disagree" && me != n - 1)) {
    ::unsetenv("VSHMEM_ENABLE_MULTICAST");  // the default
  } else {
    ::setenv("VSHMEM_ENABLE_MULTICAST", "1", 1);  // this process, the fake only
  }
  shmem_init();  // runtime_disagree: fails naming VSHMEM_ENABLE_MULTICAST (WILL_FAIL_REGEX)
  g_pe = shmem_my_pe();
  check(g_mode != "runtime_disagree", "shmem_init accepted PEs that disagree on multicast");
  const int npes = shmem_n_pes();
  long* x = static_cast<long*>(shmem_malloc(1024 * sizeof(long)));
  check(x != nullptr, "shmem_malloc");
  void* mc = shmemx_mc_ptr(SHMEM_TEAM_WORLD, x);
  if (g_mode == "runtime") {
    check(mc != nullptr, "shmemx_mc_ptr(SHMEM_TEAM_WORLD) is NULL with multicast on");
    check(shmemx_mc_ptr(SHMEM_TEAM_WORLD, reinterpret_cast<char*>(x) + 8) ==
              static_cast<char*>(mc) + 8,
          "shmemx_mc_ptr is not linear");
    long local = 0;
    check(shmemx_mc_ptr(SHMEM_TEAM_WORLD, &local) == nullptr, "a multicast address off the heap");
    check(shmemx_mc_ptr(SHMEM_TEAM_INVALID, x) == nullptr, "a multicast address for no team");
    if (npes > 1) {
      // A smaller team gets a region of its own at the split (a team of one does not).
      long* seed_sym = static_cast<long*>(shmem_malloc(sizeof(long)));
      long* vals = static_cast<long*>(shmem_malloc(static_cast<size_t>(npes) * sizeof(long)));
      int half_slot = -1;
      shmem_team_t half = SHMEM_TEAM_INVALID;
      const int creates_before = fake_calls("cuMulticastCreate");
      shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes - 1, nullptr, 0, &half);
      const int members = npes - 1;
      if (half != SHMEM_TEAM_INVALID) {
        void* team_mc = shmemx_mc_ptr(half, x);
        check((team_mc != nullptr) == (members > 1), "the smaller team's multicast address");
        check(fake_calls("cuMulticastCreate") - creates_before == (g_pe == 0 && members > 1),
              "the team's object is created once, by its first member");
        if (members > 1) {
          check(team_mc != mc, "the team shares the world's multicast address");
          // The device library is told the team's region (GpuTeam.mc_base of its slot).
          const uint64_t slot = (reinterpret_cast<uint64_t>(half) - published().team_handle_base) /
                                published().team_handle_stride;
          const uint64_t offset = reinterpret_cast<uint64_t>(x) - published().heap_base;
          check(published().teams != nullptr &&
                    published().teams[slot].mc_base + offset == reinterpret_cast<uint64_t>(team_mc),
                "the device state does not carry the team's multicast address");
          check(published().mc_base + offset == reinterpret_cast<uint64_t>(mc),
                "the device state does not carry the world's multicast address");
          team_data_check(half, static_cast<long*>(team_mc), seed_sym);
          emulated_team_barriers(half, vals, 40);
          half_slot = slot_of(half);
        }
      }
      // Growth (collective over every PE) binds the new chunk in the team's region too.
      char* more = static_cast<char*>(shmem_malloc(8u << 20));
      check(more != nullptr, "shmem_malloc(8 MiB)");
      if (half != SHMEM_TEAM_INVALID) {
        check((shmemx_mc_ptr(half, more + (8u << 20) - 1) != nullptr) == (members > 1),
              "no team multicast address for memory of a growth");
        const int unbinds = fake_calls("cuMulticastUnbind");
        shmem_team_destroy(half);
        check((fake_calls("cuMulticastUnbind") > unbinds) == (members > 1),
              "shmem_team_destroy did not unbind the team's region");
      }
      shmem_barrier_all();
      if (npes > 2) {
        // The slot again, for a team of other members (of another size with 4 PEs): this PE's
        // count carries over from the team before, and the barriers stay right.
        shmem_team_t again = SHMEM_TEAM_INVALID;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, 2, nullptr, 0, &again);
        if (again != SHMEM_TEAM_INVALID) {
          check(half_slot < 0 || slot_of(again) == half_slot,
                "the new team did not get the destroyed team's slot");
          emulated_team_barriers(again, vals, 40);
          shmem_team_destroy(again);
        }
      }
      // A split of every PE: no region of its own, the world's, with its slot's counter.
      shmem_team_t all = SHMEM_TEAM_INVALID;
      shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, nullptr, 0, &all);
      check(all != SHMEM_TEAM_INVALID && published().teams[slot_of(all)].mc_base == 0,
            "a team of every PE got a region of its own");
      emulated_team_barriers(all, vals, 20);
      shmem_team_destroy(all);
      shmem_barrier_all();
      shmem_free(more);
      shmem_free(vals);
      shmem_free(seed_sym);
    }
    // Growth past the initial heap: the new block has a multicast address too.
    char* big = static_cast<char*>(shmem_malloc(8u << 20));
    check(big != nullptr, "shmem_malloc(8 MiB)");
    check(shmemx_mc_ptr(SHMEM_TEAM_WORLD, big + (8u << 20) - 1) != nullptr,
          "no multicast address for memory of a growth");
    shmem_free(big);
  } else if (g_mode == "runtime_team_partial") {
    // The last PE has no multicast: the world falls back, a team without it still gets a region,
    // a team with it does not (on any of its members).
    check(mc == nullptr,
          "shmemx_mc_ptr(SHMEM_TEAM_WORLD) is not NULL although a PE lacks multicast");
    long* seed_sym = static_cast<long*>(shmem_malloc(sizeof(long)));
    shmem_team_t first = SHMEM_TEAM_INVALID, last = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes - 1, nullptr, 0, &first);
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, nullptr, 0, &last);
    if (first != SHMEM_TEAM_INVALID) {
      void* team_mc = shmemx_mc_ptr(first, x);
      check((team_mc != nullptr) == (npes - 1 > 1),
            "the team of the PEs with multicast has no region");
      if (team_mc != nullptr) team_data_check(first, static_cast<long*>(team_mc), seed_sym);
    }
    if (last != SHMEM_TEAM_INVALID) {
      check(shmemx_mc_ptr(last, x) == nullptr, "a region for a team whose last PE lacks multicast");
    }
    shmem_barrier_all();
    if (first != SHMEM_TEAM_INVALID) shmem_team_destroy(first);
    if (last != SHMEM_TEAM_INVALID) shmem_team_destroy(last);
    shmem_free(seed_sym);
  } else if (g_mode == "runtime_team_bind_fails") {
    // The world has its region; one bind of the last PE fails while a team of PEs 1..n-1 is made
    // (that team falls back on every member), then one at a heap growth (a second such team drops
    // its region on every member; the world keeps its).
    check(mc != nullptr && npes >= 3, "the world has no region, or fewer than 3 PEs");
    long* vals = static_cast<long*>(shmem_malloc(static_cast<size_t>(npes) * sizeof(long)));
    const bool last_pe = g_pe == npes - 1;
    auto fail_one_bind = [&](int skip) {  // this PE's bind after the next `skip` fails
      cfg.multicast_bind_result = CUDA_ERROR_NOT_PERMITTED;
      cfg.multicast_bind_fail_from = fake_calls("cuMulticastBindMem") + skip;
      cfg.multicast_bind_fail_until = cfg.multicast_bind_fail_from + 1;
      (void)testing::fake_cuda_driver(cfg);
    };
    if (last_pe) fail_one_bind(0);
    const int creates = fake_calls("cuMulticastCreate"), binds = fake_calls("cuMulticastBindMem"),
              unbinds = fake_calls("cuMulticastUnbind");
    shmem_team_t failed = SHMEM_TEAM_INVALID, dropped = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, nullptr, 0, &failed);
    const int new_binds = fake_calls("cuMulticastBindMem") - binds;
    const int new_unbinds = fake_calls("cuMulticastUnbind") - unbinds;
    if (failed != SHMEM_TEAM_INVALID) {
      check(shmemx_mc_ptr(failed, x) == nullptr,
            "a region for the team although PE " + std::to_string(npes - 1) + "'s bind failed");
      check(published().teams[slot_of(failed)].mc_base == 0,
            "the device state gives the failed team a region (its barrier would be multicast)");
      check(fake_calls("cuMulticastCreate") - creates == (shmem_team_my_pe(failed) == 0),
            "the team's object is created once, by its first member");
      check(new_binds > 0 &&
                (last_pe ? new_binds == 1 && new_unbinds == 0 : new_unbinds == new_binds),
            "binds " + std::to_string(new_binds) + ", unbinds " + std::to_string(new_unbinds) +
                ": what was bound is not unbound again");
      shmem_team_sync(failed);  // the unicast barrier
    } else {
      check(fake_calls("cuMulticastCreate") == creates && new_binds == 0,
            "a PE outside the team made multicast calls for it");
    }
    shmem_barrier_all();
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, nullptr, 0, &dropped);
    if (dropped != SHMEM_TEAM_INVALID) {
      check(shmemx_mc_ptr(dropped, x) != nullptr, "no region for the team once binds succeed");
      emulated_team_barriers(dropped, vals, 20);
    }
    // The growth's first chunk: the world's bind succeeds, the team's fails on the last PE.
    if (last_pe) fail_one_bind(1);
    const int binds_before_growth = fake_calls("cuMulticastBindMem");
    char* more = static_cast<char*>(shmem_malloc(64u << 20));  // past the committed heap
    check(more != nullptr, "shmem_malloc(64 MiB)");
    check(fake_calls("cuMulticastBindMem") > binds_before_growth, "the heap did not grow");
    check(shmemx_mc_ptr(SHMEM_TEAM_WORLD, more) != nullptr,
          "the world lost its region with the team's");
    if (dropped != SHMEM_TEAM_INVALID) {
      check(shmemx_mc_ptr(dropped, x) == nullptr, "the team kept its region after PE " +
                                                      std::to_string(npes - 1) +
                                                      "'s bind of a growth failed");
      check(published().teams[slot_of(dropped)].mc_base == 0,
            "the device state still gives the team its dropped region");
      shmem_team_sync(dropped);
      shmem_team_destroy(dropped);
    }
    if (failed != SHMEM_TEAM_INVALID) shmem_team_destroy(failed);
    shmem_barrier_all();
    shmem_free(more);
    shmem_free(vals);
  } else if (g_mode == "runtime_shared") {
    // Two simulated nodes that do not map each other: no region over every PE (PE 0 says why),
    // each node's SHMEM_TEAM_SHARED makes its own at shmem_init (SHMEMX_TEAM_NODE, the same PEs,
    // shares it), its data and barriers work, a growth binds it.
    check(mc == nullptr, "a region over PEs that do not map each other");
    const int m = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    check(m == npes / 2, "SHMEM_TEAM_SHARED has " + std::to_string(m) + " PEs");
    void* shared_mc = shmemx_mc_ptr(SHMEM_TEAM_SHARED, x);
    check(shared_mc != nullptr, "SHMEM_TEAM_SHARED has no region of its own");
    check(shmemx_mc_ptr(SHMEMX_TEAM_NODE, x) == shared_mc,
          "SHMEMX_TEAM_NODE (the same PEs) does not use the shared team's region");
    check(fake_calls("cuMulticastCreate") == (shmem_team_my_pe(SHMEM_TEAM_SHARED) == 0 ? 1 : 0),
          "one object per node, created by the shared team's first member");
    check(published().teams[slot_of(SHMEM_TEAM_SHARED)].mc_base != 0 &&
              published().teams[slot_of(SHMEMX_TEAM_NODE)].mc_base ==
                  published().teams[slot_of(SHMEM_TEAM_SHARED)].mc_base,
          "the device state does not carry the shared team's region");
    long* seed_sym = static_cast<long*>(shmem_malloc(sizeof(long)));
    long* vals = static_cast<long*>(shmem_malloc(static_cast<size_t>(npes) * sizeof(long)));
    team_data_check(SHMEM_TEAM_SHARED, static_cast<long*>(shared_mc), seed_sym);
    emulated_team_barriers(SHMEM_TEAM_SHARED, vals, 20);
    emulated_team_barriers(SHMEMX_TEAM_NODE, vals, 20);
    const int binds = fake_calls("cuMulticastBindMem");
    char* more = static_cast<char*>(shmem_malloc(64u << 20));  // past the committed heap
    check(more != nullptr, "shmem_malloc(64 MiB)");
    check(fake_calls("cuMulticastBindMem") > binds &&
              shmemx_mc_ptr(SHMEM_TEAM_SHARED, more + (64u << 20) - 1) != nullptr,
          "the growth is not bound in the shared team's region");
    shmem_barrier_all();
    shmem_free(more);
    shmem_free(vals);
    shmem_free(seed_sym);
  } else if (g_mode == "runtime_fabric") {
    remove_imex_dir(imex);
    check(mc == nullptr, "shmemx_mc_ptr is not NULL with multicast off");
    // Every PE of both simulated nodes is in our window: shmem_ptr reaches it, and the shared
    // team spans the domain.
    for (int p = 0; p < npes; ++p) {
      check(shmem_ptr(x, p) != nullptr,
            "shmem_ptr to PE " + std::to_string(p) + " is NULL in one NVLink domain");
    }
    check(shmem_team_n_pes(SHMEM_TEAM_SHARED) == npes,
          "SHMEM_TEAM_SHARED does not span the domain");
    // Stores through the window reach the other node's PE; every PE checks what its right
    // neighbour on the other node stored.
    const int other = (g_pe + npes / 2) % npes;
    std::mt19937_64 g2(std::random_device{}());
    std::vector<long> mine(1024);
    for (auto& v : mine) v = static_cast<long>(g2() >> 1);
    long* seen = static_cast<long*>(shmem_malloc(1024 * sizeof(long)));
    for (int i = 0; i < 1024; ++i) seen[i] = -1;
    long* published = static_cast<long*>(shmem_malloc(1024 * sizeof(long)));
    std::memcpy(published, mine.data(), 1024 * sizeof(long));
    shmem_barrier_all();
    std::memcpy(shmem_ptr(seen, other), mine.data(), 1024 * sizeof(long));  // a store
    shmem_barrier_all();
    const int from = (g_pe + npes - npes / 2) % npes;
    std::vector<long> theirs(1024);
    shmem_long_get(theirs.data(), published, 1024, from);
    check(std::memcmp(seen, theirs.data(), 1024 * sizeof(long)) == 0,
          "PE " + std::to_string(from) + "'s stores through the window are not here");
    shmem_free(published);
    shmem_free(seen);
  } else if (g_mode == "runtime_off") {
    check(mc == nullptr, "shmemx_mc_ptr is not NULL with multicast off");
    for (const char* call : {"cuMulticastCreate", "cuMulticastGetGranularity",
                             "cuMulticastAddDevice", "cuMulticastBindMem"}) {
      check(fake_calls(call) == 0, std::string(call) + " was called with multicast off");
    }
  } else {
    check(mc == nullptr, "shmemx_mc_ptr is not NULL although a PE's bind failed");
  }
  // Unicast RMA works either way.
  std::mt19937_64 gen(std::random_device{}());
  const long v = static_cast<long>(gen() >> 1);
  x[0] = -1;
  shmem_barrier_all();
  shmem_long_p(x, v + g_pe, (g_pe + 1) % npes);
  shmem_barrier_all();
  long from_left = 0;
  std::vector<long> all(npes);
  long* vs = static_cast<long*>(shmem_malloc(sizeof(long)));
  *vs = v;
  shmem_barrier_all();
  const long left_v = shmem_long_g(vs, (g_pe + npes - 1) % npes);
  from_left = x[0];
  check(from_left == left_v + (g_pe + npes - 1) % npes, "unicast put went wrong");
  shmem_free(vs);
  shmem_free(x);
  shmem_finalize();
  check(!testing::real_libcuda_loaded(), "libcuda.so.1 was loaded");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_mode = argc > 1 ? argv[1] : "";
  if (testing::real_libcuda_loaded()) die("libcuda.so.1 is loaded before the test starts");
  if (g_mode.rfind("runtime", 0) == 0) return runtime_modes(argc, argv);

  Stack s;
  auto boot = create_bootstrap({});
  check(boot.status(), "create_bootstrap");
  s.boot = std::move(boot).value();
  g_pe = s.boot->rank();
  auto topo = discover_topology(*s.boot);
  check(topo.status(), "discover_topology");
  s.topo = topo.value();
  auto job = agree_job_identity(*s.boot);
  check(job.status(), "agree_job_identity");
  s.job = job.value();

  if (g_mode.rfind("fabric", 0) == 0 || g_mode == "imex_missing") {
    fabric_modes(s);
  } else {
    region_modes(s);
  }
  check(s.boot->barrier(), "final barrier");
  s.heap.reset();
  s.fds.reset();
  s.provider.reset();
  check(!testing::real_libcuda_loaded(), "libcuda.so.1 was loaded");
  std::printf("multicast_fake %s: PE %d: ok\n", g_mode.c_str(), g_pe);
  return 0;
}
