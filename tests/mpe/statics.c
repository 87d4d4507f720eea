/* Global and static variables are symmetric (OpenSHMEM 1.5, section 3): every call family on
 * them, with no shmem_malloc'ed object involved unless said. One behaviour per argument:
 *   rma     put/get/p/g/iput/iget/_nbi of several types, to and from neighbours
 *   amo     every atomic; fetch_add from every PE (the owner included) with an exact total
 *   signal  put_signal (SET and ADD) + signal_wait_until, static and heap mixed
 *   wait    wait_until / wait_until_all / test on static ivars, written by another PE
 *   lock    shmem_set_lock on a static lock guards a non-atomic static counter
 *   coll    active-set and team collectives with static source, dest, pSync, pWrk
 *   ptr     shmem_ptr / shmem_addr_accessible; PE bases differ (PIE executable)
 *   order   endpoints made in a fixed order: every PE reaches PE 0 first (the seed), PE 0 reaches
 *           them back only after that, then traffic both ways (UCX must pair each PE's endpoint
 *           with the peer's; a PE that chose another error-handling mode than the peer broke
 *           the pairing on UCX 1.13: wrong endpoint, assertion in ucp_rma_cmpl_handler)
 *   all     every one of them in turn
 *   no_ucx  a job where UCX did not start (e.g. a bogus UCX_TLS): it runs; our own statics
 *           and the heap work, another PE's statics are not accessible (not part of "all")
 * The executable is built as PIE, so each PE's copy is at a different address. */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define MAXPE 64
#define NLONG 37
#define NINT 23
#define NBYTES 301
#define ITERS 200

/* Initialized (.data) and zero (.bss) globals, file statics, and a function static. */
long g_long[NLONG] = {1, 2, 3};
static int s_int[NINT];
static double s_dbl[8] = {0.5};
static unsigned char s_bytes[NBYTES];
static long s_strided[2 * NLONG];
long g_counter = 7;
static int s_icounter;
static unsigned long long s_bits[MAXPE];
static double s_dswap[MAXPE];
static uint64_t s_sig[2];
static long s_msg[NLONG];
static long s_ivar;
static long s_ivars[4];
static long g_lock;
static long s_locked_counter;
static long s_psync[SHMEM_REDUCE_SYNC_SIZE];
static long s_psync2[SHMEM_BCAST_SYNC_SIZE];
static long s_pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE > NLONG / 2 + 1 ? SHMEM_REDUCE_MIN_WRKDATA_SIZE
                                                                 : NLONG / 2 + 1];
static long s_src[NLONG], s_dst[NLONG];
static long s_coll[MAXPE * 4];
static uintptr_t s_where[MAXPE];

static int me, npes;
static unsigned long long job_seed;

/* The value PE p writes at index i in round r: known to every PE. */
static unsigned long long val(int p, int r, int i) {
  unsigned long long s = job_seed ^ ((unsigned long long)p << 40) ^ ((unsigned long long)r << 20) ^
                         (unsigned long long)i;
  mpe_rand(&s);
  return mpe_rand(&s);
}

static int right(void) { return (me + 1) % npes; }
static int left(void) { return (me + npes - 1) % npes; }

