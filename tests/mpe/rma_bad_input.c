/* Bad RMA input: each case must end the job with a message naming the PE, the call and the cause
 * (WILL_FAIL_REGEX in rma_bad_input.cmake), never a crash or silent corruption. */
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "";
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  unsigned long long seed = mpe_seed();
  long* buf = (long*)shmem_malloc(64 * sizeof(long));
  for (int i = 0; i < 64; ++i) buf[i] = (long)(mpe_rand(&seed) | 1);
  const long before = buf[7];
  shmem_barrier_all();
  if (!strcmp(c, "iput_stride_wraps")) {
    /* (nelems - 1) * dst + 1 elements wraps to 0 bytes: the second element would land 8 bytes
     * before dest, in the neighbouring object. */
    long src[2] = {(long)mpe_rand(&seed), (long)mpe_rand(&seed)};
    if (me == 0) shmem_long_iput(buf + 8, src, (ptrdiff_t)((1ull << 61) - 1), 1, 2, npes - 1);
  } else if (!strcmp(c, "iget_stride_wraps")) {
    long dst[2];
    if (me == 0) shmem_long_iget(dst, buf + 8, 1, (ptrdiff_t)((1ull << 61) - 1), 2, npes - 1);
  } else if (!strcmp(c, "ptr_past_committed")) {
    /* Past the committed heap nothing is backed: no PE's copy is accessible there. */
    char* past = (char*)buf + (256 << 20);
    for (int p = 0; p < npes; ++p) {
      CHECK(shmem_ptr(past, p) == NULL, "shmem_ptr(%p, %d) = %p", (void*)past, p,
            shmem_ptr(past, p));
      CHECK(!shmem_addr_accessible(past, p), "shmem_addr_accessible(%p, %d)", (void*)past, p);
      CHECK(shmem_ptr(buf + 63, p) != NULL || p != me, "shmem_ptr(buf + 63, me) is NULL");
      CHECK(shmem_addr_accessible(buf + 63, p), "buf + 63 is not accessible on PE %d", p);
    }
  } else if (!strcmp(c, "put_null_source")) {
    if (me == 0) shmem_long_put(buf, NULL, 4, npes - 1);
  } else if (!strcmp(c, "get_null_dest")) {
    if (me == 0) shmem_getmem(NULL, buf, 16, npes - 1);
  } else if (!strcmp(c, "put_past_committed")) {
    /* Inside the heap's VA budget (1G by default) but beyond what is committed (32M chunks). */
    if (me == 0) shmem_long_p((long*)((char*)buf + (256 << 20)), 1, npes - 1);
  } else if (!strcmp(c, "get_past_committed_self")) {
    if (me == 0) CHECK(shmem_long_g((long*)((char*)buf + (256 << 20)), 0) != 1, "read");
  }
  shmem_barrier_all();
  CHECK(buf[7] == before, "buf[7] was overwritten: %ld instead of %ld", buf[7], before);
  shmem_free(buf);
  shmem_finalize();
  return 0;
}
