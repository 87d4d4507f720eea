// How host-side waits poll (Backoff, runtime.hpp). Spinning answers fastest, but a PE that spins
// while the PE it waits for has no core of its own delays that PE by a scheduler time slice; so
// waits spin when the PEs of this machine do not outnumber the CPUs they may run on, and yield the
// core otherwise. The choice is made once at shmem_init from what every PE reports: its host and
// the CPUs of its affinity mask (the union over a host's PEs, so that launchers binding each PE to
// its own core count as many CPUs as PEs). Simulated nodes on one machine count as one host.
// VSHMEM_WAIT=spin|yield overrides the choice.
#pragma once

#include <sched.h>

#include <cstdint>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/clock.hpp"
#include "runtime/common/status.hpp"

namespace vshmem::detail {

// What one PE reports.
struct HostCpus {
  uint64_t host = 0;   // hash of the host name
  cpu_set_t cpus;      // the PE's affinity mask
  int32_t forced = 0;  // the PE's VSHMEM_WAIT: kWaitAuto, kWaitSpin or kWaitYield
};
constexpr int32_t kWaitAuto = 0, kWaitSpin = 1, kWaitYield = 2;

// For the PE at index me of all: how many PEs share its host, and how many distinct CPUs their
// masks cover together.
void host_load(const std::vector<HostCpus>& all, int me, int* pes, int* cpus);

// Whether the waits of the PE at index i of all spin: its VSHMEM_WAIT, else whether its host's PEs
// do not outnumber the CPUs of their masks (host_load).
bool pe_spins(const std::vector<HostCpus>& all, int i);

// How many PEs of all have waits that spin (pe_spins of each, in one pass).
int spinning_pes(const std::vector<HostCpus>& all);

// Collective over the bootstrap: chooses the policy for this process (logged at
// VSHMEM_DEBUG=info).
Status choose_wait_policy(Bootstrap& bootstrap);

// Whether shmem_barrier_all on one node gathers at PE 0 (sync.cpp) rather than disseminating:
// when the waits of no PE of the job spin (spinning_pes over what every PE reported at
// choose_wait_policy), so the answer is the same on every PE even when VSHMEM_WAIT differs
// between them (the two barriers would not meet).
bool barrier_gathers();

// Whether the waits of every PE of the job spin (the same answer on every PE). Then a wait sleeps
// only after spinning for a long while (kActiveNs), so the team collectives' signals between
// mapped host PEs are plain stores woken without a fence, and their sleepers pay the writers'
// barrier (membarrier, host_wake.hpp) once a long wait (team.cpp: group_post).
bool every_pe_spins();

// shmem_init, after choose_wait_policy, on the host heap without the device library (no proxy or
// CUDA threads that binding would crowd onto the PE's CPU): binds the calling thread to the CPU
// choose_wait_policy found (VSHMEM_BIND=auto; nothing otherwise), in a one-node job always, in a
// job of several nodes where the host's CPUs are scarce (bind_pes_of_several_nodes, on the counts
// choose_wait_policy made). Waits spin when the PEs do not outnumber the CPUs, and two spinning
// PEs that the scheduler puts on one CPU wait a time slice for each other: measured
// (bench/RESULTS.md, issue #15 session 7), a 2-PE barrier with one busy process on 2 cores took 59
// us (median of 5 runs; single runs 0.1-400 us) unbound and 0.12 us bound.
void bind_to_chosen_cpu(int my_pe, bool several_nodes);

// Whether shmem_init binds the PEs of a job of several nodes (bind_to_chosen_cpu), given the PEs
// on this host and the CPUs of their masks (host_load): where the CPUs are scarce, fewer than
// kSpareCpusPerPe a PE (each PE of such a job also runs a progress thread), as the remote path
// judges them. Measured (bench/RESULTS.md, issue #13 sessions 16, 21 and 22): 2 PEs on 2 CPUs
// (simulated nodes), each bound to its CPU: put bandwidth over TCP 1.021 [1.014, 1.034] of
// unbound, 8-byte latencies 0.986-0.999; 2 PEs on the 16-CPU H200 host, each bound to 8 CPUs:
// latencies 1.03-1.12 of unbound, so a host with CPUs to spare leaves them unbound.
constexpr int kSpareCpusPerPe = 4;
bool bind_pes_of_several_nodes(int host_pes, int host_cpus);

// For the PE at index me of all, the CPU VSHMEM_BIND=auto binds it to, or -1: when every PE of
// its host has the same mask of at least as many CPUs as the host has PEs (the launcher bound
// none), and the host has 2 PEs or more, the CPU of that mask whose position is the PE's rank
// among its host's PEs.
int cpu_to_bind(const std::vector<HostCpus>& all, int me);

// True: waits spin (with a CPU pause) before they nap; false: they yield the core.
bool waits_spin();

// How long a sleeping wait on a variable sleeps before it looks again (VSHMEM_WAIT_LOOK_US):
// puts and atomics wake it, stores through shmem_ptr do not.
uint64_t data_sleep_limit_ns();

// The first phase of a wait for another PE of this node when PEs outnumber the CPUs (waits do not
// spin): yield the core rather than sleep, as long as yielding hands it to PEs of this job.
//
// A sleep costs a futex wait, the waker's futex wake and the wake-up's trip through the scheduler
// on every dependent step; a yield to a PE that has work costs a context switch, and the yielder
// sees the result as soon as it runs again (Open MPI's OSHMEM waits this way when oversubscribed).
// But a yield to another process that wants the core (a busy loop, a compiler) lasts that
// process's time slice (0.75-3 ms on EEVDF): then sleeping is better, since the woken sleeper is
// placed ahead of it. So the phase starts only while the machine's runnable tasks (/proc/loadavg,
// looked at every 10 ms at most) are no more than this job's PEs on it: measured on 4 PEs under
// taskset on 2 CPUs with one busy process on one of them (bench/RESULTS.md, issue #15 session 9),
// yielding there made the broadcast 8 B 2.55 us (median of 9 runs) against 0.36 for sleeping at
// once, while without the busy process it took the time from 2.69 to 1.76 us. PEs asleep are not
// runnable, so with some of them asleep a busy process can go unseen: then each yield is the
// guard. It is timed: one that lasted kLongYieldNs or more ends the phase and keeps this
// process's waits from yielding for a while (they sleep at once, as without this phase):
// kMinNoYieldNs, doubled at each long yield up to kMaxNoYieldNs, back to kMinNoYieldNs once a wait
// is answered while it yields. The phase also ends after kYieldPhaseNs: a yield that returns at
// once finds no other work for the core, and a long wait should not burn it (a sleeping waiter
// uses well under a millisecond of CPU: tests/mpe/wait_sleep.c).
class YieldPhase {
 public:
  static constexpr uint64_t kLongYieldNs = 300'000;
  static constexpr uint64_t kMinNoYieldNs = 10'000'000;
  static constexpr uint64_t kMaxNoYieldNs = 1'000'000'000;
  static constexpr uint64_t kYieldPhaseNs = 500'000;
  // Active when waits do not spin, no yield of this process took long lately and the machine has
  // no runnable tasks beyond this job's PEs.
  YieldPhase();
  bool active() const { return start_ns_ != 0; }
  // One sched_yield; false (and no yield) once the phase is over.
  bool yield();
  // Spins (a CPU pause at a time) until met() holds, for at most kSpinBoutNs, then yields once
  // (yield()) if it still does not: for a wait whose condition only PEs on other CPUs can make
  // true while the PEs sharing this CPU all wait for this one (spin_first of yield_until). There
  // a yield hands the core to a PE that can only yield it back: two context switches for nothing,
  // 12 us on the 2-core VM of bench/RESULTS.md (issue #15 session 32). Bounded, and followed by a
  // yield, because what the caller knows of where the PEs run may be stale. false (and no spin)
  // once the phase is over.
  template <typename Met>
  bool spin(Met&& met);
  static constexpr uint64_t kSpinBoutNs = 25'000;
  // The wait's condition held after a yield of this phase.
  void answered();

