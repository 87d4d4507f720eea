/* What the multi-PE tests of sleeping waits share (tests/mpe/wait_sleep.c, wait_until_sleep.c):
 * PE 0 computes while the others wait, then wakes them; each waiter measures how late it left and
 * how much CPU it used, and the medians over the rounds decide (one preemption by another process
 * must not). */
#ifndef VSHMEM_TESTS_SUPPORT_WAIT_TIMING_H
#define VSHMEM_TESTS_SUPPORT_WAIT_TIMING_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A waiter that was woken leaves within this of PE 0's wake-up (a sleep that nobody woke lasts
 * until its limit, 100 ms in these tests). */
#define WAIT_WOKEN_WITHIN_US 25000ll
/* A waiter that slept used less CPU than this (spinning or yielding through the wait costs
 * milliseconds). */
#define WAIT_ASLEEP_CPU_US 1000ll

static inline long long wait_now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Busy for `ms` milliseconds (CLOCK_MONOTONIC: one clock for the whole node). */
static inline void wait_compute(int ms) {
  const long long until = wait_now_ns(CLOCK_MONOTONIC) + ms * 1000000ll;
  while (wait_now_ns(CLOCK_MONOTONIC) < until) {
  }
}

static inline int wait_cmp_ll(const void* a, const void* b) {
  const long long x = *(const long long*)a, y = *(const long long*)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static inline long long wait_median(long long* v, int n) {
  qsort(v, (size_t)n, sizeof(*v), wait_cmp_ll);
  return v[n / 2];
}

/* VSHMEM_WAIT=yield (PEs outnumber the cores): a waiter sleeps after a few spins, so it must also
 * use little CPU while it waits. */
static inline int wait_policy_yields(void) {
  const char* policy = getenv("VSHMEM_WAIT");
  return policy != NULL && strcmp(policy, "yield") == 0;
}

/* How long PE 0 computes before it wakes the others: spinning waits sleep only once the wait has
 * lasted 50 ms, so PE 0 computes longer then. */
static inline int wait_work_ms(int yields) { return yields ? 20 : 70; }

#endif
