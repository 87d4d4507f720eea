/* The C11 type-generic forms select the typed function from the type of the pointed-to object
 * (const and volatile objects included) and the context/team forms from the argument count. */
#include <complex.h>

#include "api_check.h"

#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#error "this test needs C11"
#endif

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes(), next = (me + 1) % npes;
  api_job_seed();
  unsigned long long s = mpe_seed();
  long* l = (long*)shmem_calloc(16, sizeof(long));
  double* d = (double*)shmem_calloc(16, sizeof(double));
  unsigned int* u = (unsigned int*)shmem_calloc(4, sizeof(unsigned int));
  int* iv = (int*)shmem_calloc(4 * npes, sizeof(int));
  double _Complex* z = (double _Complex*)shmem_calloc(2, sizeof(double _Complex));
  uint64_t* sig = (uint64_t*)shmem_calloc(1, sizeof(uint64_t));
  shmem_barrier_all();

  /* RMA */
  long lv[4] = {(long)mpe_rand(&s), 2, 3, 4}, lr[4];
  shmem_put(l, lv, 4, next);
  shmem_put(SHMEM_CTX_DEFAULT, l + 4, lv, 4, next);
  shmem_put_nbi(l + 8, lv, 4, next);
  shmem_p(l + 12, lv[0] + 1, next);
  shmem_p(SHMEM_CTX_DEFAULT, d, 2.5, next);
  shmem_iput(l + 13, lv, 1, 2, 2, next); /* l[13], l[14] <- lv[0], lv[2] */
  shmem_quiet();
  shmem_get(lr, l, 4, next);
  ACHECK(lr[0] == lv[0] && lr[3] == 4, "generic put/get");
  shmem_get(SHMEM_CTX_DEFAULT, lr, l + 4, 4, next);
  ACHECK(lr[1] == 2, "generic ctx get");
  const long* cl = l;
  ACHECK(shmem_g(cl + 12, next) == lv[0] + 1, "generic g on const");
  ACHECK(shmem_g(SHMEM_CTX_DEFAULT, d, next) == 2.5, "generic ctx g");
  shmem_iget(lr, l + 13, 1, 1, 2, next);
  ACHECK(lr[0] == lv[0] && lr[1] == 3, "generic iget");

  /* Atomics, with the type taken from the object */
  shmem_barrier_all();
  ACHECK(shmem_atomic_fetch_add(&iv[0], 5, 0) % 5 == 0, "int fetch_add");
  shmem_atomic_add(SHMEM_CTX_DEFAULT, &iv[1], 2, 0);
  shmem_atomic_inc(&iv[2], 0);
  long* vl = l + 15; /* (volatile objects dispatch alike, with a qualifier warning) */
  (void)shmem_atomic_fetch(vl, me);
  shmem_atomic_set(&d[1], 1.25, me);
  ACHECK(shmem_atomic_swap(&d[1], 3.5, me) == 1.25 && shmem_atomic_fetch(&d[1], me) == 3.5,
         "double set/swap/fetch");
  shmem_atomic_set(&u[0], 0xf0f0u, me);
  ACHECK(shmem_atomic_fetch_xor(&u[0], 0xffffu, me) == 0xf0f0u, "uint fetch_xor");
  shmem_atomic_or(SHMEM_CTX_DEFAULT, &u[0], 0x10000u, me);
  unsigned int uf;
  shmem_atomic_fetch_and_nbi(&uf, &u[0], 0xffffffffu, me);
  shmem_quiet();
  ACHECK(uf == 0x10f0fu, "uint or/and nbi: %#x", uf);
  ACHECK(shmem_atomic_compare_swap(&iv[3], 0, 1, me) == 0, "cswap");
  /* deprecated generic names */
  ACHECK(shmem_cswap(&iv[3], 1, 2, me) == 1, "shmem_cswap");
  ACHECK(shmem_finc(&iv[3], me) == 2, "shmem_finc");
  shmem_inc(&iv[3], me);
  ACHECK(shmem_fadd(&iv[3], 10, me) == 4, "shmem_fadd");
  shmem_add(&iv[3], 1, me);
  ACHECK(shmem_swap(&iv[3], 7, me) == 15 && shmem_fetch(&iv[3], me) == 7, "shmem_swap/fetch");
  shmem_set(&d[2], 0.5, me);
  ACHECK(shmem_fetch(&d[2], me) == 0.5, "shmem_set double");
  shmem_barrier_all();
  if (me == 0) {
    int t[3];
    sym_read(t, iv, sizeof t);
    ACHECK(t[0] == 5 * npes && t[1] == 2 * npes && t[2] == npes, "generic AMO totals");
  }

  /* Signals and waits */
  shmem_barrier_all();
  shmem_put_signal(l, lv, 1, sig, 1, SHMEM_SIGNAL_ADD, next);
  shmem_signal_wait_until(sig, SHMEM_CMP_GE, 1);
  shmem_put_signal(SHMEM_CTX_DEFAULT, l, lv, 1, sig, 1, SHMEM_SIGNAL_ADD, next);
  shmem_wait_until(sig, SHMEM_CMP_EQ, 2);
  ACHECK(shmem_test(sig, SHMEM_CMP_GE, 2), "generic test");
  shmem_barrier_all();
  shmem_p(&iv[me], 9, next);
  shmem_wait_until(&iv[(me - 1 + npes) % npes], SHMEM_CMP_EQ, 9);
  shmem_barrier_all();
  shmem_p(l + 15, 1L, next);
  shmem_wait(vl, 0L);
  shmem_barrier_all();

  /* Collectives */
  lv[0] = 42 + me;
  sym_write(l, lv, sizeof(long));
  shmem_barrier_all();
  ACHECK(shmem_broadcast(SHMEM_TEAM_WORLD, l + 1, l, 1, npes - 1) == 0, "broadcast");
  ACHECK(sym_long(l + 1) == 42 + npes - 1, "generic broadcast");
  shmem_sync(SHMEM_TEAM_WORLD);
  static long pSync[SHMEM_BARRIER_SYNC_SIZE];
  shmem_sync(0, 0, npes, pSync);
  long* all = (long*)shmem_malloc(sizeof(long) * npes);
  shmem_fcollect(SHMEM_TEAM_WORLD, all, l, 1);
  for (int k = 0; k < npes; ++k) ACHECK(shmem_g(all + k, me) == 42 + k, "generic fcollect");
  shmem_collect(SHMEM_TEAM_WORLD, all, l, 1);
  shmem_alltoall(SHMEM_TEAM_WORLD, all, all, 0);
  ACHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, l + 2, l, 1) == 0, "sum_reduce");
  ACHECK(sym_long(l + 2) == 42L * npes + (long)npes * (npes - 1) / 2, "generic sum_reduce");
  shmem_max_reduce(SHMEM_TEAM_WORLD, l + 3, l, 1);
  ACHECK(sym_long(l + 3) == 42 + npes - 1, "generic max_reduce");
  shmem_atomic_set(&u[1], 0x3u << me, me);
  shmem_barrier_all();
  shmem_or_reduce(SHMEM_TEAM_WORLD, &u[2], &u[1], 1);
  unsigned int uor;
  sym_read(&uor, &u[2], sizeof uor);
  unsigned int want_or = 0;
  for (int k = 0; k < npes; ++k) want_or |= 0x3u << k;
  ACHECK(uor == want_or, "generic or_reduce %#x", uor);
  double _Complex zz = (1.0 + me) + 1.0 * I;
  sym_write(z, &zz, sizeof zz);
  shmem_barrier_all();
  shmem_sum_reduce(SHMEM_TEAM_WORLD, z + 1, z, 1);
  sym_read(&zz, z + 1, sizeof zz);
  ACHECK(creal(zz) == npes * (npes + 1) / 2.0 && cimag(zz) == npes, "generic complex sum");

  shmem_barrier_all();
  shmem_free(all);
  shmem_free(sig);
  shmem_free(z);
  shmem_free(iv);
  shmem_free(u);
  shmem_free(d);
  shmem_free(l);
  shmem_finalize();
  if (me == 0) printf("api_generic: OK (%d PEs)\n", npes);
  return 0;
}
