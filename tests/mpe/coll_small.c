/* Small collectives back to back (runtime/api/coll.cpp: pushed broadcast; flat reduce, fcollect
 * and alltoall(s) through per-pair mailboxes). Rounds of, with no barrier between them:
 *   - a long sum over the world team, 1..160 elements (either side of the 1 KiB mailbox);
 *   - the deprecated sum_to_all on the evens and on the odds at once (the shared active-set
 *     slot), then on every PE (the same slot, other partners);
 *   - a double sum on SHMEM_TEAM_SHARED whose bits must be the same on every member;
 *   - in place (dest == source) on the world team;
 *   - fcollect and alltoall on the world team, 1..136 longs per PE (either side of the 1 KiB
 *     mailbox), dest poisoned just before the call (no sync: the mailboxes take the data);
 *   - fcollect32 and alltoalls64 (dest stride 2, source stride 3) on the evens and on the odds
 *     at once (the shared active-set slot), and alltoalls on SHMEM_TEAM_SHARED;
 *   - a broadcast from a rotating root, sizes either side of the pushed form's limit, dest
 *     poisoned and the team synced first (dest must be ready before any member calls it).
 * Exact integer sums of fresh random data; dest poisoned before each call. */
#include <string.h>

#include "mpe_check.h"

#define MAXE 160 /* longs: 1280 bytes, past the 1 KiB mailbox */
#define ROUNDS 150
#define BMAX (256 * 1024 + 64)
#define CMAXE 136 /* longs per PE for fcollect / alltoall: 1088 bytes, past the 1 KiB mailbox */

