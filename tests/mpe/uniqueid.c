/* The unique-ID start (shmemx_get_uniqueid + SHMEMX_INIT_WITH_UNIQUEID): the launcher only
 * starts processes, the ID travels by the application's own means, and vshmem's bootstrap
 * variables are ignored. Built twice: with UID_WITH_MPI the ID goes through MPI_Bcast (MPI is
 * used for nothing else); without, rank 0 writes it to a file named after the job that the other
 * processes poll (rank and size come from vshmemrun's VSHMEM_RANK / VSHMEM_NPES, standing for
 * whatever a job script would pass).
 *
 * Argument "nodes K": the processes claim K simulated nodes (VSHMEM_NODE_ID=sim<rank*K/n>), so
 * that peers on other "nodes" take the staged transport. Two starts run in a row (init, work,
 * finalize, a fresh ID, init again), each checking ranks, SHMEMX_TEAM_NODE and a put ring with
 * fresh random data. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <shmemx.h>

#include "mpe_check.h"

#ifdef UID_WITH_MPI
#include <mpi.h>
#endif

static int g_rank, g_nranks;

/* The ID goes from process `writer` to all others. */
static void share_id(shmemx_uniqueid_t* id, int round, int writer) {
#ifdef UID_WITH_MPI
  (void)round;
  MPI_Bcast(id, (int)sizeof(*id), MPI_BYTE, writer, MPI_COMM_WORLD);
#else
  const char* job = getenv("VSHMEM_JOB_ID");
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  CHECK(job != NULL, "run me under vshmemrun (VSHMEM_JOB_ID names the ID's file)");
  char path[512], part[600];
  snprintf(path, sizeof(path), "%s/vshmem-uid-test-%s-%d", tmp, job, round);
  if (g_rank == writer) {
    snprintf(part, sizeof(part), "%s.part", path);
    FILE* f = fopen(part, "wb");
    CHECK(f != NULL && fwrite(id, sizeof(*id), 1, f) == 1 && fclose(f) == 0, "write %s: %s", part,
          strerror(errno));
    CHECK(rename(part, path) == 0, "rename to %s: %s", path, strerror(errno));
    return;
  }
  for (int i = 0; i < 6000; ++i) { /* 60 s */
    FILE* f = fopen(path, "rb");
    if (f != NULL) {
      size_t n = fread(id, sizeof(*id), 1, f);
      fclose(f);
      CHECK(n == 1, "short unique ID file %s", path);
      return;
    }
    usleep(10000);
  }
  CHECK(0, "rank 0 never wrote %s", path);
#endif
}

static void remove_id(int round, int writer) {
#ifndef UID_WITH_MPI
  if (g_rank != writer) return;
  char path[512];
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(path, sizeof(path), "%s/vshmem-uid-test-%s-%d", tmp, getenv("VSHMEM_JOB_ID"), round);
  unlink(path);
#else
  (void)round;
  (void)writer;
#endif
}

