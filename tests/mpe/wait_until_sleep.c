/* shmem_wait_until, shmem_signal_wait_until, the _any form and shmem_set_lock sleep on the PE's
 * data wake word (one node, host heap) and the put or atomic they wait for wakes them
 * (runtime/transport/mapped_path.hpp, host_wake.hpp).
 *
 * PE 0 computes, then updates every other PE, which waits meanwhile. The tests run with
 * VSHMEM_WAIT_LOOK_US=100000: a sleep that nobody wakes lasts 100 ms. A waiter must leave soon
 * after PE 0's update (woken, not at the end of its sleep), block only a few times while it
 * waits (the old loop's 20 us naps block hundreds of times), and with VSHMEM_WAIT=yield (PEs
 * outnumber the cores) use little CPU. With spinning waits a wait sleeps only once it has lasted
 * 50 ms, so PE 0 computes longer.
 *
 * Without VSHMEM_WAIT_LOOK_US (1 ms), the program checks instead that a store through shmem_ptr,
 * which wakes nobody, still ends a shmem_long_wait_until soon: the sleep looks again after 1 ms.
 * Fresh random data and values each round; medians over the rounds, so that one preemption does
 * not decide. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include "mpe_check.h"
#include "tests/support/wait_timing.h"

enum { kRounds = 9, kElems = 8, kFlags = 4 };

static long long blocked(void) { /* this thread's voluntary context switches */
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw;
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long long* arrived = shmem_calloc(1, sizeof(long long));
  long* flags = shmem_calloc(kFlags, sizeof(long));
  uint64_t* sig = shmem_calloc(1, sizeof(uint64_t));
  long* dst = shmem_calloc(kElems, sizeof(long));
  long* lock = shmem_calloc(1, sizeof(long));
  unsigned long long* seeds = shmem_calloc(1, sizeof(unsigned long long));
  CHECK(arrived && flags && sig && dst && lock && seeds, "shmem_calloc failed");
  /* The same random sequence on every PE: PE 0's seed. */
  if (me == 0) {
    const unsigned long long s = mpe_seed();
    for (int p = 0; p < n; ++p) shmem_ulonglong_p(seeds, s, p);
  }
  shmem_barrier_all();
  unsigned long long seed = *seeds;
  const int yields = wait_policy_yields();
  const int kWorkMs = wait_work_ms(yields);
  const char* names[] = {"shmem_long_wait_until", "shmem_signal_wait_until",
                         "shmem_long_wait_until_any", "shmem_set_lock",
                         "shmem_long_wait_until (a store through shmem_ptr)"};
  const int through_ptr = getenv("VSHMEM_WAIT_LOOK_US") == NULL;
  for (int kind = through_ptr ? 4 : 0; kind < (through_ptr ? 5 : 4); ++kind) {
    long long late[kRounds], cpu[kRounds], blocks[kRounds];
    for (int r = 0; r < kRounds; ++r) {
      /* Fresh values, never the ones the variables hold. */
      long fresh[kElems], poison[kElems];
      for (int i = 0; i < kElems; ++i) fresh[i] = (long)(mpe_rand(&seed) | 1);
      for (int i = 0; i < kElems; ++i) poison[i] = ~fresh[i];
      const long value = fresh[0];
      const int which = (int)(mpe_rand(&seed) % kFlags);
      sym_write(dst, poison, sizeof(poison));
      for (int i = 0; i < kFlags; ++i) flags[i] = ~value;
      *sig = 0;
      if (kind == 3 && me == 0) shmem_set_lock(lock);
      shmem_barrier_all();
      long long t_cpu = 0, b0 = 0, t_exit = 0;
      if (me == 0) {
        wait_compute(kWorkMs);
        const long long t = wait_now_ns(CLOCK_MONOTONIC); /* one clock for the whole node */
        for (int p = 1; p < n; ++p) shmem_longlong_p(arrived, t, p);
        shmem_fence();
        for (int p = 1; p < n; ++p) {
          if (kind == 0) shmem_long_p(&flags[0], value, p);
          if (kind == 1) {
            shmem_long_put_signal(dst, fresh, kElems, sig, (uint64_t)value, SHMEM_SIGNAL_SET, p);
          }
          if (kind == 2) shmem_long_atomic_set(&flags[which], value, p);
          if (kind == 4) {
            long* there = shmem_ptr(&flags[0], p);
            CHECK(there != NULL, "shmem_ptr(flags, %d) is NULL on one node's host heap", p);
            __atomic_store_n(there, value, __ATOMIC_RELEASE);
          }
        }
        if (kind == 3) shmem_clear_lock(lock);
        shmem_quiet();
      } else {
        t_cpu = wait_now_ns(CLOCK_THREAD_CPUTIME_ID);
        b0 = blocked();
        if (kind == 0 || kind == 4) {
          shmem_long_wait_until(&flags[0], SHMEM_CMP_EQ, value);
        } else if (kind == 1) {
          CHECK(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)value) == (uint64_t)value,
                "round %d: shmem_signal_wait_until returned another value", r);
        } else if (kind == 2) {
          size_t got = shmem_long_wait_until_any(flags, kFlags, NULL, SHMEM_CMP_EQ, value);
          CHECK(got == (size_t)which, "round %d: wait_until_any returned %zu, PE 0 set %d", r, got,
                which);
        } else {
          shmem_set_lock(lock);
        }
        t_exit = wait_now_ns(CLOCK_MONOTONIC);
        blocks[r] = blocked() - b0;
        cpu[r] = wait_now_ns(CLOCK_THREAD_CPUTIME_ID) - t_cpu;
        late[r] = t_exit - *(volatile long long*)arrived;
        if (kind == 3) shmem_clear_lock(lock);
        if (kind == 1) {
          CHECK(memcmp(dst, fresh, sizeof(fresh)) == 0,
                "round %d: the signal arrived but dest does not hold PE 0's data", r);
        }
      }
      shmem_barrier_all();
    }
    if (me != 0) {
      const long long late_us = wait_median(late, kRounds) / 1000,
                      cpu_us = wait_median(cpu, kRounds) / 1000;
      const long long blocks_m = wait_median(blocks, kRounds);
      printf(
          "PE %d %s: left %lld us after PE 0's update, blocked %lld times, %lld us of CPU in a "
          "%d ms wait (medians)\n",
          me, names[kind], late_us, blocks_m, cpu_us, kWorkMs);
      CHECK(late_us < WAIT_WOKEN_WITHIN_US, "%s: PE %d left %lld us after PE 0's update (median)",
            names[kind], me, late_us);
      /* Woken by the update: a few blocks (the lock: one more per earlier holder's release). */
      /* A store through shmem_ptr wakes nobody: the waiter looks again every millisecond. */
      const long long most = kind == 4 ? 1000 : kind == 3 ? n + 3 : 4;
      /* Asleep at all (a yield loop never blocks before the old loop's naps at 50 ms). */
      CHECK(kind == 4 || blocks_m >= 1, "%s: PE %d never slept in a %d ms wait (median)",
            names[kind], me, kWorkMs);
      CHECK(blocks_m <= most,
            "%s: PE %d blocked %lld times in a %d ms wait (median): the update did not wake it",
            names[kind], me, blocks_m, kWorkMs);
      CHECK(!yields || cpu_us < WAIT_ASLEEP_CPU_US,
            "%s: PE %d used %lld us of CPU waiting %d ms (median)", names[kind], me, cpu_us,
            kWorkMs);
    }
  }
  shmem_barrier_all();
  shmem_free(seeds);
  shmem_free(lock);
  shmem_free(dst);
  shmem_free(sig);
  shmem_free(flags);
  shmem_free(arrived);
  shmem_finalize();
  return 0;
}