static void test_rma(void) {
  /* Poison what we will receive, then every PE writes into its right neighbour. */
  memset(g_long, 0xa5, sizeof(g_long));
  memset(s_int, 0xa5, sizeof(s_int));
  memset(s_dbl, 0xa5, sizeof(s_dbl));
  memset(s_bytes, 0xa5, sizeof(s_bytes));
  memset(s_strided, 0xa5, sizeof(s_strided));
  shmem_barrier_all();
  long l[NLONG];
  int ii[NINT];
  unsigned char b[NBYTES];
  for (int i = 0; i < NLONG; ++i) l[i] = (long)val(me, 1, i);
  for (int i = 0; i < NINT; ++i) ii[i] = (int)val(me, 2, i);
  for (int i = 0; i < NBYTES; ++i) b[i] = (unsigned char)val(me, 3, i);
  shmem_long_put(g_long, l, NLONG, right());
  for (int i = 0; i < NINT; ++i) shmem_int_p(&s_int[i], ii[i], right());
  for (int i = 0; i < 8; ++i) shmem_double_p(&s_dbl[i], (double)(val(me, 4, i) >> 11), right());
  shmem_putmem_nbi(s_bytes, b, NBYTES, right());
  shmem_long_iput(s_strided, l, 2, 1, NLONG, right());
  shmem_quiet();
  shmem_barrier_all();
  const int from = left();
  for (int i = 0; i < NLONG; ++i) {
    CHECK(g_long[i] == (long)val(from, 1, i), "g_long[%d] %ld", i, g_long[i]);
    CHECK(s_strided[2 * i] == (long)val(from, 1, i), "s_strided[%d]", 2 * i);
    CHECK(s_strided[2 * i + 1] == (long)0xa5a5a5a5a5a5a5a5ull, "iput wrote a gap at %d", 2 * i + 1);
  }
  for (int i = 0; i < NINT; ++i) CHECK(s_int[i] == (int)val(from, 2, i), "s_int[%d]", i);
  for (int i = 0; i < 8; ++i) {
    CHECK(s_dbl[i] == (double)(val(from, 4, i) >> 11), "s_dbl[%d] %g", i, s_dbl[i]);
  }
  for (int i = 0; i < NBYTES; ++i)
    CHECK(s_bytes[i] == (unsigned char)val(from, 3, i), "byte %d", i);

  /* Gets from the right neighbour (which holds what we wrote), into a local buffer, a static
   * and the heap; g and get_nbi. */
  long got[NLONG];
  memset(got, 0x5a, sizeof(got));
  shmem_long_get(got, g_long, NLONG, right());
  for (int i = 0; i < NLONG; ++i) CHECK(got[i] == (long)val(me, 1, i), "get %d", i);
  for (int i = 0; i < NINT; ++i) {
    CHECK(shmem_int_g(&s_int[i], right()) == (int)val(me, 2, i), "int_g %d", i);
  }
  memset(s_src, 0x5a, sizeof(s_src));
  shmem_long_get_nbi(s_src, g_long, NLONG, right());
  long* heap = (long*)shmem_malloc(sizeof(long) * NLONG);
  shmem_long_iget(heap, s_strided, 1, 2, NLONG, right());
  shmem_quiet();
  long heap_copy[NLONG];
  shmem_long_get(heap_copy, heap, NLONG, me);
  for (int i = 0; i < NLONG; ++i) {
    CHECK(s_src[i] == (long)val(me, 1, i), "get_nbi into a static %d", i);
    CHECK(heap_copy[i] == (long)val(me, 1, i), "iget into the heap %d", i);
  }
  unsigned char bb[NBYTES];
  shmem_getmem(bb, s_bytes, NBYTES, right());
  for (int i = 0; i < NBYTES; ++i) CHECK(bb[i] == (unsigned char)val(me, 3, i), "getmem %d", i);
  shmem_barrier_all();
  shmem_free(heap);
}

