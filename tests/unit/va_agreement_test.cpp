// The identical-VA agreement (runtime/heap/va_agreement.hpp) with threads as PEs
// (tests/support/thread_bootstrap.hpp): each PE has its own simulated address space, and PEs
// refuse candidates, arrive late or die on purpose. Every PE must end on the same range or on the
// same error, holding no reservation, and a dead PE is named within the time limit.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/heap/va_agreement.hpp"
#include "tests/support/stub_provider.hpp"
#include "tests/support/thread_bootstrap.hpp"

namespace vshmem {
namespace {

using namespace std::chrono_literals;
using testing::ThreadJob;

// One PE's address space: a proposal, addresses it refuses (taken there), and its live
// reservations, which must never overlap and must all be gone when the agreement fails.
class FakeSpace final : public testing::StubProvider {
 public:
  FakeSpace(uint64_t proposal, std::set<uint64_t> refused)
      : proposal_(proposal), refused_(std::move(refused)) {}

  Result<uintptr_t> find_free_range(size_t, size_t) override {
    if (proposal_ == 0) return error(Code::kOutOfMemory, "no free range (injected)");
    return static_cast<uintptr_t>(proposal_);
  }
  Result<std::shared_ptr<VirtualReservation>> reserve(uintptr_t addr, size_t size) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++attempts_;
    if (refused_.count(addr)) return error(Code::kOutOfMemory, "taken (injected)");
    for (const auto& [base, len] : live_) {
      if (addr < base + len && base < addr + size) return error(Code::kOutOfMemory, "overlap");
    }
    live_[addr] = size;
    return std::shared_ptr<VirtualReservation>(new Reservation(this, addr, size));
  }

  size_t live() {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }
  int attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return attempts_;
  }

 private:
  class Reservation final : public VirtualReservation {
   public:
    Reservation(FakeSpace* space, uintptr_t base, size_t size)
        : VirtualReservation(base, size), space_(space) {}
    ~Reservation() override {
      std::lock_guard<std::mutex> lock(space_->mu_);
      space_->live_.erase(base());
    }

   private:
    FakeSpace* space_;
  };
  uint64_t proposal_;
  std::set<uint64_t> refused_;
  std::mutex mu_;
  std::map<uintptr_t, size_t> live_;
  int attempts_ = 0;
};

constexpr size_t kSize = 1ull << 30;
constexpr size_t kAlign = 2ull << 20;
// The agreement's fixed candidates of round 0 (va_agreement.cpp).
constexpr uint64_t kFixed0 = 0x100000000000ull;

