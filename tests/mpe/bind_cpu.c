/* VSHMEM_BIND (runtime/api/wait_policy.hpp): under vshmemrun every PE starts with the same
 * affinity mask; with VSHMEM_BIND=auto (argv[1] "auto"), when the PEs do not outnumber its CPUs,
 * shmem_init binds PE k to the k-th CPU of that mask (one node: the PE number is the rank on the
 * host), and a thread started afterwards inherits it; otherwise (argv[1] "none", one PE, or more
 * PEs than CPUs) the mask is left as it was. argv[2] "nodes": the PEs are on several (simulated)
 * nodes of this host, which binds them only where the CPUs are scarce (fewer than 4 a PE). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <shmem.h>
#include <stdio.h>
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

int main(int argc, char** argv) {
  const int expect_auto = argc > 1 && strcmp(argv[1], "auto") == 0;
  const int several_nodes = argc > 2 && strcmp(argv[2], "nodes") == 0;
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
  const int scarce = !several_nodes || CPU_COUNT(&before) < 4 * n;
  if (expect_auto && n >= 2 && n <= CPU_COUNT(&before) && scarce) {
    const int want = nth_cpu(&before, me);
    if (CPU_COUNT(&after) != 1 || !CPU_ISSET(want, &after)) {
      fprintf(stderr,
              "PE %d: expected to be bound to CPU %d (of %d allowed, %d PEs), mask has %d CPUs\n",
              me, want, CPU_COUNT(&before), n, CPU_COUNT(&after));
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
