// The socket hub's time-outs (runtime/bootstrap/socket_bootstrap.cpp) with threads as PEs
// (tests/support/thread_bootstrap.hpp, over_socket_hub): the real SocketBootstrap of every PE in
// one process, with injected delays and deaths and time limits of a fraction of a second. A PE
// that is late is named by every other PE within the time limit, and is itself told that it was
// the late one; a PE that dies is named well before the time limit; a late PE inside the limit
// costs nothing.
#include <chrono>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/thread_bootstrap.hpp"

namespace vshmem {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::ThreadJob;

struct Outcome {
  std::string text;  // "ok" or the first error's message
  double seconds = 0;
};

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos ? "" : "'" + part + "' not in: " + text;
}

// Every PE (connected when the body starts): `rounds` of (allgather of fresh data, checked, then
// a barrier); the time counts from the start of the body.
std::vector<Outcome> run_rounds(ThreadJob& job, int rounds) {
  const uint64_t salt = std::random_device{}();
  return job.run<Outcome>([&](int pe, Bootstrap& b) {
    Outcome o;
    const auto t0 = Clock::now();
    Status st = Status::ok();
    for (int i = 0; i < rounds && st.is_ok(); ++i) {
      const auto word = [&](int p) { return salt * 1000003u + static_cast<uint64_t>(p * 31 + i); };
      uint64_t mine = word(pe);
      std::vector<uint64_t> all(job.size(), 0x5a5a5a5a5a5a5a5aull);
      st = b.allgather(&mine, all.data(), sizeof(mine));
      for (int p = 0; p < job.size() && st.is_ok(); ++p) {
        if (all[p] != word(p)) {
          st = Status(Code::kPeerFailure, "wrong word from PE " + std::to_string(p));
        }
      }
      if (st.is_ok()) st = b.barrier();
    }
    o.text = st.is_ok() ? "ok" : st.message();
    o.seconds = since(t0);
    return o;
  });
}

// A job of `npes` threads over the socket hub with the time limit `limit`, the faults that
// `faults` injects, running `rounds` rounds.
std::vector<Outcome> hub_rounds(int npes, std::chrono::milliseconds limit, int rounds,
                                const std::function<void(ThreadJob&)>& faults) {
  ThreadJob job(npes, limit);
  job.over_socket_hub();
  faults(job);
  return run_rounds(job, rounds);
}

constexpr double kAnyTime = 1e9;

// Each PE of `pes` failed with `text` in its message within `seconds` of the start.
void expect_told(const std::vector<Outcome>& out, std::initializer_list<int> pes,
                 const std::string& text, double seconds) {
  for (int pe : pes) {
    EXPECT_EQ(contains(out[pe].text, text), "") << "PE " << pe;
    EXPECT_LT(out[pe].seconds, seconds) << "PE " << pe << " waited too long";
  }
}

TEST(SocketHubThreads, LatePesInsideTheTimeLimitCostNothing) {
  auto out = hub_rounds(5, 2000ms, 3, [](ThreadJob& job) {
    job.delay(2, 60ms);
    job.delay(4, 25ms);
  });
  for (int pe = 0; pe < 5; ++pe) EXPECT_EQ(out[pe].text, "ok") << "PE " << pe;
}

TEST(SocketHubThreads, ALatePeIsNamedWithinTheTimeLimit) {
  // Before each collective: late for the first allgather.
  auto out = hub_rounds(4, 400ms, 1, [](ThreadJob& job) { job.delay(3, 1200ms); });
  for (int pe = 0; pe < 3; ++pe) {
    // Not before the limit, and soon after it (the others hear it from PE 0 at once).
    expect_told(out, {pe},
                "PE " + std::to_string(pe) + ": allgather: timed out after 0.4 s waiting for PE 3",
                1.2);
    EXPECT_GE(out[pe].seconds, 0.38) << "PE " << pe;
  }
  // The late PE learns that it was the one missing, not that it waited for someone.
  expect_told(out, {3}, "PE 3: allgather: this PE arrived after PE 0 had given up waiting for it",
              kAnyTime);
}

TEST(SocketHubThreads, EveryMissingPeIsNamed) {
  auto out = hub_rounds(6, 300ms, 1, [](ThreadJob& job) {
    job.delay(1, 900ms);
    job.delay(4, 900ms);
  });
  expect_told(out, {0, 2, 3, 5}, "timed out after 0.3 s waiting for PEs 1, 4", 1.0);
  expect_told(out, {1, 4}, "this PE arrived after PE 0 had given up", kAnyTime);
}

TEST(SocketHubThreads, ADeadPeIsNamedLongBeforeTheTimeLimit) {
  // One round (allgather, barrier), then gone.
  auto out = hub_rounds(4, 5000ms, 3, [](ThreadJob& job) { job.die_after(2, 2); });
  expect_told(out, {0, 1, 3}, "PE 2 died", 2.0);
  expect_told(out, {2}, "this PE died (injected)", kAnyTime);
}

TEST(SocketHubThreads, ADeadHubIsReportedLongBeforeTheTimeLimit) {
  auto out = hub_rounds(3, 5000ms, 3, [](ThreadJob& job) { job.die_after(0, 2); });
  expect_told(out, {1, 2}, "lost the connection to PE 0", 2.0);
}

TEST(SocketHubThreads, APeThatNeverConnectsIsNamedAtInit) {
  const auto t0 = Clock::now();
  auto out = hub_rounds(4, 400ms, 1, [](ThreadJob& job) { job.die_after(3, 0); });
  const double s = since(t0);
  expect_told(out, {0}, "init: timed out after 0.4 s waiting for PE 3 to connect", kAnyTime);
  expect_told(out, {1, 2}, "waiting for PE 3 to connect", kAnyTime);
  // Clients get PE 0's verdict; they do not wait out their own, longer limit.
  EXPECT_LT(s, 2.0);
}

}  // namespace
}  // namespace vshmem
