/* Host put cost: ns per shmem_long_p from PE 0 to PE 1 (host heap, one node). 40 repetitions of
 * 200,000 calls, the best one: a repetition lasts a few milliseconds, so that on a loaded machine
 * at least one of them runs uninterrupted. Used to compare libraries with the same binary
 * (LD_LIBRARY_PATH; bench/RESULTS.md "Host put cost of the data wake").
 *
 *   vshmemrun -n 2 -- vshmem_bench_put_rate
 * Prints "long_p ns <best> (best of 40)" on PE 0. */
#include <shmem.h>
#include <stdio.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe();
  long* x = shmem_malloc(64 * sizeof(long));
  if (x == NULL || shmem_n_pes() < 2) {
    if (me == 0) fprintf(stderr, "put_rate: needs 2 PEs and 512 bytes of heap\n");
    shmem_global_exit(1);
  }
  shmem_barrier_all();
  const int calls = 200000;
  double best = 1e30;
  for (int rep = 0; rep < 40; ++rep) {
    const double t0 = now_ns();
    if (me == 0) {
      for (int i = 0; i < calls; ++i) shmem_long_p(&x[i & 63], i, 1);
    }
    const double t = (now_ns() - t0) / calls;
    shmem_barrier_all();
    if (t < best) best = t;
  }
  if (me == 0) printf("long_p ns %.2f (best of 40)\n", best);
  shmem_free(x);
  shmem_finalize();
  return 0;
}
