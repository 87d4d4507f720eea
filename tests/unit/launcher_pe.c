/* A real vshmem PE for the vshmemrun tests that need the runtime (launcher_test.cpp):
 *   drain TOKEN     every PE prints a line with TOKEN (no flush); PE 1 then exits with 3 while
 *                   the others wait in a barrier: vshmemrun must pass on every PE's line.
 *   react           PE 1 dies by SIGKILL; PE 0, which ignores SIGTERM, calls
 *                   shmem_global_exit(5) as soon as it sees PE 1 gone: PE 1 stays the first
 *                   failure, named, and its status is the job's.
 *   init_finalize   shmem_init, shmem_finalize.
 *   global_exit     shmem_init, shmem_global_exit(0). */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <shmem.h>

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  shmem_init();
  const int me = shmem_my_pe();
  if (strcmp(mode, "drain") == 0) {
    printf("PE %d says %s\n", me, argc > 2 ? argv[2] : "");
    if (me == 1) {
      usleep(200 * 1000);
      exit(3);
    }
    shmem_barrier_all();
    shmem_barrier_all();
    return 99;
  }
  if (strcmp(mode, "react") == 0) {
    long* pid1 = shmem_malloc(sizeof(long));
    if (me == 1) shmem_long_p(pid1, (long)getpid(), 0);
    if (me == 0) signal(SIGTERM, SIG_IGN);
    shmem_barrier_all();
    if (me == 1) raise(SIGKILL);
    if (me == 0) {
      int fd = (int)syscall(SYS_pidfd_open, (pid_t)*pid1, 0);
      if (fd >= 0) {
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 20000);
      }
      shmem_global_exit(5);
    }
    shmem_barrier_all();
    return 99;
  }
  if (strcmp(mode, "init_finalize") == 0) {
    shmem_finalize();
    return 0;
  }
  if (strcmp(mode, "global_exit") == 0) shmem_global_exit(0);
  fprintf(stderr, "launcher_pe: unknown mode '%s'\n", mode);
  return 98;
}
