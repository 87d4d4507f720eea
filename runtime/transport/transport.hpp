// Per peer, how it is reached (DESIGN.md, transport). The memory and ipc layers say what they
// can do; this layer chooses:
//   kSelf    - our own memory, at its symmetric address;
//   kMapped  - the peer's memory is mapped in our window: loads, stores and atomics go straight
//              through the mapping (p2p);
//   kStaged  - not mappable (another node, or no P2P between the GPUs): the peer's proxy thread
//              moves the data over TCP (staged_transport.hpp); shmem_ptr returns NULL for it.
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
  std::vector<bool> staged() const;
  // Some pair of PEs in the job (not necessarily us) uses the staged path: the same on every PE,
  // so that the staged transport's collective set-up is entered by all PEs or by none.
  bool job_has_staged = false;
};

// Collective. VSHMEM_DISABLE_P2P=1 forces every other PE onto the staged path (for tests).
Result<TransportPlan> plan_transports(Bootstrap& bootstrap, const Topology& topology,
                                      MemoryProvider& provider);

class StagedTransport;

// The staged transport's entry points: dest / source (put, get) and request.address (atomic) are
// symmetric addresses. transport is null when this PE has no staged peer (an error then).
Status staged_put(StagedTransport* transport, int pe, void* dest, const void* source, size_t bytes);
Status staged_get(StagedTransport* transport, int pe, void* dest, const void* source, size_t bytes);
Status staged_atomic(StagedTransport* transport, int pe, const AtomicRequest& request,
                     uint64_t* result);

}  // namespace vshmem
