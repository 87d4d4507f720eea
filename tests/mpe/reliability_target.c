/* The program tests/reliability.sh stops or kills: every PE prints its pid and the phase it is
 * in (flushed), and PE 1 then sleeps in that phase, so that the script can hit it there while the
 * others are inside the runtime:
 *   init     PE 1 has not called shmem_init yet; the others are in it
 *   barrier  the others are in shmem_barrier_all
 *   wait     the others are in shmem_long_wait_until on a word PE 1 never sets
 *   growth   the others are in a shmem_malloc that grows the heap (collective)
 *   transfer the others put 4 MiB blocks to the next PE and quiet, over and over
 * Nothing ends by itself: the script's signal must end the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <shmem.h>

static void say(const char* phase, int pe) {
  printf("reliability: PE %d pid %d phase %s\n", pe, (int)getpid(), phase);
  fflush(stdout);
}

int main(int argc, char** argv) {
  const char* phase = argc > 1 ? argv[1] : "barrier";
  const char* rank_env = getenv("VSHMEM_RANK");
  if (rank_env == NULL) rank_env = getenv("OMPI_COMM_WORLD_RANK");
  const int early_rank = rank_env != NULL ? atoi(rank_env) : -1;
  if (strcmp(phase, "init") == 0) {
    say("init", early_rank);
    if (early_rank == 1) sleep(600);
    shmem_init();
    sleep(600);
    return 0;
  }
  shmem_init();
  const int me = shmem_my_pe();
  long* word = shmem_calloc(1, sizeof(long));
  const size_t block = 4u << 20;
  char* data = strcmp(phase, "transfer") == 0 ? shmem_malloc(block) : NULL;
  shmem_barrier_all();
  say(phase, me);
  if (me == 1) sleep(600);
  if (strcmp(phase, "barrier") == 0) {
    shmem_barrier_all();
  } else if (strcmp(phase, "wait") == 0) {
    shmem_long_wait_until(word, SHMEM_CMP_NE, 0);
  } else if (strcmp(phase, "transfer") == 0) {
    const int n = shmem_n_pes();
    for (;;) {
      shmem_putmem(data, data, block, (me + 1) % n);
      shmem_quiet();
    }
  } else if (strcmp(phase, "growth") == 0) {
    /* A growth that fails returns NULL on every PE: the program ends, as a real one would. */
    if (shmem_malloc(256u << 20) == NULL) return 1;
  }
  sleep(600);
  return 0;
}
