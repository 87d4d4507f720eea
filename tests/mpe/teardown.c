/* shmem_finalize leaves no mappings, descriptors or sockets behind, and init works again. */
#include <dirent.h>
#include <string.h>

#include "mpe_check.h"

static int count_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static int count_heap_maps(void) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[512];
  int n = 0;
  while (fgets(line, sizeof(line), f)) n += strstr(line, "vshmem-heap") != NULL;
  fclose(f);
  return n;
}

static long vm_size_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "VmSize:", 7) == 0) kb = atol(line + 7);
  }
  fclose(f);
  return kb;
}

int main(void) {
  /* memfd mappings exist only on the host backend; the GPU heap's leak check is in tests/gpu. */
  const char* backend = getenv("VSHMEM_BACKEND");
  int host_backend = backend == NULL || strcmp(backend, "cuda") != 0;
  int fds_before = -1;
  long vm_before = -1;
  for (int cycle = 0; cycle < 3; ++cycle) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long* x = (long*)shmem_malloc(3 << 20);
    CHECK(x != NULL, "malloc in cycle %d", cycle);
    shmem_long_p(x, me + cycle, (me + 1) % n);
    shmem_barrier_all();
    CHECK(sym_long(x) == (me + n - 1) % n + cycle, "cycle %d", cycle);
    CHECK(!host_backend || count_heap_maps() > 0, "heap maps missing while initialized");
    shmem_free(x);
    shmem_finalize();
    CHECK(count_heap_maps() == 0, "%d heap mappings remain after finalize", count_heap_maps());
    /* The first cycle may leave what the bootstrap loads once (plugins, libraries). */
    if (cycle == 1) {
      fds_before = count_fds();
      vm_before = vm_size_kb();
    } else if (cycle == 2) {
      CHECK(count_fds() == fds_before, "descriptors: %d after cycle 2, %d after cycle 1",
            count_fds(), fds_before);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
      /* Not under a sanitizer (tests/tools/sanitize.sh): its own allocator maps memory for every
       * thread a cycle starts and keeps it. The heap's own mappings are counted above. */
      CHECK(vm_size_kb() <= vm_before + 1024, "address space grew from %ld to %ld kB", vm_before,
            vm_size_kb());
#else
      (void)vm_before;
#endif
    }
  }
  CHECK(shmem_my_pe() == -1, "shmem_my_pe after finalize");
  printf("teardown: OK\n");
  return 0;
}
