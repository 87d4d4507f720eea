/* VSHMEM_BIND (runtime/api/wait_policy.hpp): under vshmemrun every PE starts with the same
 * affinity mask; with VSHMEM_BIND=auto (argv[1] "auto"), when the PEs do not outnumber its CPUs,
 * shmem_init binds PE k to the k-th CPU of that mask (one node: the PE number is the rank on the
 * host), and a thread started afterwards inherits it; otherwise (argv[1] "none", one PE, or more
 * PEs than CPUs) the mask is left as it was. With argv[1] "spread" the PEs are put on two simulated
 * nodes (VSHMEM_NODE_ID, before shmem_init), so each also runs the remote path's progress thread:
 * PE k is bound to the k-th share of the mask (its CPUs divided by the PEs, consecutive), and
 * left alone when that share is under 2 CPUs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nth_cpu(const cpu_set_t* set, int n) {
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, set) && seen++ == n) return cpu;
  }
  return -1;
}

static void* child_mask(void* out) {
  sched_getaffinity(0, sizeof(cpu_set_t), (cpu_set_t*)out);
  return NULL;
}

static int launcher_int(const char* vshmem, const char* ompi) {
  const char* v = getenv(vshmem) ? getenv(vshmem) : getenv(ompi);
  return v ? atoi(v) : 0;
}

int main(int argc, char** argv) {
  const int spread = argc > 1 && strcmp(argv[1], "spread") == 0;
  const int expect_auto = argc > 1 && (strcmp(argv[1], "auto") == 0 || spread);
  if (spread) {
    const int rank = launcher_int("VSHMEM_RANK", "OMPI_COMM_WORLD_RANK");
    const int size = launcher_int("VSHMEM_NPES", "OMPI_COMM_WORLD_SIZE");
    setenv("VSHMEM_NODE_ID", rank < size / 2 ? "node-a" : "node-b", 1);
  }
  cpu_set_t before, after, child;
  if (sched_getaffinity(0, sizeof(before), &before) != 0) {
    perror("sched_getaffinity");
    return 1;
  }
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  sched_getaffinity(0, sizeof(after), &after);
  pthread_t t;
  CPU_ZERO(&child);
  pthread_create(&t, NULL, child_mask, &child);
  pthread_join(t, NULL);
  int failed = 0;
  const int share = spread ? CPU_COUNT(&before) / n : 1;
  if (expect_auto && n >= 2 && n <= CPU_COUNT(&before) && (!spread || share >= 2)) {
    int ok = CPU_COUNT(&after) == share;
    for (int k = 0; k < share; ++k) ok = ok && CPU_ISSET(nth_cpu(&before, me * share + k), &after);
    if (!ok) {
      fprintf(stderr,
              "PE %d: expected to be bound to the %d CPUs from CPU %d (of %d allowed, %d PEs), "
              "mask has %d CPUs\n",
              me, share, nth_cpu(&before, me * share), CPU_COUNT(&before), n, CPU_COUNT(&after));
      failed = 1;
    }
  } else if (!CPU_EQUAL(&before, &after)) {
    fprintf(stderr,
            "PE %d: affinity changed (%d CPUs before, %d after) with %s and %d PEs on %d CPUs\n",
            me, CPU_COUNT(&before), CPU_COUNT(&after), expect_auto ? "auto" : "none", n,
            CPU_COUNT(&before));
    failed = 1;
  }
  if (!CPU_EQUAL(&child, &after)) {
    fprintf(stderr, "PE %d: a thread started after shmem_init has another mask (%d CPUs, PE %d)\n",
            me, CPU_COUNT(&child), CPU_COUNT(&after));
    failed = 1;
  }
  static int failures; /* symmetric */
  shmem_int_atomic_add(&failures, failed, 0);
  shmem_barrier_all();
  const int total = shmem_int_atomic_fetch(&failures, 0);
  if (me == 0)
    printf("bind_cpu %s: %d PEs on %d CPUs, %d failures\n", argv[1], n, CPU_COUNT(&before), total);
  shmem_finalize();
  return total == 0 ? 0 : 1;
}
