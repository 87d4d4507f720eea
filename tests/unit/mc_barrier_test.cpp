// The multicast barrier's counting (include/vshmem/device/impl/mc_barrier.h), with threads as PEs
// and the switch's multimem.red played by one atomic add per member: no machine of CI runs
// multimem. The same counting runs across processes on the fake driver in
// mpe.multicast_fake_runtime*.
#include "vshmem/device/impl/mc_barrier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace vshmem::device {
namespace {

constexpr int kPes = 4;

// One slot's words on each "PE".
struct Slot {
  uint64_t counter[kPes] = {};
  uint64_t target[kPes] = {};
};

struct Ops {
  Slot* slot;
  const std::vector<int>* members;
  void before(bool) { std::atomic_thread_fence(std::memory_order_seq_cst); }
  void add_all(uint64_t*) {
    for (int pe : *members) __atomic_fetch_add(&slot->counter[pe], 1, __ATOMIC_RELEASE);
  }
  uint64_t load_acquire(const uint64_t* c) {
    std::this_thread::yield();
    return __atomic_load_n(c, __ATOMIC_ACQUIRE);
  }
};

// Teams of 4, 2 and 3 PEs take the slot one after the other: in every barrier no member passes
// before every member has published its value of the round, and the counts stay exact.
TEST(McBarrierCount, NoMemberPassesEarlyAcrossTeamsReusingTheSlot) {
  Slot slot;
  const std::vector<std::vector<int>> teams = {{0, 1, 2, 3}, {1, 2}, {0, 2, 3}, {2, 3}};
  const uint64_t seed = std::random_device{}();
  std::atomic<long> published[kPes];
  for (auto& p : published) p = -1;
  auto value = [&](size_t t, int round, int pe) {
    return static_cast<long>((seed >> 2) ^ (t << 40) ^ (static_cast<uint64_t>(round) << 8) ^
                             static_cast<uint64_t>(pe));
  };
  constexpr int kRounds = 60;
  std::vector<std::string> errors(kPes);
  for (size_t t = 0; t < teams.size(); ++t) {
    std::vector<std::thread> pes;
    for (int pe : teams[t]) {
      pes.emplace_back([&, pe, t] {
        Ops ops{&slot, &teams[t]};
        std::mt19937 delay(static_cast<unsigned>(seed) + pe);
        const uint64_t start = slot.target[pe];
        const uint64_t m = teams[t].size();
        for (int r = 0; r < kRounds && errors[pe].empty(); ++r) {
          if (delay() % 3 == 0)
            std::this_thread::sleep_for(std::chrono::microseconds(delay() % 200));
          published[pe].store(value(t, r, pe), std::memory_order_relaxed);
          mc_barrier_count(ops, &slot.counter[pe], &slot.target[pe], m, true);
          for (int q : teams[t]) {
            if (published[q].load(std::memory_order_relaxed) != value(t, r, q)) {
              errors[pe] = "team " + std::to_string(t) + " round " + std::to_string(r) + ": PE " +
                           std::to_string(q) + "'s value is missing";
            }
          }
          mc_barrier_count(ops, &slot.counter[pe], &slot.target[pe], m, false);
        }
        if (errors[pe].empty() && slot.target[pe] != start + 2 * kRounds * m) {
          errors[pe] = "target " + std::to_string(slot.target[pe]);
        }
      });
    }
    for (auto& th : pes) th.join();
    for (int pe = 0; pe < kPes; ++pe) {
      ASSERT_TRUE(errors[pe].empty()) << "PE " << pe << ": " << errors[pe];
      EXPECT_EQ(slot.counter[pe], slot.target[pe]) << "PE " << pe << " after team " << t;
    }
  }
}

TEST(TeamSlotLayout, WordsOnTheirOwnLinesAndTheSlotInWholeLines) {
  for (int n : {1, 2, 3, 8, 1000, 4096}) {
    EXPECT_GE(TeamSlotLayout::kMcTarget - TeamSlotLayout::kMcCounter, 128u);
    EXPECT_GE(TeamSlotLayout::kSignals - TeamSlotLayout::kMcTarget, 128u);
    EXPECT_EQ(TeamSlotLayout::scratch(n), TeamSlotLayout::kSignals + 16u * n);
    const uint64_t bytes = TeamSlotLayout::bytes(n, 4096);
    EXPECT_EQ(bytes % 128, 0u);
    EXPECT_GE(bytes, TeamSlotLayout::scratch(n) + 4096);
    EXPECT_LT(bytes, TeamSlotLayout::scratch(n) + 4096 + 128);
  }
}

}  // namespace
}  // namespace vshmem::device
