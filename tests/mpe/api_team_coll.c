/* Teams, contexts and collectives: predefined teams, split_strided (with a stride and with
 * non-members), split_2d coordinates, translate_pe, get_config, team_ptr; broadcast (random
 * roots, the root's dest too), collect (different sizes per PE), fcollect, alltoall, alltoalls
 * on the rows and the strided columns of a 2-D split, back to back; team slot recycling and
 * exhaustion; the deprecated active-set collectives on strided active sets. */
#include "api_check.h"

#define MAXN 64 /* elements per PE */

static int me, npes;
static long *g_src, *g_dst; /* symmetric, MAXN * npes longs each */
static long* g_tmp;         /* private */

static long value(int round, int world_pe, size_t i) {
  unsigned long long s = api_stream(100 + round, (unsigned long long)world_pe * 4096 + i);
  return (long)(mpe_rand(&s) >> 1);
}

static void fill_source(int round, size_t n) {
  for (size_t i = 0; i < n; ++i) g_tmp[i] = value(round, me, i);
  sym_write(g_src, g_tmp, n * sizeof(long));
}

static void poison_dest(void) {
  for (int i = 0; i < MAXN * npes; ++i) g_tmp[i] = (long)0xdeadbeefcafe;
  sym_write(g_dst, g_tmp, sizeof(long) * MAXN * npes);
}

static int world_of(shmem_team_t team, int pe) {
  return shmem_team_translate_pe(team, pe, SHMEM_TEAM_WORLD);
}

static void collectives(shmem_team_t team, int round) {
  const int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
  ACHECK(tn >= 1 && tme >= 0 && tme < tn, "team numbering");
  /* broadcast from a random root; every member's dest, the root's included, gets the data */
  unsigned long long s = api_stream(7, round);
  int root = (int)(mpe_rand(&s) % (unsigned)tn);
  size_t n = 1 + mpe_rand(&s) % MAXN;
  fill_source(round, n);
  poison_dest();
  /* OpenSHMEM 1.5: dest must be ready on every member before any member calls the broadcast
   * (the root may write it at once); our poison must land first. */
  shmem_team_sync(team);
  ACHECK(shmem_long_broadcast(team, g_dst, g_src, n, root) == 0, "broadcast rc");
  sym_read(g_tmp, g_dst, n * sizeof(long));
  for (size_t i = 0; i < n; ++i) {
    ACHECK(g_tmp[i] == value(round, world_of(team, root), i), "broadcast root %d elem %zu", root,
           i);
  }
  /* collect: member k contributes 1 + k-dependent count of elements */
  size_t mine = (size_t)((round * 7 + tme * 3) % MAXN);
  fill_source(round + 1, mine);
  poison_dest();
  ACHECK(shmem_long_collect(team, g_dst, g_src, mine) == 0, "collect rc");
  size_t total = 0;
  for (int k = 0; k < tn; ++k) total += (size_t)((round * 7 + k * 3) % MAXN);
  sym_read(g_tmp, g_dst, total * sizeof(long));
  size_t off = 0;
  for (int k = 0; k < tn; ++k) {
    size_t c = (size_t)((round * 7 + k * 3) % MAXN);
    for (size_t i = 0; i < c; ++i) {
      ACHECK(g_tmp[off + i] == value(round + 1, world_of(team, k), i), "collect from %d elem %zu",
             k, i);
    }
    off += c;
  }
  /* fcollect */
  n = 1 + (size_t)round % MAXN;
  fill_source(round + 2, n);
  poison_dest();
  ACHECK(shmem_long_fcollect(team, g_dst, g_src, n) == 0, "fcollect rc");
  sym_read(g_tmp, g_dst, n * tn * sizeof(long));
  for (int k = 0; k < tn; ++k) {
    for (size_t i = 0; i < n; ++i) {
      ACHECK(g_tmp[k * n + i] == value(round + 2, world_of(team, k), i), "fcollect %d/%zu", k, i);
    }
  }
  /* alltoall: block j of member k's source goes to block k of member j's dest */
  n = 1 + (size_t)(round * 5) % (MAXN / tn > 0 ? MAXN / tn : 1);
  fill_source(round + 3, n * tn);
  poison_dest();
  ACHECK(shmem_long_alltoall(team, g_dst, g_src, n) == 0, "alltoall rc");
  sym_read(g_tmp, g_dst, n * tn * sizeof(long));
  for (int k = 0; k < tn; ++k) {
    for (size_t i = 0; i < n; ++i) {
      ACHECK(g_tmp[k * n + i] == value(round + 3, world_of(team, k), tme * n + i),
             "alltoall from %d elem %zu", k, i);
    }
  }
  /* alltoalls with strides dst 2, sst 3 */
  n = 1 + (size_t)round % 3;
  size_t need = (n * tn - 1) * 3 + 1;
  ACHECK(need <= (size_t)MAXN * npes, "buffer");
  fill_source(round + 4, need);
  poison_dest();
  ACHECK(shmem_long_alltoalls(team, g_dst, g_src, 2, 3, n) == 0, "alltoalls rc");
  sym_read(g_tmp, g_dst, ((n * tn - 1) * 2 + 1) * sizeof(long));
  for (int k = 0; k < tn; ++k) {
    for (size_t i = 0; i < n; ++i) {
      ACHECK(g_tmp[(k * n + i) * 2] == value(round + 4, world_of(team, k), (tme * n + i) * 3),
             "alltoalls from %d elem %zu", k, i);
      if (k * n + i + 1 < n * tn) {
        ACHECK(g_tmp[(k * n + i) * 2 + 1] == (long)0xdeadbeefcafe, "alltoalls wrote a gap");
      }
    }
  }
  ACHECK(shmem_team_sync(team) == 0, "team_sync");
}

