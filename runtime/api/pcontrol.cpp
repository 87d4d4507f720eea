// shmem_pcontrol: the profiling hook of OpenSHMEM. vshmem has no profiling layer; tools that
// interpose on the symbol see the call, and the level is kept and logged for them.
#include <atomic>

#include "runtime/api/runtime.hpp"
#include "shmem.h"

namespace {
std::atomic<int> g_profiling_level{1};  // the specification's default level
}

extern "C" void shmem_pcontrol(int level, ...) {
  int previous = g_profiling_level.exchange(level);
  if (previous != level) VSHMEM_INFO("shmem_pcontrol: profiling level %d -> %d", previous, level);
}