static void test_amo(void) {
  g_counter = 0;
  s_icounter = 0;
  memset(s_bits, 0, sizeof(s_bits));
  shmem_barrier_all();
  /* Contention: every PE adds to every PE's counter, the owner with the same call. */
  for (int i = 0; i < ITERS; ++i) {
    const int pe = (int)(val(me, 10, i) % (unsigned)npes);
    const long add = (long)(val(me, 11, i) % 1000) + 1;
    long old = shmem_long_atomic_fetch_add(&g_counter, add, pe);
    CHECK(old >= 0, "fetch_add returned %ld", old);
    shmem_int_atomic_inc(&s_icounter, pe);
  }
  shmem_barrier_all();
  long expect = 0;
  int iexpect = 0;
  for (int p = 0; p < npes; ++p) {
    for (int i = 0; i < ITERS; ++i) {
      if ((int)(val(p, 10, i) % (unsigned)npes) != me) continue;
      expect += (long)(val(p, 11, i) % 1000) + 1;
      ++iexpect;
    }
  }
  CHECK(g_counter == expect, "counter %ld, expected %ld: an add was lost", g_counter, expect);
  CHECK(s_icounter == iexpect, "int counter %d, expected %d", s_icounter, iexpect);
  shmem_barrier_all();
  CHECK(shmem_long_atomic_fetch(&g_counter, left()) == shmem_long_g(&g_counter, left()),
        "fetch and g disagree");

  /* Every other atomic, on our own slot of the right neighbour's array. */
  unsigned long long* slot = &s_bits[me];
  const int pe = right();
  const unsigned long long a = val(me, 12, 0), b = val(me, 12, 1), c = val(me, 12, 2);
  shmem_ulonglong_atomic_set(slot, a, pe);
  CHECK(shmem_ulonglong_atomic_fetch(slot, pe) == a, "set/fetch");
  CHECK(shmem_ulonglong_atomic_swap(slot, b, pe) == a, "swap");
  CHECK(shmem_ulonglong_atomic_compare_swap(slot, a, c, pe) == b, "failed cswap");
  CHECK(shmem_ulonglong_atomic_compare_swap(slot, b, c, pe) == b, "cswap");
  CHECK(shmem_ulonglong_atomic_fetch_and(slot, a, pe) == c, "fetch_and");
  CHECK(shmem_ulonglong_atomic_fetch_or(slot, b, pe) == (c & a), "fetch_or");
  CHECK(shmem_ulonglong_atomic_fetch_xor(slot, a, pe) == ((c & a) | b), "fetch_xor");
  shmem_ulonglong_atomic_add(slot, 5, pe);
  const double d = (double)(a >> 12);
  shmem_double_atomic_set(&s_dswap[me], d, pe);
  CHECK(shmem_double_atomic_swap(&s_dswap[me], d + 1, pe) == d, "double swap");
  shmem_barrier_all();
  const int l = left();
  const unsigned long long la = val(l, 12, 0), lb = val(l, 12, 1), lc = val(l, 12, 2);
  CHECK(s_bits[l] == ((((lc & la) | lb) ^ la) + 5), "the atomics left %#llx", s_bits[l]);
  CHECK(s_dswap[l] == (double)(la >> 12) + 1, "double %g", s_dswap[l]);
  shmem_barrier_all();
}

static void test_signal(void) {
  memset(s_msg, 0x5a, sizeof(s_msg));
  s_sig[0] = s_sig[1] = 0;
  uint64_t* heap_sig = (uint64_t*)shmem_calloc(1, sizeof(uint64_t));
  long* heap_msg = (long*)shmem_malloc(sizeof(long) * NLONG);
  shmem_barrier_all();
  long l[NLONG];
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < NLONG; ++i) l[i] = (long)val(me, 20 + round, i);
    /* static data + static signal (SET), static data + heap signal (ADD), heap data + static
     * signal (ADD). */
    if (round == 1)
      shmem_long_put_signal(s_msg, l, NLONG, &s_sig[0], 41, SHMEM_SIGNAL_SET, right());
    if (round == 2) shmem_long_put_signal(s_msg, l, NLONG, heap_sig, 2, SHMEM_SIGNAL_ADD, right());
    if (round == 3)
      shmem_long_put_signal(heap_msg, l, NLONG, &s_sig[1], 3, SHMEM_SIGNAL_ADD, right());
    uint64_t seen;
    if (round == 1) seen = shmem_signal_wait_until(&s_sig[0], SHMEM_CMP_EQ, 41);
    if (round == 2) seen = shmem_signal_wait_until(heap_sig, SHMEM_CMP_GE, 2);
    if (round == 3) seen = shmem_signal_wait_until(&s_sig[1], SHMEM_CMP_EQ, 3);
    CHECK(seen == (round == 1 ? 41u : (uint64_t)round), "signal %" PRIu64, seen);
    long got[NLONG];
    if (round == 3) {
      shmem_long_get(got, heap_msg, NLONG, me);
    } else {
      memcpy(got, s_msg, sizeof(got));
    }
    for (int i = 0; i < NLONG; ++i) {
      CHECK(got[i] == (long)val(left(), 20 + round, i), "round %d: data %d before its signal",
            round, i);
    }
    CHECK(shmem_signal_fetch(round == 2 ? heap_sig : &s_sig[round == 1 ? 0 : 1]) == seen,
          "signal_fetch");
    shmem_barrier_all();
  }
  shmem_free(heap_msg);
  shmem_free(heap_sig);
}

