/* An NVSHMEM-style host program built against vshmem's nvshmem.h/nvshmemx.h: NVSHMEM's names,
 * NVSHMEM's constant values (comparisons, signal operations, init flags), its team barrier and
 * two-argument team_get_config, NVSHMEMX_TEAM_NODE, and NVSHMEM_SYMMETRIC_SIZE.
 *
 * argv[1]: how to start: "init" (nvshmem_init), "attr" (nvshmemx_init_attr(0, ...)), "uid"
 *          (nvshmemx_get_uniqueid + NVSHMEMX_INIT_WITH_UNIQUEID, the ID passed by file),
 *          "size_small" (NVSHMEM_SYMMETRIC_SIZE=64M is set: a 96 MiB allocation fails),
 *          "size_vshmem_wins" (VSHMEM_SYMMETRIC_SIZE=256M too: it succeeds).
 * argv[2] (optional): the number of simulated nodes the launcher made (NVSHMEMX_TEAM_NODE). */
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpe_check.h"

static void check_cmp_values(int me, unsigned long long* s) {
  int* ivar = (int*)nvshmem_malloc(sizeof(int));
  CHECK(ivar != NULL, "nvshmem_malloc failed");
  const int v = (int)(mpe_rand(s) % 100000) + 10;
  nvshmem_int_p(ivar, v, me);
  nvshmem_quiet();
  /* With NVSHMEM's values: GE is 5, LE is 3 (OpenSHMEM's are the other way round). */
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_GE, v) == 1, "GE v");
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_GE, v + 1) == 0, "GE v+1");
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_LE, v - 1) == 0, "LE v-1");
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_LE, v) == 1, "LE v");
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_LT, v) == 0, "LT v");
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_GT, v - 1) == 1, "GT v-1");
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_NE, v) == 0, "NE v");
  CHECK(nvshmem_int_test(ivar, NVSHMEM_CMP_EQ, v) == 1, "EQ v");
  nvshmem_int_wait_until(ivar, NVSHMEM_CMP_GE, v);
  nvshmem_barrier_all();
  nvshmem_free(ivar);
}

static void check_signals(int me, int n, unsigned long long* s) {
  enum { kWords = 257 };
  uint64_t* data = (uint64_t*)nvshmem_malloc(kWords * sizeof(uint64_t));
  uint64_t* sig = (uint64_t*)nvshmem_calloc(2, sizeof(uint64_t));
  CHECK(data != NULL && sig != NULL, "allocation failed");
  uint64_t mine[kWords], got[kWords];
  for (int i = 0; i < kWords; ++i) mine[i] = mpe_rand(s);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  /* Three rounds of ADD: the right neighbour waits for the count with NVSHMEM_CMP_EQ. */
  for (uint64_t round = 1; round <= 3; ++round) {
    nvshmem_uint64_put_signal(data, mine, kWords, &sig[0], 1, NVSHMEM_SIGNAL_ADD, right);
    uint64_t seen = nvshmem_signal_wait_until(&sig[0], NVSHMEM_CMP_EQ, round);
    CHECK(seen == round, "round %llu: signal %llu", (unsigned long long)round,
          (unsigned long long)seen);
    nvshmem_barrier(NVSHMEM_TEAM_WORLD);
  }
  sym_read(got, data, sizeof(got));
  uint64_t* theirs = (uint64_t*)nvshmem_malloc(kWords * sizeof(uint64_t));
  CHECK(theirs != NULL, "allocation failed");
  sym_write(theirs, mine, sizeof(mine));
  nvshmem_barrier_all();
  uint64_t expect[kWords];
  nvshmem_getmem(expect, theirs, sizeof(expect), left);
  CHECK(memcmp(got, expect, sizeof(got)) == 0, "the data from PE %d before its signal", left);
  /* SET with a fresh value (derived from the sender's random data, which the receiver knows by
   * now); waited for with NVSHMEM_CMP_GE. */
  const uint64_t value = (mine[0] >> 1) | 1, left_value = (expect[0] >> 1) | 1;
  nvshmem_putmem_signal(data, mine, 8, &sig[1], value, NVSHMEM_SIGNAL_SET, right);
  CHECK(nvshmem_signal_wait_until(&sig[1], NVSHMEM_CMP_GE, left_value) == left_value, "SET value");
  nvshmem_sync(NVSHMEM_TEAM_WORLD);
  nvshmem_free(theirs);
  nvshmem_free(sig);
  nvshmem_free(data);
}

