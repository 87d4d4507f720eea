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

}  // namespace
}  // namespace vshmem::detail
