/* The deadlock watch (runtime/api/deadlock.hpp), with VSHMEM_DEADLOCK_S=1:
 *   stuck     PE 0 waits for a value no PE will write, the others sit in a barrier: the job must
 *             end with a message naming every PE's call.
 *   reduce    PE 0 enters a reduction the others never call (they sit in a barrier): PE 0 in
 *             shmem_long_sum_reduce.
 *   locks     PEs 0 and 1 each hold one lock and wait for the other's: both in shmem_set_lock.
 *   computes  the last PE computes for 3 s outside vshmem before it writes what PE 0 waits for:
 *             not a deadlock (that PE is not blocked), the job must complete.
 *   stopped   the last PE is stopped (SIGSTOP, by a child process) in a wait whose condition PE 0
 *             then meets before it waits itself: every PE sits in a vshmem wait, but the stopped
 *             one will end its own once it runs again (SIGCONT, 4 s later): no verdict.
 *   thread    (SHMEM_THREAD_MULTIPLE) the last PE's main thread sits in the barrier while another
 *             of its threads sleeps 3 s, then writes what PE 0 waits for: every PE waits in
 *             vshmem, but a thread could still end a wait, so only a warning, and the job
 *             completes. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpe_check.h"

static long* flag;

static void* late_writer(void* arg) {
  (void)arg;
  sleep(3);
  shmem_long_p(flag, 42, 0);
  return NULL;
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "none";
  pthread_t writer;
  int threaded = strcmp(what, "thread") == 0;
  if (threaded) {
    int provided = 0;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
  } else {
    shmem_init();
  }
  int me = shmem_my_pe(), n = shmem_n_pes();
  CHECK(n >= 2, "the cases need 2 PEs or more, not %d", n);
  flag = (long*)shmem_calloc(1, sizeof(long));
  long* locks = (long*)shmem_calloc(2, sizeof(long));
  shmem_barrier_all();
  if (strcmp(what, "stuck") == 0) {
    if (me == 0) shmem_long_wait_until(flag, SHMEM_CMP_EQ, 42);
  } else if (strcmp(what, "reduce") == 0) {
    if (me == 0) shmem_long_sum_reduce(SHMEM_TEAM_WORLD, flag, locks, 1);
  } else if (strcmp(what, "locks") == 0) {
    if (me < 2) {
      shmem_set_lock(&locks[me]);
      shmem_sync_all(); /* the others join in the barrier below */
      shmem_set_lock(&locks[1 - me]);
    } else {
      shmem_sync_all();
    }
  } else if (strcmp(what, "computes") == 0) {
    if (me == n - 1) {
      sleep(3);
      shmem_long_p(flag, 42, 0);
    }
    if (me == 0) shmem_long_wait_until(flag, SHMEM_CMP_EQ, 42);
  } else if (strcmp(what, "stopped") == 0) {
    long* met = flag + 0; /* PE 0 -> last PE: its wait's condition */
    long* back = locks;   /* last PE -> PE 0, once it has run again */
    if (me == n - 1) {
      pid_t self = getpid();
      pid_t child = fork();
      CHECK(child >= 0, "fork");
      if (child == 0) {
        usleep(2500 * 1000); /* the wait below has published itself (about 1 s in) */
        kill(self, SIGSTOP);
        usleep(4000 * 1000);
        kill(self, SIGCONT);
        _exit(0);
      }
      shmem_long_wait_until(met, SHMEM_CMP_EQ, 1);
      shmem_long_p(back, 1, 0);
      CHECK(waitpid(child, NULL, 0) == child, "waitpid");
    } else if (me == 0) {
      sleep(3); /* the last PE is stopped by now */
      shmem_long_p(met, 1, n - 1);
      shmem_long_wait_until(back, SHMEM_CMP_EQ, 1);
    }
  } else if (threaded) {
    if (me == n - 1) CHECK(pthread_create(&writer, NULL, late_writer, NULL) == 0, "thread");
    if (me == 0) shmem_long_wait_until(flag, SHMEM_CMP_EQ, 42);
  }
  shmem_barrier_all();
  if (threaded && me == n - 1) pthread_join(writer, NULL);
  shmem_finalize();
  return 0;
}