static long psync[2][SHMEM_REDUCE_SYNC_SIZE];
static long csync[2][SHMEM_COLLECT_SYNC_SIZE];
static long async_[2][SHMEM_ALLTOALLS_SYNC_SIZE];
static long pwrk[2][MAXE / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static unsigned long long job_seed;

static long value(int pe, int round, int what, int i) {
  unsigned long long s = job_seed ^ ((unsigned long long)pe << 44) ^
                         ((unsigned long long)round << 24) ^ ((unsigned long long)what << 16) ^
                         (unsigned long long)i;
  mpe_rand(&s);
  return (long)(mpe_rand(&s) >> 20); /* sums of up to 64 PEs cannot overflow */
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* src = shmem_malloc(sizeof(long) * MAXE);
  long* dst = shmem_malloc(sizeof(long) * MAXE);
  double* dsrc = shmem_malloc(sizeof(double) * MAXE);
  double* ddst = shmem_malloc(sizeof(double) * MAXE);
  long* bits = shmem_malloc(sizeof(long) * 4);
  char* bsrc = shmem_malloc(BMAX);
  char* bdst = shmem_malloc(BMAX);
  unsigned long long* seed = shmem_malloc(sizeof(*seed));
  /* fcollect / alltoall(s): n blocks of up to CMAXE longs, strided up to 3 apart */
  long* csrc = shmem_malloc(sizeof(long) * CMAXE * (size_t)n * 3);
  long* cdst = shmem_malloc(sizeof(long) * CMAXE * (size_t)n * 3);
  CHECK(src && dst && dsrc && ddst && bits && bsrc && bdst && seed && csrc && cdst, "shmem_malloc");
  for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; ++i) csync[0][i] = csync[1][i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < SHMEM_ALLTOALLS_SYNC_SIZE; ++i)
    async_[0][i] = async_[1][i] = SHMEM_SYNC_VALUE;
  *seed = mpe_seed();
  shmem_barrier_all();
  job_seed = shmem_ulonglong_g(seed, 0);
  unsigned long long r = job_seed;
  const int start = me % 2, size = (n - start + 1) / 2, idx = me / 2;
  /* Broadcast sizes either side of the pushed form's limit: (n - 1) * bytes <= 256 KiB. */
  const size_t limit = n > 1 ? (size_t)(256 * 1024) / (size_t)(n - 1) : 1024;
  for (int round = 0; round < ROUNDS; ++round) {
    const int e = 1 + (int)(mpe_rand(&r) % MAXE);
    /* world */
    for (int i = 0; i < e; ++i) src[i] = value(me, round, 0, i), dst[i] = -7;
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, (size_t)e) == 0, "sum_reduce rc");
    for (int i = 0; i < e; ++i) {
      long want = 0;
      for (int p = 0; p < n; ++p) want += value(p, round, 0, i);
      CHECK(dst[i] == want, "round %d world sum elem %d of %d: %ld, want %ld", round, i, e, dst[i],
            want);
    }
    /* evens and odds at once, then everyone, on the active-set slot */
    for (int i = 0; i < e; ++i) src[i] = value(me, round, 1, i), dst[i] = -7;
    shmem_long_sum_to_all(dst, src, e, start, 1, size, pwrk[round % 2], psync[round % 2]);
    for (int i = 0; i < e; ++i) {
      long want = 0;
      for (int k = 0; k < size; ++k) want += value(start + 2 * k, round, 1, i);
      CHECK(dst[i] == want, "round %d set %d (member %d) sum elem %d of %d", round, start, idx, i,
            e);
    }
    for (int i = 0; i < e; ++i) src[i] = value(me, round, 2, i), dst[i] = -7;
    shmem_long_sum_to_all(dst, src, e, 0, 0, n, pwrk[(round + 1) % 2], psync[(round + 1) % 2]);
    for (int i = 0; i < e; ++i) {
      long want = 0;
      for (int p = 0; p < n; ++p) want += value(p, round, 2, i);
      CHECK(dst[i] == want, "round %d all-PE active set sum elem %d of %d", round, i, e);
    }
    /* doubles on SHMEM_TEAM_SHARED: the same bits on every member */
    for (int i = 0; i < e; ++i) {
      dsrc[i] = (double)value(me, round, 3, i) * 1e-7 + 1.0 / (double)(i + 3);
      ddst[i] = -1;
    }
    CHECK(shmem_double_sum_reduce(SHMEM_TEAM_SHARED, ddst, dsrc, (size_t)e) == 0, "double rc");
    unsigned long h = 0; /* a hash of the bits: wraps (unsigned, so defined) */
    for (int i = 0; i < e; ++i) {
      unsigned long b;
      memcpy(&b, &ddst[i], sizeof(b));
      h = h * 1000003 + b;
    }
    bits[0] = (long)(h >> 1);
    shmem_team_sync(SHMEM_TEAM_SHARED);
    CHECK(shmem_long_max_reduce(SHMEM_TEAM_SHARED, &bits[1], &bits[0], 1) == 0, "max rc");
    CHECK(shmem_long_min_reduce(SHMEM_TEAM_SHARED, &bits[2], &bits[0], 1) == 0, "min rc");
    CHECK(bits[1] == bits[2], "round %d: double sums differ in their bits between members", round);
    /* in place */
    for (int i = 0; i < e; ++i) src[i] = value(me, round, 4, i);
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, src, src, (size_t)e) == 0, "in place rc");
    for (int i = 0; i < e; ++i) {
      long want = 0;
      for (int p = 0; p < n; ++p) want += value(p, round, 4, i);
      CHECK(src[i] == want, "round %d in-place sum elem %d of %d", round, i, e);
    }
    /* fcollect on the world team: block p of dest is PE p's source */
    const int c = 1 + (int)(mpe_rand(&r) % CMAXE);
    for (int i = 0; i < c; ++i) csrc[i] = value(me, round, 6, i);
    for (int i = 0; i < c * n; ++i) cdst[i] = -7;
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, cdst, csrc, (size_t)c) == 0, "fcollect rc");
    for (int p = 0; p < n; ++p) {
      for (int i = 0; i < c; ++i) {
        CHECK(cdst[p * c + i] == value(p, round, 6, i),
              "round %d fcollect %d longs: block %d elem %d is %ld", round, c, p, i,
              cdst[p * c + i]);
      }
    }
    /* alltoall on the world team: block p of our dest is block me of PE p's source */
    for (int i = 0; i < c * n; ++i) csrc[i] = value(me, round, 7, i), cdst[i] = -7;
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, cdst, csrc, (size_t)c) == 0, "alltoall rc");
    for (int p = 0; p < n; ++p) {
      for (int i = 0; i < c; ++i) {
        CHECK(cdst[p * c + i] == value(p, round, 7, me * c + i),
              "round %d alltoall %d longs: block %d elem %d is %ld", round, c, p, i,
              cdst[p * c + i]);
      }
    }
    /* evens and odds at once on the active-set slot: fcollect32, then strided alltoalls64 */
    {
      int* s32 = (int*)csrc;
      int* d32 = (int*)cdst;
      for (int i = 0; i < c; ++i) s32[i] = (int)value(me, round, 8, i);
      for (int i = 0; i < c * size; ++i) d32[i] = -7;
      shmem_fcollect32(d32, s32, (size_t)c, start, 1, size, csync[round % 2]);
      for (int k = 0; k < size; ++k) {
        for (int i = 0; i < c; ++i) {
          CHECK(d32[k * c + i] == (int)value(start + 2 * k, round, 8, i),
                "round %d set %d fcollect32 %d: block %d elem %d", round, start, c, k, i);
        }
      }
      const int ce = c;
      for (int i = 0; i < 3 * ce * size; ++i) csrc[i] = value(me, round, 9, i);
      for (int i = 0; i < 3 * ce * size; ++i) cdst[i] = -7;
      shmem_alltoalls64(cdst, csrc, 2, 3, (size_t)ce, start, 1, size, async_[round % 2]);
      for (int k = 0; k < size; ++k) {
        for (int i = 0; i < ce; ++i) {
          CHECK(cdst[(k * ce + i) * 2] == value(start + 2 * k, round, 9, (idx * ce + i) * 3),
                "round %d set %d alltoalls %d: block %d elem %d", round, start, ce, k, i);
          CHECK(cdst[(k * ce + i) * 2 + 1] == -7, "round %d alltoalls wrote between strides",
                round);
        }
      }
    }
    /* alltoalls on SHMEM_TEAM_SHARED (every PE of this node) */
    {
      const int ns = shmem_team_n_pes(SHMEM_TEAM_SHARED), ms = shmem_team_my_pe(SHMEM_TEAM_SHARED);
      const int ce = c;
      for (int i = 0; i < 3 * ce * ns; ++i) csrc[i] = value(me, round, 10, i), cdst[i] = -7;
      CHECK(shmem_long_alltoalls(SHMEM_TEAM_SHARED, cdst, csrc, 1, 3, (size_t)ce) == 0,
            "alltoalls rc");
      for (int k = 0; k < ns; ++k) {
        const int pk = shmem_team_translate_pe(SHMEM_TEAM_SHARED, k, SHMEM_TEAM_WORLD);
        for (int i = 0; i < ce; ++i) {
          CHECK(cdst[k * ce + i] == value(pk, round, 10, (ms * ce + i) * 3),
                "round %d shared alltoalls %d: block %d elem %d", round, ce, k, i);
        }
      }
    }
    /* broadcast: a few rounds either side of the pushed form's limit */
    if (round % 10 == 0) {
      const int root = (round / 10) % n;
      const size_t bytes = (round / 10) % 2 ? limit + 1 + mpe_rand(&r) % 64 : limit;
      for (size_t i = 0; i < bytes; ++i) bsrc[i] = (char)value(me, round, 5, (int)i);
      memset(bdst, 0x5a, bytes);
      shmem_team_sync(SHMEM_TEAM_WORLD); /* dest ready on every member */
      CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, bdst, bsrc, bytes, root) == 0, "broadcast rc");
      for (size_t i = 0; i < bytes; ++i) {
        CHECK(bdst[i] == (char)value(root, round, 5, (int)i),
              "round %d broadcast %zu bytes "
              "from %d: byte %zu",
              round, bytes, root, i);
      }
    }
  }
  shmem_barrier_all();
  shmem_free(cdst);
  shmem_free(csrc);
  shmem_free(seed);
  shmem_free(bdst);
  shmem_free(bsrc);
  shmem_free(bits);
  shmem_free(ddst);
  shmem_free(dsrc);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  if (me == 0) printf("coll_small: OK on %d PEs\n", n);
  return 0;
}
