// The wait policy's count of PEs and CPUs per host (runtime/api/wait_policy.hpp).
#include "runtime/api/wait_policy.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

namespace vshmem::detail {
namespace {

HostCpus pe(uint64_t host, std::initializer_list<int> cpus) {
  HostCpus h{};
  h.host = host;
  CPU_ZERO(&h.cpus);
  for (int c : cpus) CPU_SET(c, &h.cpus);
  return h;
}

TEST(WaitPolicy, PesBoundToTheirOwnCoresCountEveryCore) {
  // A launcher binding each PE to one core: 2 PEs, 2 CPUs between them (enough to spin).
  std::vector<HostCpus> all{pe(7, {0}), pe(7, {1})};
  int pes = 0, cpus = 0;
  host_load(all, 0, &pes, &cpus);
  EXPECT_EQ(pes, 2);
  EXPECT_EQ(cpus, 2);
}

TEST(WaitPolicy, PesSharingAMaskAreOversubscribed) {
  // 4 PEs allowed on the same 2 CPUs.
  std::vector<HostCpus> all(4, pe(3, {0, 1}));
  int pes = 0, cpus = 0;
  host_load(all, 2, &pes, &cpus);
  EXPECT_EQ(pes, 4);
  EXPECT_EQ(cpus, 2);
}

TEST(WaitPolicy, OtherHostsDoNotCount) {
  std::vector<HostCpus> all{pe(1, {0, 1}), pe(2, {0, 1, 2, 3}), pe(1, {0, 1}), pe(2, {4})};
  int pes = 0, cpus = 0;
  host_load(all, 1, &pes, &cpus);
  EXPECT_EQ(pes, 2);
  EXPECT_EQ(cpus, 5);
  host_load(all, 0, &pes, &cpus);
  EXPECT_EQ(pes, 2);
  EXPECT_EQ(cpus, 2);
}

TEST(WaitPolicy, UnboundPesAreBoundToOneCpuEachInHostOrder) {
  // Two hosts, PEs interleaved: each PE gets the CPU of its mask at its rank on its host.
  std::vector<HostCpus> all{pe(1, {2, 5, 7}), pe(2, {0, 1}), pe(1, {2, 5, 7}), pe(2, {0, 1}),
                            pe(1, {2, 5, 7})};
  EXPECT_EQ(cpu_to_bind(all, 0), 2);
  EXPECT_EQ(cpu_to_bind(all, 2), 5);
  EXPECT_EQ(cpu_to_bind(all, 4), 7);
  EXPECT_EQ(cpu_to_bind(all, 1), 0);
  EXPECT_EQ(cpu_to_bind(all, 3), 1);
}

TEST(WaitPolicy, PesTheLauncherBoundAreLeftAlone) {
  std::vector<HostCpus> all{pe(7, {0}), pe(7, {1})};
  EXPECT_EQ(cpu_to_bind(all, 0), -1);
  EXPECT_EQ(cpu_to_bind(all, 1), -1);
  // Masks that differ in any way: the launcher chose them.
  std::vector<HostCpus> partly{pe(7, {0, 1, 2, 3}), pe(7, {0, 1})};
  EXPECT_EQ(cpu_to_bind(partly, 0), -1);
  EXPECT_EQ(cpu_to_bind(partly, 1), -1);
}

TEST(WaitPolicy, OversubscribedPesAreNotBound) {
  std::vector<HostCpus> all(3, pe(3, {0, 1}));
  for (int me = 0; me < 3; ++me) EXPECT_EQ(cpu_to_bind(all, me), -1);
  std::vector<HostCpus> exact(2, pe(3, {0, 1}));
  EXPECT_EQ(cpu_to_bind(exact, 1), 1);
}

TEST(WaitPolicy, APeAloneOnItsHostIsNotBound) {
  std::vector<HostCpus> all{pe(1, {0, 1}), pe(2, {0, 1})};
  EXPECT_EQ(cpu_to_bind(all, 0), -1);
  EXPECT_EQ(cpu_to_bind(all, 1), -1);
}

}  // namespace
}  // namespace vshmem::detail
