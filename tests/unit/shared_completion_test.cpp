// The UCX plugin's shared completion (runtime/transport/shared_completion.hpp): while one thread's
// completion runs, another sees it under way and takes its turn after it; the first failure
// fails every later completion, whichever thread runs it, with the same code and text; a later
// failure does not replace the first.
#include "runtime/transport/shared_completion.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace vshmem {
namespace {

TEST(SharedCompletion, UnderWayWhileATurnIsHeldAndTurnsTakeTurns) {
  SharedCompletion c;
  EXPECT_FALSE(c.under_way());
  std::atomic<bool> second_in{false};
  std::thread other;
  {
    SharedCompletion::Turn first(c);
    EXPECT_TRUE(c.under_way());
    other = std::thread([&] {
      SharedCompletion::Turn second(c);
      second_in = true;
    });
    // The second turn waits for the first.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(second_in.load());
    EXPECT_TRUE(c.under_way());
  }
  other.join();
  EXPECT_TRUE(second_in.load());
  EXPECT_FALSE(c.under_way());
}

TEST(SharedCompletion, SuccessLeavesNothingBehind) {
  SharedCompletion c;
  char err[64] = "untouched";
  {
    SharedCompletion::Turn t(c);
    EXPECT_EQ(t.earlier_failure(err, sizeof(err)), 0);
    EXPECT_EQ(t.result(0, nullptr), 0);
  }
  SharedCompletion::Turn t(c);
  EXPECT_EQ(t.earlier_failure(err, sizeof(err)), 0);
  EXPECT_STREQ(err, "untouched");
}

TEST(SharedCompletion, TheFirstFailureFailsEveryLaterCompletionOnAnyThread) {
  SharedCompletion c;
  {
    SharedCompletion::Turn t(c);
    EXPECT_EQ(t.result(7, "get from PE 1: no answer for 5 s"), 7);
  }
  for (int i = 0; i < 2; ++i) {
    int code = 0;
    char err[64] = {};
    std::thread([&] {
      SharedCompletion::Turn t(c);
      code = t.earlier_failure(err, sizeof(err));
      // A later failure of its own is returned but does not replace the first.
      if (code == 0) return;
      EXPECT_EQ(t.result(9, "something else"), 9);
    }).join();
    EXPECT_EQ(code, 7);
    EXPECT_STREQ(err, "get from PE 1: no answer for 5 s");
  }
  // The text is cut to the caller's buffer; a null buffer gets the code alone.
  SharedCompletion::Turn t(c);
  char small[8];
  EXPECT_EQ(t.earlier_failure(small, sizeof(small)), 7);
  EXPECT_STREQ(small, "get fro");
  EXPECT_EQ(t.earlier_failure(nullptr, 0), 7);
}

}  // namespace
}  // namespace vshmem