static void test_wait(void) {
  s_ivar = -1;
  memset(s_ivars, 0, sizeof(s_ivars));
  shmem_barrier_all();
  const long v = (long)(val(me, 30, 0) >> 2) + 1;
  /* Give the waiter time to be waiting. */
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
  shmem_long_p(&s_ivar, v, right());
  for (int i = 0; i < 4; ++i) shmem_long_atomic_add(&s_ivars[i], i + 1, right());
  const long lv = (long)(val(left(), 30, 0) >> 2) + 1;
  shmem_long_wait_until(&s_ivar, SHMEM_CMP_EQ, lv);
  CHECK(s_ivar == lv, "ivar %ld", s_ivar);
  shmem_long_wait_until_all(s_ivars, 4, NULL, SHMEM_CMP_GT, 0);
  for (int i = 0; i < 4; ++i) CHECK(s_ivars[i] == i + 1, "ivars[%d] %ld", i, s_ivars[i]);
  CHECK(shmem_long_test(&s_ivar, SHMEM_CMP_EQ, lv) == 1, "test");
  shmem_barrier_all();
}

static void test_lock(void) {
  s_locked_counter = 0;
  shmem_barrier_all();
  for (int i = 0; i < ITERS / 4; ++i) {
    if (i % 3 == 0) {
      while (shmem_test_lock(&g_lock) != 0) {
      }
    } else {
      shmem_set_lock(&g_lock);
    }
    /* A read-modify-write that only the lock makes safe. */
    long c = shmem_long_g(&s_locked_counter, npes - 1);
    shmem_long_p(&s_locked_counter, c + 1, npes - 1);
    shmem_clear_lock(&g_lock);
  }
  shmem_barrier_all();
  const long total = shmem_long_g(&s_locked_counter, npes - 1);
  CHECK(total == (long)(ITERS / 4) * npes, "counter %ld: the lock let two PEs in", total);
  shmem_barrier_all();
}

static void test_coll_round(int round) {
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) s_psync[i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; ++i) s_psync2[i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < NLONG; ++i) {
    s_src[i] = (long)(val(me, 40 + round, i) % 100000);
    s_dst[i] = -1;
  }
  shmem_barrier_all();
  /* Deprecated active-set form: static source, dest, pWrk and pSync. */
  shmem_long_sum_to_all(s_dst, s_src, NLONG, 0, 0, npes, s_pwrk, s_psync);
  for (int i = 0; i < NLONG; ++i) {
    long e = 0;
    for (int p = 0; p < npes; ++p) e += (long)(val(p, 40 + round, i) % 100000);
    CHECK(s_dst[i] == e, "sum_to_all[%d] %ld, expected %ld", i, s_dst[i], e);
  }
  shmem_barrier_all();
  /* Broadcast from the last PE, active-set form. */
  for (int i = 0; i < NLONG; ++i) s_dst[i] = -2;
  shmem_broadcast64(s_dst, s_src, NLONG, npes - 1, 0, 0, npes, s_psync2);
  if (me != npes - 1) {
    for (int i = 0; i < NLONG; ++i) {
      CHECK(s_dst[i] == (long)(val(npes - 1, 40 + round, i) % 100000), "broadcast64[%d]", i);
    }
  }
  shmem_barrier_all();
  /* Team forms. */
  for (int i = 0; i < NLONG; ++i) s_dst[i] = -3;
  CHECK(shmem_long_max_reduce(SHMEM_TEAM_WORLD, s_dst, s_src, NLONG) == 0, "max_reduce");
  for (int i = 0; i < NLONG; ++i) {
    long e = 0;
    for (int p = 0; p < npes; ++p) {
      long x = (long)(val(p, 40 + round, i) % 100000);
      e = x > e ? x : e;
    }
    CHECK(s_dst[i] == e, "max_reduce[%d]", i);
  }
  if (npes <= MAXPE) {
    for (int i = 0; i < MAXPE * 4; ++i) s_coll[i] = -4;
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, s_coll, s_src, 4) == 0, "fcollect");
    for (int p = 0; p < npes; ++p) {
      for (int i = 0; i < 4; ++i) {
        CHECK(s_coll[p * 4 + i] == (long)(val(p, 40 + round, i) % 100000), "fcollect %d,%d", p, i);
      }
    }
  }
  shmem_barrier_all();
}

