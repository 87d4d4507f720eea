// Per peer, how it is reached (DESIGN.md, transport). The memory and ipc layers say what they
// can do; this layer chooses:
//   kSelf    - our own memory, at its symmetric address;
//   kMapped  - the peer's memory is mapped in our window: loads, stores and atomics go straight
//              through the mapping (p2p);
//   kStaged  - not mappable (another node, or no P2P between the GPUs): a proxy moves the data.
//              The staged transport is not built yet: operations on such a peer fail with a
//              message saying so, and shmem_ptr returns NULL for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {

enum class PeerPath : uint8_t { kSelf, kMapped, kStaged };
const char* peer_path_name(PeerPath path);

struct TransportPlan {
  std::vector<PeerPath> path;  // per PE
  std::vector<bool> mapped() const;
  int n_mapped() const;
  bool all_mapped() const;  // every PE is self or mapped: node-local shared-memory algorithms work
};

// Collective. VSHMEM_DISABLE_P2P=1 forces every other PE onto the staged path (for tests).
Result<TransportPlan> plan_transports(Bootstrap& bootstrap, const Topology& topology,
                                      MemoryProvider& provider);

// The staged transport's entry points. Until the proxy exists they return a Status that names
// the peer and why it is unreachable.
Status staged_put(int pe, void* dest, const void* source, size_t bytes);
Status staged_get(int pe, void* dest, const void* source, size_t bytes);
Status staged_atomic(int pe, const AtomicRequest& request, uint64_t* result);

}  // namespace vshmem
