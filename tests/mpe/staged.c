/* Peers on another node (simulated with VSHMEM_NODE_ID) are not mapped: shmem_ptr is NULL for
 * them, barriers still reach them (over the bootstrap), node-local RMA works, and RMA to a remote
 * PE fails with a message naming the PE and the reason. */
#include <string.h>

#include "mpe_check.h"

static int rank_from_launcher(void) {
  const char* names[] = {"VSHMEM_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"};
  for (int i = 0; i < 3; ++i) {
    const char* v = getenv(names[i]);
    if (v) return atoi(v);
  }
  return 0;
}

int main(int argc, char** argv) {
  /* PEs 0..n/2-1 on node "a", the rest on node "b". */
  const char* npes_env =
      getenv("VSHMEM_NPES") ? getenv("VSHMEM_NPES") : getenv("OMPI_COMM_WORLD_SIZE");
  int n_expected = npes_env ? atoi(npes_env) : 1;
  int r = rank_from_launcher();
  setenv("VSHMEM_NODE_ID", r < n_expected / 2 ? "node-a" : "node-b", 1);
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  int half = n / 2;
  long* x = (long*)shmem_malloc(sizeof(long) * (size_t)n);
  CHECK(x != NULL, "malloc");
  for (int p = 0; p < n; ++p) {
    int same = (p < half) == (me < half);
    CHECK((shmem_ptr(x, p) != NULL) == same, "shmem_ptr to PE %d (same node: %d)", p, same);
    CHECK(shmem_pe_accessible(p) == same, "pe_accessible(%d)", p);
  }
  for (int i = 0; i < 50; ++i) shmem_barrier_all();
  /* Node-local RMA still works. */
  int buddy = me < half ? (me + 1) % (half ? half : 1) : half + (me - half + 1) % (n - half);
  shmem_long_p(&x[me], me * 10 + 1, buddy);
  shmem_barrier_all();
  int from = me < half ? (me + half - 1) % half : half + (me - half + n - half - 1) % (n - half);
  long got = sym_long(&x[from]);
  CHECK(got == from * 10 + 1, "node-local put from PE %d: %ld", from, got);
  shmem_barrier_all();
  if (argc > 1 && strcmp(argv[1], "remote_put") == 0 && me == 0) {
    shmem_long_p(&x[0], 1, n - 1); /* PE n-1 is on the other node */
  }
  shmem_barrier_all();
  if (me == 0) printf("staged: %d PEs on 2 simulated nodes OK\n", n);
  shmem_finalize();
  return 0;
}
