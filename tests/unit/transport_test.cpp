// The transport plan's pure parts.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/transport/transport.hpp"

namespace vshmem {
namespace {

// mapped[p * n + q] from a list of mutually mapped pairs.
std::vector<uint8_t> matrix(int n, const std::vector<std::pair<int, int>>& pairs) {
  std::vector<uint8_t> m(n * n, 0);
  for (auto [p, q] : pairs) m[p * n + q] = m[q * n + p] = 1;
  return m;
}

TEST(SharedTeam, OneNodeFullyMappedIsOneTeam) {
  // Two nodes of three PEs each, every pair on a node mapped.
  auto m = matrix(6, {{0, 1}, {0, 2}, {1, 2}, {3, 4}, {3, 5}, {4, 5}});
  for (int me : {0, 1, 2}) EXPECT_EQ(shared_team_of(m, 6, me), (std::vector<int>{0, 1, 2}));
  for (int me : {3, 4, 5}) EXPECT_EQ(shared_team_of(m, 6, me), (std::vector<int>{3, 4, 5}));
}

TEST(SharedTeam, NonTransitiveAccessGivesEveryMemberTheSameAnswer) {
  // GPU peer access 0-1 and 1-2 but not 0-2: no PE may build a team the others disagree with.
  auto m = matrix(3, {{0, 1}, {1, 2}});
  for (int me = 0; me < 3; ++me) EXPECT_EQ(shared_team_of(m, 3, me), (std::vector<int>{me}));
}

TEST(SharedTeam, OneSidedMappingDoesNotCount) {
  std::vector<uint8_t> m(4, 0);
  m[0 * 2 + 1] = 1;  // 0 maps 1, 1 does not map 0
  EXPECT_EQ(shared_team_of(m, 2, 0), (std::vector<int>{0}));
  EXPECT_EQ(shared_team_of(m, 2, 1), (std::vector<int>{1}));
}

}  // namespace
}  // namespace vshmem