static void check_teams_and_collectives(int me, int n, int nodes, unsigned long long* s) {
  nvshmem_team_config_t cfg = NVSHMEM_TEAM_CONFIG_INITIALIZER;
  cfg.num_contexts = -7;
  CHECK(nvshmem_team_get_config(NVSHMEM_TEAM_WORLD, &cfg) == 0 && cfg.num_contexts >= 0,
        "team_get_config: %d", cfg.num_contexts);
  /* The node team: launcher-made simulated nodes are blocks of consecutive PEs. */
  int node_size = 0, node_index = -1;
  for (int r = 0; r < n; ++r) {
    if ((long)r * nodes / n == (long)me * nodes / n) {
      if (r == me) node_index = node_size;
      ++node_size;
    }
  }
  CHECK(nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE) == node_size, "node team size %d, expected %d",
        nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE), node_size);
  CHECK(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) == node_index, "node team index");
  CHECK(nvshmem_team_translate_pe(NVSHMEMX_TEAM_NODE, node_index, NVSHMEM_TEAM_WORLD) == me,
        "translate");
  CHECK(nvshmem_barrier(NVSHMEMX_TEAM_NODE) == 0, "node barrier");

  nvshmem_team_t evens = NVSHMEM_TEAM_INVALID;
  CHECK(nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg, 0, &evens) == 0,
        "split");
  CHECK((me % 2 == 0) == (evens != NVSHMEM_TEAM_INVALID), "even membership");
  if (evens != NVSHMEM_TEAM_INVALID) {
    CHECK(nvshmem_barrier(evens) == 0, "team barrier");
    nvshmem_team_destroy(evens);
  }

  enum { kN = 64 };
  int* src = (int*)nvshmem_malloc(kN * sizeof(int));
  int* dst = (int*)nvshmem_malloc(kN * sizeof(int));
  CHECK(src != NULL && dst != NULL, "allocation failed");
  int mine[kN], all[kN], poison[kN];
  const unsigned long long seed = mpe_rand(s);
  for (int i = 0; i < kN; ++i) {
    poison[i] = -1;
    all[i] = 0;
  }
  /* Every PE derives every PE's data from a shared seed (broadcast first). */
  unsigned long long* shared = (unsigned long long*)nvshmem_malloc(sizeof(unsigned long long));
  CHECK(shared != NULL, "allocation failed");
  if (me == 0) sym_write(shared, &seed, sizeof(seed));
  nvshmem_barrier_all();
  unsigned long long root_seed = 0;
  nvshmem_getmem(&root_seed, shared, sizeof(root_seed), 0);
  for (int p = 0; p < n; ++p) {
    unsigned long long t = root_seed + (unsigned long long)p * 7919u;
    for (int i = 0; i < kN; ++i) {
      int v = (int)(mpe_rand(&t) % 1000);
      if (p == me) mine[i] = v;
      all[i] += v;
    }
  }
  sym_write(src, mine, sizeof(mine));
  sym_write(dst, poison, sizeof(poison));
  nvshmem_barrier_all();
  CHECK(nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, dst, src, kN) == 0, "sum_reduce");
  int got[kN];
  sym_read(got, dst, sizeof(got));
  CHECK(memcmp(got, all, sizeof(got)) == 0, "sum_reduce result");
  /* An atomic add from every PE to PE 0. */
  long* counter = (long*)nvshmem_calloc(1, sizeof(long));
  CHECK(counter != NULL, "allocation failed");
  nvshmem_long_atomic_fetch_add(counter, me + 1, 0);
  nvshmem_barrier_all();
  if (me == 0) {
    long c = nvshmem_long_g(counter, 0);
    CHECK(c == (long)n * (n + 1) / 2, "atomic total %ld", c);
  }
  nvshmem_barrier_all();
  nvshmem_free(counter);
  nvshmem_free(shared);
  nvshmem_free(dst);
  nvshmem_free(src);
}

