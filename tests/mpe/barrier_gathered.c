/* shmem_barrier_all on one node when it gathers at PE 0 (the waits of every PE yield:
 * VSHMEM_WAIT=yield, or PEs outnumbering the cores) and when the PEs' VSHMEM_WAIT differ (one PE
 * spins: every PE must then take the same barrier, or they never meet and the test times out).
 *
 * Round r: every PE writes r into its slot on every PE, then the barrier; after it, every slot on
 * every PE holds r (no PE left before another arrived, and the counts of one barrier do not let the
 * next one through early). Two sets of slots, by the round's parity: a PE that left first writes
 * round r + 1 into the other set while the others still check this one. Every kLateEvery-th round
 * one PE, chosen by the round so that PE 0 (the gatherer) and each member take turns, computes
 * kLateMs before it arrives and stamps its arrival time on every PE; the others must leave soon
 * after it arrives: the median lag over those rounds is under kLagLimitMs (a sleep nobody woke
 * would end at its limit, 100 ms after it began). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpe_check.h"

enum { kRounds = 1500, kLateEvery = 50, kLateMs = 2, kLagLimitMs = 50 };

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void compute_ms(int ms) {
  const int64_t until = now_ns() + (int64_t)ms * 1000000;
  while (now_ns() < until) {
  }
}

static int cmp_i64(const void* a, const void* b) {
  const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* slots = shmem_calloc(2 * (size_t)n, sizeof(long));
  int64_t* arrived_ns = shmem_malloc(sizeof(int64_t));
  CHECK(slots && arrived_ns, "shmem_malloc failed");
  shmem_barrier_all();
  int64_t lags[kRounds / kLateEvery + 1];
  int n_lags = 0;
  for (long r = 1; r <= kRounds; ++r) {
    const int late = r % kLateEvery == 0 ? (int)(r / kLateEvery) % n : -1;
    if (me == late) {
      compute_ms(kLateMs);
      const int64_t t = now_ns();
      for (int p = 0; p < n; ++p) shmem_putmem(arrived_ns, &t, sizeof(t), p);
    }
    long* set = slots + (r % 2) * n;
    for (int p = 0; p < n; ++p) shmem_long_p(&set[me], r, p);
    shmem_barrier_all();
    const int64_t left = now_ns();
    for (int p = 0; p < n; ++p) {
      CHECK(set[p] == r, "round %ld: after shmem_barrier_all PE %d's slot holds %ld", r, p, set[p]);
    }
    if (late >= 0 && late != me) lags[n_lags++] = left - *arrived_ns;
    if (r % 7 == 0) shmem_sync_all(); /* the same barrier without the quiet: counts stay aligned */
  }
  if (n_lags > 0) {
    qsort(lags, (size_t)n_lags, sizeof(lags[0]), cmp_i64);
    const int64_t median = lags[n_lags / 2];
    CHECK(median < (int64_t)kLagLimitMs * 1000000,
          "median time from the last PE's arrival to leaving the barrier: %.1f ms over %d rounds "
          "(a missed wake-up?)",
          median / 1e6, n_lags);
  }
  shmem_barrier_all();
  if (me == 0) printf("barrier_gathered: %d PEs, %d rounds: ok\n", n, kRounds);
  shmem_free(arrived_ns);
  shmem_free(slots);
  shmem_finalize();
  return 0;
}
