/* Races of the pushed collectives (runtime/api/coll.cpp): many back-to-back calls with data that
 * changes every call, every value checked on return, so that a signal seen before its data, a
 * wake-up lost between "publish" and "wake", a barrier that lets a PE out early or signal counts
 * that drift between the pushed, mailbox and pulled forms of one slot all show as a wrong value
 * or a hang.
 *   1. broadcast from a rotating root, 8 B .. past the pushed form's limit, right after
 *      shmem_barrier_all (the OSU pattern: the root may push while the others still leave the
 *      barrier), on the world team and on the active-set slot;
 *   2. alltoall with no barrier at all between calls, into one dest that each PE poisons right
 *      before every call and checks right after it: a PE that wrote a peer's dest before the
 *      peer entered the call (while it still checked the previous result, or before its poison)
 *      shows as a wrong value. Block sizes cross the mailbox limit (1 KiB) and go up to 64 KiB,
 *      so mailbox and pushed calls follow each other on one slot.
 * Usage: coll_race [iterations]   (default 3000) */
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define AMAX_LONGS 8192 /* 64 KiB per block */
#define BMAX (512 * 1024)

static long psync[SHMEM_BCAST_SYNC_SIZE];
static long asyncs[2][SHMEM_ALLTOALL_SYNC_SIZE];
static unsigned long long job_seed;

/* The value of element i that PE pe sends in call `call` of kind `what`: fresh every call. */
static long value(int pe, long call, int what, size_t i) {
  unsigned long long s = job_seed ^ ((unsigned long long)pe << 48) ^
                         ((unsigned long long)call << 20) ^ ((unsigned long long)what << 17) ^
                         (unsigned long long)i;
  mpe_rand(&s);
  return (long)mpe_rand(&s);
}

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const long iters = argc > 1 ? atol(argv[1]) : 3000;
  char* bsrc = shmem_malloc(BMAX);
  char* bdst = shmem_malloc(BMAX);
  long* asrc = shmem_malloc(sizeof(long) * AMAX_LONGS * (size_t)n);
  long* adst = shmem_malloc(sizeof(long) * AMAX_LONGS * (size_t)n);
  unsigned long long* seed = shmem_malloc(sizeof(*seed));
  CHECK(bsrc && bdst && asrc && adst && seed, "shmem_malloc");
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < SHMEM_ALLTOALL_SYNC_SIZE; ++i) asyncs[0][i] = asyncs[1][i] = SHMEM_SYNC_VALUE;
  *seed = mpe_seed();
  shmem_barrier_all();
  job_seed = shmem_ulonglong_g(seed, 0);
  unsigned long long r = job_seed; /* the same sequence of sizes on every PE */
  static const size_t bsizes[] = {8, 8, 8, 64, 1024, 8192, 65536, 65536 + 8, BMAX};

  /* 1. broadcast right after a barrier */
  for (long k = 0; k < iters; ++k) {
    const int root = (int)(k % n);
    const size_t bytes = bsizes[mpe_rand(&r) % (sizeof(bsizes) / sizeof(bsizes[0]))];
    const int active_set = (int)(mpe_rand(&r) % 2);
    if (me == root) {
      for (size_t i = 0; i < bytes / 8; ++i) ((long*)bsrc)[i] = value(me, k, 1, i);
    }
    memset(bdst, 0x5a, bytes);
    shmem_barrier_all(); /* dest ready everywhere; the root's source written */
    if (active_set) {
      shmem_broadcast64(bdst, bsrc, bytes / 8, root, 0, 0, n, psync);
    } else {
      CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, bdst, bsrc, bytes, root) == 0, "broadcast rc");
    }
    /* The active-set form leaves the root's dest alone. */
    if (active_set && me == root) continue;
    for (size_t i = 0; i < bytes / 8; ++i) {
      CHECK(((long*)bdst)[i] == value(root, k, 1, i),
            "broadcast %ld (%s, %zu B from PE %d): long %zu is %ld", k,
            active_set ? "active set" : "team", bytes, root, i, ((long*)bdst)[i]);
    }
  }
  shmem_barrier_all();

  /* 2. alltoall, no barrier between calls */
  static const size_t asizes[] = {1, 1, 16, 128, 129, 1024, 4096, AMAX_LONGS};
  for (long k = 0; k < iters; ++k) {
    const size_t ne = asizes[mpe_rand(&r) % (sizeof(asizes) / sizeof(asizes[0]))];
    const int active_set = (int)(mpe_rand(&r) % 2);
    long* d = adst;
    for (size_t i = 0; i < ne * (size_t)n; ++i) asrc[i] = value(me, k, 2, i), d[i] = -7;
    if (active_set) {
      shmem_alltoall64(d, asrc, ne, 0, 0, n, asyncs[k % 2]);
    } else {
      CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, d, asrc, ne) == 0, "alltoall rc");
    }
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < ne; ++i) {
        CHECK(d[p * ne + i] == value(p, k, 2, (size_t)me * ne + i),
              "alltoall %ld (%s, %zu longs a block): block %d long %zu is %ld", k,
              active_set ? "active set" : "team", ne, p, i, d[p * ne + i]);
      }
    }
  }
  shmem_barrier_all();
  if (me == 0)
    printf("coll_race: %ld broadcasts and %ld alltoalls on %d PEs checked\n", iters, iters, n);
  shmem_free(seed);
  shmem_free(adst);
  shmem_free(asrc);
  shmem_free(bdst);
  shmem_free(bsrc);
  shmem_finalize();
  return 0;
}