/* The unique-ID start with NVSHMEM's names and flag value (NVSHMEMX_INIT_WITH_UNIQUEID is 8): the
 * ID goes from rank 0 to the others through a file named after vshmemrun's job id. */
static void uid_start(void) {
  const char* job = getenv("VSHMEM_JOB_ID");
  CHECK(job && getenv("VSHMEM_RANK") && getenv("VSHMEM_NPES"), "run me under vshmemrun");
  const int rank = atoi(getenv("VSHMEM_RANK")), nranks = atoi(getenv("VSHMEM_NPES"));
  char path[512], part[600];
  snprintf(path, sizeof(path), "%s/vshmem-nvuid-test-%s",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", job);
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) {
    CHECK(nvshmemx_get_uniqueid(&id) == 0, "nvshmemx_get_uniqueid");
    snprintf(part, sizeof(part), "%s.part", path);
    FILE* f = fopen(part, "wb");
    CHECK(f && fwrite(&id, sizeof(id), 1, f) == 1 && fclose(f) == 0, "write %s", part);
    CHECK(rename(part, path) == 0, "rename %s", path);
  } else {
    FILE* f = NULL;
    for (int i = 0; i < 6000 && f == NULL; ++i) {
      f = fopen(path, "rb");
      if (f == NULL) usleep(10000);
    }
    CHECK(f != NULL && fread(&id, sizeof(id), 1, f) == 1, "read %s", path);
    fclose(f);
  }
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  CHECK(nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr) == 0, "set_attr");
  CHECK(nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) == 0, "init with the unique ID");
  if (rank == 0) unlink(path);
  CHECK(nvshmem_my_pe() == rank && nvshmem_n_pes() == nranks, "PE %d of %d", nvshmem_my_pe(),
        nvshmem_n_pes());
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "init";
  const int nodes = argc > 2 ? atoi(argv[2]) : 1;
  CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_NOT_INITIALIZED, "status before init");
  if (strcmp(mode, "uid") == 0) {
    unsetenv("VSHMEM_SOCKET_ADDR"); /* the ID decides, not vshmemrun's contract */
    uid_start();
  } else if (strcmp(mode, "attr") == 0) {
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    CHECK(nvshmemx_init_attr(0, &attr) == 0, "nvshmemx_init_attr(0)");
  } else {
    nvshmem_init();
  }
  CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED, "status after init");
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  if (strncmp(mode, "size_", 5) == 0) {
    void* big = nvshmem_malloc(96u << 20);
    if (strcmp(mode, "size_small") == 0) {
      CHECK(big == NULL, "NVSHMEM_SYMMETRIC_SIZE=64M was not honoured: 96 MiB fit");
    } else {
      CHECK(big != NULL, "VSHMEM_SYMMETRIC_SIZE=256M did not take precedence");
      nvshmem_free(big);
    }
    nvshmem_finalize();
    return 0;
  }
  unsigned long long s = mpe_seed() ^ (unsigned long long)me * 0x9e3779b9u;
  check_cmp_values(me, &s);
  check_signals(me, n, &s);
  check_teams_and_collectives(me, n, nodes, &s);
  nvshmem_finalize();
  CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_NOT_INITIALIZED, "status after finalize");
  if (me == 0) printf("nvshmem_compat: %d PEs: OK\n", n);
  return 0;
}