/* Several rounds: a result that overtakes its data shows up in some of them. */
static void test_coll(void) {
  for (int round = 0; round < 8; ++round) test_coll_round(round);
}

static void test_ptr(void) {
  CHECK(shmem_ptr(&g_counter, me) == &g_counter, "shmem_ptr to our own global");
  CHECK(shmem_ptr(&s_bytes[3], me) == &s_bytes[3], "shmem_ptr to our own static");
  long on_stack = 0;
  CHECK(shmem_addr_accessible(&on_stack, me) == 0, "the stack is not symmetric");
  for (int p = 0; p < npes; ++p) {
    CHECK(shmem_addr_accessible(&g_counter, p) == 1, "global not accessible on PE %d", p);
    CHECK(shmem_addr_accessible(s_msg, p) == 1, "static not accessible on PE %d", p);
    if (p != me) CHECK(shmem_ptr(&g_counter, p) == NULL, "another PE's global is not mapped");
  }
  /* Where each PE's copy is: with address-space randomization on, PIE executables load at
   * different addresses, and every access above crossed between them. */
  for (int p = 0; p < npes; ++p)
    shmem_ulong_p((unsigned long*)&s_where[me], (uintptr_t)&g_counter, p);
  shmem_barrier_all();
  int differ = 0;
  for (int p = 0; p < npes; ++p) differ |= s_where[p] != (uintptr_t)&g_counter;
  FILE* f = fopen("/proc/sys/kernel/randomize_va_space", "r");
  int aslr = 0;
  if (f != NULL) {
    if (fscanf(f, "%d", &aslr) != 1) aslr = 0;
    fclose(f);
  }
  if (npes > 1 && aslr > 0)
    CHECK(differ, "every PE's globals at %p: not a PIE executable?", (void*)&g_counter);
  if (me == 0) printf("statics: PE bases %s\n", differ ? "differ" : "are the same");
  shmem_barrier_all();
}

static void test_order(void) {
  /* Endpoints made in an order that once broke UCX's pairing of them: PE 1 reaches PE 2 first,
   * then PE 0, and only then does PE 0 reach PE 1 (main() read the seed through the heap, which
   * is mapped on one node: no endpoint exists before this). On UCX 1.13's shared memory PE 1 had
   * gone without peer failure handling after its first endpoint, PE 0 still asked for it, UCX
   * refused the pair and dropped PE 0's side of PE 1's endpoint; PE 1's next put then asserted
   * in ucp_rma_cmpl_handler (or reached the wrong endpoint). */
  CHECK(npes >= 3, "order needs 3 PEs or more");
  memset(s_where, 0xa5, sizeof(s_where));
  memset(s_coll, 0xa5, sizeof(s_coll));
  for (int i = 0; i < NLONG; ++i) g_long[i] = (long)val(me, 64, i);
  shmem_barrier_all();
  const int steps[3][2] = {{1, 2}, {1, 0}, {0, 1}}; /* {from, to} */
  for (int k = 0; k < 3; ++k) {
    if (me == steps[k][0]) {
      shmem_ulong_p((unsigned long*)&s_where[me], (unsigned long)val(me, 60, k), steps[k][1]);
      shmem_quiet();
    }
    shmem_barrier_all();
    if (me == steps[k][1]) {
      const int from = steps[k][0];
      CHECK(s_where[from] == (uintptr_t)val(from, 60, k), "step %d: PE %d's put: %#lx", k, from,
            (unsigned long)s_where[from]);
    }
  }
  /* Both ways between PE 0 and PE 1 over the endpoints made above: puts and gets. */
  const int peer = me == 0 ? 1 : 0;
  if (me <= 1) {
    for (int r = 0; r < 4; ++r) {
      shmem_long_p(&s_coll[me * 4 + r], (long)val(me, 61, r), peer);
      CHECK(shmem_long_g(&g_long[r], peer) == (long)val(peer, 64, r), "get %d from PE %d", r, peer);
    }
    shmem_quiet();
  }
  shmem_barrier_all();
  if (me <= 1) {
    for (int r = 0; r < 4; ++r) {
      CHECK(s_coll[peer * 4 + r] == (long)val(peer, 61, r), "PE %d's put %d: %ld", peer, r,
            s_coll[peer * 4 + r]);
    }
  }
  shmem_barrier_all();
}

