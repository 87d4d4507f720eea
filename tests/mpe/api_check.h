/* Shared helpers of the API tests (tests/mpe/api_*.c): one job-wide random seed (PE 0 draws
 * it, everyone reads it), so that every PE can recompute any other PE's data; failures print it. */
#ifndef VSHMEM_TESTS_MPE_API_CHECK_H
#define VSHMEM_TESTS_MPE_API_CHECK_H

#include <stdio.h>
#include <stdlib.h>
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

/* One behaviour of a test program. A program runs the cases named on its command line, in that
 * order, or all of them without arguments (the remote-path and mpirun runs do that), so that
 * CTest has one entry per behaviour without one program per behaviour. */
typedef struct {
  const char* name;
  void (*run)(void);
} api_case;

/* The cases to run, checked before shmem_init so that a misspelt name fails at once on every PE
 * (exit 2, naming the cases there are). Returns them (malloc'd) and their number in *count. */
static inline const api_case** api_choose_cases(int argc, char** argv, const api_case* cases, int n,
                                                int* count) {
  const api_case** chosen = (const api_case**)malloc(sizeof(api_case*) * (size_t)(n + argc));
  if (chosen == NULL) exit(2);
  *count = argc < 2 ? n : argc - 1;
  for (int i = 0; argc < 2 && i < n; ++i) chosen[i] = &cases[i];
  for (int a = 1; a < argc; ++a) {
    chosen[a - 1] = NULL;
    for (int i = 0; i < n; ++i) {
      if (strcmp(argv[a], cases[i].name) == 0) chosen[a - 1] = &cases[i];
    }
    if (chosen[a - 1] == NULL) {
      fprintf(stderr, "%s: unknown case '%s'; the cases are:", argv[0], argv[a]);
      for (int i = 0; i < n; ++i) fprintf(stderr, " %s", cases[i].name);
      fprintf(stderr, "\n");
      exit(2);
    }
  }
  return chosen;
}

/* Runs the chosen cases; every PE runs the same ones in the same order (same command line). */
static inline void api_run_cases(const api_case** chosen, int n) {
  for (int i = 0; i < n; ++i) {
    chosen[i]->run();
    shmem_barrier_all();
  }
  free((void*)chosen);
}

#endif
