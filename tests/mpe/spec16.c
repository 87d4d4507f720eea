/* OpenSHMEM 1.6 additions on the host: shmem_signal_add/set (and ctx forms), shmem_pe_quiet,
 * shmem_ibput/ibget (typed, sized, ctx), shmem_query_initialized/finalized and counted
 * initialization. With an argument, one kind of bad input (the job must fail with a message). */
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

static unsigned long long g_seed;

static void check_query(int want_init, int want_fin, const char* when) {
  int init = -1, fin = -1;
  shmem_query_initialized(&init);
  shmem_query_finalized(&fin);
  CHECK((init != 0) == want_init && (fin != 0) == want_fin,
        "%s: query_initialized %d, query_finalized %d; want %d, %d", when, init, fin, want_init,
        want_fin);
}

static void signals(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  uint64_t* sig = shmem_calloc(2, sizeof(uint64_t));
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
  /* Every PE adds a fresh value to every PE's sig[0] (half through a context); the total is
   * known to all once each PE's values are fcollected. */
  uint64_t* adds = shmem_malloc(sizeof(uint64_t) * (size_t)n);
  uint64_t* mine = shmem_malloc(sizeof(uint64_t));
  uint64_t v = mpe_rand(&g_seed) >> 8;
  sym_write(mine, &v, sizeof v);
  shmem_barrier_all();
  shmem_uint64_fcollect(SHMEM_TEAM_WORLD, adds, mine, 1);
  for (int p = 0; p < n; ++p) {
    if (p % 2) {
      shmem_ctx_signal_add(ctx, &sig[0], v, p);
    } else {
      shmem_signal_add(&sig[0], v, p);
    }
  }
  shmem_barrier_all();
  uint64_t want = 0, all[64];
  sym_read(all, adds, sizeof(uint64_t) * (size_t)n);
  for (int p = 0; p < n; ++p) want += all[p];
  CHECK(shmem_signal_fetch(&sig[0]) == want, "signal_add total %llu, want %llu",
        (unsigned long long)shmem_signal_fetch(&sig[0]), (unsigned long long)want);
  /* signal_set: the left neighbour sets our sig[1]; we wait for exactly its value. */
  const uint64_t poison = 0xdeadbeefcafef00dull;
  sym_write(&sig[1], &poison, sizeof poison);
  shmem_barrier_all();
  const int right = (me + 1) % n;
  const uint64_t set = (all[me] ^ 0x5a5a5a5a5a5aull) | 1;
  if (me % 2) {
    shmem_ctx_signal_set(ctx, &sig[1], set, right);
  } else {
    shmem_signal_set(&sig[1], set, right);
  }
  const int left = (me + n - 1) % n;
  const uint64_t expect = (all[left] ^ 0x5a5a5a5a5a5aull) | 1;
  uint64_t got = shmem_signal_wait_until(&sig[1], SHMEM_CMP_EQ, expect);
  CHECK(got == expect, "signal_set: %llx, want %llx", (unsigned long long)got,
        (unsigned long long)expect);
  shmem_barrier_all();
  shmem_ctx_destroy(ctx);
  shmem_free(mine);
  shmem_free(adds);
  shmem_free(sig);
}

static void pe_quiet(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* box = shmem_malloc(sizeof(long) * (size_t)n);
  const long v = (long)(mpe_rand(&g_seed) >> 2);
  int targets[64];
  size_t nt = 0;
  for (int p = 0; p < n; ++p) {
    shmem_long_put_nbi(&box[me], &v, 1, p);
    if (p != me) targets[nt++] = p;
  }
  shmem_pe_quiet(targets, nt);
  shmem_pe_quiet(NULL, 0);
  int self = me;
  shmem_ctx_pe_quiet(SHMEM_CTX_DEFAULT, &self, 1);
  shmem_barrier_all();
  /* Everyone's value arrived (box[p] on our PE was written by p). */
  long* vals = malloc(sizeof(long) * (size_t)n);
  sym_read(vals, box, sizeof(long) * (size_t)n);
  long* theirs = shmem_malloc(sizeof(long));
  sym_write(theirs, &v, sizeof v);
  shmem_barrier_all();
  for (int p = 0; p < n; ++p) {
    long w = shmem_long_g(theirs, p);
    CHECK(vals[p] == w, "after pe_quiet: box[%d] = %ld, PE %d put %ld", p, vals[p], p, w);
  }
  shmem_barrier_all();
  free(vals);
  shmem_free(theirs);
  shmem_free(box);
}

/* ibput then ibget of nblocks blocks of bsize elements, strides dst/sst, element size elem
 * (which: 0 typed int, 1 sized 64, 2 ctx typed double, 3 sized 8). */
