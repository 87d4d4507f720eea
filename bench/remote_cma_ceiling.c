/* What a copy between two processes of one host costs (issue #13): the network leg of the remote
 * path between two simulated nodes is UCX over shared memory, whose bulk transfers (rendezvous,
 * RMA) are cross-memory-attach copies (process_vm_readv / process_vm_writev, UCX's cma
 * transport) made by one thread, or, where cma is not on the endpoint, fragments copied into and
 * out of a shared-memory FIFO. This measures, on the same buffers, 64 MiB moved in chunks:
 *   memcpy          one thread, within one process (the ceiling of any host copy)
 *   cma_read/write  one thread, process_vm_readv/writev from/into a child process's buffer
 *   cma_read_tN     N threads, each a share of the chunks (what parallel fetches could reach)
 * Prints one JSON line per figure (GB/s, median of REPS). Built on its own, no vshmem needed:
 *   cc -O2 -pthread bench/remote_cma_ceiling.c -o remote_cma_ceiling
 *   remote_cma_ceiling [chunk_kib=512] [reps=5] [max_threads=4] */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BYTES ((size_t)64 << 20)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static pid_t g_child;
static unsigned char* g_local;
static unsigned char* g_remote; /* the same address in the child (inherited mapping) */
static size_t g_chunk;

struct part {
  size_t first, step;
  int write;
  int failed;
};

static void* move_chunks(void* arg) {
  struct part* p = arg;
  for (size_t off = p->first * g_chunk; off < BYTES; off += p->step * g_chunk) {
    size_t n = BYTES - off < g_chunk ? BYTES - off : g_chunk;
    struct iovec l = {g_local + off, n}, r = {g_remote + off, n};
    ssize_t got = p->write ? process_vm_writev(g_child, &l, 1, &r, 1, 0)
                           : process_vm_readv(g_child, &l, 1, &r, 1, 0);
    if (got != (ssize_t)n) p->failed = 1;
  }
  return NULL;
}

static double run_cma(int write, int threads) {
  pthread_t t[64];
  struct part p[64];
  double t0 = now_s();
  for (int i = 0; i < threads; ++i) {
    p[i] = (struct part){(size_t)i, (size_t)threads, write, 0};
    pthread_create(&t[i], NULL, move_chunks, &p[i]);
  }
  int failed = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(t[i], NULL);
    failed |= p[i].failed;
  }
  double dt = now_s() - t0;
  return failed ? -1.0 : dt;
}

static void report(const char* bench, double gbs) {
  printf(
      "{\"suite\":\"remote_cma_ceiling\",\"bench\":\"%s\",\"bytes\":%zu,\"chunk\":%zu,"
      "\"value\":%.3f,\"unit\":\"GB/s\"}\n",
      bench, BYTES, g_chunk, gbs);
  fflush(stdout);
}

int main(int argc, char** argv) {
  g_chunk = (size_t)(argc > 1 ? atoi(argv[1]) : 512) << 10;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  int max_threads = argc > 3 ? atoi(argv[3]) : 4;
  if (g_chunk == 0 || reps < 1 || max_threads < 1 || max_threads > 64) return 2;
  g_remote = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_local = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_remote == MAP_FAILED || g_local == MAP_FAILED) return 1;
  memset(g_remote, 0x5a, BYTES);
  memset(g_local, 0xa5, BYTES);
  g_child = fork();
  if (g_child == 0) {
    memset(g_remote, 0x3c, BYTES); /* its own pages (copy-on-write broken) */
    pause();
    _exit(0);
  }
  usleep(200000);
  double* t = malloc(sizeof(double) * (size_t)reps);
  void* (*volatile copy)(void*, const void*, size_t) = memcpy;
  for (int r = 0; r < reps; ++r) {
    double t0 = now_s();
    for (size_t off = 0; off < BYTES; off += g_chunk) {
      copy(g_local + off, g_remote + off, BYTES - off < g_chunk ? BYTES - off : g_chunk);
    }
    t[r] = now_s() - t0;
  }
  qsort(t, (size_t)reps, sizeof(double), cmp);
  report("memcpy", BYTES / t[reps / 2] / 1e9);
  for (int write = 0; write < 2; ++write) {
    for (int threads = 1; threads <= max_threads; threads *= 2) {
      for (int r = 0; r < reps; ++r) t[r] = run_cma(write, threads);
      qsort(t, (size_t)reps, sizeof(double), cmp);
      char name[32];
      snprintf(name, sizeof(name), "cma_%s_t%d", write ? "write" : "read", threads);
      report(name, t[0] < 0 ? -1.0 : BYTES / t[reps / 2] / 1e9);
    }
  }
  if (g_local[0] != 0x3c) fprintf(stderr, "remote_cma_ceiling: the reads brought other bytes\n");
  kill(g_child, SIGKILL);
  waitpid(g_child, NULL, 0);
  free(t);
  return 0;
}
