// The device state on a GPU heap, against the FAKE driver (tests/support/fake_cuda_driver: its
// "GPU" memory is host memory, so the state's tables are read directly): the device library is
// given the whole state, and code loaded at run time gets its own copy of the symbol written by
// libvshmem (shmemx_cumodule_init / shmemx_culibrary_init) at registration and after every change
// (a heap growth, a team split), until it is unregistered; at shmem_finalize, the empty state.
// Bad registrations fail naming the call and the cause: a module that does not define the state,
// one built for another state size, one never registered, NULL. No libcuda is loaded here.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/memory/cuda_provider.hpp"
#include "shmem.h"
#include "shmemx.h"
#include "tests/support/fake_cuda_driver.hpp"
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

// Stands in for libvshmem_device: keeps what it is given.
GpuState g_written{};
int g_writes = 0;
int write_state(const GpuState* s, const int64_t*) {
  g_written = *s;
  ++g_writes;
  return 0;
}
int no_ring(int, uint32_t, uint64_t, vshmem::proxy::RingView*) { return 1; }
void no_release() {}

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

}  // namespace

int main() {
  std::srand(static_cast<unsigned>(::getpid()));
  vshmem::testing::FakeDriverConfig cfg;
  cfg.multicast_supported = false;
  vshmem::detail::use_fake_driver_for_tests(&vshmem::testing::fake_cuda_driver(cfg));
  ::setenv("VSHMEM_BACKEND", "cuda", 1);
  static const vshmemi_device_library library = {vshmem::device::kGpuStateVersion, sizeof(GpuState),
                                                 &write_state, &no_ring, &no_release};
  vshmemi_register_device_library(&library);

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
