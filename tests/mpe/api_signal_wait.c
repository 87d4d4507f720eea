/* Signals and point-to-point synchronization: put_signal in every form never lets the signal
 * overtake the data (the receiver checks the whole payload of each round as soon as it sees the
 * signal), SET and ADD, signal_fetch; wait_until / test in single, _all, _any, _some and _vector
 * forms with every comparison and status masks; the deprecated shmem_wait. */
#include "api_check.h"

#define WORDS 4096
#define ROUNDS 40

static int me, npes;

/* PE me sends to next; each round's payload is a pattern of (round, sender); the receiver acks
 * each round so the sender may overwrite its payload. */
static void ordering(void) {
  const int next = (me + 1) % npes, prev = (me - 1 + npes) % npes;
  long* data = (long*)shmem_malloc(WORDS * sizeof(long));
  uint64_t* sig = (uint64_t*)shmem_calloc(2, sizeof(uint64_t));
  uint64_t* ack = (uint64_t*)shmem_calloc(1, sizeof(uint64_t));
  long* buf = (long*)malloc(WORDS * sizeof(long));
  shmem_barrier_all();
  unsigned long long s = api_stream(2, me);
  for (int r = 1; r <= ROUNDS; ++r) {
    size_t n = 1 + mpe_rand(&s) % WORDS;
    for (size_t i = 0; i < WORDS; ++i) buf[i] = (long)(r * 1000003L + me * 7919L + (long)i);
    switch (r % 6) {
      case 0: shmem_long_put_signal(data, buf, n, &sig[0], 1, SHMEM_SIGNAL_ADD, next); break;
      case 1: shmem_long_put_signal_nbi(data, buf, n, &sig[0], 1, SHMEM_SIGNAL_ADD, next); break;
      case 2: shmem_put64_signal(data, buf, n, &sig[0], 1, SHMEM_SIGNAL_ADD, next); break;
      case 3:
        shmem_putmem_signal_nbi(data, buf, n * sizeof(long), &sig[0], 1, SHMEM_SIGNAL_ADD, next);
        break;
      case 4:
        shmem_ctx_long_put_signal(SHMEM_CTX_DEFAULT, data, buf, n, &sig[0], 1, SHMEM_SIGNAL_ADD,
                                  next);
        break;
      default:
        shmem_ctx_putmem_signal(SHMEM_CTX_DEFAULT, data, buf, n * sizeof(long), &sig[0], 1,
                                SHMEM_SIGNAL_ADD, next);
        break;
    }
    /* A SET signal carries the round number as well. */
    shmem_long_put_signal(data + WORDS - 1, buf + WORDS - 1, 0, &sig[1], (uint64_t)r,
                          SHMEM_SIGNAL_SET, next);
    uint64_t got = shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, (uint64_t)r);
    ACHECK(got == (uint64_t)r, "ADD signal %llu in round %d", (unsigned long long)got, r);
    ACHECK(shmem_uint64_wait_until_any(&sig[1], 1, NULL, SHMEM_CMP_EQ, (uint64_t)r) == 0,
           "SET signal");
    ACHECK(shmem_signal_fetch(&sig[0]) == (uint64_t)r, "signal_fetch");
    /* The data of the round that signalled must be all there. */
    unsigned long long t = api_stream(2, prev);
    size_t pn = 0;
    for (int k = 1; k <= r; ++k) pn = 1 + mpe_rand(&t) % WORDS;
    long* in = (long*)malloc(pn * sizeof(long));
    sym_read(in, data, pn * sizeof(long));
    for (size_t i = 0; i < pn; ++i) {
      ACHECK(in[i] == (long)(r * 1000003L + prev * 7919L + (long)i),
             "round %d word %zu of %zu: %ld: the signal overtook the data", r, i, pn, in[i]);
    }
    free(in);
    shmem_uint64_atomic_inc(ack, prev);
    shmem_uint64_wait_until(ack, SHMEM_CMP_GE, (uint64_t)r);
  }
  shmem_barrier_all();
  free(buf);
  shmem_free(ack);
  shmem_free(sig);
  shmem_free(data);
}

#define NV 8

