// The wait policy's count of PEs and CPUs per host (runtime/api/wait_policy.hpp).
#include "runtime/api/wait_policy.hpp"

#include "runtime/transport/host_sync.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <initializer_list>
#include <thread>
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

TEST(WaitPolicy, EveryPeAgreesWhetherAnyPeSpins) {
  // 4 PEs on 2 CPUs: no PE spins, so barrier_all gathers on every PE.
  std::vector<HostCpus> all(4, pe(3, {0, 1}));
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(pe_spins(all, i));
  EXPECT_EQ(spinning_pes(all), 0);
  // One PE's VSHMEM_WAIT=spin: that PE spins, and every PE sees that one does.
  all[1].forced = kWaitSpin;
  EXPECT_TRUE(pe_spins(all, 1));
  EXPECT_FALSE(pe_spins(all, 0));
  EXPECT_EQ(spinning_pes(all), 1);
  // 2 PEs on 2 CPUs spin unless told to yield.
  std::vector<HostCpus> two(2, pe(5, {0, 1}));
  EXPECT_TRUE(pe_spins(two, 0));
  EXPECT_EQ(spinning_pes(two), 2);
  two[0].forced = kWaitYield;
  EXPECT_EQ(spinning_pes(two), 1);  // PE 1 still spins
  two[1].forced = kWaitYield;
  EXPECT_EQ(spinning_pes(two), 0);
  // Two hosts: one with a CPU per PE (its PEs spin), one oversubscribed.
  std::vector<HostCpus> hosts{pe(1, {0}), pe(1, {1}), pe(2, {0}), pe(2, {0})};
  EXPECT_TRUE(pe_spins(hosts, 0));
  EXPECT_FALSE(pe_spins(hosts, 2));
  EXPECT_EQ(spinning_pes(hosts), 2);
  hosts[0].forced = hosts[1].forced = kWaitYield;
  EXPECT_EQ(spinning_pes(hosts), 0);
  hosts[2].forced = hosts[3].forced = kWaitSpin;
  EXPECT_EQ(spinning_pes(hosts), 2);
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

// A job of several nodes binds its PEs only where their host's CPUs are scarce: fewer than
// kSpareCpusPerPe a PE (2 simulated nodes on a 2-CPU machine, not on a 16-CPU one).
TEST(WaitPolicy, SeveralNodesBindWhereTheHostsCpusAreScarce) {
  EXPECT_TRUE(bind_pes_of_several_nodes(2, 2));
  EXPECT_TRUE(bind_pes_of_several_nodes(2, 7));
  EXPECT_FALSE(bind_pes_of_several_nodes(2, 8));
  EXPECT_FALSE(bind_pes_of_several_nodes(2, 16));
  EXPECT_TRUE(bind_pes_of_several_nodes(5, 16));
  EXPECT_FALSE(bind_pes_of_several_nodes(1, 4));
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A process's waits stop yielding for a while after a long yield: wait for that to pass. (The
// machine's other runnable work is left out: set_host_pes_for_wait(1 << 20).)
bool yields_allowed_within(std::chrono::nanoseconds limit) {
  set_host_pes_for_wait(1 << 20);
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!YieldPhase().active()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(YieldPhase, CountsTheMachinesRunnableTasksAgainstThePes) {
  EXPECT_FALSE(others_runnable_in("0.52 0.58 0.59 4/467 12345\n", 4));
  EXPECT_TRUE(others_runnable_in("0.52 0.58 0.59 5/467 12345\n", 4));
  EXPECT_TRUE(others_runnable_in("3.00 2.00 1.00 12/300 999\n", 2));
  EXPECT_FALSE(others_runnable_in("1.00 1.00 1.00 1/300 999\n", 2));
  EXPECT_FALSE(others_runnable_in("garbage", 1));  // unreadable: no evidence of other work
}

// Other work on the machine (a thread that never waits, beyond the one PE this process counts as):
// waits sleep at once instead of yielding.
TEST(YieldPhase, OtherRunnableWorkKeepsWaitsFromYielding) {
  std::atomic<bool> stop{false}, running{false};
  std::thread busy([&] {
    while (!stop.load(std::memory_order_relaxed)) running.store(true, std::memory_order_relaxed);
  });
  while (!running.load()) std::this_thread::yield();
  set_host_pes_for_wait(1);  // this thread and the busy one are runnable: 2 > 1
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the last look
  const bool active = YieldPhase().active();
  stop = true;
  busy.join();
  set_host_pes_for_wait(1 << 20);  // the other tests: as on a machine with nothing else to run
  EXPECT_FALSE(active);
}

// Outside a job the policy is "do not spin" (no shmem_init chose otherwise): waits yield first.
TEST(YieldPhase, YieldsUntilItsTimeLimitWhileYieldsAreShort) {
  ASSERT_TRUE(yields_allowed_within(std::chrono::milliseconds(1000)));
  YieldPhase phase;
  ASSERT_TRUE(phase.active());
  const uint64_t t0 = now_ns();
  int yields = 0;
  while (phase.yield()) ++yields;
  const uint64_t took = now_ns() - t0;
  EXPECT_GE(yields, 1);
  // Over at its limit (or earlier, when another process held this CPU for a long yield); the
  // slack covers one yield on a loaded machine.
  EXPECT_LT(took, YieldPhase::kYieldPhaseNs + 100'000'000ull) << yields << " yields";
  EXPECT_FALSE(phase.yield());
}

// Another thread that wants this CPU: a yield hands it over for a whole time slice, so the phase
// ends at once and the next waits (of every thread of the process) sleep instead of yielding.
TEST(YieldPhase, AYieldToABusyThreadEndsYieldingForAWhile) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &mask)) ++cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_TRUE(yields_allowed_within(std::chrono::milliseconds(1000)));
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  std::atomic<bool> stop{false}, running{false};
  std::thread busy([&] {
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    while (!stop.load(std::memory_order_relaxed)) running.store(true, std::memory_order_relaxed);
  });
  while (!running.load()) std::this_thread::yield();
  // One phase lasts kYieldPhaseNs: the scheduler may hand the busy thread only short turns in
  // that window (a 76 us yield at most in 13, once, under TSan on the 2-core CI machine).
  // Phases follow each other until a yield lasts a time slice, 200 phases at most.
  ASSERT_TRUE(YieldPhase().active());
  int yields = 0, phases = 0;
  uint64_t longest = 0;
  for (; phases < 200 && longest < YieldPhase::kLongYieldNs; ++phases) {
    YieldPhase phase;  // inactive while /proc/loadavg counts other runnable work: next one
    for (;;) {
      const uint64_t t = now_ns();
      if (!phase.yield()) break;
      longest = std::max(longest, now_ns() - t);
      ++yields;
    }
  }
  stop = true;
  busy.join();
  sched_setaffinity(0, sizeof(mask), &mask);
  EXPECT_GE(longest, YieldPhase::kLongYieldNs) << yields << " yields in " << phases << " phases";
  EXPECT_FALSE(YieldPhase().active()) << "a yield of " << longest / 1000 << " us";
  // And they yield again later.
  EXPECT_TRUE(yields_allowed_within(std::chrono::nanoseconds(YieldPhase::kMaxNoYieldNs) +
                                    std::chrono::milliseconds(500)));
}

