/* An unmodified OpenSHMEM program: it stores to and loads from its symmetric objects with the
 * CPU. It must work with the default backend on every machine (a program that does not link the
 * device library gets the host heap, GPU or not). With VSHMEM_BACKEND=cuda on a GPU machine the
 * first store faults, and the job must end with a message naming the PE, the address and the
 * cause, not a bare crash. */
#include <stdio.h>

#include <shmem.h>

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* x = (long*)shmem_malloc(2 * sizeof(long));
  x[0] = 1000 + me; /* plain CPU stores to symmetric memory */
  x[1] = -1;
  shmem_barrier_all();
  shmem_long_p(&x[1], x[0], (me + 1) % n);
  shmem_barrier_all();
  const long want = 1000 + (me + n - 1) % n;
  if (x[1] != want) { /* a plain CPU load */
    fprintf(stderr, "FAIL PE %d: x[1] = %ld, want %ld\n", me, x[1], want);
    return 1;
  }
  shmem_barrier_all();
  shmem_free(x);
  shmem_finalize();
  if (me == 0) printf("cpu_access: OK on %d PEs\n", n);
  return 0;
}
