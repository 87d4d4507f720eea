// The gather-at-root round (runtime/bootstrap/gather_round.hpp) that the socket hub and the MPI
// plugin's rank 0 share: what each PE contributes, where it lands, the result, the check that
// every PE called the same collective, and the names of the PEs still missing at the deadline.
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/bootstrap/gather_round.hpp"

namespace vshmem::gather {
namespace {

std::vector<char> random_block(std::mt19937_64& rng, size_t n) {
  std::vector<char> v(n);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

TEST(GatherRound, AllgatherPutsEveryBlockAtItsPe) {
  std::mt19937_64 rng(std::random_device{}());
  constexpr int kPes = 5;
  constexpr size_t kBytes = 24;
  std::vector<std::vector<char>> block(kPes);
  for (auto& b : block) b = random_block(rng, kBytes);
  const Call call{kAllgather, 7, kBytes, 0};
  Round round(call, kPes, block[0].data());
  EXPECT_EQ(round.result_len(), kPes * kBytes);
  // In any arrival order.
  for (int r : {3, 1, 4, 2}) {
    ASSERT_FALSE(round.complete());
    ASSERT_EQ(contribution_bytes(call, r), kBytes);
    std::memcpy(round.slot(r), block[r].data(), kBytes);
    round.arrived(r);
  }
  ASSERT_TRUE(round.complete());
  const char* result = static_cast<const char*>(round.result());
  for (int r = 0; r < kPes; ++r) {
    EXPECT_EQ(0, std::memcmp(result + r * kBytes, block[r].data(), kBytes)) << "PE " << r;
  }
}

TEST(GatherRound, BroadcastResultIsTheRootsBuffer) {
  std::mt19937_64 rng(std::random_device{}());
  constexpr size_t kBytes = 40;
  const auto root_data = random_block(rng, kBytes);
  // Root 2: only PE 2 contributes, and its bytes are the result.
  const Call call{kBroadcast, 3, kBytes, 2};
  std::vector<char> mine = random_block(rng, kBytes);  // PE 0's buffer is not the result
  Round round(call, 4, mine.data());
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(contribution_bytes(call, r), r == 2 ? kBytes : 0u) << "PE " << r;
    if (r == 2) std::memcpy(round.slot(r), root_data.data(), kBytes);
    round.arrived(r);
  }
  ASSERT_TRUE(round.complete());
  ASSERT_EQ(round.result_len(), kBytes);
  EXPECT_EQ(0, std::memcmp(round.result(), root_data.data(), kBytes));
  // Root 0: PE 0's own buffer, nobody else sends anything.
  Round from_zero({kBroadcast, 4, kBytes, 0}, 3, root_data.data());
  EXPECT_EQ(contribution_bytes(from_zero.call(), 1), 0u);
  from_zero.arrived(1);
  from_zero.arrived(2);
  ASSERT_TRUE(from_zero.complete());
  EXPECT_EQ(0, std::memcmp(from_zero.result(), root_data.data(), kBytes));
  // A barrier moves nothing.
  EXPECT_EQ(result_bytes({kBarrier, 5, 0, 0}, 8), 0u);
}

TEST(GatherRound, ADifferentCallIsNamed) {
  Round round({kBroadcast, 9, 64, 1}, 4, nullptr);
  EXPECT_TRUE(round.same({kBroadcast, 9, 64, 1}));
  EXPECT_FALSE(round.same({kBroadcast, 9, 64, 2}));   // another root
  EXPECT_FALSE(round.same({kBroadcast, 9, 32, 1}));   // another size
  EXPECT_FALSE(round.same({kBroadcast, 10, 64, 1}));  // a later collective
  EXPECT_FALSE(round.same({kAllgather, 9, 64, 1}));
  EXPECT_EQ(round.disagreement(3, {kAllgather, 9, 16, 0}),
            "PEs disagree: PE 3 called allgather(16 bytes) (collective #9) while PE 0 called "
            "broadcast(64 bytes, root 1) (collective #9)");
  // The root does not matter outside a broadcast.
  Round gather({kAllgather, 2, 8, 0}, 2, "01234567");
  EXPECT_TRUE(gather.same({kAllgather, 2, 8, 5}));
  EXPECT_EQ(describe({kBarrier, 0, 0, 0}), "barrier()");
  EXPECT_EQ(describe({77, 0, 0, 0}), "operation 77");
}

TEST(GatherRound, TheMissingPesAreNamedAtTheDeadline) {
  Round round({kBarrier, 1, 0, 0}, 6, nullptr);
  round.arrived(2);
  round.arrived(4);
  round.arrived(4);  // twice counts once
  EXPECT_FALSE(round.complete());
  EXPECT_EQ(round.missing(), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(round.missing_text(std::chrono::milliseconds(120000)),
            "timed out after 120 s waiting for PEs 1, 3, 5");
  round.arrived(1);
  round.arrived(5);
  EXPECT_EQ(round.missing_text(std::chrono::milliseconds(2500)),
            "timed out after 2.5 s waiting for PE 3");
  round.arrived(3);
  EXPECT_TRUE(round.complete());
  EXPECT_TRUE(round.missing().empty());
}

}  // namespace
}  // namespace vshmem::gather
