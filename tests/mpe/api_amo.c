/* Atomics: exact totals under contention from every PE (fetch_add, inc, fetch_inc uniqueness,
 * compare_swap loops), every operation of every type of the standard, extended and bitwise
 * tables (blocking, _nbi, ctx), ctx on a team with reversed numbering, and the deprecated names. */
#include "api_check.h"

#define ITERS 300

static int me, npes;

static void contention(void) {
  long* total = (long*)shmem_malloc(sizeof(long));
  int* hits = (int*)shmem_malloc(sizeof(int));
  long long* cas_counter = (long long*)shmem_malloc(sizeof(long long));
  uint32_t* ticket = (uint32_t*)shmem_malloc(sizeof(uint32_t));
  uint32_t* tickets = (uint32_t*)shmem_malloc(sizeof(uint32_t) * ITERS * npes);
  long zero = 0;
  int izero = 0;
  long long llzero = 0;
  uint32_t uzero = 0;
  sym_write(total, &zero, sizeof zero);
  sym_write(hits, &izero, sizeof izero);
  sym_write(cas_counter, &llzero, sizeof llzero);
  sym_write(ticket, &uzero, sizeof uzero);
  shmem_barrier_all();

  uint32_t mine[ITERS];
  unsigned long long s = api_stream(1, me);
  for (int i = 0; i < ITERS; ++i) {
    shmem_long_atomic_fetch_add(total, (long)(mpe_rand(&s) % 1000) - 300, 0);
    shmem_int_atomic_inc(hits, (me + i) % npes);
    mine[i] = shmem_uint32_atomic_fetch_inc(ticket, npes - 1);
    ACHECK(i == 0 || mine[i] > mine[i - 1], "fetch_inc went backwards: %u after %u", mine[i],
           mine[i - 1]);
    long long seen = shmem_longlong_atomic_fetch(cas_counter, npes / 2);
    for (;;) {
      long long got = shmem_longlong_atomic_compare_swap(cas_counter, seen, seen + 1, npes / 2);
      if (got == seen) break;
      seen = got;
    }
  }
  shmem_uint32_put(tickets + me * ITERS, mine, ITERS, 0);
  shmem_barrier_all();

  long expect_total = 0;
  for (int p = 0; p < npes; ++p) {
    unsigned long long t = api_stream(1, p);
    for (int i = 0; i < ITERS; ++i) expect_total += (long)(mpe_rand(&t) % 1000) - 300;
  }
  if (me == 0) {
    ACHECK(sym_long(total) == expect_total, "fetch_add total %ld, expected %ld", sym_long(total),
           expect_total);
    static uint32_t all[ITERS * 8];
    uint32_t* buf = npes <= 8 ? all : (uint32_t*)malloc(sizeof(uint32_t) * ITERS * npes);
    sym_read(buf, tickets, sizeof(uint32_t) * ITERS * npes);
    char* seen = (char*)calloc(ITERS * npes, 1);
    for (int i = 0; i < ITERS * npes; ++i) {
      ACHECK(buf[i] < (uint32_t)(ITERS * npes) && !seen[buf[i]],
             "ticket %u handed out twice or "
             "out of range",
             buf[i]);
      seen[buf[i]] = 1;
    }
    free(seen);
  }
  int h;
  sym_read(&h, hits, sizeof h);
  ACHECK(h == ITERS, "inc hits %d, expected %d", h, ITERS); /* (me + i) % npes spreads evenly */
  if (me == npes / 2) {
    long long c;
    sym_read(&c, cas_counter, sizeof c);
    ACHECK(c == (long long)ITERS * npes, "compare_swap counter %lld, expected %lld", c,
           (long long)ITERS * npes);
  }
  shmem_barrier_all();
  shmem_free(tickets);
  shmem_free(ticket);
  shmem_free(cas_counter);
  shmem_free(hits);
  shmem_free(total);
}

