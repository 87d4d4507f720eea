// The device state on a GPU heap, against the FAKE driver (tests/support/fake_cuda_driver: its
// "GPU" memory is host memory, so the state's tables are read directly): the device library is
// given the whole state, and code loaded at run time gets its own copy of the symbol written by
// libvshmem (shmemx_cumodule_init / shmemx_culibrary_init) at registration and after every change
// (a heap growth, a team split), until it is unregistered; at shmem_finalize, the empty state.
// Bad registrations fail naming the call and the cause: a module that does not define the state,
// one built for another state size, one never registered, NULL. No libcuda is loaded here.
//
// `ring` (run on two simulated nodes, so that some peers are not mapped): libvshmem makes the
// device proxy's request ring itself through the driver (slots and control block in cuMemHostAlloc
// DEVICEMAP | PORTABLE memory, the ticket counter in cuMemAlloc memory, all zeroed though the
// fake hands out garbage), names it in the state it gives the device library, sized by
// VSHMEM_PROXY_SLOTS / VSHMEM_PROXY_TIMEOUT; requests posted to it as device code posts them
// (vshmem/device/impl/proxy_ring.h) reach the other node; shmem_finalize gives the library the
// empty state while the ring is still there, then frees all of it.
// `ring_fails` (cuMemHostAlloc of mapped memory fails) and `ring_no_uva` (the device would see it
// at another address): shmem_init still succeeds, says why there is no ring, the state names
// none, and nothing is left allocated.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/memory/cuda_provider.hpp"
#include "shmem.h"
#include "shmemx.h"
#include "tests/support/fake_cuda_driver.hpp"
#include "vshmem/device/impl/proxy_ring.h"
#include "vshmem/device/impl/state.h"
#include "vshmem/device_hooks.h"

namespace {

using vshmem::device::GpuState;
using vshmem::testing::FakeLoadedCode;

int g_pe = -1;
[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "device_state_fake: PE %d: FAILED: %s\n", g_pe, what.c_str());
  std::exit(1);
}
void check(bool ok, const std::string& what) {
  if (!ok) die(what);
}

// Stands in for libvshmem_device: keeps what it is given. For `ring`: whether the ring's memory
// was still allocated when the library was given the empty state.
GpuState g_written{};
int g_writes = 0;
const void* g_ring_memory = nullptr;
int g_ring_flags_at_empty = -2;
int write_state(const GpuState* s, const int64_t*) {
  g_written = *s;
  ++g_writes;
  if (!s->initialized && g_ring_memory != nullptr) {
    g_ring_flags_at_empty = vshmem::testing::fake_host_alloc_flags(g_ring_memory);
  }
  return 0;
}

// A loaded module's copy of the state, poisoned with fresh random bytes.
struct Module {
  std::vector<unsigned char> bytes;
  FakeLoadedCode code;
  explicit Module(size_t size, const char* name = "vshmemi_device_state") : bytes(size) {
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(std::rand());
    code.name = name;
    code.global = bytes.data();
    code.bytes = size;
  }
  CUmodule module() { return reinterpret_cast<CUmodule>(&code); }
  CUlibrary library() { return reinterpret_cast<CUlibrary>(&code); }
  const GpuState& state() const { return *reinterpret_cast<const GpuState*>(bytes.data()); }
};

bool same(const GpuState& a, const GpuState& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

bool last_error_has(const char* text) { return std::strstr(shmemx_last_error(), text) != nullptr; }

bool all_zero(const void* p, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i) {
    if (b[i] != 0) return false;
  }
  return true;
}

