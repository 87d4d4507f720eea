// The host provider and the handle exchange: what the heap builds on.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/common/private_dir.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/memory/host_copy.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {
namespace {

size_t count_maps_in(uintptr_t lo, uintptr_t hi) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  size_t n = 0;
  while (std::getline(maps, line)) {
    uintptr_t a = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    if (a >= lo && a < hi) ++n;
  }
  return n;
}

TEST(HostProvider, ReserveMapCopyAtomic) {
  auto p = make_host_provider();
  const size_t g = p->granularity();
  auto where = p->find_free_range(16 * g, 2 << 20);
  ASSERT_TRUE(where.is_ok());
  auto r = p->reserve(*where, 16 * g);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ((*r)->base(), *where);
  // A second reservation of the same range must be refused, not silently moved.
  EXPECT_FALSE(p->reserve(*where, g).is_ok());

  auto phys = p->create(4 * g);
  ASSERT_TRUE(phys.is_ok());
  auto m = p->map(*r, 2 * g, *phys);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  auto* data = static_cast<uint64_t*>((*m)->address());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data), *where + 2 * g);

  std::mt19937_64 rng(std::random_device{}());
  uint64_t v = rng();
  ASSERT_TRUE(p->copy(data, &v, sizeof(v)).is_ok());
  EXPECT_EQ(data[0], v);
  uint64_t fetched = 0;
  ASSERT_TRUE(p->atomic({AtomicOp::kFetchAdd, data, 8, 5, 0}, &fetched).is_ok());
  EXPECT_EQ(fetched, v);
  EXPECT_EQ(data[0], v + 5);
  ASSERT_TRUE(p->atomic({AtomicOp::kCompareSwap, data, 8, 1, v + 5}, &fetched).is_ok());
  EXPECT_EQ(data[0], 1u);
  auto* w = reinterpret_cast<uint32_t*>(data + 1);
  *w = 0xf0f0f0f0u;
  ASSERT_TRUE(p->atomic({AtomicOp::kFetchXor, w, 4, 0xffffffffu, 0}, &fetched).is_ok());
  EXPECT_EQ(fetched, 0xf0f0f0f0u);
  EXPECT_EQ(*w, 0x0f0f0f0fu);
  EXPECT_FALSE(
      p->atomic({AtomicOp::kFetch, reinterpret_cast<char*>(data) + 1, 8, 0, 0}, nullptr).is_ok());
}

TEST(HostProvider, TeardownLeavesNoMappings) {
  auto p = make_host_provider();
  const size_t g = p->granularity();
  uintptr_t base;
  {
    auto r = p->reserve(*p->find_free_range(8 * g, g), 8 * g);
    ASSERT_TRUE(r.is_ok());
    base = (*r)->base();
    auto phys = p->create(2 * g);
    auto m = p->map(*r, 0, *phys);
    ASSERT_TRUE(m.is_ok());
    EXPECT_GT(count_maps_in(base, base + 8 * g), 0u);
    // The mapping keeps reservation and memory alive even after the caller drops them.
    r->reset();
    phys->reset();
    static_cast<char*>((*m)->address())[0] = 1;
  }
  EXPECT_EQ(count_maps_in(base, base + 8 * g), 0u);
}

TEST(HostCopy, TakesRepMovsbOnZen5WithFsrmOnly) {
  EXPECT_TRUE(rep_movsb_preferred_for(true, 0x1A, true));
  EXPECT_TRUE(rep_movsb_preferred_for(true, 0x1B, true));
  EXPECT_FALSE(rep_movsb_preferred_for(true, 0x19, true));   // Zen 3 / Zen 4
  EXPECT_FALSE(rep_movsb_preferred_for(true, 0x1A, false));  // no FSRM
  EXPECT_FALSE(rep_movsb_preferred_for(false, 6, true));     // Intel
}