static void predefined_teams(void) {
  ACHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes,
         "world");
  int sn = shmem_team_n_pes(SHMEM_TEAM_SHARED), sme = shmem_team_my_pe(SHMEM_TEAM_SHARED);
  ACHECK(sn >= 1 && sme >= 0 && world_of(SHMEM_TEAM_SHARED, sme) == me, "shared");
  for (int k = 0; k < sn; ++k) {
    ACHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, g_src, k) != NULL, "team_ptr of shared member %d", k);
  }
  ACHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1 && shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1,
         "invalid team queries");
  ACHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_WORLD) == -1, "translate");
}

/* evens: start 0, stride 2, with a configured number of contexts */
static void strided_split_with_context(void) {
  shmem_team_t evens;
  shmem_team_config_t cfg = {.num_contexts = 3};
  ACHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, &cfg,
                                  SHMEM_TEAM_NUM_CONTEXTS, &evens) == 0,
         "split evens");
  if (me % 2 == 0) {
    ACHECK(shmem_team_my_pe(evens) == me / 2 && shmem_team_n_pes(evens) == (npes + 1) / 2,
           "evens numbering");
    shmem_team_config_t got = {0};
    ACHECK(
        shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 3,
        "get_config");
    ACHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, evens) == me / 2, "translate to evens");
    ACHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, evens) == -1, "odd PE not in evens");
    /* a context on the team: PE numbers are team numbers */
    shmem_ctx_t ctx;
    ACHECK(shmem_team_create_ctx(evens, 0, &ctx) == 0, "team ctx");
    int tn = shmem_team_n_pes(evens);
    long v = 1000 + me;
    shmem_ctx_long_put(ctx, &g_src[MAXN * npes - 1], &v, 1, (me / 2 + 1) % tn);
    shmem_ctx_quiet(ctx);
    shmem_team_sync(evens);
    long got_v = sym_long(&g_src[MAXN * npes - 1]);
    int from = 2 * ((me / 2 - 1 + tn) % tn);
    ACHECK(got_v == 1000 + from, "ctx put through team numbering: %ld from %d", got_v, from);
    shmem_team_sync(evens);
    shmem_ctx_destroy(ctx);
    collectives(evens, 1);
  } else {
    ACHECK(evens == SHMEM_TEAM_INVALID, "odd PE got a team");
  }
  shmem_team_destroy(evens);
}

