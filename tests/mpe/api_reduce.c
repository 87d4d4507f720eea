/* Reductions: every type and operator of the 1.5 team reductions, and every deprecated
 * *_to_all, checked against a serial computation over fresh random data (every PE recomputes
 * every member's data from the job seed). Run on SHMEM_TEAM_WORLD and on the strided columns of
 * a 2-D split (all columns at once), in place (dest == source) every third case; the to_all
 * forms on the world and on the strided active sets of the even and the odd PEs at once. */
#include <complex.h>
#include <math.h>

#include "api_check.h"

#define MAXR 300

static int me, npes;
static void *g_src, *g_dst; /* symmetric, MAXR * 16 bytes */
static unsigned char g_a[MAXR * 16], g_b[MAXR * 16], g_c[MAXR * 16];

/* The group a case runs on: world PE of each member. */
static int g_members[1024], g_n, g_index;

static void set_team(shmem_team_t team) {
  g_n = shmem_team_n_pes(team);
  g_index = shmem_team_my_pe(team);
  for (int k = 0; k < g_n; ++k) g_members[k] = shmem_team_translate_pe(team, k, SHMEM_TEAM_WORLD);
}

static void set_active(int start, int log_stride, int size) {
  g_n = size;
  for (int k = 0; k < size; ++k) {
    g_members[k] = start + (k << log_stride);
    if (g_members[k] == me) g_index = k;
  }
}

#define GEN_INT(TYPE, buf, n, s)           \
  for (size_t i = 0; i < (n); ++i) {       \
    unsigned long long r = mpe_rand(&(s)); \
    memcpy(&(buf)[i], &r, sizeof(TYPE));   \
  }
#define GEN_REAL(TYPE, buf, n, s)  \
  for (size_t i = 0; i < (n); ++i) \
    (buf)[i] = (TYPE)(0.5 + (double)(mpe_rand(&(s)) % 1000) / 1000.0);
#define GEN_CPLX(TYPE, buf, n, s)                                \
  for (size_t i = 0; i < (n); ++i) {                             \
    double re = 0.5 + (double)(mpe_rand(&(s)) % 1000) / 1000.0;  \
    double im = -0.5 + (double)(mpe_rand(&(s)) % 1000) / 1000.0; \
    (buf)[i] = (TYPE)(re + im * I);                              \
  }

#define COMB_and(T, a, b) (T)((a) & (b))
#define COMB_or(T, a, b) (T)((a) | (b))
#define COMB_xor(T, a, b) (T)((a) ^ (b))
#define COMB_max(T, a, b) ((a) > (b) ? (a) : (b))
#define COMB_min(T, a, b) ((a) < (b) ? (a) : (b))
/* Integer sums and products wrap; computed in unsigned long long and truncated. */
#define COMB_INT_sum(T, a, b) (T)((unsigned long long)(a) + (unsigned long long)(b))
#define COMB_INT_prod(T, a, b) (T)((unsigned long long)(a) * (unsigned long long)(b))
#define COMB_INT_and COMB_and
#define COMB_INT_or COMB_or
#define COMB_INT_xor COMB_xor
#define COMB_INT_max COMB_max
#define COMB_INT_min COMB_min
#define COMB_REAL_sum(T, a, b) ((a) + (b))
#define COMB_REAL_prod(T, a, b) ((a) * (b))
#define COMB_REAL_max COMB_max
#define COMB_REAL_min COMB_min
#define COMB_CPLX_sum COMB_REAL_sum
#define COMB_CPLX_prod COMB_REAL_prod

#define EQ_INT(T, got, want) ((got) == (want))
#define EQ_REAL(T, got, want) \
  (fabsl((long double)(got) - (long double)(want)) <= 1e-4L * fabsl((long double)(want)))
#define EQ_CPLX(T, got, want) (cabs((double _Complex)((got) - (want))) <= 1e-4 * cabs(want))

