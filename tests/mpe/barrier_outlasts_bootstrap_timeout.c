/* shmem_barrier_all waits for a PE that computes longer than VSHMEM_BOOTSTRAP_TIMEOUT, also when
 * peers are reached through the remote path (UCX) (run with a 2 s limit and a 3 s sleep), and it
 * still orders every PE's puts before every PE's reads, round after round. */
#include <unistd.h>

#include "mpe_check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  long* slots = (long*)shmem_malloc((size_t)npes * sizeof(long));
  long* seed_box = (long*)shmem_malloc(sizeof(long));
  if (me == 0) {
    unsigned long long s = mpe_seed();
    shmem_long_p(seed_box, (long)(mpe_rand(&s) | 1), 0);
  }
  shmem_barrier_all();
  const long seed = shmem_long_g(seed_box, 0);
  for (int round = 0; round < 6; ++round) {
    const long value = seed ^ (long)(round * 0x9e3779b9L) ^ me;
    for (int p = 0; p < npes; ++p) shmem_long_p(&slots[me], value, p);
    if (round == 2 && me == npes - 1) sleep(3); /* longer than the 2 s bootstrap limit */
    shmem_barrier_all();
    for (int p = 0; p < npes; ++p) {
      const long want = seed ^ (long)(round * 0x9e3779b9L) ^ p;
      const long got = sym_long(&slots[p]); /* through the API: the heap may be GPU memory */
      CHECK(got == want, "round %d: slot of PE %d holds %ld, not %ld (seed %ld)", round, p, got,
            want, seed);
    }
    shmem_barrier_all(); /* nobody overwrites a slot before everyone has checked it */
  }
  shmem_free(seed_box);
  shmem_free(slots);
  shmem_finalize();
  return 0;
}
