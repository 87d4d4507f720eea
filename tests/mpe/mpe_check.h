/* Minimal checking for multi-PE test programs: a failed CHECK prints the PE, file, line and
 * message, and exits non-zero (the launcher then stops the other PEs). */
#ifndef VSHMEM_TESTS_MPE_CHECK_H
#define VSHMEM_TESTS_MPE_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <shmem.h>

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "FAIL PE %d %s:%d: %s: ", shmem_my_pe(), __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fprintf(stderr, "\n");                                                               \
      fflush(stderr);                                                                      \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* xorshift64*: fresh data every run (the seed is printed on failure via CHECK messages). */
static inline unsigned long long mpe_rand(unsigned long long* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static inline unsigned long long mpe_seed(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)getpid() ^
         0x9e3779b97f4a7c15ull;
}

/* Local access to symmetric memory that works on every backend: on the GPU heap the host cannot
 * load or store symmetric memory directly, so tests go through the API (a get or put to
 * themselves), as OpenSHMEM programs for GPU heaps must. */
static inline void sym_read(void* dst, const void* sym, size_t bytes) {
  shmem_getmem(dst, sym, bytes, shmem_my_pe());
}
static inline void sym_write(void* sym, const void* src, size_t bytes) {
  shmem_putmem(sym, src, bytes, shmem_my_pe());
}
static inline long sym_long(const long* sym) { return shmem_long_g(sym, shmem_my_pe()); }

#endif