// Fresh, aligned, distinct proposals in the lower part of the address space.
std::vector<uint64_t> proposals(std::mt19937_64& rng, int n) {
  std::vector<uint64_t> out;
  while (static_cast<int>(out.size()) < n) {
    uint64_t p = (0x10000000000ull + rng() % 0x400000000000ull) / kAlign * kAlign;
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

struct Outcome {
  uint64_t base = 0;
  std::string error;
};

std::vector<Outcome> agree(ThreadJob& job, std::vector<std::unique_ptr<FakeSpace>>& spaces) {
  return job.run<Outcome>([&spaces](int pe, Bootstrap& boot) {
    auto r = agree_on_range(*spaces[pe], boot, kSize, kAlign);
    Outcome o;
    if (r.is_ok()) {
      o.base = r.value()->base();
      EXPECT_EQ(r.value()->size(), kSize);
    } else {
      o.error = r.status().message();
    }
    return o;  // the reservation (if any) is released here
  });
}

TEST(VaAgreement, EveryPeTakesTheFirstProposalAllCanReserve) {
  std::mt19937_64 rng(std::random_device{}());
  for (int n : {1, 2, 5}) {
    ThreadJob job(n, 10s);
    auto props = proposals(rng, n);
    // Every PE but the last refuses PE 0's proposal: PE 1's (the next in PE order) wins.
    std::vector<std::unique_ptr<FakeSpace>> spaces;
    for (int pe = 0; pe < n; ++pe) {
      std::set<uint64_t> refused;
      if (n > 1 && pe < n - 1) refused.insert(props[0]);
      spaces.push_back(std::make_unique<FakeSpace>(props[pe], refused));
    }
    auto out = agree(job, spaces);
    const uint64_t want = n > 1 ? props[1] : props[0];
    for (int pe = 0; pe < n; ++pe) {
      EXPECT_EQ(out[pe].error, "") << "PE " << pe;
      EXPECT_EQ(out[pe].base, want) << "PE " << pe << " of " << n;
      EXPECT_EQ(spaces[pe]->live(), 0u) << "PE " << pe << " kept a reservation";
    }
  }
}

TEST(VaAgreement, RefusedEverywhereFallsBackToFixedCandidates) {
  std::mt19937_64 rng(std::random_device{}());
  const int n = 4;
  ThreadJob job(n, 10s);
  auto props = proposals(rng, n);
  // PE (i + 1) % n refuses PE i's proposal, and one PE has no proposal at all.
  std::vector<std::unique_ptr<FakeSpace>> spaces;
  for (int pe = 0; pe < n; ++pe) {
    std::set<uint64_t> refused = {props[(pe + n - 1) % n]};
    spaces.push_back(std::make_unique<FakeSpace>(pe == 2 ? 0 : props[pe], refused));
  }
  auto out = agree(job, spaces);
  for (int pe = 0; pe < n; ++pe) {
    EXPECT_EQ(out[pe].error, "") << "PE " << pe;
    EXPECT_EQ(out[pe].base, kFixed0) << "PE " << pe;
    EXPECT_EQ(spaces[pe]->live(), 0u) << "PE " << pe;
  }
}

TEST(VaAgreement, NoCommonRangeIsOneErrorOnEveryPeAndNothingHeld) {
  std::mt19937_64 rng(std::random_device{}());
  const int n = 3;
  ThreadJob job(n, 10s);
  auto props = proposals(rng, n);
  // PE 1 refuses every candidate of every round.
  std::set<uint64_t> all(props.begin(), props.end());
  for (int round = 0; round < 3; ++round) {
    for (uint64_t f : {0x100000000000ull, 0x200000000000ull, 0x300000000000ull}) {
      all.insert(f + static_cast<uint64_t>(round) * 0x40000000000ull);
    }
  }
  std::vector<std::unique_ptr<FakeSpace>> spaces;
  for (int pe = 0; pe < n; ++pe) {
    spaces.push_back(std::make_unique<FakeSpace>(props[pe], pe == 1 ? all : std::set<uint64_t>{}));
  }
  auto out = agree(job, spaces);
  for (int pe = 0; pe < n; ++pe) {
    EXPECT_EQ(out[pe].base, 0u) << "PE " << pe;
    EXPECT_NE(out[pe].error.find("no virtual address range of 1073741824 bytes is free on every "
                                 "PE; tried "),
              std::string::npos)
        << out[pe].error;
    EXPECT_NE(out[pe].error.find("(PE 1 refused)"), std::string::npos) << out[pe].error;
    EXPECT_EQ(out[pe].error, out[0].error) << "PE " << pe << " says something else";
    EXPECT_EQ(spaces[pe]->live(), 0u) << "PE " << pe << " kept a reservation";
  }
  // Every round tries the proposals again, then three fixed ranges: 3 * (3 + 3) reservations.
  EXPECT_EQ(spaces[0]->attempts(), 18);
}

TEST(VaAgreement, LatePesStillAgree) {
  std::mt19937_64 rng(std::random_device{}());
  const int n = 4;
  ThreadJob job(n, 10s);
  job.delay(1, 20ms);
  job.delay(3, 5ms);
  auto props = proposals(rng, n);
  std::vector<std::unique_ptr<FakeSpace>> spaces;
  for (int pe = 0; pe < n; ++pe) {
    spaces.push_back(std::make_unique<FakeSpace>(props[pe], std::set<uint64_t>{props[0]}));
  }
  auto out = agree(job, spaces);
  for (int pe = 0; pe < n; ++pe) {
    EXPECT_EQ(out[pe].error, "") << "PE " << pe;
    EXPECT_EQ(out[pe].base, props[1]) << "PE " << pe;
  }
}

TEST(VaAgreement, APeThatDiesIsNamedWithinTheTimeLimit) {
  std::mt19937_64 rng(std::random_device{}());
  const int n = 4;
  // PE 2 dies after the proposals' allgather, before saying whether it could reserve.
  ThreadJob job(n, 300ms);
  job.die_after(2, 1);
  auto props = proposals(rng, n);
  std::vector<std::unique_ptr<FakeSpace>> spaces;
  for (int pe = 0; pe < n; ++pe) {
    spaces.push_back(std::make_unique<FakeSpace>(props[pe], std::set<uint64_t>{}));
  }
  const auto start = std::chrono::steady_clock::now();
  auto out = agree(job, spaces);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  for (int pe = 0; pe < n; ++pe) {
    EXPECT_EQ(out[pe].base, 0u) << "PE " << pe;
    EXPECT_EQ(spaces[pe]->live(), 0u) << "PE " << pe << " kept a reservation";
    if (pe == 2) {
      EXPECT_NE(out[pe].error.find("died (injected)"), std::string::npos) << out[pe].error;
    } else {
      EXPECT_EQ(out[pe].error, "PE " + std::to_string(pe) +
                                   ": allgather(4 bytes): timed out after 0.3 s waiting for PE 2")
          << out[pe].error;
    }
  }
}

TEST(ThreadJob, DisagreeingCallsAreNamed) {
  ThreadJob job(3, 10s);
  auto out = job.run<std::string>([](int pe, Bootstrap& boot) {
    uint64_t v = 0x5eed0000u + static_cast<uint64_t>(pe), all[3] = {};
    Status s = pe == 1 ? boot.broadcast(&v, sizeof(v), 0) : boot.allgather(&v, all, sizeof(v));
    return s.message();
  });
  for (int pe = 0; pe < 3; ++pe) {
    EXPECT_EQ(out[pe], "PE " + std::to_string(pe) + ": " +
                           (pe == 1 ? "broadcast(8 bytes, root 0)" : "allgather(8 bytes)") +
                           ": PEs disagree: PE 1 called broadcast(8 bytes, root 0) (collective "
                           "#0) while PE 0 called allgather(8 bytes) (collective #0)");
  }
}

}  // namespace
}  // namespace vshmem
