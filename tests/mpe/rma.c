/* Put/get for every RMA type, sizes from 1 byte to beyond a growth chunk (1 MiB in this test),
 * unaligned offsets, strided and non-blocking forms; identical addresses on all PEs. */
#include <string.h>

#include "mpe_check.h"

static unsigned long long seed;

#define TEST_TYPE(NAME, TYPE)                                                                     \
  static void test_##NAME(int me, int n) {                                                        \
    const size_t count = 257;                                                                     \
    TYPE* sym = (TYPE*)shmem_malloc(count * sizeof(TYPE));                                        \
    CHECK(sym != NULL, "malloc");                                                                 \
    TYPE src[257], back[257];                                                                     \
    unsigned long long s = seed ^ (unsigned long long)(me * 7919 + sizeof(TYPE));                 \
    for (size_t i = 0; i < count; ++i) {                                                          \
      unsigned long long r = mpe_rand(&s);                                                        \
      memcpy(&src[i], &r, sizeof(TYPE) < sizeof(r) ? sizeof(TYPE) : sizeof(r));                   \
    }                                                                                             \
    memset(back, 0xa5, sizeof(back));                                                             \
    sym_write(sym, back, count * sizeof(TYPE));                                                   \
    memset(back, 0x5a, sizeof(back));                                                             \
    shmem_barrier_all();                                                                          \
    int right = (me + 1) % n, left = (me + n - 1) % n;                                            \
    shmem_##NAME##_put(sym, src, count, right);                                                   \
    shmem_barrier_all();                                                                          \
    /* What arrived from the left is what the left PE would have generated. */                    \
    shmem_##NAME##_get(back, sym, count, right); /* = what I sent */                              \
    CHECK(memcmp(back, src, sizeof(src)) == 0, "%s put/get round trip (seed %llu)", #NAME, seed); \
    TYPE one = src[3];                                                                            \
    shmem_barrier_all();                                                                          \
    shmem_##NAME##_p(&sym[count - 1], one, left);                                                 \
    shmem_barrier_all();                                                                          \
    TYPE got = shmem_##NAME##_g(&sym[count - 1], left);                                           \
    CHECK(memcmp(&got, &one, sizeof(TYPE) == 16 ? 10 : sizeof(TYPE)) == 0, "%s p/g", #NAME);      \
    /* Strided: every third element of src to every second element of the target. */              \
    shmem_barrier_all();                                                                          \
    memset(back, 0x5a, sizeof(back));                                                             \
    shmem_##NAME##_iput(sym, src, 2, 3, 50, right);                                               \
    shmem_barrier_all();                                                                          \
    shmem_##NAME##_iget(back, sym, 1, 2, 50, right);                                              \
    for (size_t i = 0; i < 50; ++i) {                                                             \
      CHECK(memcmp(&back[i], &src[3 * i], sizeof(TYPE)) == 0, "%s iput/iget at %zu", #NAME, i);   \
    }                                                                                             \
    CHECK(memcmp(&back[50], &((TYPE*)memset(&one, 0x5a, sizeof(one)))[0], sizeof(TYPE)) == 0,     \
          "%s iget wrote past its end", #NAME);                                                   \
    shmem_barrier_all();                                                                          \
    shmem_##NAME##_put_nbi(sym, src, count, right);                                               \
    shmem_quiet();                                                                                \
    shmem_barrier_all();                                                                          \
    shmem_##NAME##_get_nbi(back, sym, count, right);                                              \
    shmem_quiet();                                                                                \
    CHECK(memcmp(back, src, sizeof(src)) == 0, "%s nbi round trip", #NAME);                       \
    shmem_free(sym);                                                                              \
  }
VSHMEM_RMA_TYPES(TEST_TYPE)

#define RUN_TYPE(NAME, TYPE) test_##NAME(me, n);

static void test_sizes(int me, int n) {
  /* 1 byte to 3 MiB (beyond the 1 MiB chunk), at unaligned offsets. */
  const size_t sizes[] = {1, 2, 3, 7, 8, 15, 64, 1000, 4093, 65536, 1 << 20, 3 << 20};
  const size_t max = (3 << 20) + 64;
  char* sym = (char*)shmem_malloc(max);
  char* local = (char*)malloc(max);
  char* back = (char*)malloc(max);
  CHECK(sym && local && back, "allocation");
  unsigned long long s = seed ^ (unsigned long long)me;
  for (size_t i = 0; i < max; ++i) local[i] = (char)mpe_rand(&s);
  int target = (me + 1) % n;
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
    size_t off = (k * 13) % 61;
    memset(back, 0x33, max);
    shmem_barrier_all();
    shmem_putmem(sym + off, local + k, sizes[k], target);
    shmem_barrier_all();
    shmem_getmem(back + off, sym + off, sizes[k], target);
    CHECK(memcmp(back + off, local + k, sizes[k]) == 0, "size %zu offset %zu (seed %llu)", sizes[k],
          off, seed);
    CHECK(back[off + sizes[k]] == 0x33 && (off == 0 || back[off - 1] == 0x33),
          "getmem of %zu bytes wrote outside its buffer", sizes[k]);
  }
  shmem_free(sym);
  free(local);
  free(back);
}

static void test_identical_addresses(int me, int n) {
  void* a = shmem_malloc(12345);
  long* seen = (long*)shmem_malloc(sizeof(long) * (size_t)n);
  CHECK(a && seen, "malloc");
  long mine = (long)(intptr_t)a;
  for (int p = 0; p < n; ++p) shmem_long_put(&seen[me], &mine, 1, p);
  shmem_barrier_all();
  for (int p = 0; p < n; ++p) {
    long got = sym_long(&seen[p]);
    CHECK(got == mine, "PE %d got address %lx, I got %lx", p, got, mine);
    /* On simulated nodes (VSHMEM_NODE_ID) the other node's PEs are reachable by RMA only. */
    CHECK(shmem_ptr(a, p) != NULL || getenv("VSHMEM_NODE_ID") != NULL,
          "shmem_ptr to node-local PE %d is NULL", p);
    CHECK(shmem_pe_accessible(p) && shmem_addr_accessible(a, p), "PE %d accessible", p);
  }
  CHECK(shmem_ptr(a, me) == a, "shmem_ptr(me) must be the address itself");
  CHECK(!shmem_addr_accessible(&mine, 0), "a stack address is not symmetric");
  shmem_barrier_all();
  shmem_free(seen);
  shmem_free(a);
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long s0 = (long)mpe_seed();
  long* sbuf = (long*)shmem_malloc(sizeof(long));
  /* Through a shmem call: on the GPU heap host code cannot dereference symmetric memory. */
  if (me == 0) shmem_long_p(sbuf, s0, 0);
  shmem_barrier_all();
  seed = (unsigned long long)shmem_long_g(sbuf, 0);
  test_identical_addresses(me, n);
  VSHMEM_RMA_TYPES(RUN_TYPE)
  test_sizes(me, n);
  shmem_barrier_all();
  int major, minor;
  char name[SHMEM_MAX_NAME_LEN];
  shmem_info_get_version(&major, &minor);
  shmem_info_get_name(name);
  CHECK(major == 1 && minor == 5 && strlen(name) > 0, "version %d.%d name %s", major, minor, name);
  if (me == 0) printf("rma: %d PEs OK (seed %llu)\n", n, seed);
  shmem_free(sbuf);
  shmem_finalize();
  return 0;
}
