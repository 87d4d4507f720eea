/* The profiling interface: a tool library (pshmem_tool.c) wraps shmem_putmem, shmem_barrier_all,
 * shmem_malloc and shmem_long_atomic_fetch_add and forwards to pshmem_*. The program's calls
 * reach the tool and still do their work; calls the program makes to pshmem_* directly and the
 * library's own internal calls (shmem_calloc, shmem_finalize) are not counted. */
#include <pshmem.h>
#include <string.h>

#include "mpe_check.h"

void pshmem_tool_counts(long counts[4]);

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  unsigned long long seed = mpe_seed();
  long* box = shmem_malloc(sizeof(long) * 8);   /* counted */
  long* counter = pshmem_malloc(sizeof(long));  /* not counted */
  long* zeroed = shmem_calloc(1, sizeof(long)); /* calloc is not wrapped */
  CHECK(box != NULL && counter != NULL && zeroed != NULL, "allocations");
  const long v = (long)(mpe_rand(&seed) >> 2);
  const long start = (long)(mpe_rand(&seed) >> 4);
  if (me == 0) pshmem_putmem(counter, &start, sizeof start, me); /* not counted */
  shmem_barrier_all();                                           /* counted */
  const long start0 = shmem_long_g(counter, 0); /* PE 0's start, before anyone adds */
  pshmem_barrier_all();                         /* not counted */
  const int rounds = 5;
  for (int r = 0; r < rounds; ++r) {
    long w = v + r;
    shmem_putmem(&box[r % 4], &w, sizeof w, (me + 1) % n); /* counted */
    shmem_long_atomic_fetch_add(counter, 1, 0);            /* counted */
    pshmem_putmem(&box[4 + r % 4], &w, sizeof w, me);      /* not counted */
  }
  pshmem_barrier_all(); /* not counted */
  /* The wrapped calls did their work: the left neighbour's last put and every PE's adds. */
  long got;
  sym_read(&got, &box[(rounds - 1) % 4], sizeof got);
  long* vals = shmem_malloc(sizeof(long)); /* counted */
  pshmem_putmem(vals, &v, sizeof v, me);
  shmem_barrier_all(); /* counted */
  const long left_v = shmem_long_g(vals, (me + n - 1) % n);
  CHECK(got == left_v + rounds - 1, "box holds %ld, the left neighbour put %ld", got,
        left_v + rounds - 1);
  CHECK(shmem_long_g(counter, 0) == start0 + (long)rounds * n, "counter %ld, want %ld",
        shmem_long_g(counter, 0), start0 + (long)rounds * n);
  long counts[4];
  pshmem_tool_counts(counts);
  CHECK(counts[0] == rounds && counts[1] == 2 && counts[2] == 2 && counts[3] == rounds,
        "tool counted puts %ld, barriers %ld, mallocs %ld, fetch-adds %ld; want %d, 2, 2, %d",
        counts[0], counts[1], counts[2], counts[3], rounds, rounds);
  pshmem_barrier_all();
  shmem_free(vals);
  shmem_free(zeroed);
  pshmem_free(counter);
  shmem_free(box);
  shmem_finalize(); /* its internal barrier is not the program's: not counted */
  pshmem_tool_counts(counts);
  CHECK(counts[1] == 2, "shmem_finalize's internal barrier reached the tool (%ld barriers)",
        counts[1]);
  if (me == 0) printf("pshmem_profile: OK on %d PEs\n", n);
  return 0;
}
