// Per peer, how it is reached (DESIGN.md, transport). The memory and ipc layers say what they
// can do; this layer chooses, and gives every PE one PeerPath:
//   kSelf    - our own memory, at its symmetric address (the mapped path);
//   kMapped  - the peer's memory is mapped in our window: loads, stores and atomics go straight
//              through the mapping (mapped_path.hpp). A peer of our node (P2P, POSIX FD handles)
//              or of another node of our NVLink domain (same cluster UUID and clique: fabric
//              handles, runtime/memory/fabric_domain.hpp);
//   kRemote  - not mappable (another node, or no P2P between the GPUs): the remote path, UCX
//              loaded as a plugin (remote_path.hpp); shmem_ptr returns NULL for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cstring>
#include <memory>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/heap/symmetric_heap.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/memory/memory.hpp"
#include "runtime/transport/mapped_path.hpp"
#include "runtime/transport/remote_path.hpp"
#include "runtime/transport/static_path.hpp"

namespace vshmem {

enum class PathKind : uint8_t { kSelf, kMapped, kRemote };
const char* path_kind_name(PathKind kind);

struct TransportPlan {
  std::vector<PathKind> path;  // per PE
  std::vector<bool> mapped() const;
  int n_mapped() const;
  bool all_mapped() const;  // every PE is self or mapped: node-local shared-memory algorithms work
  std::vector<bool> remote() const;
  // Some pair of PEs in the job (not necessarily us) uses the remote path: the same on every PE,
  // so that the remote path's collective set-up is entered by all PEs or by none.
  bool job_has_remote = false;
  // The members of SHMEM_TEAM_SHARED for this PE (ascending, ourselves included): the same set on
  // every member. See shared_team_of.
  std::vector<int> shared_team;
  // Per PE: mapped through the NVLink fabric (a PE of another node of our NVLink domain).
  std::vector<bool> over_fabric;
  // Every PE of the job is on one node: node-local host memory (HostSyncArea) can serve them all.
  bool one_node = true;
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

// Collective. VSHMEM_DISABLE_P2P=1 forces every other PE onto the remote path (for tests). PEs of
// other nodes are mapped when both are in one NVLink domain and every PE of the job can share
// fabric handles (the heap uses one handle kind for all: symmetric_heap.cpp).
Result<TransportPlan> plan_transports(Bootstrap& bootstrap, const Topology& topology,
                                      MemoryProvider& provider);

// The paths of one PE to every PE of the job, chosen by the plan. Owns the mapped path (ourselves
// and the mapped peers) and, when some pair of PEs is remote, the remote path. The api layer asks
// path(pe) and dispatches; what is local to this PE (reading its own memory, the barrier it can
// use) is asked here too, so that the api never tests backends or transports itself.
class Transport {
 public:
  // Collective over every PE (the node barrier's handle exchange, the remote path's set-up).
  // fd_exchange may be null when no peer is mapped. statics (the program's global and static
  // variables) must outlive the transport. In a job of several PEs the remote path is loaded
  // also when every peer maps (if UCX is there): other PEs' global and static variables are
  // reached through it.
  static Result<std::unique_ptr<Transport>> create(Bootstrap& bootstrap, const TransportPlan& plan,
                                                   MemoryProvider& provider, SymmetricHeap& heap,
                                                   FdExchange* fd_exchange,
                                                   const DataSegment& statics);
  ~Transport();

  PeerPath& path(int pe) const { return *path_[static_cast<size_t>(pe)]; }
  // The path for a symmetric object at addr (in the heap or a global/static variable).
  PeerPath& path(int pe, const void* addr) const {
    // One unsigned compare on the RMA fast path (the caller checked the whole range).
    if (reinterpret_cast<uintptr_t>(addr) - static_base_ < static_size_) return *static_path_;
    return path(pe);
  }
  const DataSegment& statics() const { return *statics_; }
  // Another PE's global and static variables can be reached (the remote path is loaded).
  bool statics_reach_peers() const { return static_path_->reaches_peers(); }
  MappedPath& mapped() const { return *mapped_; }
  RemotePath* remote() const { return remote_.get(); }
  // The remote path when every other PE is reached through it (none maps our memory): then every
  // write to our memory by another PE arrives over the network, and a long wait may sleep until
  // the network has a message for us (Backoff). Null otherwise.
  RemotePath* sole_writers_path() const { return sole_writers_path_; }