static void one_start(int round, int nodes) {
  shmemx_uniqueid_t id = SHMEMX_UNIQUEID_INITIALIZER;
  if (g_rank == 0) CHECK(shmemx_get_uniqueid(&id) == 0, "shmemx_get_uniqueid failed");
  share_id(&id, round, 0);
  shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
  CHECK(shmemx_set_attr_uniqueid_args(g_rank, g_nranks, &id, &attr) == 0, "set_attr failed");
  CHECK(shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr) == 0, "round %d: init failed", round);
  remove_id(round, 0);

  const int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(me == g_rank && n == g_nranks, "round %d: PE %d of %d, expected %d of %d", round, me, n,
        g_rank, g_nranks);
  /* The node team: the ranks of this simulated node, in world order. */
  int node_size = 0, node_index = -1;
  for (int r = 0; r < n; ++r) {
    if ((long)r * nodes / n == (long)me * nodes / n) {
      if (r == me) node_index = node_size;
      ++node_size;
    }
  }
  CHECK(shmem_team_n_pes(SHMEMX_TEAM_NODE) == node_size, "node team has %d PEs, expected %d",
        shmem_team_n_pes(SHMEMX_TEAM_NODE), node_size);
  CHECK(shmem_team_my_pe(SHMEMX_TEAM_NODE) == node_index, "node team index %d, expected %d",
        shmem_team_my_pe(SHMEMX_TEAM_NODE), node_index);

  enum { kWords = 1000 };
  uint64_t* box = shmem_malloc(kWords * sizeof(uint64_t));
  CHECK(box != NULL, "shmem_malloc failed");
  uint64_t poison[kWords], mine[kWords], got[kWords], expect[kWords];
  for (int i = 0; i < kWords; ++i) poison[i] = 0xdeadbeefdeadbeefull;
  sym_write(box, poison, sizeof(poison));
  shmem_barrier_all();
  unsigned long long s = mpe_seed() ^ (unsigned long long)me;
  for (int i = 0; i < kWords; ++i) mine[i] = mpe_rand(&s);
  shmem_putmem(box, mine, sizeof(mine), (me + 1) % n);
  shmem_barrier_all();
  /* What the left neighbour sent: ask it (a get) and compare with what landed here. */
  const int left = (me + n - 1) % n;
  uint64_t* theirs = shmem_malloc(kWords * sizeof(uint64_t));
  CHECK(theirs != NULL, "shmem_malloc failed");
  sym_write(theirs, mine, sizeof(mine));
  shmem_barrier_all();
  shmem_getmem(expect, theirs, sizeof(expect), left);
  sym_read(got, box, sizeof(got));
  CHECK(memcmp(got, expect, sizeof(got)) == 0, "round %d: the put from PE %d did not arrive", round,
        left);
  shmem_free(theirs);
  shmem_free(box);
  shmem_finalize();
}

/* Bad starts fail at once on every process, with a message, instead of waiting: an ID nobody
 * made (all zeros), and an ID made by a process that is not rank 0. */
static int bad_starts(void) {
  shmemx_uniqueid_t id = SHMEMX_UNIQUEID_INITIALIZER;
  shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
  CHECK(shmemx_set_attr_uniqueid_args(g_rank, g_nranks, &id, &attr) == 0, "set_attr failed");
  CHECK(shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr) != 0, "a zero ID was accepted");
  CHECK(shmemx_set_attr_uniqueid_args(g_nranks, g_nranks, &id, &attr) != 0,
        "rank == nranks was accepted");
  if (g_nranks > 1) {
    if (g_rank == 1) CHECK(shmemx_get_uniqueid(&id) == 0, "shmemx_get_uniqueid failed");
    share_id(&id, 7, 1);
    CHECK(shmemx_set_attr_uniqueid_args(g_rank, g_nranks, &id, &attr) == 0, "set_attr failed");
    if (g_rank <= 1) {
      CHECK(shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr) != 0,
            "rank %d started from an ID that rank 1 made", g_rank);
    }
    remove_id(7, 0); /* its only reader, rank 0, has read it */
  }
  if (g_rank == 0) printf("uniqueid: bad starts refused: OK\n");
  return 0;
}

int main(int argc, char** argv) {
  int nodes = 1;
  if (argc > 2 && strcmp(argv[1], "nodes") == 0) nodes = atoi(argv[2]);
  const int bad = argc > 1 && strcmp(argv[1], "bad") == 0;
#ifdef UID_WITH_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
#else
  CHECK(getenv("VSHMEM_RANK") && getenv("VSHMEM_NPES"), "run me under vshmemrun");
  g_rank = atoi(getenv("VSHMEM_RANK"));
  g_nranks = atoi(getenv("VSHMEM_NPES"));
#endif
  /* vshmem's own launcher contract must not matter: the ID decides. */
  unsetenv("VSHMEM_SOCKET_ADDR");
  setenv("VSHMEM_BOOTSTRAP", "pmix", 1);
  if (nodes > 1) {
    char id[32];
    snprintf(id, sizeof(id), "sim%ld", (long)g_rank * nodes / g_nranks);
    setenv("VSHMEM_NODE_ID", id, 1);
    setenv("VSHMEM_STAGED_ADDR", "127.0.0.1", 1);
  }
  if (bad) return bad_starts();
  for (int round = 0; round < 2; ++round) one_start(round, nodes);
  if (g_rank == 0) printf("uniqueid: %d PEs, %d node(s), 2 starts: OK\n", g_nranks, nodes);
#ifdef UID_WITH_MPI
  MPI_Finalize();
#endif
  return 0;
}
