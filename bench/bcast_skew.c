/* Where the time of an OSU-style broadcast goes (issue #15): as osu_coll's broadcast (one
 * shmem_broadcast64 of 8 bytes from PE 0, shmem_barrier_all between calls), with every PE's entry
 * and exit times of every call (CLOCK_MONOTONIC: one clock for every process of a host) gathered
 * on PE 0, which prints per PE the mean time in the call and how often it entered last, how long
 * after the first member the root entered, and how long a member took after both the root had
 * finished and it had entered (the delivery: signal, wake-up, scheduling). Plain OpenSHMEM C:
 * builds against vshmem (vshmem_bench_bcast_skew) and with oshcc.
 *
 *   bcast_skew [iterations]     default 2000; 1-16 PEs on one host */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (n > 16 || iters < 1) {
    if (me == 0) fprintf(stderr, "bcast_skew: 1-16 PEs, at least 1 iteration\n");
    shmem_global_exit(2);
  }
  long* psync = shmem_malloc(sizeof(long) * SHMEM_BCAST_SYNC_SIZE);
  long* src = shmem_malloc(sizeof(long));
  long* dst = shmem_malloc(sizeof(long));
  double* t_in = shmem_malloc(sizeof(double) * (size_t)iters * (size_t)n);
  double* t_out = shmem_malloc(sizeof(double) * (size_t)iters * (size_t)n);
  if (!psync || !src || !dst || !t_in || !t_out) shmem_global_exit(1);
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  *src = me;
  shmem_barrier_all();
  for (int i = -10; i < iters; ++i) { /* 10 warm-up calls */
    const double a = now_us();
    shmem_broadcast64(dst, src, 1, 0, 0, 0, n, psync);
    const double b = now_us();
    if (i >= 0) {
      shmem_double_p(&t_in[(size_t)i * n + me], a, 0);
      shmem_double_p(&t_out[(size_t)i * n + me], b, 0);
    }
    shmem_barrier_all();
  }
  if (me == 0) {
    double in_call[16] = {0}, root_late = 0, delivery = 0;
    int last[16] = {0};
    for (int i = 0; i < iters; ++i) {
      const double* in = &t_in[(size_t)i * n];
      const double* out = &t_out[(size_t)i * n];
      int latest = 0;
      double first_member = 1e300;
      for (int p = 0; p < n; ++p) {
        in_call[p] += out[p] - in[p];
        if (in[p] > in[latest]) latest = p;
        if (p > 0 && in[p] < first_member) first_member = in[p];
      }
      ++last[latest];
      if (n > 1) root_late += in[0] - first_member;
      for (int p = 1; p < n; ++p) delivery += out[p] - (out[0] > in[p] ? out[0] : in[p]);
    }
    for (int p = 0; p < n; ++p) {
      printf("PE %d: %.2f us in the call, entered last %d of %d times\n", p, in_call[p] / iters,
             last[p], iters);
    }
    if (n > 1) {
      printf(
          "root entered %.2f us after the first member; a member left %.2f us after the root "
          "had finished and it had entered (means)\n",
          root_late / iters, delivery / ((double)iters * (n - 1)));
    }
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
