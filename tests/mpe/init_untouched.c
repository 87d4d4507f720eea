/* shmem_init's own objects in a new host heap (the device synchronization area and the teams'
 * pool, 1-3 MiB) are not cleared by shmem_init: the heap's new memory reads as zero, so a
 * host-only program does not fault in the pages of objects it never uses. Counts the resident
 * pages (mincore) of the heap's first mapping, which holds them, right after shmem_init and an
 * allocation that nothing writes: what shmem_init and its closing barrier wrote.
 * Usage: init_untouched MAX_RESIDENT_KIB */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "mpe_check.h"

/* The bounds [*lo, *hi) of the mapping that holds addr (/proc/self/maps); 0 where none does. */
static int mapping_of(uintptr_t addr, uintptr_t* lo, uintptr_t* hi) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return 0;
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, maps) != NULL) {
    unsigned long l = 0, h = 0;
    found = sscanf(line, "%lx-%lx", &l, &h) == 2 && l <= addr && addr < h;
    if (found) {
      *lo = l;
      *hi = h;
    }
  }
  fclose(maps);
  return found;
}

/* Whether the kernel may back a memfd with transparent huge pages (a write then makes 2 MiB
 * resident, and the count below means nothing): the selected mode of shmem_enabled. */
static int shmem_huge_pages(void) {
  FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
  if (f == NULL) return 0;
  char modes[256] = "";
  const int got = fgets(modes, sizeof modes, f) != NULL;
  fclose(f);
  return got && (strstr(modes, "[always]") != NULL || strstr(modes, "[within_size]") != NULL ||
                 strstr(modes, "[force]") != NULL);
}

int main(int argc, char** argv) {
  shmem_init();
  if (shmem_huge_pages()) {
    printf("PE %d: skipped: shmem_enabled gives memfds transparent huge pages\n", shmem_my_pe());
    shmem_finalize();
    return 77;
  }
  const long max_kib = argc > 1 ? atol(argv[1]) : 64;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  char* first = shmem_malloc(1);
  CHECK(first != NULL, "shmem_malloc(1) returned NULL");
  uintptr_t start = 0, end = 0;
  CHECK(mapping_of((uintptr_t)first, &start, &end), "no mapping in /proc/self/maps holds %p",
        (void*)first);
  /* The test means something only if the mapping can hold shmem_init's objects. */
  CHECK(end - start >= (4u << 20), "the heap's first mapping has only %lu KiB",
        (unsigned long)((end - start) >> 10));
  const size_t pages = (end - start) / page;
  unsigned char* resident = malloc(pages);
  CHECK(resident != NULL, "malloc");
  CHECK(mincore((void*)start, end - start, resident) == 0, "mincore: %s", strerror(errno));
  size_t n = 0;
  for (size_t i = 0; i < pages; ++i) n += resident[i] & 1;
  printf("PE %d: %zu of %zu pages resident in the heap's first mapping\n", shmem_my_pe(), n, pages);
  CHECK(n * page <= (size_t)max_kib << 10,
        "%zu KiB of the heap's first %zu KiB resident after shmem_init (at most %ld KiB expected)",
        n * page >> 10, pages * page >> 10, max_kib);
  free(resident);
  shmem_free(first);
  shmem_finalize();
  return 0;
}
