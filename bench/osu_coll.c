/* OSU-style latency of the host collectives, in plain OpenSHMEM 1.4 C so that the same source
 * builds against vshmem (target vshmem_bench_osu_coll) and against another implementation
 * (bench/osu_compare.sh builds it with oshcc for Open MPI's OSHMEM). As OSU's osu_oshm_*: each
 * iteration times one call on every PE, a barrier separates iterations, and the figure is the
 * mean over iterations averaged over the PEs. Symmetric buffers come from shmem_malloc.
 *
 *   osu_coll [ops] [max_bytes]    ops: comma list of barrier,broadcast,collect,fcollect,
 *                                 alltoall,reduce (default: all), waituntil (a put/wait_until
 *                                 ping-pong between pairs of PEs; not in the default);
 *                                 sizes 8 B .. max_bytes (1 MiB)
 * Prints one line per figure: "<op> <bytes per PE> <latency us>". */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static long* psync;
static long* pwrk;
static double* lat;

static int iters_for(size_t bytes) {
  if (bytes <= 1024) return 2000;
  if (bytes <= 65536) return 200;
  return 30;
}

/* The mean over the PEs of each PE's mean latency, on PE 0. */
static double average(double mine) {
  const int n = shmem_n_pes();
  shmem_double_p(&lat[shmem_my_pe()], mine, 0);
  shmem_barrier_all();
  double sum = 0;
  for (int p = 0; p < n; ++p) sum += lat[p];
  shmem_barrier_all();
  return sum / n;
}

static void reset_psync(void) {
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
}

/* Whether the comma list `ops` names `name` (whole names: "fcollect" does not name collect). */
static int has_op(const char* ops, const char* name) {
  const size_t len = strlen(name);
  for (const char* at = ops; (at = strstr(at, name)) != NULL; at += len) {
    if ((at == ops || at[-1] == ',') && (at[len] == ',' || at[len] == '\0')) return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const char* ops = argc > 1 ? argv[1] : "barrier,broadcast,collect,fcollect,alltoall,reduce";
  const size_t max_bytes = argc > 2 ? (size_t)atol(argv[2]) : (size_t)1 << 20;
  psync = shmem_malloc(sizeof(long) * SHMEM_REDUCE_SYNC_SIZE);
  pwrk = shmem_malloc(sizeof(long) * (max_bytes / 8 / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE));
  lat = shmem_malloc(sizeof(double) * (size_t)n);
  long* src = shmem_malloc(max_bytes * (size_t)n);
  long* dst = shmem_malloc(max_bytes * (size_t)n);
  if (!psync || !pwrk || !lat || !src || !dst) {
    fprintf(stderr, "osu_coll: PE %d: shmem_malloc failed\n", me);
    shmem_global_exit(1);
  }
  for (size_t i = 0; i < max_bytes * (size_t)n / sizeof(long); ++i) src[i] = (long)(i * 7 + me);
  reset_psync();
  if (has_op(ops, "barrier")) {
    const int iters = 20000;
    for (int w = 0; w < 100; ++w) shmem_barrier_all();
    double t0 = now_us();
    for (int i = 0; i < iters; ++i) shmem_barrier_all();
    double t = average((now_us() - t0) / iters);
    if (me == 0) printf("barrier 0 %.3f\n", t);
  }
  if (has_op(ops, "waituntil")) {
    /* Point-to-point wake-up: PEs 2k and 2k+1 ping-pong a counter with shmem_long_p and
     * shmem_long_wait_until (a PE left without a partner only takes part in the barriers); the
     * figure is half a round trip. */
    const int partner = me ^ 1, iters = 2000;
    long* flag = shmem_malloc(sizeof(long));
    *flag = 0;
    shmem_barrier_all();
    double t0 = 0;
    if (partner < n) {
      for (long i = 1; i <= iters + 50; ++i) { /* the first 50 warm up */
        if (i == 51) t0 = now_us();
        if (me % 2 == 0) {
          shmem_long_p(flag, i, partner);
          shmem_long_wait_until(flag, SHMEM_CMP_GE, i);
        } else {
          shmem_long_wait_until(flag, SHMEM_CMP_GE, i);
          shmem_long_p(flag, i, partner);
        }
      }
    }
    const double mine = partner < n ? (now_us() - t0) / iters / 2 : 0;
    shmem_double_p(&lat[me], mine, 0);
    shmem_barrier_all();
    if (me == 0) {
      double sum = 0;
      for (int p = 0; p < n - n % 2; ++p) sum += lat[p];
      printf("waituntil 8 %.3f\n", sum / (n - n % 2));
    }
    fflush(stdout);
    shmem_barrier_all();
    shmem_free(flag);
  }
  const char* names[] = {"broadcast", "collect", "fcollect", "alltoall", "reduce"};
  for (int op = 0; op < 5; ++op) {
    if (!has_op(ops, names[op])) continue;
    static const size_t sizes[] = {8, 64, 1024, 65536, 1048576};
    for (int si = 0; si < 5 && sizes[si] <= max_bytes; ++si) {
      const size_t bytes = sizes[si];
      const size_t nelems = bytes / 8;
      const int iters = iters_for(bytes);
      double total = 0;
      for (int i = -10; i < iters; ++i) { /* 10 warm-up iterations */
        double t0 = now_us();
        switch (op) {
          case 0: shmem_broadcast64(dst, src, nelems, 0, 0, 0, n, psync); break;
          case 1: shmem_collect64(dst, src, nelems, 0, 0, n, psync); break;
          case 2: shmem_fcollect64(dst, src, nelems, 0, 0, n, psync); break;
          case 3: shmem_alltoall64(dst, src, nelems, 0, 0, n, psync); break;
          default: shmem_long_sum_to_all(dst, src, (int)nelems, 0, 0, n, pwrk, psync); break;
        }
        double t = now_us() - t0;
        if (i >= 0) total += t;
        shmem_barrier_all();
      }
      double t = average(total / iters);
      if (me == 0) printf("%s %zu %.3f\n", names[op], bytes, t);
      fflush(stdout);
    }
  }
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  shmem_free(lat);
  shmem_free(pwrk);
  shmem_free(psync);
  shmem_finalize();
  return 0;
}
