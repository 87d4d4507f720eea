/* The symmetric heap: growth across chunks (1 MiB here), free/realloc reuse, calloc, align,
 * malloc(0), and a request beyond the budget (64 MiB here) returning NULL with a message. */
#include <string.h>

#include "mpe_check.h"

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  unsigned long long s = mpe_seed() ^ (unsigned long long)me;

  /* Growth: many allocations past several chunks, each readable by the right neighbour. */
  enum { kBlocks = 12 };
  char* blocks[kBlocks];
  size_t sizes[kBlocks];
  for (int i = 0; i < kBlocks; ++i) {
    sizes[i] = (size_t)(300 * 1024) * (size_t)(i % 4 + 1);
    blocks[i] = (char*)shmem_malloc(sizes[i]);
    CHECK(blocks[i] != NULL, "block %d", i);
    CHECK(((uintptr_t)blocks[i] & 63) == 0, "alignment");
    for (size_t k = 0; k < sizes[i]; k += 4096) {
      char c = (char)(me + i + k / 4096);
      sym_write(&blocks[i][k], &c, 1);
    }
  }
  shmem_barrier_all();
  int right = (me + 1) % n;
  for (int i = 0; i < kBlocks; ++i) {
    for (size_t k = 0; k < sizes[i]; k += 4096 * 7) {
      char c = shmem_char_g(&blocks[i][k], right);
      CHECK(c == (char)(right + i + k / 4096), "block %d byte %zu read %d", i, k, c);
    }
  }
  /* Free and reuse: the same request after a free gets the same address (deterministic). */
  char* again_before = blocks[5];
  shmem_free(blocks[5]);
  blocks[5] = (char*)shmem_malloc(sizes[5]);
  CHECK(blocks[5] == again_before, "freed block not reused: %p vs %p", (void*)blocks[5],
        (void*)again_before);

  /* realloc keeps the contents and the symmetry. */
  long* r = (long*)shmem_malloc(100 * sizeof(long));
  long keep[100], now[100];
  for (int i = 0; i < 100; ++i) keep[i] = (long)mpe_rand(&s);
  sym_write(r, keep, sizeof(keep));
  r = (long*)shmem_realloc(r, 5000 * sizeof(long));
  CHECK(r != NULL, "realloc");
  sym_read(now, r, sizeof(now));
  CHECK(memcmp(now, keep, sizeof(keep)) == 0, "realloc lost data");
  long v = (long)mpe_rand(&s);
  shmem_long_p(&r[4999], v, right);
  shmem_barrier_all();
  CHECK(shmem_long_g(&r[4999], right) == v, "realloc'ed object not symmetric");
  r = (long*)shmem_realloc(r, 10 * sizeof(long));
  CHECK(r != NULL, "realloc");
  sym_read(now, r, 10 * sizeof(long));
  CHECK(memcmp(now, keep, 10 * sizeof(long)) == 0, "shrinking realloc lost data");
  shmem_free(r);

  /* calloc zeroes (after the memory was dirtied by earlier objects). */
  int* z = (int*)shmem_calloc(50000, sizeof(int));
  CHECK(z != NULL, "calloc");
  int* zl = (int*)malloc(50000 * sizeof(int));
  sym_read(zl, z, 50000 * sizeof(int));
  for (int i = 0; i < 50000; ++i) CHECK(zl[i] == 0, "calloc not zero at %d", i);
  free(zl);
  CHECK(shmem_calloc((size_t)1 << 62, 16) == NULL, "overflowing calloc must fail");

  void* a = shmem_align(1 << 16, 100);
  CHECK(a != NULL && ((uintptr_t)a & 0xffff) == 0, "shmem_align");
  CHECK(shmem_malloc(0) == NULL, "malloc(0) returns NULL");
  CHECK(shmem_align(3, 64) == NULL, "alignment 3 must fail");

  /* Beyond the budget: NULL, not a crash; the heap still works afterwards. */
  CHECK(shmem_malloc((size_t)128 << 20) == NULL, "a 128 MiB request in a 64 MiB heap");
  void* after = shmem_malloc(4096);
  CHECK(after != NULL, "heap unusable after a failed request");

  shmem_free(after);
  shmem_free(a);
  shmem_free(z);
  for (int i = 0; i < kBlocks; ++i) shmem_free(blocks[i]);
  shmem_barrier_all();
  if (me == 0) printf("heap: %d PEs OK\n", n);
  shmem_finalize();
  return 0;
}
