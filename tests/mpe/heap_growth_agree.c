/* Heap growth is all-or-nothing across PEs, its cause named (issue 19 item 3).
 * Phase 1: growths keep no descriptor per peer per chunk open (each PE holds one per own chunk).
 * Phase 2: the last PE lowers its open-file limit until a growth fails there: every PE must get
 *          NULL from the same shmem_malloc (none a pointer), the message must name the cause
 *          (checked by the test's PASS_REGULAR_EXPRESSION), and the job goes on afterwards. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "mpe_check.h"

static int open_fds(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  while (readdir(d) != NULL) ++n;
  closedir(d);
  return n;
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe();
  const int n = shmem_n_pes();
  const size_t step = 60 * 1024; /* VSHMEM_HEAP_CHUNK_SIZE=64K: one growth per call */
  long* ok = shmem_calloc((size_t)n, sizeof(long));
  CHECK(ok != NULL, "shmem_calloc");

  const int before = open_fds();
  const int growths = 16;
  for (int i = 0; i < growths; ++i) CHECK(shmem_malloc(step) != NULL, "growth %d", i);
  const int after = open_fds();
  /* One memfd per own chunk, plus slack; the old code also kept n-1 imported ones per chunk. */
  CHECK(after - before <= growths + 4,
        "%d growths left %d more descriptors open (%d PEs): peers' descriptors are kept", growths,
        after - before, n);
  shmem_barrier_all();

  if (n < 2) {
    shmem_finalize();
    printf("open descriptors: single PE, phase 2 skipped\n");
    return 0;
  }
  if (me == n - 1) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = (rlim_t)open_fds() + 3;
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit");
  }
  int failed_at = -1;
  for (int i = 0; i < 64 && failed_at < 0; ++i) {
    void* p = shmem_malloc(step);
    const long mine = p != NULL ? 1 : 2;
    for (int pe = 0; pe < n; ++pe) shmem_long_p(&ok[me], mine, pe);
    shmem_barrier_all();
    for (int pe = 0; pe < n; ++pe) {
      const long theirs = shmem_long_g(&ok[pe], me);
      if (theirs != mine) {
        fprintf(stderr, "DIVERGED: growth %d: PE %d got %s, PE %d got %s\n", i, me,
                mine == 1 ? "memory" : "NULL", pe, theirs == 1 ? "memory" : "NULL");
        return 1;
      }
    }
    if (p == NULL) failed_at = i;
    shmem_barrier_all();
  }
  CHECK(failed_at >= 0, "no growth failed on PE %d with its low open-file limit", n - 1);
  /* The job goes on: the heaps are still symmetric and usable. */
  long* x = shmem_malloc(sizeof(long));
  if (x != NULL) {
    shmem_long_p(x, 42 + me, (me + 1) % n);
    shmem_barrier_all();
    CHECK(*x == 42 + (me + n - 1) % n, "put after the failed growth");
  }
  shmem_barrier_all();
  if (me == 0) printf("growth %d failed on every PE alike\n", failed_at);
  shmem_finalize();
  return 0;
}
