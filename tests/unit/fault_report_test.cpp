// The report of CPU faults on a GPU heap (runtime/api/fault_report.hpp), tested on a fake heap: a
// PROT_NONE range standing in for GPU memory, which the CPU cannot touch either.
#include "runtime/api/fault_report.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace vshmem::detail {
namespace {

constexpr size_t kPage = 4096;

struct FakeHeap {
  FakeHeap() {
    base = static_cast<char*>(
        mmap(nullptr, 4 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  }
  ~FakeHeap() { munmap(base, 4 * kPage); }
  // The "heap": pages 1 and 2; pages 0 and 3 are inaccessible too, but outside it.
  uintptr_t begin() const { return reinterpret_cast<uintptr_t>(base) + kPage; }
  uintptr_t end() const { return reinterpret_cast<uintptr_t>(base) + 3 * kPage; }
  char* base;
};

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%lx", static_cast<unsigned long>(v));
  return buf;
}

void touch(uintptr_t a) { *reinterpret_cast<volatile int*>(a) = 7; }

class FaultReport : public testing::Test {
 protected:
  // The "fast" death-test style (fork, no re-execution): the child sees the same fake heap.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "fast"); }
  void TearDown() override { remove_fault_report(); }
};

TEST_F(FaultReport, NamesThePeTheAddressAndTheCauseThenDiesOfTheSignal) {
  FakeHeap heap;
  ASSERT_NE(heap.base, MAP_FAILED);
  const uintptr_t a = heap.begin() + kPage + 24;
  EXPECT_EXIT(
      {
        install_fault_report(5, heap.begin(), heap.end());
        touch(a);
      },
      testing::KilledBySignal(SIGSEGV),
      "vshmem: PE 5: the CPU accessed " + hex(a) +
          ", inside the symmetric heap, which is GPU memory.*VSHMEM_BACKEND=host");
}

TEST_F(FaultReport, FaultsOutsideTheHeapPassThroughSilently) {
  FakeHeap heap;
  ASSERT_NE(heap.base, MAP_FAILED);
  EXPECT_EXIT(
      {
        install_fault_report(2, heap.begin(), heap.end());
        touch(heap.end() + 8);
      },
      testing::KilledBySignal(SIGSEGV), "^$");  // nothing written
}

void previous_handler(int, siginfo_t* info, void*) {
  // The fault reached the handler that was there before, with its siginfo.
  _exit(info->si_signo == SIGSEGV ? 42 : 43);
}

TEST_F(FaultReport, ChainsToThePreviousHandler) {
  FakeHeap heap;
  ASSERT_NE(heap.base, MAP_FAILED);
  EXPECT_EXIT(
      {
        struct sigaction sa {};
        sa.sa_sigaction = previous_handler;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, nullptr);
        install_fault_report(0, heap.begin(), heap.end());
        touch(heap.begin());
      },
      testing::ExitedWithCode(42), "vshmem: PE 0: the CPU accessed " + hex(heap.begin()));
}

TEST_F(FaultReport, RemovePutsThePreviousHandlerBack) {
  struct sigaction sa {
  }, before{}, after{};
  sa.sa_sigaction = previous_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGBUS, &sa, &before), 0);
  install_fault_report(1, 0x1000, 0x2000);
  remove_fault_report();
  ASSERT_EQ(sigaction(SIGBUS, &before, &after), 0);
  EXPECT_EQ(after.sa_sigaction, previous_handler);
}

}  // namespace
}  // namespace vshmem::detail
