/* A team split whose arguments differ between PEs, or are invalid on one PE only, fails on every
 * PE with a message instead of leaving the others waiting; the parent team stays usable. */
#include <string.h>

#include "mpe_check.h"

/* Runs a split of size 0 with stderr sent to a file, and returns what the call printed. */
static int split_size0_message(char* text, size_t cap, shmem_team_t* team) {
  FILE* log = tmpfile();
  CHECK(log != NULL, "tmpfile");
  fflush(stderr);
  const int saved = dup(2);
  dup2(fileno(log), 2);
  const int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 0, NULL, 0, team);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(log);
  const size_t got = fread(text, 1, cap - 1, log);
  text[got] = '\0';
  fclose(log);
  return rc;
}

int main(int argc, char** argv) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const char* what = argc > 1 ? argv[1] : "disagree";
  shmem_team_t team = SHMEM_TEAM_INVALID;
  int rc;
  if (strcmp(what, "size0") == 0) {
    /* A team has at least one member: the message says that size is the problem. */
    char text[4096];
    rc = split_size0_message(text, sizeof text, &team);
    CHECK(strstr(text, "size 0): size must be at least 1") != NULL,
          "the message must name the size: got \"%s\"", text);
    CHECK(strstr(text, "do not all lie") == NULL, "misleading message: \"%s\"", text);
  } else if (strcmp(what, "disagree") == 0) {
    /* PE 0 asks for every PE, the others for every second one. */
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, me == 0 ? 1 : 2, me == 0 ? n : (n + 1) / 2,
                                  NULL, 0, &team);
  } else {
    /* Invalid on the last PE only (a stride that leaves the parent team). */
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, me == n - 1 ? n : 1, 2, NULL, 0, &team);
  }
  CHECK(rc != 0 && team == SHMEM_TEAM_INVALID, "split must fail on every PE (rc %d)", rc);
  if (n > 1) {
    rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, me == 0 ? 1 : 2, NULL, 0, &team, NULL, 0, &team);
    CHECK(rc != 0, "split_2d with different xrange must fail on every PE (rc %d)", rc);
  }
  /* The parent team still works: a good split, a barrier over it, destroy. */
  shmem_team_t all = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &all) == 0, "good split");
  CHECK(shmem_team_n_pes(all) == n && shmem_team_my_pe(all) == me, "good split's shape");
  shmem_team_sync(all);
  shmem_team_destroy(all);
  shmem_barrier_all();
  if (me == 0) printf("team_args: %s OK\n", what);
  shmem_finalize();
  return 0;
}
