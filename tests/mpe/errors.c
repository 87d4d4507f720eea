/* Bad input: each case must end with a message naming the PE, the call and the cause. */
#include <signal.h>
#include <string.h>

#include "mpe_check.h"

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "none";
  if (strcmp(what, "before_init") == 0) {
    static long x;
    shmem_long_p(&x, 1, 0);
    return 0;
  }
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long* x = (long*)shmem_malloc(64);
  if (strcmp(what, "invalid_pe") == 0) {
    int v = 1;
    if (me == n - 1) shmem_int_put((int*)x, &v, 1, n + 3);
  } else if (strcmp(what, "out_of_heap") == 0) {
    char local[16] = {0};
    if (me == 0) shmem_putmem(local, local, sizeof(local), 1);
  } else if (strcmp(what, "malloced") == 0) {
    /* malloc'ed memory is private (global and static variables are symmetric, the heap of
     * malloc is not). */
    long* p = (long*)malloc(sizeof(long));
    if (me == 0) shmem_long_atomic_fetch_add(p, 1, 1);
    free(p);
  } else if (strcmp(what, "symmetry") == 0) {
    void* p = shmem_malloc(me == 0 ? 8192 : 4096);
    /* Every PE sees the mismatch and gets NULL; nothing is corrupted. */
    CHECK(p == NULL, "an asymmetric malloc must fail");
    return 3;
  } else if (strncmp(what, "global_exit", 11) == 0) {
    /* PE 1 ends the whole job with a status while the others wait in a barrier. */
    if (me == 1 % n) shmem_global_exit(atoi(what + 11));
    shmem_barrier_all();
    shmem_barrier_all();
    return 99; /* not reached: the job ends with PE 1's status */
  } else if (strcmp(what, "exit_without_finalize") == 0) {
    /* PE 1 leaves with status 0 but never calls shmem_finalize: the others, waiting for it in
     * a barrier, must be stopped with a message rather than wait forever. */
    if (me == 1) exit(0);
    shmem_barrier_all();
    shmem_barrier_all();
  } else if (strcmp(what, "pe_dies") == 0) {
    if (me == 1) {
      fprintf(stderr, "PE 1 dies on purpose\n");
      raise(SIGKILL);
    }
    /* The others wait in a barrier for a PE that will never arrive: the launcher must stop them
     * within its time limit. */
    shmem_barrier_all();
    shmem_barrier_all();
  }
  shmem_finalize();
  return 0;
}