/* UCX did not start (the test sets a bogus UCX_TLS): every call on our own statics still works,
 * the heap still reaches every PE, and another PE's global says it is not accessible. */
static void test_no_ucx(void) {
  long* heap = shmem_malloc(sizeof(long) * NLONG);
  CHECK(heap != NULL, "shmem_malloc");
  long l[NLONG], r[NLONG];
  for (int i = 0; i < NLONG; ++i) l[i] = (long)val(me, 50, i);
  memset(g_long, 0xa5, sizeof(g_long));
  for (int i = 0; i < NLONG; ++i) heap[i] = -3;
  shmem_barrier_all();
  shmem_long_put(g_long, l, NLONG, me);
  shmem_long_get(r, g_long, NLONG, me);
  for (int i = 0; i < NLONG; ++i) CHECK(r[i] == l[i], "own global %d", i);
  const long c0 = g_counter, add = (long)(val(me, 51, 0) % 1000) + 1;
  CHECK(shmem_long_atomic_fetch_add(&g_counter, add, me) == c0, "own fetch_add");
  CHECK(shmem_long_g(&g_counter, me) == c0 + add, "own g after fetch_add");
  shmem_long_put(heap, l, NLONG, right());
  shmem_barrier_all();
  for (int i = 0; i < NLONG; ++i) {
    CHECK(heap[i] == (long)val(left(), 50, i), "heap elem %d from PE %d", i, left());
  }
  CHECK(shmem_ptr(&g_counter, me) == &g_counter, "shmem_ptr to our own global");
  for (int p = 0; p < npes; ++p) {
    CHECK(shmem_addr_accessible(&g_counter, p) == (p == me), "PE %d's global: accessible %d", p,
          shmem_addr_accessible(&g_counter, p));
  }
  shmem_barrier_all();
  shmem_free(heap);
}

int main(int argc, char** argv) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  CHECK(npes <= MAXPE, "at most %d PEs", MAXPE);
  const char* what = argc > 1 ? argv[1] : "all";
  const int all = strcmp(what, "all") == 0;
  static unsigned long long seed;
  if (me == 0) seed = mpe_seed();
  shmem_barrier_all();
  if (!strcmp(what, "no_ucx") || !strcmp(what, "order")) {
    /* Another PE's statics are out of reach there (or, for order, must not be reached yet): the
     * seed goes through the heap. */
    unsigned long long* s = shmem_malloc(sizeof(*s));
    CHECK(s != NULL, "shmem_malloc");
    *s = seed;
    shmem_barrier_all();
    seed = shmem_ulonglong_g(s, 0);
    shmem_barrier_all();
    shmem_free(s);
  } else {
    /* The job's seed through a static too. */
    seed = shmem_ulonglong_g(&seed, 0);
  }
  job_seed = seed;
  int ran = 0;
  if (!strcmp(what, "no_ucx")) test_no_ucx(), ran = 1;
  if (all || !strcmp(what, "rma")) test_rma(), ran = 1;
  if (all || !strcmp(what, "amo")) test_amo(), ran = 1;
  if (all || !strcmp(what, "signal")) test_signal(), ran = 1;
  if (all || !strcmp(what, "wait")) test_wait(), ran = 1;
  if (all || !strcmp(what, "lock")) test_lock(), ran = 1;
  if (all || !strcmp(what, "coll")) test_coll(), ran = 1;
  if (all || !strcmp(what, "ptr")) test_ptr(), ran = 1;
  if (!strcmp(what, "order")) test_order(), ran = 1;
  CHECK(ran, "unknown test '%s'", what);
  shmem_finalize();
  if (me == 0) printf("OK statics %s on %d PEs\n", what, npes);
  return 0;
}