/* Per type: only this PE touches its successor's copy, so no synchronization is needed. */
#define TEST_EXTENDED(NAME, TYPE)                                                               \
  static void test_ext_##NAME(TYPE* d, int target, unsigned long long* s) {                     \
    TYPE a = (TYPE)(mpe_rand(s) % 100000) / (TYPE)4, b = (TYPE)(mpe_rand(s) % 100000) / 2, f;   \
    shmem_##NAME##_atomic_set(d, a, target);                                                    \
    ACHECK(shmem_##NAME##_atomic_fetch(d, target) == a, #NAME " set/fetch");                    \
    ACHECK(shmem_##NAME##_atomic_swap(d, b, target) == a, #NAME " swap");                       \
    shmem_##NAME##_atomic_fetch_nbi(&f, d, target);                                             \
    shmem_quiet();                                                                              \
    ACHECK(f == b, #NAME " fetch_nbi");                                                         \
    shmem_##NAME##_atomic_swap_nbi(&f, d, a, target);                                           \
    shmem_quiet();                                                                              \
    ACHECK(f == b && shmem_##NAME##_atomic_fetch(d, target) == a, #NAME " swap_nbi");           \
    shmem_ctx_##NAME##_atomic_set(SHMEM_CTX_DEFAULT, d, b, target);                             \
    ACHECK(shmem_ctx_##NAME##_atomic_swap(SHMEM_CTX_DEFAULT, d, a, target) == b, #NAME " ctx"); \
    shmem_ctx_##NAME##_atomic_fetch_nbi(SHMEM_CTX_DEFAULT, &f, d, target);                      \
    shmem_ctx_##NAME##_atomic_swap_nbi(SHMEM_CTX_DEFAULT, &f, d, b, target);                    \
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                                         \
    ACHECK(f == a && shmem_ctx_##NAME##_atomic_fetch(SHMEM_CTX_DEFAULT, d, target) == b,        \
           #NAME " ctx nbi");                                                                   \
  }
VSHMEM_AMO_EXTENDED_TYPES(TEST_EXTENDED)

#define TEST_STANDARD(NAME, TYPE)                                                                  \
  static void test_std_##NAME(TYPE* d, int target, unsigned long long* s) {                        \
    TYPE a = (TYPE)(mpe_rand(s) % 1000), v = (TYPE)(mpe_rand(s) % 1000 + 1), f;                    \
    shmem_##NAME##_atomic_set(d, a, target);                                                       \
    ACHECK(shmem_##NAME##_atomic_compare_swap(d, (TYPE)(a + 1), v, target) == a,                   \
           #NAME " failed cswap");                                                                 \
    ACHECK(shmem_##NAME##_atomic_fetch(d, target) == a, #NAME " failed cswap changed it");         \
    ACHECK(shmem_##NAME##_atomic_compare_swap(d, a, v, target) == a, #NAME " cswap");              \
    ACHECK(shmem_##NAME##_atomic_fetch_inc(d, target) == v, #NAME " fetch_inc");                   \
    shmem_##NAME##_atomic_inc(d, target);                                                          \
    ACHECK(shmem_##NAME##_atomic_fetch_add(d, a, target) == (TYPE)(v + 2), #NAME " fetch_add");    \
    shmem_##NAME##_atomic_add(d, a, target);                                                       \
    ACHECK(shmem_##NAME##_atomic_fetch(d, target) == (TYPE)(v + 2 + 2 * a), #NAME " add");         \
    shmem_##NAME##_atomic_compare_swap_nbi(&f, d, (TYPE)(v + 2 + 2 * a), a, target);               \
    shmem_quiet();                                                                                 \
    ACHECK(f == (TYPE)(v + 2 + 2 * a), #NAME " compare_swap_nbi");                                 \
    shmem_##NAME##_atomic_fetch_inc_nbi(&f, d, target);                                            \
    shmem_quiet();                                                                                 \
    ACHECK(f == a, #NAME " fetch_inc_nbi");                                                        \
    shmem_##NAME##_atomic_fetch_add_nbi(&f, d, v, target);                                         \
    shmem_quiet();                                                                                 \
    ACHECK(f == (TYPE)(a + 1), #NAME " fetch_add_nbi");                                            \
    shmem_ctx_##NAME##_atomic_inc(SHMEM_CTX_DEFAULT, d, target);                                   \
    shmem_ctx_##NAME##_atomic_add(SHMEM_CTX_DEFAULT, d, v, target);                                \
    ACHECK(shmem_ctx_##NAME##_atomic_fetch_inc(SHMEM_CTX_DEFAULT, d, target) ==                    \
               (TYPE)(a + 2 + 2 * v),                                                              \
           #NAME " ctx inc/add/fetch_inc");                                                        \
    ACHECK(shmem_ctx_##NAME##_atomic_fetch_add(SHMEM_CTX_DEFAULT, d, a, target) ==                 \
               (TYPE)(a + 3 + 2 * v),                                                              \
           #NAME " ctx fetch_add");                                                                \
    ACHECK(shmem_ctx_##NAME##_atomic_compare_swap(SHMEM_CTX_DEFAULT, d, (TYPE)(2 * a + 3 + 2 * v), \
                                                  v, target) == (TYPE)(2 * a + 3 + 2 * v),         \
           #NAME " ctx cswap");                                                                    \
    shmem_ctx_##NAME##_atomic_compare_swap_nbi(SHMEM_CTX_DEFAULT, &f, d, v, a, target);            \
    shmem_ctx_##NAME##_atomic_fetch_inc_nbi(SHMEM_CTX_DEFAULT, &f, d, target);                     \
    shmem_ctx_##NAME##_atomic_fetch_add_nbi(SHMEM_CTX_DEFAULT, &f, d, v, target);                  \
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                                            \
    ACHECK(f == (TYPE)(a + 1) && shmem_##NAME##_atomic_fetch(d, target) == (TYPE)(a + 1 + v),      \
           #NAME " ctx nbi");                                                                      \
  }
VSHMEM_AMO_STANDARD_TYPES(TEST_STANDARD)

#define TEST_BITWISE(NAME, TYPE)                                                                 \
  static void test_bit_##NAME(TYPE* d, int target, unsigned long long* s) {                      \
    TYPE a = (TYPE)mpe_rand(s), v = (TYPE)mpe_rand(s), w = (TYPE)mpe_rand(s), f;                 \
    shmem_##NAME##_atomic_set(d, a, target);                                                     \
    ACHECK(shmem_##NAME##_atomic_fetch_and(d, v, target) == a, #NAME " fetch_and");              \
    ACHECK(shmem_##NAME##_atomic_fetch_or(d, w, target) == (TYPE)(a & v), #NAME " fetch_or");    \
    ACHECK(shmem_##NAME##_atomic_fetch_xor(d, v, target) == (TYPE)((a & v) | w),                 \
           #NAME " fetch_xor");                                                                  \
    TYPE x = (TYPE)(((a & v) | w) ^ v);                                                          \
    shmem_##NAME##_atomic_and(d, w, target);                                                     \
    shmem_##NAME##_atomic_or(d, a, target);                                                      \
    shmem_##NAME##_atomic_xor(d, v, target);                                                     \
    x = (TYPE)(((x & w) | a) ^ v);                                                               \
    ACHECK(shmem_##NAME##_atomic_fetch(d, target) == x, #NAME " and/or/xor");                    \
    shmem_##NAME##_atomic_fetch_and_nbi(&f, d, v, target);                                       \
    shmem_quiet();                                                                               \
    ACHECK(f == x, #NAME " fetch_and_nbi");                                                      \
    shmem_##NAME##_atomic_fetch_or_nbi(&f, d, w, target);                                        \
    shmem_##NAME##_atomic_fetch_xor_nbi(&f, d, a, target);                                       \
    shmem_quiet();                                                                               \
    x = (TYPE)(((x & v) | w) ^ a);                                                               \
    ACHECK(shmem_##NAME##_atomic_fetch(d, target) == x, #NAME " nbi or/xor");                    \
    shmem_ctx_##NAME##_atomic_and(SHMEM_CTX_DEFAULT, d, v, target);                              \
    shmem_ctx_##NAME##_atomic_or(SHMEM_CTX_DEFAULT, d, w, target);                               \
    shmem_ctx_##NAME##_atomic_xor(SHMEM_CTX_DEFAULT, d, a, target);                              \
    x = (TYPE)(((x & v) | w) ^ a);                                                               \
    ACHECK(shmem_ctx_##NAME##_atomic_fetch_and(SHMEM_CTX_DEFAULT, d, w, target) == x,            \
           #NAME " ctx and/or/xor");                                                             \
    ACHECK(shmem_ctx_##NAME##_atomic_fetch_or(SHMEM_CTX_DEFAULT, d, a, target) == (TYPE)(x & w), \
           #NAME " ctx fetch_or");                                                               \
    ACHECK(shmem_ctx_##NAME##_atomic_fetch_xor(SHMEM_CTX_DEFAULT, d, v, target) ==               \
               (TYPE)((x & w) | a),                                                              \
           #NAME " ctx fetch_xor");                                                              \
    shmem_ctx_##NAME##_atomic_fetch_and_nbi(SHMEM_CTX_DEFAULT, &f, d, a, target);                \
    shmem_ctx_##NAME##_atomic_fetch_or_nbi(SHMEM_CTX_DEFAULT, &f, d, v, target);                 \
    shmem_ctx_##NAME##_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &f, d, w, target);                \
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                                          \
    x = (TYPE)((((((x & w) | a) ^ v) & a) | v) ^ w);                                             \
    ACHECK(shmem_##NAME##_atomic_fetch(d, target) == x, #NAME " ctx nbi");                       \
  }
VSHMEM_AMO_BITWISE_TYPES(TEST_BITWISE)

#define TEST_DEPRECATED(NAME, TYPE)                                            \
  static void test_old_##NAME(TYPE* d, int target, unsigned long long* s) {    \
    TYPE a = (TYPE)(mpe_rand(s) % 1000), v = (TYPE)(mpe_rand(s) % 1000 + 1);   \
    shmem_##NAME##_set(d, a, target);                                          \
    ACHECK(shmem_##NAME##_cswap(d, a, v, target) == a, #NAME " cswap");        \
    ACHECK(shmem_##NAME##_finc(d, target) == v, #NAME " finc");                \
    shmem_##NAME##_inc(d, target);                                             \
    ACHECK(shmem_##NAME##_fadd(d, a, target) == v + 2, #NAME " fadd");         \
    shmem_##NAME##_add(d, a, target);                                          \
    ACHECK(shmem_##NAME##_swap(d, v, target) == v + 2 + 2 * a, #NAME " swap"); \
    ACHECK(shmem_##NAME##_fetch(d, target) == v, #NAME " fetch");              \
  }
VSHMEM_AMO_DEPRECATED_TYPES(TEST_DEPRECATED)

static void per_type(void) {
  /* 16 bytes per type: room for the widest (8-byte) type, aligned. */
  char* area = (char*)shmem_align(16, 16 * 64);
  const int target = (me + 1) % npes;
  unsigned long long s = mpe_seed();
  int k = 0;
  for (int round = 0; round < 4; ++round) {
    k = 0;
#define RUN_EXT(NAME, TYPE) test_ext_##NAME((TYPE*)(area + 16 * k++), target, &s);
#define RUN_STD(NAME, TYPE) test_std_##NAME((TYPE*)(area + 16 * k++), target, &s);
#define RUN_BIT(NAME, TYPE) test_bit_##NAME((TYPE*)(area + 16 * k++), target, &s);
#define RUN_OLD(NAME, TYPE) test_old_##NAME((TYPE*)(area + 16 * k++), target, &s);
    VSHMEM_AMO_EXTENDED_TYPES(RUN_EXT)
    VSHMEM_AMO_STANDARD_TYPES(RUN_STD)
    VSHMEM_AMO_BITWISE_TYPES(RUN_BIT)
    VSHMEM_AMO_DEPRECATED_TYPES(RUN_OLD)
    double* dd = (double*)(area + 16 * k++);
    float* ff = (float*)(area + 16 * k++);
    double dv = (double)mpe_rand(&s) / 7.0;
    float fv = (float)(mpe_rand(&s) % 100000) / 3.0f;
    shmem_double_set(dd, dv, target);
    shmem_float_set(ff, fv, target);
    ACHECK(shmem_double_swap(dd, -dv, target) == dv && shmem_double_fetch(dd, target) == -dv,
           "deprecated double swap/fetch");
    ACHECK(shmem_float_swap(ff, -fv, target) == fv && shmem_float_fetch(ff, target) == -fv,
           "deprecated float swap/fetch");
  }
  ACHECK(k <= 64, "area too small");
  shmem_barrier_all();
  shmem_free(area);
}

/* A context on a team numbered backwards: team PE t is world PE npes - 1 - t. */
static void team_ctx(void) {
  shmem_team_t rev;
  ACHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, npes > 1 ? -1 : 1, npes, NULL, 0,
                                  &rev) == 0,
         "split");
  ACHECK(shmem_team_my_pe(rev) == npes - 1 - me, "reversed numbering: %d", shmem_team_my_pe(rev));
  shmem_ctx_t ctx;
  ACHECK(shmem_team_create_ctx(rev, SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED, &ctx) == 0,
         "team ctx");
  shmem_team_t back;
  ACHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == rev, "ctx_get_team");
  long* slots = (long*)shmem_calloc(npes, sizeof(long));
  shmem_barrier_all();
  for (int t = 0; t < npes; ++t) {
    shmem_ctx_long_atomic_add(ctx, &slots[me], (long)(t + 1) * (me + 1), t);
  }
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  /* World PE w got (t + 1) * (p + 1) from every p, where t = npes - 1 - w. */
  for (int p = 0; p < npes; ++p) {
    long v = shmem_long_atomic_fetch(&slots[p], me);
    ACHECK(v == (long)(npes - me) * (p + 1), "team ctx add from PE %d: %ld", p, v);
  }
  shmem_barrier_all();
  shmem_ctx_destroy(ctx);
  shmem_team_destroy(rev);
  shmem_free(slots);
}

static const api_case kCases[] = {
    {"contended_totals_exact", contention},
    {"every_type_and_operation", per_type},
    {"context_on_reversed_team", team_ctx},
};
#define NCASES ((int)(sizeof kCases / sizeof kCases[0]))

int main(int argc, char** argv) {
  int n;
  const api_case** chosen = api_choose_cases(argc, argv, kCases, NCASES, &n);
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  api_job_seed();
  api_run_cases(chosen, n);
  shmem_finalize();
  if (me == 0) printf("api_amo: OK (%d PEs, %d cases)\n", npes, n);
  return 0;
}