 private:
  // Whether the phase goes on at `now` (ends it past kYieldPhaseNs).
  bool going_on(uint64_t now) {
    if (start_ns_ == 0) return false;
    if (now - start_ns_ < kYieldPhaseNs) return true;
    start_ns_ = 0;
    return false;
  }
  uint64_t start_ns_ = 0;
};

// Whether a /proc/loadavg text counts more runnable tasks than host_pes (the job's PEs on this
// host, which are all runnable while they yield): other work wants the CPUs.
bool others_runnable_in(const char* loadavg, int host_pes);

// For tests: the count of this job's PEs on the host that YieldPhase compares the machine's
// runnable tasks with (choose_wait_policy sets it; 1 before).
void set_host_pes_for_wait(int pes);

// Yields (YieldPhase) until met() holds: true when it does, false when the phase ended first (the
// caller then sleeps). met() reads the condition with at least acquire ordering. Whenever
// spin_first() holds (the PEs on this CPU wait for this one, and only PEs elsewhere can make met()
// true), it spins (YieldPhase::spin) instead of yielding.
template <typename Met, typename SpinFirst>
bool yield_until(Met&& met, SpinFirst&& spin_first) {
  YieldPhase phase;
  while (spin_first() ? phase.spin(met) : phase.yield()) {
    if (met()) {
      phase.answered();
      return true;
    }
  }
  return false;
}

// yield_until that never spins first.
template <typename Met>
bool yield_until(Met&& met) {
  return yield_until(met, [] { return false; });
}

template <typename Met>
bool YieldPhase::spin(Met&& met) {
  const uint64_t begin = monotonic_ns();
  if (!going_on(begin)) return false;
  for (unsigned i = 1; !met(); ++i) {
    cpu_pause();
    if (i % 16 == 0 && monotonic_ns() - begin >= kSpinBoutNs) return yield();
  }
  return true;
}

}  // namespace vshmem::detail
