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
  // The members of SHMEM_TEAM_SHARED for this PE (ascending, ourselves included): the same set on
  // every member. See shared_team_of.
  std::vector<int> shared_team;
  // Node-local PEs, this one included, whose memory has the same locality token as ours (for
  // the cuda provider: PEs sharing our GPU).
  int same_locality_pes = 1;
};

// The PEs that share memory with `me`, as SHMEM_TEAM_SHARED needs them: a set every member
// computes identically. mapped[p * n + q] says p maps q (either direction counts only when
// both hold). It is the connected component of `me` in the mutual-mapping graph when that
// component is a clique (every pair maps each other, e.g. the PEs of a node on the host heap),
// else {me} alone: with peer access that is not transitive (GPU 0-1 and 1-2, not 0-2) the
// PEs would otherwise disagree on who is in the team.
std::vector<int> shared_team_of(const std::vector<uint8_t>& mapped, int n, int me);

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
