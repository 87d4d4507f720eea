/* One remote operation between two PEs in a loop, built against vshmem
 * (vshmem_bench_remote_barrier) and with oshcc for Open MPI's OSHMEM, for bench/remote_barrier.sh
 * (issue #13): the script checks, from outside, what crossed TCP during the loop (PE 0's socket
 * byte and segment counts before and after), so that the two implementations are compared on the
 * same path and the messages each operation costs are counted.
 *
 * Operations (PE 0 issues them to PE 1, which waits in a barrier meanwhile; the barrier is run by
 * both): barrier (shmem_barrier_all), put_quiet (8-byte shmem_putmem + shmem_quiet), put (8-byte
 * shmem_putmem back to back, one shmem_quiet after the loop), get (8-byte shmem_getmem), fadd
 * (shmem_long_atomic_fetch_add).
 *
 * PE 0 prints "pid <pid>"; then for each operation of the list, after 100 warm-up ones, PE 0
 * prints "ready <op>" and both PEs sleep `pause` seconds (the script samples PE 0's sockets), run
 * `iters` operations, PE 0 prints "<op> <us per call>" and sleeps `pause` seconds again.
 * Usage: remote_barrier [iters] [pause_s] [op[,op...]] */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The target of put, get and fetch_add: on the symmetric heap (a global variable would take
 * vshmem's path for global and static variables, whose blocking put also completes remotely). */
static long* g_word;

static void one(int op, int me) {
  long v = 1;
  switch (op) {
    case 0: shmem_barrier_all(); break;
    case 1:
      if (me == 0) {
        shmem_putmem(g_word, &v, sizeof(v), 1);
        shmem_quiet();
      }
      break;
    case 2:
      if (me == 0) shmem_getmem(&v, g_word, sizeof(v), 1);
      break;
    case 4:
      if (me == 0) shmem_putmem(g_word, &v, sizeof(v), 1);
      break;
    default:
      if (me == 0) (void)shmem_long_atomic_fetch_add(g_word, 1, 1);
      break;
  }
}

static void pause_for(double seconds) {
  struct timespec ts;
  ts.tv_sec = (time_t)seconds;
  ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  const double pause = argc > 2 ? atof(argv[2]) : 1.0;
  char list[256];
  snprintf(list, sizeof(list), "%s", argc > 3 ? argv[3] : "barrier");
  static const char* const kOps[] = {"barrier", "put_quiet", "get", "fadd", "put"};
  int ops[16], n_ops = 0;
  for (char *save = NULL, *name = strtok_r(list, ",", &save); name != NULL;
       name = strtok_r(NULL, ",", &save)) {
    int op = -1;
    for (int i = 0; i < 5; ++i) {
      if (strcmp(name, kOps[i]) == 0) op = i;
    }
    if (op < 0 || n_ops == 16) {
      fprintf(stderr, "remote_barrier: unknown operation %s (barrier, put_quiet, get, fadd, put)\n",
              name);
      return 2;
    }
    ops[n_ops++] = op;
  }
  shmem_init();
  const int me = shmem_my_pe();
  if (shmem_n_pes() != 2) {
    if (me == 0) fprintf(stderr, "remote_barrier: run with 2 PEs\n");
    shmem_finalize();
    return 2;
  }
  g_word = (long*)shmem_malloc(sizeof(long));
  if (g_word == NULL) {
    fprintf(stderr, "remote_barrier: shmem_malloc failed\n");
    shmem_global_exit(1);
  }
  *g_word = 0;
  shmem_barrier_all();
  if (me == 0) {
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
  }
  for (int k = 0; k < n_ops; ++k) {
    const int op = ops[k];
    for (int i = 0; i < 100; ++i) one(op, me);
    shmem_quiet();
    shmem_barrier_all();
    if (me == 0) {
      printf("ready %s\n", kOps[op]);
      fflush(stdout);
    }
    pause_for(pause);
    shmem_barrier_all();
    /* PE 1 waits in the barrier below while PE 0 runs a one-sided loop (as remote_bench.c). */
    if (me == 0 || op == 0) {
      const double t0 = now_us();
      for (int i = 0; i < iters; ++i) one(op, me);
      shmem_quiet();
      const double t = (now_us() - t0) / iters;
      if (me == 0) {
        printf("%s %.3f\n", kOps[op], t);
        fflush(stdout);
      }
      pause_for(pause);
    }
    shmem_barrier_all();
  }
  shmem_free(g_word);
  shmem_finalize();
  return 0;
}
