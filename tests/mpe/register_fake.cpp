// shmemx_buffer_register_symmetric / unregister (issue #16 item 4) on the FAKE driver
// (tests/support/fake_cuda_driver): the application makes its buffer with the driver's VMM calls
// (cuMemCreate, cuMemAddressReserve, cuMemMap), as a CUDA program or PyTorch's expandable segments
// would, and the runtime maps the same memory into the heap and the peers' windows. The fake's
// "device memory" is shared host memory, so every byte is checked from the CPU. No libcuda is
// loaded (checked).
//
// Modes (argv[1]):
//   ok           a buffer of two allocations (as expandable segments make) registers at the same
//                address on every PE; stores through either address are seen through the other;
//                put/get/atomics with peers through the registered address; heap growth after
//                it lands elsewhere; unregister drops every reference the runtime took; the
//                range is reused by the next registration; every heap mapping has SYNC_MEMOPS.
//   not_vmm      the last PE passes cudaMalloc-like memory (cuMemAlloc): NULL on every PE, the
//                message names that PE and the cause; the heap still works after it.
//   partial      a buffer that starts inside an allocation, and one that ends inside one: refused.
//   unshareable  PE 0's allocation has no shareable handle type: refused on every PE.
//   mismatch     PE 0 passes another size: refused on every PE; a bad unregister is refused.
//   host         the host backend: refused with the cause (its heap is not GPU memory).
#include <cuda.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/memory/cuda_driver.hpp"
#include "runtime/memory/cuda_provider.hpp"
#include "shmem.h"
#include "shmemx.h"
#include "tests/support/fake_cuda_driver.hpp"

using namespace vshmem;
using vshmem::testing::fake_cuda_driver;
using vshmem::testing::FakeDriverConfig;

namespace {

std::string g_mode;
int g_pe = -1;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "register_fake(%s) PE %d: FAILED: %s\n", g_mode.c_str(), g_pe, what.c_str());
  std::exit(1);
}
void check(bool ok, const std::string& what) {
  if (!ok) die(what);
}

constexpr size_t kGran = 1 << 20;

// The application's buffer: `pieces` allocations of kGran each, mapped back to back in one
// reservation of its own.
struct AppBuffer {
  const detail::CudaDriver* drv = nullptr;
  CUdeviceptr va = 0;
  size_t size = 0;
  std::vector<CUmemGenericAllocationHandle> handles;

  void make(const detail::CudaDriver& d, int pieces) {
    drv = &d;
    size = kGran * static_cast<size_t>(pieces);
    check(d.cuMemAddressReserve(&va, size, kGran, 0, 0) == CUDA_SUCCESS, "app reserve");
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    for (int i = 0; i < pieces; ++i) {
      CUmemGenericAllocationHandle h = 0;
      check(d.cuMemCreate(&h, kGran, &prop, 0) == CUDA_SUCCESS, "app cuMemCreate");
      check(d.cuMemMap(va + i * kGran, kGran, 0, h, 0) == CUDA_SUCCESS, "app cuMemMap");
      handles.push_back(h);
    }
  }
  void release() {
    for (size_t i = 0; i < handles.size(); ++i) {
      check(drv->cuMemUnmap(va + i * kGran, kGran) == CUDA_SUCCESS, "app cuMemUnmap");
      check(drv->cuMemRelease(handles[i]) == CUDA_SUCCESS, "app cuMemRelease");
    }
    check(drv->cuMemAddressFree(va, size) == CUDA_SUCCESS, "app cuMemAddressFree");
  }
  uint64_t* words() const { return reinterpret_cast<uint64_t*>(va); }
};

const detail::CudaDriver& use_fake(FakeDriverConfig cfg) {
  cfg.granularity = kGran;
  const detail::CudaDriver& d = fake_cuda_driver(cfg);
  detail::use_fake_driver_for_tests(&d);
  ::setenv("VSHMEM_BACKEND", "cuda", 1);
  return d;
}

