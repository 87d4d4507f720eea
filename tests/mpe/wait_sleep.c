/* Waits on one node sleep on the PE's wake word and are woken by the store they wait for
 * (runtime/transport/host_wake.hpp): shmem_barrier_all (the node barrier's counters) and the
 * team collectives (the slot's signals), both on the node's host sync pages.
 *
 * PE 0 computes before each call; every other PE, already in the call, must leave it soon after
 * PE 0 arrives (it is woken: a sleep that nobody woke would end at its limit, 100 ms after it
 * began),
 * and the broadcast must deliver fresh data. With VSHMEM_WAIT=yield (PEs outnumber the cores)
 * a waiting PE sleeps after a few spins, so it must also use little CPU while it waits; with
 * spinning waits it sleeps only once the wait has lasted 50 ms, so PE 0 computes longer.
 * Medians over the rounds, so that one preemption by another process does not decide. */
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"
#include "tests/support/wait_timing.h"

enum { kRounds = 11, kElems = 8 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long long* arrived = shmem_malloc(sizeof(long long));
  long* src = shmem_malloc(sizeof(long) * kElems);
  long* dst = shmem_malloc(sizeof(long) * kElems);
  long* truth = shmem_malloc(sizeof(long) * kElems);
  CHECK(arrived && src && dst && truth, "shmem_malloc failed");
  unsigned long long seed = mpe_seed() + (unsigned long long)me;
  const int yields = wait_policy_yields();
  const int kWorkMs = wait_work_ms(yields);
  const char* names[] = {"shmem_barrier_all", "shmem_long_broadcast", "shmem_team_sync"};
  for (int kind = 0; kind < 3; ++kind) {
    long long late[kRounds], cpu[kRounds];
    for (int r = 0; r < kRounds; ++r) {
      long poison[kElems];
      for (int i = 0; i < kElems; ++i) poison[i] = (long)mpe_rand(&seed);
      sym_write(dst, poison, sizeof(poison));
      if (me == 0) {
        long fresh[kElems];
        for (int i = 0; i < kElems; ++i) fresh[i] = (long)mpe_rand(&seed);
        sym_write(src, fresh, sizeof(fresh));
        for (int p = 0; p < n; ++p) shmem_putmem(truth, fresh, sizeof(fresh), p);
      }
      shmem_barrier_all();
      long long t_cpu = 0, t_exit = 0;
      if (me == 0) {
        wait_compute(kWorkMs);
        const long long t = wait_now_ns(CLOCK_MONOTONIC); /* one clock for the whole node */
        for (int p = 0; p < n; ++p) shmem_longlong_p(arrived, t, p);
        shmem_quiet();
      } else {
        t_cpu = wait_now_ns(CLOCK_THREAD_CPUTIME_ID);
      }
      if (kind == 0) {
        shmem_barrier_all();
      } else if (kind == 1) {
        shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, kElems, 0);
      } else {
        shmem_team_sync(SHMEM_TEAM_WORLD);
      }
      t_exit = wait_now_ns(CLOCK_MONOTONIC);
      if (me != 0) {
        cpu[r] = wait_now_ns(CLOCK_THREAD_CPUTIME_ID) - t_cpu;
        long long a = 0;
        sym_read(&a, arrived, sizeof(a));
        late[r] = t_exit - a;
      }
      if (kind == 1 && me != 0) {
        long got[kElems], want[kElems];
        sym_read(got, dst, sizeof(got));
        sym_read(want, truth, sizeof(want));
        CHECK(memcmp(got, want, sizeof(got)) == 0,
              "%s round %d: dest does not hold the root's data", names[kind], r);
      }
      /* Nothing else may wake the others in time (all waits of a PE share its wake word). */
      if (me == 0) wait_compute(kWorkMs);
      shmem_barrier_all();
    }
    if (me != 0) {
      const long long late_us = wait_median(late, kRounds) / 1000,
                      cpu_us = wait_median(cpu, kRounds) / 1000;
      printf(
          "PE %d %s: left %lld us after PE 0 arrived, %lld us of CPU in a %d ms wait (medians)\n",
          me, names[kind], late_us, cpu_us, kWorkMs);
      /* Woken: a sleep that nobody woke would last until its limit, 100 ms after it began. */
      CHECK(late_us < WAIT_WOKEN_WITHIN_US,
            "%s: PE %d left %lld us after PE 0 arrived (median): not woken?", names[kind], me,
            late_us);
      /* Asleep: spinning or yielding through the wait costs milliseconds. */
      CHECK(!yields || cpu_us < WAIT_ASLEEP_CPU_US,
            "%s: PE %d used %lld us of CPU waiting %d ms (median)", names[kind], me, cpu_us,
            kWorkMs);
    }
  }
  shmem_barrier_all();
  shmem_free(truth);
  shmem_free(dst);
  shmem_free(src);
  shmem_free(arrived);
  shmem_finalize();
  return 0;
}
