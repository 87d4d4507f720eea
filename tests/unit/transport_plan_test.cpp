// The transport plan (plan_transports) with threads as PEs (tests/support/thread_bootstrap.hpp):
// whatever each PE's memory layer answers about its peers, every pair of PEs ends on the same
// path from both sides, every PE tells the same story about the job (job_has_remote, the shared
// team), and a PE that dies while planning is named.
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/transport/transport.hpp"
#include "tests/support/stub_provider.hpp"
#include "tests/support/thread_bootstrap.hpp"

namespace vshmem {
namespace {

using namespace std::chrono_literals;
using testing::ThreadJob;

// What PE `me`'s memory layer says: its locality token is me + 1, and it can map the PEs in
// `reach` (by their tokens).
class Reach final : public testing::StubProvider {
 public:
  Reach(int me, std::set<int> reach) : me_(me), reach_(std::move(reach)) {}
  uint64_t locality_token() const override { return static_cast<uint64_t>(me_) + 1; }
  bool can_map_peer(uint64_t token) const override {
    return reach_.count(static_cast<int>(token) - 1) > 0;
  }

 private:
  int me_;
  std::set<int> reach_;
};

Topology topology(const std::vector<int>& node_of_pe, int me) {
  Topology t;
  t.node_of_pe = node_of_pe;
  t.n_nodes = *std::max_element(node_of_pe.begin(), node_of_pe.end()) + 1;
  t.my_node = node_of_pe[me];
  for (int p = 0; p < static_cast<int>(node_of_pe.size()); ++p) {
    t.local_rank_of_pe.push_back(static_cast<int>(t.local_pes.size()));
    if (node_of_pe[p] == t.my_node) {
      if (p == me) t.local_rank = static_cast<int>(t.local_pes.size());
      t.local_pes.push_back(p);
    }
  }
  t.local_size = static_cast<int>(t.local_pes.size());
  return t;
}

struct Planned {
  std::vector<PathKind> path;
  bool job_has_remote = false;
  bool one_node = true;
  std::vector<int> shared_team;
  std::string error;
};

// reach[p]: whom PE p's memory layer can map.
std::vector<Planned> plan(ThreadJob& job, const std::vector<int>& nodes,
                          const std::vector<std::set<int>>& reach) {
  return job.run<Planned>([&](int pe, Bootstrap& boot) {
    Reach provider(pe, reach[pe]);
    Planned out;
    auto r = plan_transports(boot, topology(nodes, pe), provider);
    if (!r.is_ok()) {
      out.error = r.status().message();
      return out;
    }
    out.path = r.value().path;
    out.job_has_remote = r.value().job_has_remote;
    out.one_node = r.value().one_node;
    out.shared_team = r.value().shared_team;
    return out;
  });
}

constexpr PathKind S = PathKind::kSelf, M = PathKind::kMapped, R = PathKind::kRemote;

TEST(TransportPlan, NonTransitiveAccessIsMutualAndTheSharedTeamAgrees) {
  // 0-1 and 1-2 reach each other, 0-2 do not (GPUs with peer access to a middle one only).
  ThreadJob job(3, 10s);
  auto out = plan(job, {0, 0, 0}, {{1}, {0, 2}, {1}});
  const std::vector<std::vector<PathKind>> want = {{S, M, R}, {M, S, M}, {R, M, S}};
  for (int pe = 0; pe < 3; ++pe) {
    ASSERT_EQ(out[pe].error, "") << "PE " << pe;
    EXPECT_EQ(out[pe].path, want[pe]) << "PE " << pe;
    EXPECT_TRUE(out[pe].job_has_remote) << "PE " << pe;
    // Not a clique: every PE is its own shared team, on every PE's account.
    EXPECT_EQ(out[pe].shared_team, std::vector<int>{pe}) << "PE " << pe;
  }
}

TEST(TransportPlan, OneSidedReachLeavesBothSidesRemote) {
  // PE 0 could map PE 1, PE 1 cannot map PE 0; PEs 1 and 2 map each other.
  ThreadJob job(3, 10s);
  auto out = plan(job, {0, 0, 0}, {{1}, {2}, {1}});
  const std::vector<std::vector<PathKind>> want = {{S, R, R}, {R, S, M}, {R, M, S}};
  const std::vector<std::vector<int>> team = {{0}, {1, 2}, {1, 2}};
  for (int pe = 0; pe < 3; ++pe) {
    ASSERT_EQ(out[pe].error, "") << "PE " << pe;
    EXPECT_EQ(out[pe].path, want[pe]) << "PE " << pe;
    EXPECT_TRUE(out[pe].job_has_remote) << "PE " << pe;
    EXPECT_EQ(out[pe].shared_team, team[pe]) << "PE " << pe;
  }
}

TEST(TransportPlan, TwoNodesMapTheirOwnPesOnly) {
  // Every memory layer would map everyone; PEs 0, 2 are on node 0 and 1, 3 on node 1.
  ThreadJob job(4, 10s);
  const std::set<int> all = {0, 1, 2, 3};
  auto out = plan(job, {0, 1, 0, 1}, {all, all, all, all});
  for (int pe = 0; pe < 4; ++pe) {
    ASSERT_EQ(out[pe].error, "") << "PE " << pe;
    for (int p = 0; p < 4; ++p) {
      const PathKind want = p == pe ? S : (p % 2 == pe % 2 ? M : R);
      EXPECT_EQ(out[pe].path[p], want) << "PE " << pe << " to PE " << p;
    }
    EXPECT_TRUE(out[pe].job_has_remote);
    EXPECT_FALSE(out[pe].one_node);
    EXPECT_EQ(out[pe].shared_team, (std::vector<int>{pe % 2, pe % 2 + 2})) << "PE " << pe;
  }
}

TEST(TransportPlan, EveryPeMappedIsNoRemoteAnywhere) {
  ThreadJob job(4, 10s);
  job.delay(2, 10ms);
  const std::set<int> all = {0, 1, 2, 3};
  auto out = plan(job, {0, 0, 0, 0}, {all, all, all, all});
  for (int pe = 0; pe < 4; ++pe) {
    ASSERT_EQ(out[pe].error, "") << "PE " << pe;
    EXPECT_FALSE(out[pe].job_has_remote) << "PE " << pe;
    EXPECT_EQ(out[pe].shared_team, (std::vector<int>{0, 1, 2, 3})) << "PE " << pe;
  }
}

TEST(TransportPlan, APeDyingWhilePlanningIsNamed) {
  // PE 3 gives its locality token, then dies before the fabric reports.
  ThreadJob job(4, 200ms);
  job.die_after(3, 1);
  const std::set<int> all = {0, 1, 2, 3};
  auto out = plan(job, {0, 0, 0, 0}, {all, all, all, all});
  for (int pe = 0; pe < 3; ++pe) {
    EXPECT_NE(
        out[pe].error.find("PE " + std::to_string(pe) + ": allgather(" /* the fabric report */),
        std::string::npos)
        << out[pe].error;
    EXPECT_NE(out[pe].error.find("timed out after 0.2 s waiting for PE 3"), std::string::npos)
        << out[pe].error;
  }
  EXPECT_NE(out[3].error.find("died (injected)"), std::string::npos) << out[3].error;
}

}  // namespace
}  // namespace vshmem