// Sizes on both sides of kRepMovsbFrom, odd offsets, and overlapping ranges in both directions:
// host_copy is the host provider's copy, which has memmove's contract (a put to this PE may
// overlap its source). On a CPU where rep_movsb_preferred() holds (the CI box), the overlapping
// cases fail if the instruction is taken for them.
TEST(HostCopy, CopiesLikeMemmove) {
  const size_t sizes[] = {
      1, 4096, kRepMovsbFrom - 1, kRepMovsbFrom, kRepMovsbFrom + 3, 3 * kRepMovsbFrom + 77};
  const size_t offsets[] = {0, 1, 63, 4095};
  const size_t cap = 3 * kRepMovsbFrom + 77 + 8192 + 8192;
  std::vector<unsigned char> a(cap), b(cap), want(cap);
  std::mt19937 gen(7);
  for (size_t n : sizes) {
    for (auto& x : a) x = static_cast<unsigned char>(gen());
    for (size_t so : offsets) {
      for (size_t d_o : offsets) {
        std::fill(b.begin(), b.end(), 0xEE);
        host_copy(b.data() + d_o, a.data() + so, n);
        ASSERT_EQ(0, std::memcmp(b.data() + d_o, a.data() + so, n)) << n << " " << so << " " << d_o;
        ASSERT_EQ(d_o == 0 ? 0xEE : b[d_o - 1], 0xEE) << "wrote before dst";
        ASSERT_EQ(b[d_o + n], 0xEE) << "wrote past dst";
      }
    }
    // Overlap, forwards and backwards by a few bytes and by a page.
    for (ptrdiff_t shift : {ptrdiff_t{3}, ptrdiff_t{-3}, ptrdiff_t{4096}, ptrdiff_t{-4096}}) {
      for (auto& x : a) x = static_cast<unsigned char>(gen());
      want = a;
      unsigned char* src = a.data() + 8192;
      std::memmove(want.data() + 8192 + shift, want.data() + 8192, n);
      host_copy(src + shift, src, n);
      ASSERT_EQ(0, std::memcmp(a.data(), want.data(), cap)) << n << " shift " << shift;
    }
  }
  std::printf("rep movsb for copies of %zu bytes and more on this CPU: %s\n", kRepMovsbFrom,
              rep_movsb_preferred() ? "yes" : "no");
}

TEST(FdExchange, PassesMemoryBetweenProcesses) {
  auto p = make_host_provider();
  const size_t g = p->granularity();
  std::string job = "test" + std::to_string(getpid());
  auto dir = private_job_dir(job);
  ASSERT_TRUE(dir.is_ok()) << dir.status().message();
  std::string secret = "0123456789abcdef0123456789abcdef";
  uint64_t token = std::random_device{}();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    auto ex = FdExchange::create(*dir, job, secret, 1, std::chrono::seconds(10));
    if (!ex.is_ok()) _exit(10);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(11);
    auto phys = p->create(g);
    auto r = p->reserve(*p->find_free_range(g, g), g);
    auto m = p->map(*r, 0, *phys);
    static_cast<uint64_t*>((*m)->address())[0] = token;
    auto h = (*phys)->export_handle(HandleKind::kPosixFd);
    auto got = (*ex)->exchange({0}, {h->fd()}, 0);
    if (!got.is_ok()) _exit(12);
    for (auto& kv : *got) {
      for (int fd : kv.second) close(fd);
    }
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto ex = FdExchange::create(*dir, job, secret, 0, std::chrono::seconds(10));
  ASSERT_TRUE(ex.is_ok()) << ex.status().message();
  auto mine = p->create(g);
  auto h = (*mine)->export_handle(HandleKind::kPosixFd);
  auto got = (*ex)->exchange({1}, {h->fd()}, 0);
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  ASSERT_EQ((*got)[1].size(), 1u);
  auto imported = p->import(ShareableHandle::from_fd((*got)[1][0]), g);
  ASSERT_TRUE(imported.is_ok());
  auto r = p->reserve(*p->find_free_range(g, g), g);
  auto m = p->map(*r, 0, *imported);
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(static_cast<uint64_t*>((*m)->address())[0], token);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(FdExchange, WrongSecretIsRejectedAndTimesOut) {
  std::string job = "test2-" + std::to_string(getpid());
  auto dir = private_job_dir(job);
  ASSERT_TRUE(dir.is_ok()) << dir.status().message();
  pid_t child = fork();
  if (child == 0) {
    usleep(100000);
    auto ex = FdExchange::create(*dir, job, "ffffffffffffffffffffffffffffffff", 1,
                                 std::chrono::seconds(2));
    if (!ex.is_ok()) _exit(10);
    int fd = dup(0);
    (void)(*ex)->exchange({0}, {fd}, 0);
    _exit(0);
  }
  auto ex = FdExchange::create(*dir, job, "00000000000000000000000000000000", 0,
                               std::chrono::milliseconds(1500));
  ASSERT_TRUE(ex.is_ok());
  auto got = (*ex)->exchange({1}, {}, 0);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("no handles from PE 1"), std::string::npos)
      << got.status().message();
  int status;
  waitpid(child, &status, 0);
}

}  // namespace
}  // namespace vshmem