// Every PE got the same address.
void check_same_everywhere(void* p, const char* what) {
  static uint64_t* all = nullptr;
  static uint64_t* mine = nullptr;
  if (all == nullptr) {
    all = static_cast<uint64_t*>(shmem_malloc(64 * sizeof(uint64_t)));
    mine = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  }
  *mine = reinterpret_cast<uint64_t>(p);
  shmem_barrier_all();
  shmem_fcollectmem(SHMEM_TEAM_WORLD, all, mine, sizeof(uint64_t));
  for (int q = 0; q < shmem_n_pes(); ++q) {
    check(all[q] == *mine,
          std::string(what) + ": PE " + std::to_string(q) + " got another address");
  }
}

void expect_refused(void* got, const std::string& needle) {
  check(got == nullptr, "the registration succeeded (expected: refused)");
  const std::string msg = shmemx_last_error();
  check(msg.find(needle) != std::string::npos,
        "the message \"" + msg + "\" does not say \"" + needle + "\"");
  shmemx_clear_last_error();
}

int mode_ok() {
  const detail::CudaDriver& d = use_fake({});
  shmem_init();
  g_pe = shmem_my_pe();
  const int n = shmem_n_pes();
  const int left = (g_pe + n - 1) % n, right = (g_pe + 1) % n;
  uint64_t* before = static_cast<uint64_t*>(shmem_malloc(1024));
  check(before != nullptr, "shmem_malloc");
  check(testing::fake_sync_memops(before) == 1, "SYNC_MEMOPS is not set on the heap's memory");

  AppBuffer app;
  app.make(d, 2);
  const size_t words = app.size / sizeof(uint64_t);
  std::mt19937_64 gen(std::random_device{}() + static_cast<unsigned>(g_pe));
  std::vector<uint64_t> mine(words);
  for (auto& w : mine) w = gen();
  std::memcpy(app.words(), mine.data(), app.size);
  // The same values, where peers can read them to compare.
  uint64_t* copy = static_cast<uint64_t*>(shmem_malloc(app.size));
  check(copy != nullptr, "shmem_malloc(copy)");
  std::memcpy(copy, mine.data(), app.size);

  auto* sym = static_cast<uint64_t*>(shmemx_buffer_register_symmetric(app.words(), app.size, 0));
  check(sym != nullptr, std::string("register: ") + shmemx_last_error());
  check(sym != app.words(), "the heap address is the application's");
  check_same_everywhere(sym, "register");
  check(testing::fake_sync_memops(sym) == 1, "SYNC_MEMOPS is not set on the registered mapping");
  check(std::memcmp(sym, mine.data(), app.size) == 0, "the heap address does not show the buffer");
  sym[words - 1] = ~mine[words - 1];
  check(app.words()[words - 1] == ~mine[words - 1], "a store through the heap address is not seen");
  sym[words - 1] = mine[words - 1];
  shmem_barrier_all();

  // Peers through the window (shmem_ptr) and through RMA.
  if (n > 1) {
    auto* peer = static_cast<uint64_t*>(shmem_ptr(sym, left));
    check(peer != nullptr, "shmem_ptr(registered, left) is NULL");
    std::vector<uint64_t> theirs(words);
    shmem_getmem(theirs.data(), copy, app.size, left);
    check(std::memcmp(peer, theirs.data(), app.size) == 0,
          "the left PE's buffer through shmem_ptr");
    std::vector<uint64_t> got(words, 0);
    shmem_getmem(got.data(), sym, app.size, left);
    check(got == theirs, "shmem_getmem from the left PE's registered buffer");
  }
  shmem_barrier_all();
  // Each PE puts its words into the right neighbour's second allocation, and adds to a counter.
  const size_t half = words / 2;
  shmem_putmem(sym + half, mine.data(), half * sizeof(uint64_t), right);
  shmem_barrier_all();
  std::vector<uint64_t> left_words(half);
  shmem_getmem(left_words.data(), copy, half * sizeof(uint64_t), left);
  check(std::memcmp(app.words() + half, left_words.data(), half * sizeof(uint64_t)) == 0,
        "the left PE's put did not land in this PE's buffer");
  sym[0] = 0;
  shmem_barrier_all();
  shmem_uint64_atomic_add(sym, static_cast<uint64_t>(g_pe) + 1, 0);
  shmem_barrier_all();
  if (g_pe == 0) {
    check(app.words()[0] == static_cast<uint64_t>(n) * (n + 1) / 2, "atomics on the buffer");
  }
  shmem_barrier_all();

  // Heap growth after the registration lands elsewhere.
  auto* big = static_cast<char*>(shmem_malloc(4 * kGran));
  check(big != nullptr, "shmem_malloc after register");
  const auto* s0 = reinterpret_cast<char*>(sym);
  check(big + 4 * kGran <= s0 || big >= s0 + app.size, "an allocation overlaps the buffer");
  std::memset(big, 0x5a, 4 * kGran);
  check(std::memcmp(sym + half, left_words.data(), half * sizeof(uint64_t)) == 0,
        "the heap growth changed the buffer");
  shmem_free(big);

  // Unregister: the runtime's references go (only the application's own remain).
  check(shmemx_buffer_unregister_symmetric(sym, app.size) == 0,
        std::string("unregister: ") + shmemx_last_error());
  for (auto h : app.handles) check(testing::fake_refs(h) == 1, "a reference was left behind");
  check(std::memcmp(app.words() + half, left_words.data(), half * sizeof(uint64_t)) == 0,
        "unregister changed the buffer");
  // The range is reused, and the second registration works like the first.
  auto* again = static_cast<uint64_t*>(shmemx_buffer_register_symmetric(app.words(), app.size, 0));
  check(again == sym, "the unregistered range was not reused");
  if (n > 1) {
    // The left PE's second half holds what ITS left neighbour put: that PE's first half.
    std::vector<uint64_t> got(half), theirs(half);
    shmem_getmem(got.data(), again + half, half * sizeof(uint64_t), left);
    shmem_getmem(theirs.data(), copy, half * sizeof(uint64_t), (g_pe + n - 2) % n);
    check(got == theirs, "the second registration does not show the left PE's buffer");
  }
  check(shmemx_buffer_unregister_symmetric(again, app.size) == 0, "second unregister");
  shmem_free(copy);
  shmem_free(before);
  shmem_finalize();
  for (auto h : app.handles) check(testing::fake_refs(h) == 1, "finalize left a reference");
  app.release();
  check(!testing::real_libcuda_loaded(), "libcuda.so.1 was loaded");
  return 0;
}

