/* Bad input to the API groups of issue #3: each case must end the job with a message naming the
 * PE, the call and the cause (checked by WILL_FAIL_REGEX in api.cmake). */
#include <pthread.h>
#include <string.h>

#include "mpe_check.h"

static long* g_buf;

static void* use_private_ctx(void* ctx) {
  shmem_ctx_long_p((shmem_ctx_t)ctx, g_buf, 1, 0);
  return NULL;
}

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "";
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  long* buf = (long*)shmem_calloc(64, sizeof(long));
  uint64_t* sig = (uint64_t*)shmem_calloc(1, sizeof(uint64_t));
  shmem_barrier_all();
  if (!strcmp(c, "invalid_team")) {
    shmem_team_sync(SHMEM_TEAM_INVALID);
  } else if (!strcmp(c, "destroyed_team")) {
    shmem_team_t t;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0, "split");
    shmem_team_destroy(t);
    shmem_long_broadcast(t, buf, buf + 8, 1, 0);
  } else if (!strcmp(c, "ctx_pe_outside_team")) {
    shmem_team_t t;
    shmem_ctx_t ctx;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0, "split");
    CHECK(shmem_team_create_ctx(t, 0, &ctx) == 0, "ctx");
    shmem_ctx_long_p(ctx, buf, 1, shmem_team_n_pes(t));
  } else if (!strcmp(c, "root_outside_team")) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, buf, buf + 8, 4, npes);
  } else if (!strcmp(c, "overlap")) {
    shmem_long_fcollect(SHMEM_TEAM_WORLD, buf + 1, buf, 2);
  } else if (!strcmp(c, "sig_op")) {
    shmem_long_put_signal(buf, buf + 8, 1, sig, 1, 7, (me + 1) % npes);
  } else if (!strcmp(c, "cmp")) {
    shmem_long_wait_until(buf, 42, 0);
  } else if (!strcmp(c, "ivar_not_symmetric")) {
    long local = 0;
    shmem_long_wait_until(&local, SHMEM_CMP_NE, 0);
  } else if (!strcmp(c, "destroy_world")) {
    shmem_team_destroy(SHMEM_TEAM_WORLD);
  } else if (!strcmp(c, "clear_unheld_lock")) {
    shmem_clear_lock(buf);
  } else if (!strcmp(c, "private_ctx_other_thread")) {
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx");
    g_buf = buf;
    pthread_t th;
    pthread_create(&th, NULL, use_private_ctx, ctx);
    pthread_join(th, NULL);
  } else if (!strcmp(c, "broadcast_root_differs")) {
    /* PE 0 names another root than the others (run with VSHMEM_CHECK_SYMMETRY=1). */
    shmem_long_broadcast(SHMEM_TEAM_WORLD, buf, buf + 8, 4, me == 0 ? 1 : 0);
  } else if (!strcmp(c, "broadcast_count_differs")) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, buf, buf + 8, me == npes - 1 ? 3 : 4, 0);
  } else if (!strcmp(c, "garbage_ctx")) {
    /* Not a context at all (a stray pointer): a message, not a crash. */
    shmem_ctx_long_p((shmem_ctx_t)(buf + 3), buf, 1, 0);
  } else if (!strcmp(c, "active_set_outside")) {
    static long pSync[SHMEM_BARRIER_SYNC_SIZE];
    shmem_barrier(0, 1, npes, pSync);
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
