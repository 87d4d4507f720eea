#include <shmem.h>
#include <stdio.h>

int main(void) {
  shmem_init();
  int* x = shmem_malloc(sizeof(int));
  shmem_int_p(x, shmem_my_pe(), (shmem_my_pe() + 1) % shmem_n_pes());
  shmem_barrier_all();
  int ok = *x == (shmem_my_pe() + shmem_n_pes() - 1) % shmem_n_pes();
  if (shmem_my_pe() == 0) printf("consumer: %s\n", ok ? "OK" : "WRONG");
  shmem_free(x);
  shmem_finalize();
  return ok ? 0 : 1;
}