uint64_t pattern(uint64_t salt, int from, int to, uint64_t i) {
  uint64_t x = salt ^ (static_cast<uint64_t>(from) << 48) ^ (static_cast<uint64_t>(to) << 32) ^
               (i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

// One request as device code posts it; waits for the answer when kFlagWait. Returns its status.
int32_t post(const vshmem::proxy::RingView& ring, uint32_t op, uint32_t flags, int pe, void* dest,
             const void* source, uint64_t bytes, void* inline_answer = nullptr) {
  using namespace vshmem::proxy;
  uint64_t t = 0;
  Slot* slot = nullptr;
  check(ring_acquire(ring, &t, &slot) == kWaitOk, "no free slot in the ring");
  slot->op = op;
  slot->flags = flags;
  slot->pe = pe;
  slot->dest = reinterpret_cast<uint64_t>(dest);
  slot->source = reinterpret_cast<uint64_t>(source);
  slot->bytes = bytes;
  if (op == kOpPut && (flags & kFlagInline) != 0) std::memcpy(slot->data, source, bytes);
  ring_publish(slot, t);
  if ((flags & kFlagWait) == 0) return kOk;
  check(ring_wait_done(ring, slot, t) == kWaitOk, "no answer from the proxy");
  const int32_t status = slot->status;
  if (inline_answer != nullptr) std::memcpy(inline_answer, slot->data, bytes);
  ring_release(slot, t);
  return status;
}

void start(const vshmem::testing::FakeDriverConfig& cfg) {
  vshmem::detail::use_fake_driver_for_tests(&vshmem::testing::fake_cuda_driver(cfg));
  ::setenv("VSHMEM_BACKEND", "cuda", 1);
  static const vshmemi_device_library library = {vshmem::device::kGpuStateVersion, sizeof(GpuState),
                                                 &write_state};
  vshmemi_register_device_library(&library);
}

int ring_test(const std::string& mode) {
  using namespace vshmem::proxy;
  constexpr unsigned kMapped = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
  constexpr size_t kBlock = 1000;  // above the 128 inline bytes: the proxy stages it
  vshmem::testing::FakeDriverConfig cfg;
  cfg.multicast_supported = false;
  cfg.mapped_host_alloc_result = mode == "ring_fails" ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
  cfg.mapped_host_elsewhere = mode == "ring_no_uva";
  ::setenv("VSHMEM_PROXY_SLOTS", "100", 1);  // rounded up to 128
  ::setenv("VSHMEM_PROXY_TIMEOUT", "7", 1);
  start(cfg);
  const int host_allocs_before = vshmem::testing::fake_live_host_allocs(0);
  shmem_init();
  g_pe = shmem_my_pe();
  const int me = g_pe, n = shmem_n_pes();
  auto* inbox = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t) * n));
  auto* blocks = static_cast<unsigned char*>(shmem_malloc(kBlock * n));
  auto* mine = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  auto* salt = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  std::vector<bool> remote(static_cast<size_t>(n));
  int n_remote = 0;
  for (int p = 0; p < n; ++p) n_remote += (remote[p] = shmem_ptr(inbox, p) == nullptr) ? 1 : 0;
  check(n_remote > 0, "every peer is mapped: run on two simulated nodes");
  const GpuState* built = vshmemi_device_state_built();
  check(built != nullptr && built->initialized == 1, "no state built");
  const RingView ring = built->proxy;

  if (mode != "ring") {
    check(ring.slots == nullptr && g_written.proxy.slots == nullptr,
          "the state names a ring whose memory could not be had");
    check(last_error_has("shmem_init: cannot create the device proxy's request ring") &&
              last_error_has(mode == "ring_fails" ? "cuMemHostAlloc" : "no unified addressing") &&
              last_error_has("will trap") && last_error_has(("PE " + std::to_string(me)).c_str()),
          std::string("the missing ring is not explained: ") + shmemx_last_error());
    check(vshmem::testing::fake_live_host_allocs(kMapped) == 0,
          "device-mapped host memory is left allocated after the failure");
    shmem_barrier_all();
    shmem_finalize();
    if (me == 0) std::printf("device_state_fake %s: OK\n", mode.c_str());
    return 0;
  }

  // The memory: where the driver put it, as big as asked, zeroed.
  check(ring.slots != nullptr && ring.control != nullptr && ring.tickets != nullptr,
        "no ring in the state although PEs are not mapped");
  check(vshmem::testing::fake_host_alloc_flags(ring.control) == static_cast<int>(kMapped),
        "the control block is not cuMemHostAlloc(DEVICEMAP | PORTABLE) memory");
  check(reinterpret_cast<const unsigned char*>(ring.slots) >=
                reinterpret_cast<const unsigned char*>(ring.control + 1) &&
            vshmem::testing::fake_live_host_allocs(kMapped) == 3,
        "the slots are not in the control block's allocation (the other device-mapped "
        "allocations are the inbound mailbox and its copies' bounce buffer)");
  // The inbound atomic mailbox (impl/proxy_mailbox.h): device-mapped host memory and a claim word
  // on the GPU, zeroed.
  const vshmem::proxy::MailboxView inbound = built->inbound;
  check(inbound.box != nullptr &&
            vshmem::testing::fake_host_alloc_flags(inbound.box) == static_cast<int>(kMapped) &&
            vshmem::testing::fake_device_alloc_bytes(inbound.claimed) ==
                vshmem::proxy::kMailboxGpuWords * sizeof(uint64_t) &&
            all_zero(inbound.box, offsetof(vshmem::proxy::Mailbox, look_ns)) &&
            inbound.box->look_ns == vshmem::proxy::kMailboxLookNs &&
            all_zero(&inbound.box->reserved0,
                     sizeof(*inbound.box) - offsetof(vshmem::proxy::Mailbox, reserved0)) &&
            all_zero(inbound.claimed, vshmem::proxy::kMailboxGpuWords * sizeof(uint64_t)),
        "the state names no zeroed inbound mailbox in device-mapped host memory (its look time "
        "set) with its claim words in device memory");
  check(vshmem::testing::fake_device_alloc_bytes(ring.tickets) == 2 * sizeof(uint64_t),
        "the ticket counter and the producers' view of consumed are not a 16-byte cuMemAlloc "
        "allocation");
  check(ring.n_slots == 128 && ring.timeout_ns == 7'000'000'000ull,
        "a ring of " + std::to_string(ring.n_slots) + " slots and " +
            std::to_string(ring.timeout_ns) +
            " ns: VSHMEM_PROXY_SLOTS=100 and VSHMEM_PROXY_TIMEOUT=7 say 128 and 7 s");
  check(all_zero(ring.control, sizeof(Control)) &&
            all_zero(ring.slots, sizeof(Slot) * ring.n_slots) && *ring.tickets == 0,
        "the ring's memory was not zeroed");
  check(same(g_written, *built), "the device library was not given the state naming the ring");
  g_ring_memory = ring.control;

  // Requests through it reach the other node.
  if (me == 0) {
    const uint64_t s = std::random_device{}() * 0x100000001ull + 17;
    for (int p = 0; p < n; ++p) shmem_putmem(salt, &s, sizeof(s), p);
  }
  std::memset(inbox, 0xA5, sizeof(uint64_t) * n);
  std::memset(blocks, 0xA5, kBlock * n);
  shmem_barrier_all();
  *mine = pattern(*salt, me, me, 99);
  std::vector<unsigned char> block(kBlock);
  auto* staged = static_cast<unsigned char*>(shmem_malloc(kBlock));  // "GPU memory" here
  shmem_barrier_all();
  for (int p = 0; p < n; ++p) {
    if (!remote[p]) continue;
    const uint64_t word = pattern(*salt, me, p, 0);
    check(post(ring, kOpPut, kFlagInline, p, inbox + me, &word, sizeof(word)) == kOk, "put");
    for (size_t i = 0; i < kBlock; ++i) {
      staged[i] = static_cast<unsigned char>(pattern(*salt, me, p, i + 1));
    }
    check(post(ring, kOpPut, kFlagWait, p, blocks + kBlock * me, staged, kBlock) == kOk,
          "staged put to PE " + std::to_string(p));
    uint64_t theirs = 0;
    check(post(ring, kOpGet, kFlagWait | kFlagInline, p, &theirs, mine, sizeof(theirs), &theirs) ==
                  kOk &&
              theirs == pattern(*salt, p, p, 99),
          "get from PE " + std::to_string(p));
  }
  check(post(ring, kOpQuiet, kFlagWait, me, nullptr, nullptr, 0) == kOk, "quiet");
  shmem_barrier_all();
  for (int p = 0; p < n; ++p) {
    if (!remote[p]) continue;
    check(inbox[p] == pattern(*salt, p, me, 0), "PE " + std::to_string(p) + "'s put did not land");
    for (size_t i = 0; i < kBlock; ++i) {
      check(blocks[kBlock * p + i] == static_cast<unsigned char>(pattern(*salt, p, me, i + 1)),
            "PE " + std::to_string(p) + "'s staged put did not land");
    }
  }
  shmem_barrier_all();
  const void* tickets = ring.tickets;
  shmem_finalize();
  check(g_ring_flags_at_empty == static_cast<int>(kMapped),
        "the ring was freed before the device library stopped naming it");
  check(vshmem::testing::fake_host_alloc_flags(g_ring_memory) == -1 &&
            vshmem::testing::fake_device_alloc_bytes(tickets) == 0,
        "shmem_finalize left the ring's memory allocated");
  check(vshmem::testing::fake_live_host_allocs(0) == host_allocs_before &&
            vshmem::testing::fake_device_alloc_bytes(inbound.claimed) == 0,
        "shmem_finalize left page-locked memory allocated (the proxy's stage? the inbound "
        "mailbox?)");
  if (me == 0) std::printf("device_state_fake ring: OK\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::srand(static_cast<unsigned>(::getpid()));
  const std::string mode = argc > 1 ? argv[1] : "state";
  if (mode.rfind("ring", 0) == 0) return ring_test(mode);
  vshmem::testing::FakeDriverConfig cfg;
  cfg.multicast_supported = false;
  start(cfg);

  Module early(sizeof(GpuState));
  check(shmemx_cumodule_init(early.module()) != 0 && last_error_has("before shmem_init"),
        "a module registered before shmem_init was accepted");

  shmem_init();
  g_pe = shmem_my_pe();
  const GpuState* built = vshmemi_device_state_built();
  check(built != nullptr && built->initialized == 1 && built->cuda_device >= 0,
        "no GPU state built on the fake GPU heap");
  check(g_writes >= 1 && same(g_written, *built),
        "the device library was not given the whole state on a GPU heap");
  // Every peer is mapped (one node): no ring, and no device-mapped memory for one.
  check(built->proxy.slots == nullptr &&
            vshmem::testing::fake_live_host_allocs(CU_MEMHOSTALLOC_DEVICEMAP) == 0,
        "a proxy ring was made although every peer is mapped");

  // Registration writes the current state into the module's symbol, and into a library's.
  Module mod(sizeof(GpuState));
  Module lib(sizeof(GpuState));
  check(shmemx_cumodule_init(mod.module()) == 0,
        std::string("shmemx_cumodule_init: ") + shmemx_last_error());
  check(shmemx_culibrary_init(lib.library()) == 0,
        std::string("shmemx_culibrary_init: ") + shmemx_last_error());
  check(same(mod.state(), *built) && same(lib.state(), *built),
        "a registered module does not hold the state");
  check(shmemx_cumodule_init(mod.module()) == 0, "registering twice is not harmless");

  // A change (a team split) reaches the registered code; an unregistered module keeps its bytes.
  check(shmemx_cumodule_finalize(mod.module()) == 0, "shmemx_cumodule_finalize");
  Module frozen = mod;  // what it held when unregistered (the fake's handle is not used again)
  shmem_team_t team = SHMEM_TEAM_INVALID;
  const int n = shmem_n_pes();
  check(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, nullptr, 0, &team) == 0, "split");
  built = vshmemi_device_state_built();
  check(same(lib.state(), *built), "a team split did not reach the registered library");
  check(std::memcmp(mod.bytes.data(), frozen.bytes.data(), mod.bytes.size()) == 0,
        "an unregistered module was written");
  shmem_team_destroy(team);

  // Refusals, each naming the call and the cause.
  Module other_name(sizeof(GpuState), "some_other_symbol");
  check(shmemx_cumodule_init(other_name.module()) != 0 && last_error_has("shmemx_cumodule_init") &&
            last_error_has("does not define vshmemi_device_state") &&
            last_error_has("libvshmem_device"),
        std::string("a module without the state: ") + shmemx_last_error());
  Module small(sizeof(GpuState) - 8);
  check(shmemx_culibrary_init(small.library()) != 0 && last_error_has("shmemx_culibrary_init") &&
            last_error_has("built against other vshmem headers"),
        std::string("a library with another state size: ") + shmemx_last_error());
  check(shmemx_cumodule_finalize(other_name.module()) != 0 && last_error_has("was not registered"),
        "unregistering an unknown module");
  check(shmemx_cumodule_init(nullptr) != 0 && last_error_has("NULL"), "a NULL module");

  shmem_barrier_all();
  shmem_finalize();
  check(lib.state().initialized == 0 && lib.state().version == vshmem::device::kGpuStateVersion,
        "shmem_finalize did not give the registered library the empty state");
  check(g_written.initialized == 0,
        "shmem_finalize did not give the device library the empty state");
  if (g_pe == 0) std::printf("device_state_fake: OK\n");
  return 0;
}
