// Multi-node NVLink domains: which PEs of other nodes share this PE's NVLink fabric (same cluster
// UUID and clique id in the GPU's fabric info) and so could map each other's memory through
// fabric handles, and whether this process can use fabric handles at all (an IMEX channel).
// Plain data and decisions only: the provider fills the identity, the layers above choose.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/common/status.hpp"

namespace vshmem {

// Trivially copyable: exchanged between PEs with an allgather.
struct FabricIdentity {
  uint32_t usable = 0;  // fabric info present, registration complete, fabric handles exportable
  uint32_t clique_id = 0;
  uint8_t cluster_uuid[16] = {};
};

// The IMEX channel fabric handles need: Ok when `dir` holds a channel device this process can
// open; else kUnsupported naming the directory and what is missing.
Status check_imex_channel(const std::string& dir);

// For each PE: true when PE p is on another node of the same NVLink domain as `me` (both usable,
// same cluster UUID, same clique): its memory can be mapped with fabric handles. False for `me`,
// for PEs of our own node (the POSIX FD path maps those) and for everyone else (remote path).
std::vector<bool> fabric_peers(const std::vector<FabricIdentity>& identity,
                               const std::vector<int>& node_of_pe, int me);

}  // namespace vshmem
