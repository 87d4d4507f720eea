/* Collective allocations whose arguments differ between PEs (one node, without
 * VSHMEM_CHECK_SYMMETRY): every PE must get NULL, and the heap must stay laid out alike on every
 * PE, so that the next agreed allocation lands at the same address everywhere.
 *   size      shmem_malloc: PE 0 asks for twice the others' size
 *   alignment shmem_align: PE 0 asks for 128 bytes of alignment, the others 4096
 *   calloc    shmem_calloc: PE 0 asks for 3 elements, the others 2 */
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "size";
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  uintptr_t* seen = (uintptr_t*)shmem_calloc((size_t)n, sizeof(uintptr_t));
  CHECK(seen != NULL, "agreed calloc");
  void* p = NULL;
  if (strcmp(what, "size") == 0) {
    p = shmem_malloc(me == 0 ? 8192 : 4096);
  } else if (strcmp(what, "alignment") == 0) {
    p = shmem_align(me == 0 ? 128 : 4096, 64);
  } else if (strcmp(what, "calloc") == 0) {
    p = shmem_calloc(me == 0 ? 3 : 2, 64);
  }
  CHECK(p == NULL, "PE %d got %p from a call whose arguments differ between PEs", me, p);
  /* The heap is still alike everywhere: an agreed allocation has the same address on every PE
   * (the heap is at the same virtual address on every PE). */
  void* q = shmem_malloc(1000);
  CHECK(q != NULL, "agreed malloc after the refused one");
  uintptr_t mine = (uintptr_t)q;
  shmem_putmem(&seen[me], &mine, sizeof(mine), 0);
  shmem_barrier_all();
  if (me == 0) {
    for (int pe = 1; pe < n; ++pe) {
      CHECK(seen[pe] == seen[0], "PE %d's agreed object is at %#lx, PE 0's at %#lx", pe,
            (unsigned long)seen[pe], (unsigned long)seen[0]);
    }
  }
  shmem_free(q);
  shmem_finalize();
  return 0;
}