/* One case: generate, reduce with CALL, compare with the serial result. */
#define CASE_BODY(NAME, TYPE, OP, KIND, CALL)                                                      \
  TYPE* mine = (TYPE*)g_a;                                                                         \
  TYPE* want = (TYPE*)g_b;                                                                         \
  TYPE* other = (TYPE*)g_c;                                                                        \
  unsigned long long s0 = api_stream(cid, 1u << 20);                                               \
  size_t n = 1 + mpe_rand(&s0) % MAXR;                                                             \
  unsigned long long s = api_stream(cid, me);                                                      \
  GEN_##KIND(TYPE, mine, n, s);                                                                    \
  sym_write(g_src, mine, n * sizeof(TYPE));                                                        \
  memset(other, 0xa5, n * sizeof(TYPE));                                                           \
  sym_write(g_dst, other, n * sizeof(TYPE));                                                       \
  TYPE* source = (TYPE*)g_src;                                                                     \
  TYPE* dest = cid % 3 == 0 ? source : (TYPE*)g_dst;                                               \
  CALL;                                                                                            \
  for (int k = 0; k < g_n; ++k) {                                                                  \
    unsigned long long t = api_stream(cid, g_members[k]);                                          \
    GEN_##KIND(TYPE, other, n, t);                                                                 \
    for (size_t i = 0; i < n; ++i) {                                                               \
      want[i] = k == 0 ? other[i] : COMB_##KIND##_##OP(TYPE, want[i], other[i]);                   \
    }                                                                                              \
  }                                                                                                \
  sym_read(other, dest, n * sizeof(TYPE));                                                         \
  for (size_t i = 0; i < n; ++i) {                                                                 \
    ACHECK(EQ_##KIND(TYPE, other[i], want[i]), #NAME "_" #OP " elem %zu of %zu over %d PEs", i, n, \
           g_n);                                                                                   \
  }

#define DEF_REDUCE(NAME, TYPE, OP, KIND)                                              \
  static void reduce_##NAME##_##OP(shmem_team_t team, int cid) {                      \
    CASE_BODY(NAME, TYPE, OP, KIND,                                                   \
              ACHECK(shmem_##NAME##_##OP##_reduce(team, dest, source, n) == 0, "rc")) \
  }
#define DEF_TO_ALL(NAME, TYPE, OP, KIND)                                                          \
  static void to_all_##NAME##_##OP(int start, int log_stride, int size, int cid) {                \
    static long pSync[SHMEM_REDUCE_SYNC_SIZE];                                                    \
    static TYPE pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];                                              \
    CASE_BODY(                                                                                    \
        NAME, TYPE, OP, KIND,                                                                     \
        shmem_##NAME##_##OP##_to_all(dest, source, (int)n, start, log_stride, size, pWrk, pSync)) \
  }

/* The typed tables, split by kind of element. */
#define INT_BITWISE(X) VSHMEM_REDUCE_BITWISE_TYPES(X)
#define INT_ALL(X) VSHMEM_REDUCE_INTEGER_TYPES(X)
#define REAL_ALL(X) VSHMEM_REDUCE_REAL_TYPES(X)
#define CPLX_ALL(X) X(complexd, double _Complex) X(complexf, float _Complex)

#define D_BIT(NAME, TYPE) \
  DEF_REDUCE(NAME, TYPE, and, INT) DEF_REDUCE(NAME, TYPE, or, INT) DEF_REDUCE(NAME, TYPE, xor, INT)
#define D_INT(NAME, TYPE)          \
  DEF_REDUCE(NAME, TYPE, max, INT) \
  DEF_REDUCE(NAME, TYPE, min, INT) \
  DEF_REDUCE(NAME, TYPE, sum, INT) DEF_REDUCE(NAME, TYPE, prod, INT)
#define D_REAL(NAME, TYPE)          \
  DEF_REDUCE(NAME, TYPE, max, REAL) \
  DEF_REDUCE(NAME, TYPE, min, REAL) \
  DEF_REDUCE(NAME, TYPE, sum, REAL) DEF_REDUCE(NAME, TYPE, prod, REAL)
#define D_CPLX(NAME, TYPE) DEF_REDUCE(NAME, TYPE, sum, CPLX) DEF_REDUCE(NAME, TYPE, prod, CPLX)
INT_BITWISE(D_BIT)
INT_ALL(D_INT)
REAL_ALL(D_REAL)
CPLX_ALL(D_CPLX)

#define OLD_INT(X) X(short, short) X(int, int) X(long, long) X(longlong, long long)
#define OLD_REAL(X) X(float, float) X(double, double) X(longdouble, long double)
#define T_INT(NAME, TYPE)          \
  DEF_TO_ALL(NAME, TYPE, and, INT) \
  DEF_TO_ALL(NAME, TYPE, or, INT)  \
  DEF_TO_ALL(NAME, TYPE, xor, INT) \
  DEF_TO_ALL(NAME, TYPE, max, INT) \
  DEF_TO_ALL(NAME, TYPE, min, INT) \
  DEF_TO_ALL(NAME, TYPE, sum, INT) DEF_TO_ALL(NAME, TYPE, prod, INT)
