/* Shared helpers of the API tests (tests/mpe/api_*.c): one job-wide random seed (PE 0 draws
 * it, everyone reads it), so that every PE can recompute any other PE's data; failures print it. */
#ifndef VSHMEM_TESTS_MPE_API_CHECK_H
#define VSHMEM_TESTS_MPE_API_CHECK_H

#include <string.h>

#include "mpe_check.h"

static unsigned long long g_seed;

#define ACHECK(cond, ...)                                                                       \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      fprintf(stderr, "FAIL PE %d %s:%d (seed %#llx): %s: ", shmem_my_pe(), __FILE__, __LINE__, \
              g_seed, #cond);                                                                   \
      fprintf(stderr, __VA_ARGS__);                                                             \
      fprintf(stderr, "\n");                                                                    \
      fflush(stderr);                                                                           \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

/* Collective: the job-wide seed. */
static inline unsigned long long api_job_seed(void) {
  long* s = (long*)shmem_malloc(sizeof(long));
  if (shmem_my_pe() == 0) shmem_long_p(s, (long)mpe_seed(), 0);
  shmem_barrier_all();
  unsigned long long seed = (unsigned long long)shmem_long_g(s, 0);
  shmem_barrier_all();
  shmem_free(s);
  g_seed = seed;
  return seed;
}

/* A generator seeded from the job seed and any number of stream identifiers. */
static inline unsigned long long api_stream(unsigned long long a, unsigned long long b) {
  unsigned long long s = g_seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull);
  if (s == 0) s = 1;
  for (int i = 0; i < 4; ++i) mpe_rand(&s);
  return s;
}

#endif