/* 2-D split: rows of 3 (x) and strided columns (y), then a split of a column */
static void collectives_on_2d_split(void) {
  const int xr = 3;
  shmem_team_t xt, yt;
  ACHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, NULL, 0, &xt, NULL, 0, &yt) == 0, "split_2d");
  ACHECK(shmem_team_my_pe(xt) == me % xr && shmem_team_my_pe(yt) == me / xr, "2d coordinates");
  ACHECK(world_of(yt, 0) == me % xr, "column's first PE");
  for (int round = 0; round < 12; ++round) {
    collectives(round % 2 ? xt : yt, 10 * round + 2);
    collectives(SHMEM_TEAM_WORLD, 10 * round + 7);
  }
  /* a split of a split: the column's second half */
  shmem_team_t sub;
  int yn = shmem_team_n_pes(yt);
  ACHECK(shmem_team_split_strided(yt, yn / 2, 1, yn - yn / 2, NULL, 0, &sub) == 0, "split sub");
  if (shmem_team_my_pe(yt) >= yn / 2) {
    ACHECK(world_of(sub, 0) == world_of(yt, yn / 2), "sub numbering");
    collectives(sub, 300);
  }
  shmem_team_destroy(sub);
  shmem_team_destroy(xt);
  shmem_team_destroy(yt);
}

/* far more teams over time than slots */
static void team_slots_recycled(void) {
  for (int i = 0; i < 300; ++i) {
    shmem_team_t t;
    ACHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0, "split %d", i);
    if (i % 50 == 0) collectives(t, 400 + i);
    shmem_team_destroy(t);
  }
}

/* splits fail cleanly (same answer everywhere) once every slot is taken, and work again after */
static void team_slots_exhausted(void) {
  static shmem_team_t live[200];
  int made = 0;
  while (made < 200 &&
         shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &live[made]) == 0) {
    ++made;
  }
  ACHECK(made > 100 && made < 200 && live[made] == SHMEM_TEAM_INVALID, "made %d teams", made);
  collectives(live[made - 1], 500);
  for (int i = 0; i < made; ++i) shmem_team_destroy(live[i]);
  shmem_team_t again;
  ACHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &again) == 0,
         "split after freeing");
  shmem_team_destroy(again);
}

/* contexts: bad options, invalid team */
static void context_bad_input(void) {
  shmem_ctx_t c;
  ACHECK(shmem_ctx_create(1L << 20, &c) != 0 && c == SHMEM_CTX_INVALID, "bad ctx options");
  ACHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &c) != 0 && c == SHMEM_CTX_INVALID,
         "ctx on invalid team");
  shmem_team_t tt;
  ACHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &tt) != 0 && tt == SHMEM_TEAM_INVALID,
         "get_team of invalid ctx");
  ACHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &tt) == 0 && tt == SHMEM_TEAM_WORLD,
         "default ctx team");
  ACHECK(shmem_ctx_create(SHMEM_CTX_NOSTORE, &c) == 0, "ctx create");
  shmem_ctx_destroy(c);
  shmem_ctx_destroy(SHMEM_CTX_INVALID);
  shmem_team_destroy(SHMEM_TEAM_INVALID);
}

