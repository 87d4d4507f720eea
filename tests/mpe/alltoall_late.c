/* The pushed alltoall (runtime/api/coll.cpp, alltoall_pushed) writes each member as soon as that
 * member has entered the call, in whichever order they enter: one member that enters late (here:
 * it sleeps before the call, as a PE without a core does when PEs outnumber the cores) must not
 * hold up the blocks the others exchange among themselves.
 *
 * In each round one PE (`late`) sleeps kLateMs before the call. On every other PE a watcher thread
 * (no SHMEM calls: it only loads this PE's own dest) notes when the block of each on-time member
 * arrived, counted from the moment this PE entered the call. Every such block must arrive well
 * before the late PE enters, and after the call every value of every block must be right.
 * Blocks of 16 KiB: above the mailbox size (1 KiB), so the pushed form runs.
 * Needs 3 PEs or more (with 2 there is no on-time pair). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

enum { kLongs = 2048, kLateMs = 1000, kOnTimeMs = 500, kRounds = 2 };

static long* dst;
static int n_pes, my_pe, late_pe;
static long round_no;
static unsigned long long job_seed;
static volatile int watching;
static long long arrived_ms[64]; /* per source PE; -1: not seen */

static long value(int from, int to, long round, size_t i) {
  unsigned long long s = job_seed ^ ((unsigned long long)from << 40) ^
                         ((unsigned long long)to << 24) ^ ((unsigned long long)round << 16) ^
                         (unsigned long long)i;
  mpe_rand(&s);
  return (long)mpe_rand(&s);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void* watch(void* start_ms) {
  const long long t0 = *(const long long*)start_ms;
  int left = n_pes - 2; /* every on-time member but ourselves */
  while (watching && left > 0) {
    for (int p = 0; p < n_pes; ++p) {
      if (p == my_pe || p == late_pe || arrived_ms[p] >= 0) continue;
      const volatile long* b = dst + (size_t)p * kLongs;
      if (b[0] == value(p, my_pe, round_no, 0) &&
          b[kLongs - 1] == value(p, my_pe, round_no, kLongs - 1)) {
        arrived_ms[p] = now_ms() - t0;
        --left;
      }
    }
    sched_yield(); /* the PEs may have fewer cores than they need */
  }
  return NULL;
}

int main(void) {
  shmem_init();
  my_pe = shmem_my_pe();
  n_pes = shmem_n_pes();
  CHECK(n_pes >= 3 && n_pes <= 64, "needs 3 to 64 PEs, not %d", n_pes);
  long* src = shmem_malloc(sizeof(long) * kLongs * (size_t)n_pes);
  dst = shmem_malloc(sizeof(long) * kLongs * (size_t)n_pes);
  unsigned long long* seed = shmem_malloc(sizeof(*seed));
  CHECK(src && dst && seed, "shmem_malloc");
  *seed = mpe_seed();
  shmem_barrier_all();
  job_seed = shmem_ulonglong_g(seed, 0);
  unsigned long long poison = mpe_seed() + (unsigned long long)my_pe;
  for (long r = 0; r < kRounds; ++r) {
    round_no = r;
    late_pe = r == 0 ? 1 : n_pes - 1;
    for (int p = 0; p < n_pes; ++p) {
      for (size_t i = 0; i < kLongs; ++i) src[(size_t)p * kLongs + i] = value(my_pe, p, r, i);
      arrived_ms[p] = -1;
    }
    for (size_t i = 0; i < (size_t)kLongs * n_pes; ++i) dst[i] = (long)mpe_rand(&poison) | 1;
    shmem_barrier_all();
    pthread_t t;
    long long start = now_ms();
    if (my_pe == late_pe) {
      usleep(kLateMs * 1000);
    } else {
      watching = 1;
      CHECK(pthread_create(&t, NULL, watch, &start) == 0, "pthread_create");
    }
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, kLongs) == 0, "alltoall rc");
    if (my_pe != late_pe) {
      watching = 0;
      pthread_join(t, NULL);
      for (int p = 0; p < n_pes; ++p) {
        if (p == my_pe || p == late_pe) continue;
        CHECK(arrived_ms[p] >= 0 && arrived_ms[p] < kOnTimeMs,
              "round %ld: the block from PE %d arrived %lld ms after this PE entered the alltoall "
              "(-1: only after the call), while PE %d was %d ms late: on-time members must not "
              "wait for the late one",
              r, p, arrived_ms[p], late_pe, kLateMs);
      }
    }
    for (int p = 0; p < n_pes; ++p) {
      for (size_t i = 0; i < kLongs; ++i) {
        CHECK(dst[(size_t)p * kLongs + i] == value(p, my_pe, r, i),
              "round %ld: block from PE %d, long %zu is %ld", r, p, i, dst[(size_t)p * kLongs + i]);
      }
    }
    shmem_barrier_all();
  }
  if (my_pe == 0) printf("alltoall_late: %d rounds on %d PEs\n", kRounds, n_pes);
  shmem_free(seed);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  return 0;
}