  // shmem_fence / shmem_quiet over every path this PE uses.
  Status fence();
  Status quiet();
  // quiet less the mapped path's fence, for a caller whose next step is a release store (or a
  // stronger write) that every peer concerned acquires before it goes on: that store orders this
  // thread's earlier stores before it (plain stores, `rep movsb`, the C library's non-temporal
  // copies, which it fences itself), and the fence would only order the caller's later loads,
  // which its own acquire orders. The arrival at shmem_barrier_all's node barrier.
  Status quiet_before_release();

  // One atomic read of a word of our own heap that peers update (waits, signals, counters).
  // width is 2, 4 or 8. A PE that waits lets the remote path move meanwhile.
  Status read_own(const void* addr, unsigned width, uint64_t* value) {
    if (progress_on_wait_) remote_->progress();
    // Global and static variables are host memory whatever the heap is.
    if (host_memory_ || statics_->contains(addr, width)) {
      switch (width) {
        case 2:
          *value = __atomic_load_n(static_cast<const uint16_t*>(addr), __ATOMIC_ACQUIRE);
          return Status::ok();
        case 4:
          *value = __atomic_load_n(static_cast<const uint32_t*>(addr), __ATOMIC_ACQUIRE);
          return Status::ok();
        default:
          *value = __atomic_load_n(static_cast<const uint64_t*>(addr), __ATOMIC_ACQUIRE);
          return Status::ok();
      }
    }
    return read_own_device(addr, width, value);
  }
  // The host's own loads and stores reach the heap (and, through the window, the mapped peers'
  // heaps): ordinary host memory, not GPU memory.
  bool host_loads_reach_heap() const { return host_memory_; }
  // Copies between local buffers, either of which may be heap memory (GPU memory on the cuda
  // backend).
  Status copy_local(void* dst, const void* src, size_t bytes) {
    if (host_memory_ || (statics_->contains(dst, bytes) && statics_->contains(src, bytes))) {
      std::memcpy(dst, src, bytes);
      return Status::ok();
    }
    return provider_.copy(dst, src, bytes);
  }

  // How the job-wide host barrier runs on this PE: over the node's shared host counters (every
  // PE mapped), over counters in the heap that peers update with atomics (the host can poll its
  // heap cheaply), or through the bootstrap (a GPU heap with remote peers: polling it from the
  // host would launch GPU work for every poll).
  enum class BarrierKind { kNodeShared, kHeapCounters, kBootstrap };
  BarrierKind barrier_kind() const { return barrier_kind_; }

  // Called by the heap after it grew (collective): the remote path registers the new memory.
  Status add_region(uint64_t offset, size_t bytes);

 private:
  Transport(MemoryProvider& provider) : provider_(provider) {}
  Status read_own_device(const void* addr, unsigned width, uint64_t* value);

  MemoryProvider& provider_;
  bool host_memory_ = true;
  // Waiting PEs move the network: some peer's heap is reached through the remote path (when only
  // the global and static variables use it, the progress thread is enough).
  bool progress_on_wait_ = false;
  const DataSegment* statics_ = nullptr;
  uintptr_t static_base_ = 0;  // statics_'s, kept here for path()
  size_t static_size_ = 0;
  std::unique_ptr<StaticPath> static_path_;
  BarrierKind barrier_kind_ = BarrierKind::kHeapCounters;
  std::unique_ptr<MappedPath> mapped_;
  std::unique_ptr<RemotePath> remote_;
  std::vector<PeerPath*> path_;  // per PE
  RemotePath* sole_writers_path_ = nullptr;
};

}  // namespace vshmem
