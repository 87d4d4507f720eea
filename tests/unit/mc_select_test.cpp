// Which device collectives take the multicast path (include/vshmem/device/impl/mc_select.h). No
// machine of CI runs multimem; the choice is plain logic and is checked here, with addresses and
// sizes drawn at random (the PTX of the chosen paths is checked by unit.multimem_ptx).
#include "vshmem/device/impl/mc_select.h"

#include <gtest/gtest.h>

#include <random>

namespace vshmem::device {
namespace {

class McSelect : public ::testing::Test {
 protected:
  std::mt19937_64 gen{std::random_device{}()};
  uint64_t region() { return (gen() | 1) << 21; }  // never 0
  uint64_t aligned(uint64_t a) { return (gen() >> 20) << a; }
};

TEST_F(McSelect, TeamsOfEveryPeUseTheWorldRegionSmallerTeamsTheirOwn) {
  const uint64_t world = region(), team = region();
  const int n = 2 + static_cast<int>(gen() % 62);
  EXPECT_EQ(mc_team_base(world, team, n, n), world);
  EXPECT_EQ(mc_team_base(world, 0, n, n), world);
  EXPECT_EQ(mc_team_base(world, team, n - 1, n), team);
  EXPECT_EQ(mc_team_base(world, 0, n - 1, n), 0u);   // a smaller team without its own region
  EXPECT_EQ(mc_team_base(0, team, n - 1, n), team);  // a team's region without the world's
  EXPECT_EQ(mc_team_base(0, 0, n, n), 0u);
}

TEST_F(McSelect, BroadcastNeedsARegionAndWords) {
  const uint64_t mc = region();
  for (int i = 0; i < 1000; ++i) {
    const uint64_t d = aligned(2 + gen() % 3), s = aligned(2 + gen() % 3);
    const uint64_t bytes = 4 * (1 + gen() % 100000);
    EXPECT_TRUE(mc_broadcast_ok(mc, d, s, bytes));
    EXPECT_FALSE(mc_broadcast_ok(0, d, s, bytes));
    const uint64_t odd = 1 + gen() % 3;
    EXPECT_FALSE(mc_broadcast_ok(mc, d + odd, s, bytes));
    EXPECT_FALSE(mc_broadcast_ok(mc, d, s + odd, bytes));
    EXPECT_FALSE(mc_broadcast_ok(mc, d, s, bytes + odd));
  }
}

TEST_F(McSelect, ReduceInPlaceOrDisjointWithASupportedOperation) {
  const uint64_t mc = region();
  for (int i = 0; i < 1000; ++i) {
    const uint64_t bytes = 8 * (1 + gen() % 4096);
    const uint64_t s = aligned(12);
    EXPECT_TRUE(mc_reduce_ok(mc, true, s, s, bytes));          // in place
    EXPECT_TRUE(mc_reduce_ok(mc, true, s + bytes, s, bytes));  // just after
    EXPECT_TRUE(mc_reduce_ok(mc, true, s - bytes, s, bytes));  // just before
    if (bytes > 8) {
      const uint64_t part = 8 * (1 + gen() % (bytes / 8 - 1));   // in [8, bytes - 8]
      EXPECT_FALSE(mc_reduce_ok(mc, true, s + part, s, bytes));  // partly overlapping
      EXPECT_FALSE(mc_reduce_ok(mc, true, s - part, s, bytes));
    }
    EXPECT_FALSE(mc_reduce_ok(mc, false, s + bytes, s, bytes));  // multimem lacks the operation
    EXPECT_FALSE(mc_reduce_ok(0, true, s + bytes, s, bytes));
  }
}

TEST_F(McSelect, ReduceScatterWithARegionAndASupportedOperation) {
  const uint64_t mc = region();
  EXPECT_TRUE(mc_reducescatter_ok(mc, true));
  EXPECT_FALSE(mc_reducescatter_ok(mc, false));  // e.g. prod, or a float min
  EXPECT_FALSE(mc_reducescatter_ok(0, true));
  // A team smaller than the world without its own region: unicast.
  EXPECT_FALSE(mc_reducescatter_ok(mc_team_base(mc, 0, 3, 4), true));
  EXPECT_TRUE(mc_reducescatter_ok(mc_team_base(0, mc, 3, 4), true));
}

}  // namespace
}  // namespace vshmem::device