/* Each test type: PE prev sets our ivars (one at a time, as we wait); we check every form. */
#define TEST_WAIT(NAME, TYPE)                                                                   \
  static void wait_##NAME(TYPE* iv, int prev, int next, unsigned long long* s) {                \
    TYPE vals[NV], cmpv[NV];                                                                    \
    int status[NV] = {0};                                                                       \
    size_t idx[NV];                                                                             \
    /* Local checks of every comparison through test. */                                        \
    for (int i = 0; i < NV; ++i) vals[i] = (TYPE)(1 + mpe_rand(s) % 98);                        \
    shmem_barrier_all();                                                                        \
    shmem_##NAME##_put(iv, vals, NV, me);                                                       \
    for (int i = 0; i < NV; ++i) {                                                              \
      TYPE v = vals[i], lo = (TYPE)(v - 1), hi = (TYPE)(v + 1);                                 \
      ACHECK(shmem_##NAME##_test(&iv[i], SHMEM_CMP_EQ, v) &&                                    \
                 !shmem_##NAME##_test(&iv[i], SHMEM_CMP_EQ, hi),                                \
             #NAME " EQ");                                                                      \
      ACHECK(shmem_##NAME##_test(&iv[i], SHMEM_CMP_NE, hi) &&                                   \
                 !shmem_##NAME##_test(&iv[i], SHMEM_CMP_NE, v),                                 \
             #NAME " NE");                                                                      \
      ACHECK(shmem_##NAME##_test(&iv[i], SHMEM_CMP_GT, lo) &&                                   \
                 !shmem_##NAME##_test(&iv[i], SHMEM_CMP_GT, v),                                 \
             #NAME " GT");                                                                      \
      ACHECK(shmem_##NAME##_test(&iv[i], SHMEM_CMP_GE, v) &&                                    \
                 !shmem_##NAME##_test(&iv[i], SHMEM_CMP_GE, hi),                                \
             #NAME " GE");                                                                      \
      ACHECK(shmem_##NAME##_test(&iv[i], SHMEM_CMP_LT, hi) &&                                   \
                 !shmem_##NAME##_test(&iv[i], SHMEM_CMP_LT, v),                                 \
             #NAME " LT");                                                                      \
      ACHECK(shmem_##NAME##_test(&iv[i], SHMEM_CMP_LE, v) &&                                    \
                 !shmem_##NAME##_test(&iv[i], SHMEM_CMP_LE, lo),                                \
             #NAME " LE");                                                                      \
      cmpv[i] = v;                                                                              \
    }                                                                                           \
    ACHECK(shmem_##NAME##_test_all(iv, NV, NULL, SHMEM_CMP_LT, (TYPE)100), #NAME " test_all");  \
    ACHECK(shmem_##NAME##_test_all_vector(iv, NV, NULL, SHMEM_CMP_EQ, cmpv), #NAME " all_vec"); \
    status[0] = 1;                                                                              \
    cmpv[0] = (TYPE)(vals[0] + 1);                                                              \
    ACHECK(shmem_##NAME##_test_all_vector(iv, NV, status, SHMEM_CMP_EQ, cmpv),                  \
           #NAME " status excludes");                                                           \
    ACHECK(shmem_##NAME##_test_any(iv, NV, NULL, SHMEM_CMP_GT, (TYPE)100) == SIZE_MAX,          \
           #NAME " test_any none");                                                             \
    ACHECK(shmem_##NAME##_test_some(iv, NV, idx, NULL, SHMEM_CMP_GT, (TYPE)100) == 0,           \
           #NAME " test_some none");                                                            \
    ACHECK(shmem_##NAME##_test_some_vector(iv, NV, idx, NULL, SHMEM_CMP_EQ, cmpv) == NV - 1 &&  \
               idx[0] == 1,                                                                     \
           #NAME " test_some_vector");                                                          \
    ACHECK(shmem_##NAME##_test_any_vector(iv, NV, status, SHMEM_CMP_NE, cmpv) == SIZE_MAX,      \
           #NAME " test_any_vector");                                                           \
    for (int i = 0; i < NV; ++i) status[i] = 1;                                                 \
    ACHECK(shmem_##NAME##_wait_until_any(iv, NV, status, SHMEM_CMP_EQ, (TYPE)0) == SIZE_MAX,    \
           #NAME " wait_any all excluded");                                                     \
    ACHECK(shmem_##NAME##_wait_until_some(iv, NV, idx, status, SHMEM_CMP_EQ, (TYPE)0) == 0,     \
           #NAME " wait_some all excluded");                                                    \
    for (int i = 0; i < NV; ++i) status[i] = 0;                                                 \
    /* Remote updates: the predecessor sets each ivar to 200 + i in a random order; we wait. */ \
    shmem_barrier_all();                                                                        \
    int order[NV];                                                                              \
    for (int i = 0; i < NV; ++i) order[i] = i;                                                  \
    for (int i = NV - 1; i > 0; --i) {                                                          \
      int j = (int)(mpe_rand(s) % (unsigned)(i + 1)), t = order[i];                             \
      order[i] = order[j];                                                                      \
      order[j] = t;                                                                             \
    }                                                                                           \
    for (int k = 0; k < NV; ++k) {                                                              \
      TYPE v = (TYPE)(200 + order[k]);                                                          \
      shmem_##NAME##_p(&iv[order[k]], v, next);                                                 \
      shmem_fence();                                                                            \
    }                                                                                           \
    size_t first = shmem_##NAME##_wait_until_any(iv, NV, NULL, SHMEM_CMP_GE, (TYPE)200);        \
    ACHECK(first < NV, #NAME " wait_until_any");                                                \
    size_t some = shmem_##NAME##_wait_until_some(iv, NV, idx, NULL, SHMEM_CMP_GE, (TYPE)200);   \
    ACHECK(some >= 1 && some <= NV, #NAME " wait_until_some");                                  \
    for (int i = 0; i < NV; ++i) cmpv[i] = (TYPE)(200 + i);                                     \
    shmem_##NAME##_wait_until_all_vector(iv, NV, NULL, SHMEM_CMP_EQ, cmpv);                     \
    shmem_##NAME##_wait_until_all(iv, NV, NULL, SHMEM_CMP_GE, (TYPE)200);                       \
    ACHECK(shmem_##NAME##_wait_until_any_vector(iv, NV, NULL, SHMEM_CMP_EQ, cmpv) < NV,         \
           #NAME " any_vector");                                                                \
    ACHECK(shmem_##NAME##_wait_until_some_vector(iv, NV, idx, NULL, SHMEM_CMP_LE, cmpv) == NV,  \
           #NAME " some_vector");                                                               \
    shmem_##NAME##_wait_until(&iv[NV - 1], SHMEM_CMP_EQ, (TYPE)(200 + NV - 1));                 \
    (void)prev;                                                                                 \
  }
VSHMEM_P2P_TYPES(TEST_WAIT)

static void waits(void) {
  const int next = (me + 1) % npes, prev = (me - 1 + npes) % npes;
  void* area = shmem_align(16, NV * 8);
  unsigned long long s = api_stream(3, me);
#define RUN_WAIT(NAME, TYPE) wait_##NAME((TYPE*)area, prev, next, &s);
  VSHMEM_P2P_TYPES(RUN_WAIT)
  /* Deprecated forms: wait until the value differs. */
  long* lv = (long*)area;
  shmem_barrier_all();
  shmem_long_p(lv, 0, me);
  shmem_barrier_all();
  shmem_long_p(lv, 5, next);
  shmem_wait(lv, 0);
  ACHECK(sym_long(lv) == 5, "shmem_wait");
  shmem_barrier_all();
  shmem_long_p(lv, 6, next);
  shmem_long_wait(lv, 5);
  shmem_barrier_all();
  shmem_long_p(lv, 9, next);
  shmem_wait_until(lv, SHMEM_CMP_EQ, 9);
  shmem_barrier_all();
  shmem_free(area);
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  api_job_seed();
  ordering();
  waits();
  shmem_finalize();
  if (me == 0) printf("api_signal_wait: OK (%d PEs)\n", npes);
  return 0;
}
