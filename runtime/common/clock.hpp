// The clock of the host-side waits and of what they publish for the node's other PEs, and the
// CPU pause of their spins.
#pragma once

#include <time.h>

#include <cstdint>

namespace vshmem {

// CLOCK_MONOTONIC in nanoseconds: the same in every process of a node (the deadlock watch
// compares the start of waits across PEs).
inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// One turn of a spin loop: tells the processor that this thread only polls.
inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace vshmem