#define T_REAL(NAME, TYPE)          \
  DEF_TO_ALL(NAME, TYPE, max, REAL) \
  DEF_TO_ALL(NAME, TYPE, min, REAL) \
  DEF_TO_ALL(NAME, TYPE, sum, REAL) DEF_TO_ALL(NAME, TYPE, prod, REAL)
#define T_CPLX(NAME, TYPE) DEF_TO_ALL(NAME, TYPE, sum, CPLX) DEF_TO_ALL(NAME, TYPE, prod, CPLX)
OLD_INT(T_INT)
OLD_REAL(T_REAL)
CPLX_ALL(T_CPLX)

static void all_team_cases(shmem_team_t team, int* cid) {
  set_team(team);
#define R_BIT(NAME, TYPE)              \
  reduce_##NAME##_and(team, (*cid)++); \
  reduce_##NAME##_or(team, (*cid)++);  \
  reduce_##NAME##_xor(team, (*cid)++);
#define R_AR(NAME, TYPE)               \
  reduce_##NAME##_max(team, (*cid)++); \
  reduce_##NAME##_min(team, (*cid)++); \
  reduce_##NAME##_sum(team, (*cid)++); \
  reduce_##NAME##_prod(team, (*cid)++);
#define R_CPLX(NAME, TYPE)             \
  reduce_##NAME##_sum(team, (*cid)++); \
  reduce_##NAME##_prod(team, (*cid)++);
  INT_BITWISE(R_BIT)
  INT_ALL(R_AR)
  REAL_ALL(R_AR)
  CPLX_ALL(R_CPLX)
}

static void all_to_all_cases(int start, int log_stride, int size, int* cid) {
  set_active(start, log_stride, size);
#define A_INT(NAME, TYPE)                                 \
  to_all_##NAME##_and(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_or(start, log_stride, size, (*cid)++);  \
  to_all_##NAME##_xor(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_max(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_min(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_sum(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_prod(start, log_stride, size, (*cid)++);
#define A_REAL(NAME, TYPE)                                \
  to_all_##NAME##_max(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_min(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_sum(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_prod(start, log_stride, size, (*cid)++);
#define A_CPLX(NAME, TYPE)                                \
  to_all_##NAME##_sum(start, log_stride, size, (*cid)++); \
  to_all_##NAME##_prod(start, log_stride, size, (*cid)++);
  OLD_INT(A_INT)
  OLD_REAL(A_REAL)
  CPLX_ALL(A_CPLX)
}

static void team_reduce_world(void) {
  int cid = 1;
  all_team_cases(SHMEM_TEAM_WORLD, &cid);
}

/* Every column runs the same sequence of cases at once; cid matches across columns. */
static void team_reduce_2d_columns(void) {
  shmem_team_t xt, yt;
  ACHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt) == 0, "split");
  int cid = 100000;
  all_team_cases(yt, &cid);
  shmem_team_destroy(xt);
  shmem_team_destroy(yt);
}

static void to_all_world(void) {
  int cid = 200000;
  all_to_all_cases(0, 0, npes, &cid);
}

/* The even and the odd PEs, two strided active sets, at the same time. */
static void to_all_even_odd_sets(void) {
  int cid = 300000;
  all_to_all_cases(me % 2, 1, (npes - me % 2 + 1) / 2, &cid);
}

static const api_case kCases[] = {
    {"team_reduce_world", team_reduce_world},
    {"team_reduce_2d_columns", team_reduce_2d_columns},
    {"to_all_world", to_all_world},
    {"to_all_even_odd_sets", to_all_even_odd_sets},
};
#define NCASES ((int)(sizeof kCases / sizeof kCases[0]))

int main(int argc, char** argv) {
  int n;
  const api_case** chosen = api_choose_cases(argc, argv, kCases, NCASES, &n);
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  api_job_seed();
  g_src = shmem_align(16, MAXR * 16);
  g_dst = shmem_align(16, MAXR * 16);
  api_run_cases(chosen, n);
  shmem_free(g_dst);
  shmem_free(g_src);
  shmem_finalize();
  if (me == 0) printf("api_reduce: OK (%d PEs, %d cases)\n", npes, n);
  return 0;
}
