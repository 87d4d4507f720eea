/* ring: every PE passes values around a ring of PEs with shmem_putmem into its right
 * neighbour's symmetric buffer, until every PE has seen every PE's value. Each PE checks the sum
 * against the closed form, and PE 0 prints the result.
 *
 *   vshmemrun -n 4 ./ring
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  shmem_init();
  int me = shmem_my_pe();
  int n = shmem_n_pes();
  int right = (me + 1) % n;

  /* Symmetric: the same address on every PE. */
  long* inbox = shmem_malloc(sizeof(long));
  long carried = (long)(me + 1) * (me + 1); /* start with my own value */
  long sum = carried;

  for (int step = 1; step < n; ++step) {
    shmem_long_put(inbox, &carried, 1, right); /* hand what I carry to the right */
    shmem_barrier_all();                       /* complete and visible everywhere */
    /* What the left neighbour handed me. A get from myself rather than *inbox: on the GPU
     * backend the heap is device memory, which host code cannot load directly. */
    carried = shmem_long_g(inbox, me);
    sum += carried;
    shmem_barrier_all(); /* inbox may be overwritten again */
  }

  long expected = (long)n * (n + 1) * (2L * n + 1) / 6; /* sum of (p+1)^2 */
  int ok = sum == expected;
  if (!ok) fprintf(stderr, "ring: PE %d: sum %ld, expected %ld\n", me, sum, expected);
  /* Gather the verdicts on PE 0. */
  int* verdicts = shmem_calloc((size_t)n, sizeof(int));
  shmem_int_p(&verdicts[me], ok, 0);
  shmem_barrier_all();
  int all_ok = 1;
  if (me == 0) {
    /* The heap may be GPU memory: host code reads it through shmem calls, never directly. */
    for (int p = 0; p < n; ++p) all_ok &= shmem_int_g(&verdicts[p], 0);
    printf("ring: %d PEs, sum of (pe+1)^2 = %ld (expected %ld): %s\n", n, sum, expected,
           all_ok ? "OK" : "WRONG");
  }
  shmem_free(verdicts);
  shmem_free(inbox);
  shmem_finalize();
  return ok && all_ok ? 0 : 1;
}