int mode_refused() {
  const char* rank = std::getenv("VSHMEM_RANK");
  const int me = rank != nullptr ? std::atoi(rank) : -1;
  const char* size = std::getenv("VSHMEM_NPES");
  const int npes = size != nullptr ? std::atoi(size) : -1;
  FakeDriverConfig cfg;
  const bool host = g_mode == "host";
  const detail::CudaDriver* d = nullptr;
  if (host) {
    d = &use_fake(cfg);  // any driver query goes to the fake; the heap is host memory
    ::setenv("VSHMEM_BACKEND", "host", 1);
  } else {
    d = &use_fake(cfg);
  }
  shmem_init();
  g_pe = shmem_my_pe();
  const int n = shmem_n_pes();
  check(n == npes || npes < 0, "PE count");
  AppBuffer app;
  app.make(*d, 2);
  std::memset(app.words(), 0x3c, app.size);
  if (g_mode == "unshareable" && g_pe == 0) {
    // PE 0's application made its allocations without a shareable handle type.
    cfg.unshareable_handles.insert(app.handles.begin(), app.handles.end());
    cfg.granularity = kGran;
    fake_cuda_driver(cfg);
  }
  if (g_mode == "not_vmm") {
    CUdeviceptr plain = 0;
    check(d->cuMemAlloc(&plain, app.size) == CUDA_SUCCESS, "cuMemAlloc");
    void* buf = g_pe == n - 1 ? reinterpret_cast<void*>(plain) : app.words();
    void* got = shmemx_buffer_register_symmetric(buf, app.size, 0);
    // Every PE names the PE that could not.
    const std::string msg = shmemx_last_error();
    check(msg.find("PE " + std::to_string(n - 1) + " could not register") != std::string::npos,
          "the message \"" + msg + "\" does not name PE " + std::to_string(n - 1));
    expect_refused(got, "not memory mapped with cuMemCreate");
    d->cuMemFree(plain);
  } else if (g_mode == "partial") {
    // One allocation of two granules, registered by its first half only.
    AppBuffer one;
    one.drv = d;
    one.size = 2 * kGran;
    check(d->cuMemAddressReserve(&one.va, one.size, kGran, 0, 0) == CUDA_SUCCESS, "reserve");
    CUmemAllocationProp prop = {};
    CUmemGenericAllocationHandle h = 0;
    check(d->cuMemCreate(&h, one.size, &prop, 0) == CUDA_SUCCESS, "cuMemCreate");
    check(d->cuMemMap(one.va, one.size, 0, h, 0) == CUDA_SUCCESS, "cuMemMap");
    expect_refused(shmemx_buffer_register_symmetric(one.words(), kGran, 0),
                   "ends inside an allocation");
    expect_refused(shmemx_buffer_register_symmetric(one.words() + kGran / 8, kGran, 0),
                   "inside an allocation, not at its start");
    check(testing::fake_refs(h) == 1, "a refused registration left a reference");
    d->cuMemUnmap(one.va, one.size);
    d->cuMemRelease(h);
    d->cuMemAddressFree(one.va, one.size);
  } else if (g_mode == "unshareable") {
    expect_refused(shmemx_buffer_register_symmetric(app.words(), app.size, 0),
                   "without the posix_fd handle type");
  } else if (g_mode == "mismatch") {
    expect_refused(shmemx_buffer_register_symmetric(app.words(), g_pe == 0 ? kGran : app.size, 0),
                   "disagree");
    expect_refused(shmemx_buffer_register_symmetric(app.words(), app.size, 1), "no flags");
    // The same bogus address on every PE (a differing one is refused as a mismatch first).
    check(shmemx_buffer_unregister_symmetric(reinterpret_cast<void*>(0x1000), 8) != 0,
          "a bad unregister was accepted");
    check(std::string(shmemx_last_error()).find("not an address returned") != std::string::npos,
          std::string("unregister message: ") + shmemx_last_error());
  } else if (g_mode == "host") {
    expect_refused(shmemx_buffer_register_symmetric(app.words(), app.size, 0), "host memory");
  }
  // The message of a refusal names the failing PE on every PE (not_vmm names the last one).
  // After a refusal the heap works and a good registration succeeds (not on the host heap).
  if (!host) {
    void* sym = shmemx_buffer_register_symmetric(app.words(), app.size, 0);
    if (g_mode == "unshareable") {
      check(sym == nullptr, "the unshareable buffer registered the second time");
    } else {
      check(sym != nullptr, std::string("register after a refusal: ") + shmemx_last_error());
      shmem_barrier_all();
      uint64_t w = 0;
      shmem_getmem(&w, sym, sizeof(w), (g_pe + 1) % n);
      check(w == 0x3c3c3c3c3c3c3c3cull, "the buffer after a refusal");
      check(shmemx_buffer_unregister_symmetric(sym, app.size) == 0, "unregister");
    }
  }
  shmem_finalize();
  app.release();
  check(!testing::real_libcuda_loaded(), "libcuda.so.1 was loaded");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_mode = argc > 1 ? argv[1] : "";
  if (testing::real_libcuda_loaded()) die("libcuda.so.1 is loaded before the test starts");
  if (g_mode == "ok") return mode_ok();
  return mode_refused();
}
