/* shmem_align honours every power-of-two alignment up to 1 GiB (the heap's base is only
 * granularity-aligned, so alignments above it must be of the address, not of the offset), the
 * address is the same on every PE, and the whole block is usable. Run with a heap budget that
 * leaves room for a 1 GiB-aligned block (SHMEM_SYMMETRIC_SIZE=3G). */
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  /* One fresh seed for the job, so that each PE can recompute what its left neighbour wrote. */
  unsigned long long* job_seed = shmem_malloc(sizeof *job_seed);
  CHECK(job_seed != NULL, "shmem_malloc");
  unsigned long long s0 = mpe_seed();
  sym_write(job_seed, &s0, sizeof s0);
  shmem_barrier_all();
  shmem_getmem(&s0, job_seed, sizeof s0, 0);
  /* An allocation of an odd size first, so that free space does not start at a round offset. */
  char* odd = shmem_malloc(4096 + 192);
  CHECK(odd != NULL, "shmem_malloc");
  const size_t bytes = 3 * 4096 + 40;
  unsigned char* mine = malloc(bytes);
  unsigned char* expect = malloc(bytes);
  unsigned char* got = malloc(bytes);
  const int left = (me + n - 1) % n;
  int tested = 0;
  for (size_t align = 1; align <= ((size_t)1 << 30); align <<= 1, ++tested) {
    unsigned char* p = shmem_align(align, bytes);
    CHECK(p != NULL, "shmem_align(%zu, %zu) returned NULL", align, bytes);
    CHECK((uintptr_t)p % align == 0, "shmem_align(%zu) returned %p, misaligned by %zu", align,
          (void*)p, (size_t)((uintptr_t)p % align));
    /* Same address on every PE and the whole block usable: each PE writes its own address and
     * fresh data into its right neighbour's block; the block's owner checks both. */
    unsigned long long sm = s0 ^ ((unsigned long long)me << 40) ^ align;
    unsigned long long sl = s0 ^ ((unsigned long long)left << 40) ^ align;
    for (size_t i = 0; i < bytes; ++i) {
      mine[i] = (unsigned char)mpe_rand(&sm);
      expect[i] = (unsigned char)mpe_rand(&sl);
    }
    const uintptr_t addr = (uintptr_t)p;
    memcpy(mine, &addr, sizeof addr);
    memcpy(expect, &addr, sizeof addr);
    shmem_putmem(p, mine, bytes, (me + 1) % n);
    shmem_barrier_all();
    memset(got, 0xa5, bytes);
    sym_read(got, p, bytes);
    uintptr_t theirs;
    memcpy(&theirs, got, sizeof theirs);
    CHECK(theirs == addr, "alignment %zu: PE %d's block is at %#lx, ours at %#lx", align, left,
          (unsigned long)theirs, (unsigned long)addr);
    CHECK(memcmp(expect, got, bytes) == 0, "alignment %zu: PE %d's data did not arrive intact",
          align, left);
    shmem_barrier_all();
    shmem_free(p);
  }
  shmem_free(odd);
  shmem_free(job_seed);
  free(mine);
  free(expect);
  free(got);
  shmem_barrier_all();
  if (me == 0) printf("align_large: %d alignments (1 B .. 1 GiB) on %d PEs OK\n", tested, n);
  shmem_finalize();
  return 0;
}
