// Which device collectives take the multicast path (impl/multimem.cuh): pure functions of what
// every PE of the team shares (the team's region, the call's arguments), so that all members
// choose alike. Plain C++ as well as CUDA: the host unit test tests/unit/mc_select_test.cpp
// checks the choices, since no machine of CI can run multimem.
#pragma once

#include <stdint.h>

#include "vshmem/shmem_types.h"

namespace vshmem::device {

// The multicast address of H for a team of team_size PEs of n_pes: the world's region (made at
// shmem_init) serves every team of all PEs; a smaller team has the region made at its split, or
// none (team_mc 0).
VSHMEM_HOSTDEV constexpr uint64_t mc_team_base(uint64_t world_mc, uint64_t team_mc, int team_size,
                                               int n_pes) {
  return team_size == n_pes ? world_mc : team_mc;
}

// Broadcast: the root stores its source into every member's dest with multimem.st of 4-byte
// words (16 where aligned).
VSHMEM_HOSTDEV constexpr bool mc_broadcast_ok(uint64_t mc, uint64_t dest, uint64_t source,
                                              uint64_t bytes) {
  return mc != 0 && ((dest | source | bytes) & 3) == 0;
}

// All-reduce: multimem.ld_reduce has the operation for the type, and dest is source (each element
// is read and written by its owner only) or disjoint from it.
VSHMEM_HOSTDEV constexpr bool mc_reduce_ok(uint64_t mc, bool op_supported, uint64_t dest,
                                           uint64_t source, uint64_t bytes) {
  return mc != 0 && op_supported &&
         (dest == source || dest + bytes <= source || source + bytes <= dest);
}

// Reduce-scatter: multimem.ld_reduce has the operation for the type (dest and source never
// overlap: the call refuses that first).
VSHMEM_HOSTDEV constexpr bool mc_reducescatter_ok(uint64_t mc, bool op_supported) {
  return mc != 0 && op_supported;
}

}  // namespace vshmem::device