// A spin bout whose condition never holds ends after kSpinBoutNs with one yield, and the phase
// goes on; once the phase is over, spin() neither spins nor yields.
TEST(YieldPhase, ASpinBoutIsBoundedAndEndsWithAYield) {
  ASSERT_TRUE(yields_allowed_within(std::chrono::milliseconds(1000)));
  YieldPhase phase;
  ASSERT_TRUE(phase.active());
  int looks = 0;
  auto never = [&] { return ++looks < 0; };
  const uint64_t t0 = now_ns();
  EXPECT_TRUE(phase.spin(never));
  const uint64_t took = now_ns() - t0;
  EXPECT_GE(took, YieldPhase::kSpinBoutNs);
  EXPECT_LT(took, YieldPhase::kSpinBoutNs + 100'000'000ull);
  EXPECT_GE(looks, 16);  // the clock is read every 16 looks
  while (phase.spin(never)) {
  }
  EXPECT_FALSE(phase.active());
  looks = 0;
  EXPECT_FALSE(phase.spin(never));
  EXPECT_EQ(looks, 0);
}

// A condition that another thread makes true while the wait spins ends the wait, and spin_first
// is asked before every bout or yield.
TEST(YieldPhase, YieldUntilSpinsWhileSpinFirstHolds) {
  ASSERT_TRUE(yields_allowed_within(std::chrono::milliseconds(1000)));
  std::atomic<bool> done{false};
  int asked = 0;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    done.store(true, std::memory_order_release);
  });
  const bool met = yield_until([&] { return done.load(std::memory_order_acquire); },
                               [&] { return ++asked > 0; });
  setter.join();
  // The phase lasts kYieldPhaseNs: on a loaded machine the setter may come later than that.
  if (met) {
    EXPECT_GE(asked, 1);
  } else {
    EXPECT_TRUE(done.load());
  }
  // Met on the third look, inside the first bout: the wait ends there (the caller looks once
  // more), not at the bout's time limit (thousands of looks).
  ASSERT_TRUE(yields_allowed_within(std::chrono::milliseconds(1000)));
  int looks = 0;
  EXPECT_TRUE(yield_until([&] { return ++looks >= 3; }, [] { return true; }));
  EXPECT_EQ(looks, 4);
}

// PE 0 of the gathered barrier spins only while every member that last arrived on its CPU has
// arrived at this epoch (records of PEs 1..3; PE 0's own is not looked at).
TEST(GatheredBarrier, MembersOfACpuHaveArrived) {
  HostSyncArea::ArrivalRecord records[4] = {};
  auto of = [&](int pe) { return &records[pe]; };
  // Never arrived: counted as on CPU 0.
  EXPECT_FALSE(HostSyncArea::arrived_from_cpu(of, 4, 1, 0));
  EXPECT_TRUE(HostSyncArea::arrived_from_cpu(of, 4, 1, 1));
  records[1].cpu = 0;
  records[1].epoch = 5;
  records[2].cpu = 1;
  records[2].epoch = 4;
  records[3].cpu = 0;
  records[3].epoch = 4;
  EXPECT_FALSE(HostSyncArea::arrived_from_cpu(of, 4, 5, 0));  // PE 3 is missing on CPU 0
  EXPECT_FALSE(HostSyncArea::arrived_from_cpu(of, 4, 5, 1));  // PE 2 on CPU 1
  EXPECT_TRUE(HostSyncArea::arrived_from_cpu(of, 4, 5, 2));   // nobody last ran on CPU 2
  records[3].epoch = 5;
  EXPECT_TRUE(HostSyncArea::arrived_from_cpu(of, 4, 5, 0));
  EXPECT_TRUE(HostSyncArea::arrived_from_cpu(of, 3, 5, 0) &&
              !HostSyncArea::arrived_from_cpu(of, 3, 5, 1));  // only PEs below n_pes count
  // A PE not shared with us (no record) does not count.
  auto none = [&](int pe) { return pe == 3 ? nullptr : &records[pe]; };
  records[3].epoch = 4;
  EXPECT_TRUE(HostSyncArea::arrived_from_cpu(none, 4, 5, 0));
}

}  // namespace
}  // namespace vshmem::detail