/* The deprecated active-set forms: evens (logPE_stride 1) and odds at the same time. */
static void active_sets(void) {
  static long pSync[SHMEM_COLLECT_SYNC_SIZE];
  static long pSync_ready[SHMEM_BARRIER_SYNC_SIZE];
  const int start = me % 2, size = (npes - start + 1) / 2, idx = me / 2;
  for (int round = 0; round < 6; ++round) {
    shmem_barrier(start, 1, size, pSync);
    /* broadcast64: the root's dest is left alone */
    int root = round % size;
    size_t n = 1 + (size_t)round * 3;
    fill_source(600 + round, n);
    poison_dest();
    shmem_sync(start, 1, size, pSync_ready); /* dest ready on every member (see collectives) */
    shmem_broadcast64(g_dst, g_src, n, root, start, 1, size, pSync);
    sym_read(g_tmp, g_dst, n * sizeof(long));
    for (size_t i = 0; i < n; ++i) {
      long want = idx == root ? (long)0xdeadbeefcafe : value(600 + round, start + 2 * root, i);
      ACHECK(g_tmp[i] == want, "broadcast64 elem %zu (root %d)", i, root);
    }
    /* fcollect64 / collect32 */
    fill_source(700 + round, n);
    poison_dest();
    shmem_fcollect64(g_dst, g_src, n, start, 1, size, pSync);
    sym_read(g_tmp, g_dst, n * size * sizeof(long));
    for (int k = 0; k < size; ++k) {
      for (size_t i = 0; i < n; ++i) {
        ACHECK(g_tmp[k * n + i] == value(700 + round, start + 2 * k, i), "fcollect64");
      }
    }
    shmem_barrier(start, 1, size, pSync);
    int32_t* s32 = (int32_t*)g_src;
    int32_t v32[4];
    for (int i = 0; i < idx % 3 + 1; ++i) v32[i] = 1000 * me + i;
    sym_write(s32, v32, sizeof(int32_t) * (size_t)(idx % 3 + 1));
    poison_dest();
    shmem_collect32(g_dst, s32, (size_t)(idx % 3 + 1), start, 1, size, pSync);
    int32_t got[3 * 64];
    size_t tot = 0;
    for (int k = 0; k < size; ++k) tot += (size_t)(k % 3 + 1);
    sym_read(got, g_dst, tot * sizeof(int32_t));
    size_t off = 0;
    for (int k = 0; k < size; ++k) {
      for (int i = 0; i < k % 3 + 1; ++i) {
        ACHECK(got[off++] == 1000 * (start + 2 * k) + i, "collect32 from %d", k);
      }
    }
    /* alltoall32 and alltoalls64 */
    shmem_barrier(start, 1, size, pSync);
    for (int k = 0; k < size; ++k) v32[0] = 0, got[k] = 77 * me + k;
    sym_write(g_src, got, sizeof(int32_t) * size);
    shmem_alltoall32(g_dst, g_src, 1, start, 1, size, pSync);
    sym_read(got, g_dst, sizeof(int32_t) * size);
    for (int k = 0; k < size; ++k) {
      ACHECK(got[k] == 77 * (start + 2 * k) + idx, "alltoall32 from %d", k);
    }
    fill_source(800 + round, (size_t)size * 2);
    shmem_alltoalls64(g_dst, g_src, 1, 2, 1, start, 1, size, pSync);
    sym_read(g_tmp, g_dst, sizeof(long) * size);
    for (int k = 0; k < size; ++k) {
      ACHECK(g_tmp[k] == value(800 + round, start + 2 * k, (size_t)idx * 2), "alltoalls64");
    }
    shmem_sync(start, 1, size, pSync);
  }
  shmem_barrier(0, 0, npes, pSync);
  for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; ++i) {
    ACHECK(pSync[i] == SHMEM_SYNC_VALUE, "pSync was changed");
  }
}

static const api_case kCases[] = {
    {"predefined_teams", predefined_teams},
    {"strided_split_with_context", strided_split_with_context},
    {"collectives_on_2d_split", collectives_on_2d_split},
    {"team_slots_recycled", team_slots_recycled},
    {"team_slots_exhausted", team_slots_exhausted},
    {"context_bad_input", context_bad_input},
    {"active_set_collectives", active_sets},
};
#define NCASES ((int)(sizeof kCases / sizeof kCases[0]))

int main(int argc, char** argv) {
  int n;
  const api_case** chosen = api_choose_cases(argc, argv, kCases, NCASES, &n);
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  api_job_seed();
  g_src = (long*)shmem_malloc(sizeof(long) * MAXN * npes);
  g_dst = (long*)shmem_malloc(sizeof(long) * MAXN * npes);
  g_tmp = (long*)malloc(sizeof(long) * MAXN * npes);
  api_run_cases(chosen, n);
  shmem_free(g_dst);
  shmem_free(g_src);
  free(g_tmp);
  shmem_finalize();
  if (me == 0) printf("api_team_coll: OK (%d PEs, %d cases)\n", npes, n);
  return 0;
}
