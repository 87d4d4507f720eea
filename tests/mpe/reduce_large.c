/* Reductions of many elements (the direct, sliced form on host memory and the pairwise form
 * elsewhere), repeated so that reused scratch and back-to-back calls are exercised: counts that
 * do not divide by the team size, in place and not, over the world and over a strided team.
 * Integer sums must be exact; double sums within rounding of the serial sum and bit-identical
 * on every member. */
#include <math.h>
#include <string.h>

#include "mpe_check.h"

static unsigned long long g_seed;

static long lval(unsigned long long seed, int pe, size_t i) {
  unsigned long long s = seed ^ ((unsigned long long)pe << 40) ^ (i * 0x9e3779b97f4a7c15ull);
  return (long)(mpe_rand(&s) >> 3);
}
static double dval(unsigned long long seed, int pe, size_t i) {
  return (double)(lval(seed, pe, i) % 1000003) / 7.0;
}

/* FNV-1a of the result's bytes: every member must hold the same bits. */
static unsigned long long hash(const void* p, size_t bytes) {
  const unsigned char* b = p;
  unsigned long long h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void one(shmem_team_t team, size_t count, int in_place, int round, long* lsrc, long* ldst,
                double* dsrc, double* ddst, unsigned long long* hashes, long* lbuf, double* dbuf) {
  const int n = shmem_team_n_pes(team), me_t = shmem_team_my_pe(team);
  if (me_t < 0) return;
  const int me = shmem_my_pe();
  const unsigned long long seed = g_seed + (unsigned long long)round * 1000003ull + count;
  for (size_t i = 0; i < count; ++i) lbuf[i] = lval(seed, me, i);
  sym_write(lsrc, lbuf, count * sizeof(long));
  for (size_t i = 0; i < count; ++i) dbuf[i] = dval(seed, me, i);
  sym_write(dsrc, dbuf, count * sizeof(double));
  memset(lbuf, 0xa5, count * sizeof(long));
  sym_write(ldst, lbuf, count * sizeof(long));
  sym_write(ddst, lbuf, count * sizeof(double));
  long* ld = in_place ? lsrc : ldst;
  double* dd = in_place ? dsrc : ddst;
  shmem_team_sync(team);
  CHECK(shmem_long_sum_reduce(team, ld, lsrc, count) == 0, "long sum rc");
  CHECK(shmem_double_sum_reduce(team, dd, dsrc, count) == 0, "double sum rc");
  sym_read(lbuf, ld, count * sizeof(long));
  sym_read(dbuf, dd, count * sizeof(double));
  for (size_t i = 0; i < count; ++i) {
    long want = 0;
    double dwant = 0;
    for (int k = 0; k < n; ++k) {
      const int pe = shmem_team_translate_pe(team, k, SHMEM_TEAM_WORLD);
      want = (long)((unsigned long)want + (unsigned long)lval(seed, pe, i));
      dwant += dval(seed, pe, i);
    }
    CHECK(lbuf[i] == want, "count %zu in_place %d: long elem %zu = %ld, want %ld", count, in_place,
          i, lbuf[i], want);
    CHECK(fabs(dbuf[i] - dwant) <= 1e-9 * fabs(dwant) + 1e-9,
          "count %zu in_place %d: double elem %zu = %.17g, want %.17g", count, in_place, i, dbuf[i],
          dwant);
  }
  /* Bit-identical doubles on every member: each puts its hash to the team's PE 0. */
  const unsigned long long h = hash(dbuf, count * sizeof(double));
  const int root = shmem_team_translate_pe(team, 0, SHMEM_TEAM_WORLD);
  shmem_putmem(&hashes[me], &h, sizeof h, root);
  shmem_quiet();
  shmem_team_sync(team);
  if (me == root) {
    unsigned long long all[64];
    sym_read(all, hashes, sizeof(unsigned long long) * (size_t)shmem_n_pes());
    for (int k = 0; k < n; ++k) {
      const int pe = shmem_team_translate_pe(team, k, SHMEM_TEAM_WORLD);
      CHECK(all[pe] == h, "count %zu: PE %d's double result differs from PE %d's", count, pe, me);
    }
  }
  shmem_team_sync(team); /* the root has read every hash */
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  unsigned long long* seed = shmem_malloc(sizeof *seed);
  g_seed = mpe_seed();
  if (me == 0) sym_write(seed, &g_seed, sizeof g_seed);
  shmem_barrier_all();
  shmem_getmem(&g_seed, seed, sizeof g_seed, 0);
  const size_t max = 200003;
  long* lsrc = shmem_malloc(max * sizeof(long));
  long* ldst = shmem_malloc(max * sizeof(long));
  double* dsrc = shmem_malloc(max * sizeof(double));
  double* ddst = shmem_malloc(max * sizeof(double));
  unsigned long long* hashes = shmem_calloc((size_t)npes, sizeof(unsigned long long));
  long* lbuf = malloc(max * sizeof(long));
  double* dbuf = malloc(max * sizeof(double));
  shmem_team_t evens = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &evens) == 0,
        "split");
  const size_t counts[] = {512, 513, 4099, 65536 + 7, max};
  for (int round = 0; round < 2; ++round) {
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        one(SHMEM_TEAM_WORLD, counts[c], in_place, round, lsrc, ldst, dsrc, ddst, hashes, lbuf,
            dbuf);
        shmem_barrier_all();
        if (evens != SHMEM_TEAM_INVALID) {
          one(evens, counts[c], in_place, round + 10, lsrc, ldst, dsrc, ddst, hashes, lbuf, dbuf);
        }
        shmem_barrier_all();
      }
    }
  }
  if (evens != SHMEM_TEAM_INVALID) shmem_team_destroy(evens);
  shmem_barrier_all();
  free(lbuf);
  free(dbuf);
  shmem_free(hashes);
  shmem_free(ddst);
  shmem_free(dsrc);
  shmem_free(ldst);
  shmem_free(lsrc);
  shmem_free(seed);
  shmem_finalize();
  if (me == 0) printf("reduce_large: OK on %d PEs\n", npes);
  return 0;
}
