/* shmem_barrier_all between two PEs, built against vshmem (vshmem_bench_remote_barrier) and with
 * oshcc for Open MPI's OSHMEM, for bench/remote_barrier.sh (issue #13): the script checks, from
 * outside, that the barrier's messages really cross TCP (PE 0's socket byte counts before and
 * after the loop), so that the two implementations are compared on the same path.
 *
 * PE 0 prints "pid <pid>" and both PEs then sleep `pause` seconds (the script samples PE 0's
 * sockets), run `iters` barriers (after 100 warm-up ones), PE 0 prints "barrier <us per call>",
 * and both sleep `pause` seconds again before finalizing.
 * Usage: remote_barrier [iters] [pause_s] */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  const unsigned pause = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
  shmem_init();
  const int me = shmem_my_pe();
  for (int i = 0; i < 100; ++i) shmem_barrier_all();
  if (me == 0) {
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
  }
  sleep(pause);
  shmem_barrier_all();
  const double t0 = now_us();
  for (int i = 0; i < iters; ++i) shmem_barrier_all();
  const double t = (now_us() - t0) / iters;
  if (me == 0) {
    printf("barrier %.3f\n", t);
    fflush(stdout);
  }
  sleep(pause);
  shmem_finalize();
  return 0;
}
