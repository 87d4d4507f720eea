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
#include "runtime/common/status.hpp"

namespace vshmem::detail {

// What one PE reports.
struct HostCpus {
  uint64_t host = 0;  // hash of the host name
  cpu_set_t cpus;     // the PE's affinity mask
};

// For the PE at index me of all: how many PEs share its host, and how many distinct CPUs their
// masks cover together.
void host_load(const std::vector<HostCpus>& all, int me, int* pes, int* cpus);

// Collective over the bootstrap: chooses the policy for this process (logged at
// VSHMEM_DEBUG=info).
Status choose_wait_policy(Bootstrap& bootstrap);

// shmem_init, after choose_wait_policy, for a one-node job on the host heap without the device
// library (no proxy or CUDA threads that binding would crowd onto the PE's CPU): binds the calling
// thread to the CPU choose_wait_policy found (VSHMEM_BIND=auto; nothing otherwise). Waits spin
// when the PEs do not outnumber the CPUs, and two spinning PEs that the scheduler puts on one CPU
// wait a time slice for each other: measured (bench/RESULTS.md, issue #15 session 7), a 2-PE
// barrier with one busy process on 2 cores took 59 us (median of 5 runs; single runs 0.1-400 us)
// unbound and 0.12 us bound.
void bind_to_chosen_cpu(int my_pe);

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

}  // namespace vshmem::detail
