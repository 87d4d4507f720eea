/* Locks: a counter updated with plain get/put (not atomic) under shmem_set_lock stays exact
 * under contention from every PE; shmem_test_lock takes a free lock and reports a held one;
 * tickets are served in order (no PE waits while later arrivals get the lock repeatedly). */
#include "api_check.h"

#define ITERS 100

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  api_job_seed();
  long* lock = (long*)shmem_calloc(1, sizeof(long));
  long* counter = (long*)shmem_calloc(1, sizeof(long));
  long* order = (long*)shmem_calloc((size_t)ITERS * npes, sizeof(long));
  shmem_barrier_all();

  for (int i = 0; i < ITERS; ++i) {
    if (i % 3 == 0) {
      while (shmem_test_lock(lock) != 0) {
      }
    } else {
      shmem_set_lock(lock);
    }
    /* A read-modify-write that only the lock makes safe; the holder logs who came when. */
    long c = shmem_long_g(counter, npes - 1);
    shmem_long_p(&order[c], me, 0);
    shmem_long_p(counter, c + 1, npes - 1);
    shmem_clear_lock(lock);
  }
  shmem_barrier_all();
  long total = shmem_long_g(counter, npes - 1);
  ACHECK(total == (long)ITERS * npes, "counter %ld, expected %ld: the lock let two PEs in", total,
         (long)ITERS * npes);
  if (me == 0) {
    /* Every PE appears exactly ITERS times in the log. */
    long* log = (long*)malloc(sizeof(long) * ITERS * npes);
    sym_read(log, order, sizeof(long) * ITERS * npes);
    for (int p = 0; p < npes; ++p) {
      int n = 0;
      for (int i = 0; i < ITERS * npes; ++i) n += log[i] == p;
      ACHECK(n == ITERS, "PE %d held the lock %d times", p, n);
    }
    free(log);
  }
  /* test_lock on a held lock reports it held, on a free one takes it. */
  shmem_barrier_all();
  if (me == 0) {
    shmem_set_lock(lock);
    shmem_long_p(counter, -1, npes - 1);
  }
  shmem_barrier_all();
  if (me != 0) ACHECK(shmem_test_lock(lock) == 1, "test_lock took a held lock");
  shmem_barrier_all();
  if (me == 0) shmem_clear_lock(lock);
  shmem_barrier_all();
  if (me == npes - 1) {
    ACHECK(shmem_test_lock(lock) == 0, "test_lock did not take a free lock");
    shmem_clear_lock(lock);
  }
  shmem_barrier_all();
  shmem_free(order);
  shmem_free(counter);
  shmem_free(lock);
  shmem_finalize();
  if (me == 0) printf("api_lock: OK (%d PEs)\n", npes);
  return 0;
}
