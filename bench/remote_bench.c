/* Host-initiated remote operations between two PEs on different nodes (issue #13): the same
 * OpenSHMEM source is built against vshmem and against Open MPI's OSHMEM (oshcc), so that both
 * run the same loops over UCX in one session (bench/remote_bench.sh).
 *
 * PE 0 measures, PE 1 (the other node) waits in a barrier meanwhile. Figures, one JSON line each:
 *   put_lat       8-byte shmem_putmem followed by shmem_quiet (the bytes have landed), us
 *   put_issue     8-byte blocking shmem_putmem back to back (source reusable), us per call
 *   get_lat       8-byte shmem_getmem, us
 *   fadd_lat      shmem_long_atomic_fetch_add, us
 *   put_bw        shmem_putmem_nbi of SIZE bytes, then shmem_quiet, GB/s (1 MiB and 64 MiB)
 *   get_bw        shmem_getmem of SIZE bytes, GB/s
 *   barrier       shmem_barrier_all over both PEs, us
 *   pingpong      8-byte shmem_long_p answered by the peer's, each side waiting for it in
 *                 shmem_long_wait_until: one way (half the round trip), us
 * Usage: remote_bench [impl-name] [reps] */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static const char* g_impl = "vshmem";

static void report(const char* bench, size_t bytes, double value, const char* unit, int iters) {
  printf(
      "{\"suite\":\"remote\",\"impl\":\"%s\",\"bench\":\"%s\",\"bytes\":%zu,\"value\":%.4f,"
      "\"unit\":\"%s\",\"iters\":%d}\n",
      g_impl, bench, bytes, value, unit, iters);
  fflush(stdout);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* The median of `reps` timings of one measured block. */
#define MEDIAN_OF(reps, out, body)                               \
  do {                                                           \
    double samples_[64];                                         \
    for (int r_ = 0; r_ < (reps); ++r_) {                        \
      double t0_ = now_us();                                     \
      body;                                                      \
      samples_[r_] = now_us() - t0_;                             \
    }                                                            \
    qsort(samples_, (size_t)(reps), sizeof(double), cmp_double); \
    (out) = samples_[(reps) / 2];                                \
  } while (0)

int main(int argc, char** argv) {
  if (argc > 1) g_impl = argv[1];
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (reps < 1 || reps > 64) reps = 5;
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  if (n != 2) {
    if (me == 0) fprintf(stderr, "remote_bench: run with 2 PEs (on 2 nodes)\n");
    shmem_finalize();
    return 2;
  }
  const size_t big = (size_t)64 << 20;
  char* heap = (char*)shmem_malloc(big);
  long* counter = (long*)shmem_malloc(sizeof(long));
  long* ball = (long*)shmem_malloc(sizeof(long));
  char* local = (char*)malloc(big);
  if (heap == NULL || counter == NULL || ball == NULL || local == NULL) {
    fprintf(stderr, "remote_bench: out of memory\n");
    shmem_global_exit(1);
  }
  memset(local, 0x5a, big);
  /* Through the API: on the GPU heap (VSHMEM_BACKEND=cuda) the CPU cannot store to it. */
  shmem_putmem(heap, local, big, me);
  shmem_long_p(counter, 0, me);
  shmem_long_p(ball, 0, me);
  shmem_barrier_all();
  const int peer = 1;
  if (me == 0) {
    const int lat_iters = 2000;
    double t;
    /* Warm up: endpoints, registrations, caches. */
    for (int i = 0; i < 200; ++i) {
      shmem_putmem(heap, local, 8, peer);
      shmem_getmem(local, heap, 8, peer);
      (void)shmem_long_atomic_fetch_add(counter, 1, peer);
    }
    shmem_quiet();
    MEDIAN_OF(
        reps, t, for (int i = 0; i < lat_iters; ++i) {
          shmem_putmem(heap, local, 8, peer);
          shmem_quiet();
        });
    report("put_lat", 8, t / lat_iters, "us", lat_iters);
    MEDIAN_OF(reps, t, {
      for (int i = 0; i < lat_iters; ++i) shmem_putmem(heap, local, 8, peer);
      shmem_quiet();
    });
    report("put_issue", 8, t / lat_iters, "us", lat_iters);
    MEDIAN_OF(reps, t, for (int i = 0; i < lat_iters; ++i) shmem_getmem(local, heap, 8, peer));
    report("get_lat", 8, t / lat_iters, "us", lat_iters);
    MEDIAN_OF(reps, t,
              for (int i = 0; i < lat_iters; ++i)(void)
                  shmem_long_atomic_fetch_add(counter, 1, peer));
    report("fadd_lat", 8, t / lat_iters, "us", lat_iters);
    const size_t sizes[2] = {(size_t)1 << 20, big};
    for (int s = 0; s < 2; ++s) {
      const size_t bytes = sizes[s];
      const int iters = bytes <= ((size_t)1 << 20) ? 64 : 4;
      MEDIAN_OF(reps, t, {
        for (int i = 0; i < iters; ++i) shmem_putmem_nbi(heap, local, bytes, peer);
        shmem_quiet();
      });
      report("put_bw", bytes, (double)bytes * iters / t / 1e3, "GB/s", iters);
      MEDIAN_OF(reps, t, for (int i = 0; i < iters; ++i) shmem_getmem(local, heap, bytes, peer));
      report("get_bw", bytes, (double)bytes * iters / t / 1e3, "GB/s", iters);
    }
  }
  shmem_barrier_all();
  {
    const int iters = 500;
    double t;
    MEDIAN_OF(reps, t, for (int i = 0; i < iters; ++i) shmem_barrier_all());
    if (me == 0) report("barrier", 0, t / iters, "us", iters);
  }
  shmem_barrier_all();
  {
    const int iters = 1000;
    long seq = 0;
    double t;
    MEDIAN_OF(
        reps, t, for (int i = 0; i < iters; ++i) {
          ++seq;
          if (me == 0) shmem_long_p(ball, seq, 1);
          shmem_long_wait_until(ball, SHMEM_CMP_EQ, seq);
          if (me == 1) shmem_long_p(ball, seq, 0);
        });
    if (me == 0) report("pingpong", 8, t / iters / 2, "us", iters);
  }
  shmem_barrier_all();
  shmem_free(ball);
  shmem_free(counter);
  shmem_free(heap);
  free(local);
  shmem_finalize();
  return 0;
}
