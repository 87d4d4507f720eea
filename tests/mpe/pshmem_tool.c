/* A profiling tool as OpenSHMEM describes it: it defines a few shmem_* routines itself, counts
 * the calls and forwards them to pshmem_*. Built as a shared library that the test program links
 * before libvshmem (as a tool would be, or preloaded). */
#include <pshmem.h>

static long g_puts, g_barriers, g_mallocs, g_adds;

void shmem_putmem(void* dest, const void* source, size_t nelems, int pe) {
  ++g_puts;
  pshmem_putmem(dest, source, nelems, pe);
}
void shmem_barrier_all(void) {
  ++g_barriers;
  pshmem_barrier_all();
}
void* shmem_malloc(size_t size) {
  ++g_mallocs;
  return pshmem_malloc(size);
}
long shmem_long_atomic_fetch_add(long* dest, long value, int pe) {
  ++g_adds;
  return pshmem_long_atomic_fetch_add(dest, value, pe);
}

/* What the tool counted: puts, barriers, mallocs, fetch-adds. */
void pshmem_tool_counts(long counts[4]) {
  counts[0] = g_puts;
  counts[1] = g_barriers;
  counts[2] = g_mallocs;
  counts[3] = g_adds;
}