static void blocked_case(size_t elem, int which, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                         size_t nblocks) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const size_t span_d = ((nblocks - 1) * (size_t)dst + bsize) * elem;
  const size_t span_s = ((nblocks - 1) * (size_t)sst + bsize) * elem;
  unsigned char* sym = shmem_malloc(span_d > span_s ? span_d : span_s);
  unsigned char* src = malloc(span_s);
  unsigned char* back = malloc(span_s);
  const unsigned char poison = 0xa5;
  /* Data this PE puts: a pattern of (seed, PE) so the target can recompute it. */
  unsigned long long s = g_seed ^ ((unsigned long long)me << 48) ^ (unsigned long long)which;
  for (size_t i = 0; i < span_s; ++i) src[i] = (unsigned char)mpe_rand(&s);
  unsigned char* fill = malloc(span_d > span_s ? span_d : span_s);
  memset(fill, poison, span_d > span_s ? span_d : span_s);
  sym_write(sym, fill, span_d > span_s ? span_d : span_s);
  shmem_barrier_all();
  shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
  switch (which) {
    case 0: shmem_int_ibput((int*)sym, (const int*)src, dst, sst, bsize, nblocks, right); break;
    case 1: shmem_ibput64(sym, src, dst, sst, bsize, nblocks, right); break;
    case 2:
      shmem_ctx_double_ibput(ctx, (double*)sym, (const double*)src, dst, sst, bsize, nblocks,
                             right);
      break;
    default: shmem_ctx_ibput8(ctx, sym, src, dst, sst, bsize, nblocks, right); break;
  }
  shmem_barrier_all();
  /* Our copy holds the left neighbour's blocks at dst strides; the gaps keep the poison. */
  unsigned long long ls = g_seed ^ ((unsigned long long)left << 48) ^ (unsigned long long)which;
  unsigned char* lsrc = malloc(span_s);
  for (size_t i = 0; i < span_s; ++i) lsrc[i] = (unsigned char)mpe_rand(&ls);
  unsigned char* got = malloc(span_d);
  sym_read(got, sym, span_d);
  for (size_t b = 0; b < nblocks; ++b) {
    const size_t at = b * (size_t)dst * elem, from = b * (size_t)sst * elem;
    CHECK(memcmp(got + at, lsrc + from, bsize * elem) == 0, "ibput (case %d): block %zu differs",
          which, b);
    if (b + 1 < nblocks) {
      for (size_t g = at + bsize * elem; g < at + (size_t)dst * elem; ++g) {
        CHECK(got[g] == poison, "ibput (case %d): gap byte %zu after block %zu was written", which,
              g, b);
      }
    }
  }
  /* ibget back from the right neighbour with the strides swapped: we get our own data back in
   * src's layout (dest strides sst, source strides dst). */
  memset(back, poison, span_s);
  switch (which) {
    case 0: shmem_int_ibget((int*)back, (const int*)sym, sst, dst, bsize, nblocks, right); break;
    case 1: shmem_ibget64(back, sym, sst, dst, bsize, nblocks, right); break;
    case 2:
      shmem_ctx_double_ibget(ctx, (double*)back, (const double*)sym, sst, dst, bsize, nblocks,
                             right);
      break;
    default: shmem_ctx_ibget8(ctx, back, sym, sst, dst, bsize, nblocks, right); break;
  }
  for (size_t b = 0; b < nblocks; ++b) {
    const size_t at = b * (size_t)sst * elem;
    CHECK(memcmp(back + at, src + at, bsize * elem) == 0, "ibget (case %d): block %zu differs",
          which, b);
    if (b + 1 < nblocks) {
      for (size_t g = at + bsize * elem; g < at + (size_t)sst * elem; ++g) {
        CHECK(back[g] == poison, "ibget (case %d): gap byte %zu was written", which, g);
      }
    }
  }
  shmem_barrier_all();
  free(got);
  free(lsrc);
  free(fill);
  free(back);
  free(src);
  shmem_free(sym);
}

static void blocked(void) {
  blocked_case(sizeof(int), 0, 5, 3, 3, 7);
  blocked_case(8, 1, 4, 9, 2, 11);
  blocked_case(sizeof(double), 2, 1, 1, 1, 40); /* contiguous elements */
  blocked_case(1, 3, 300, 257, 257, 9);         /* large blocks, dest gaps */
  blocked_case(8, 1, 7, 7, 7, 1);               /* one block */
}

int main(int argc, char** argv) {
  check_query(0, 0, "before shmem_init");
  const char* bad = argc > 1 ? argv[1] : NULL;
  int provided = -1;
  shmem_init();
  /* One seed for the job (PE 0's), so that each PE can recompute what another one wrote. */
  unsigned long long* seed = shmem_malloc(sizeof *seed);
  g_seed = mpe_seed();
  if (shmem_my_pe() == 0) sym_write(seed, &g_seed, sizeof g_seed);
  shmem_barrier_all();
  shmem_getmem(&g_seed, seed, sizeof g_seed, 0);
  shmem_barrier_all();
  shmem_free(seed);
  check_query(1, 0, "after shmem_init");
  /* A second initialization call is counted: the first finalize does not finalize. */
  CHECK(shmem_init_thread(SHMEM_THREAD_SINGLE, &provided) == 0, "second init_thread");
  if (bad != NULL) {
    const int n = shmem_n_pes();
    long* x = shmem_malloc(64 * sizeof(long));
    long local[64];
    int pes[2] = {0, n};
    if (strcmp(bad, "pe_quiet_bad_pe") == 0) shmem_pe_quiet(pes, 2);
    if (strcmp(bad, "ibput_stride0") == 0) shmem_long_ibput(x, local, 0, 1, 2, 3, 0);
    if (strcmp(bad, "ibget_outside") == 0)
      shmem_long_ibget(local, x, 1, (ptrdiff_t)1 << 40, 2, 3, 0);
    if (strcmp(bad, "signal_add_not_symmetric") == 0) {
      uint64_t s;
      shmem_signal_add(&s, 1, 0);
    }
    CHECK(0, "bad input '%s' was accepted", bad);
  }
  shmem_finalize();
  check_query(1, 0, "after the first of two shmem_finalize calls");
  /* Still usable. */
  signals();
  pe_quiet();
  blocked();
  shmem_finalize();
  check_query(0, 1, "after the matching shmem_finalize");
  /* And it starts again. */
  shmem_init();
  check_query(1, 0, "after re-initialization");
  signals();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_finalize();
  check_query(0, 1, "at the end");
  if (me == 0) printf("spec16: OK on %d PEs\n", n);
  return 0;
}
