// The symmetric heap: H (this PE's memory, identical addresses on every PE) followed by the
// window W, whose slot s holds the memory of the s-th PE (in PE order, this PE counted) of this
// PE's mapping domain - the node-local PEs it maps, and the PEs of other nodes of its NVLink
// domain that it maps with fabric handles - at the same offsets as in that PE's own heap
// (DESIGN.md, The address space). H and W are one contiguous
// agreed range: [H | slot 0 | slot 1 | ... ], each part S bytes. A PE never maps its own slot:
// its own memory is addressed at H only, so no alias of it exists (DESIGN.md, virtual aliasing).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/heap/allocator.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/ipc/handle_exchange.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {

struct HeapConfig {
  size_t size = 0;        // S, the VA budget of one PE's heap
  size_t chunk_size = 0;  // the physical growth step (rounded to the provider's granularity)
  bool check_symmetry = false;
};

class SymmetricHeap {
 public:
  // Collective. mapped[p] says whether PE p's memory is mapped into our window (the transport
  // layer's choice; false for ourselves; a PE of another node only when every PE shares fabric
  // handles). fd_exchange may be null when no peer is mapped or the handles are fabric handles.
  static Result<std::unique_ptr<SymmetricHeap>> create(
      MemoryProvider& provider, Bootstrap& bootstrap, const Topology& topology,
      std::vector<bool> mapped, FdExchange* fd_exchange, const HeapConfig& config);
  ~SymmetricHeap();

  uintptr_t base() const { return base_; }
  size_t size() const { return size_; }
  uintptr_t window_base() const { return base_ + size_; }
  // The whole reserved range: H and the window's slots (the same size on every PE).
  size_t reserved_bytes() const { return size_ * (window_slots_ + 1); }
  size_t committed() const { return allocator_.committed(); }
  const std::vector<int32_t>& peer_slots() const { return peer_slot_; }
  HandleKind handle_kind() const { return handle_kind_; }
  bool checks_symmetry() const { return config_.check_symmetry; }

  bool contains(const void* p, size_t bytes) const {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    return a >= base_ && bytes <= size_ && a - base_ <= size_ - bytes;
  }
  // Where PE pe's copy of symmetric address sym is in our address space: sym itself for us, the
  // window alias for a mapped peer, nullptr for a peer that is not mapped.
  void* translate(const void* sym, int pe) const {
    if (pe == my_pe_) return const_cast<void*>(sym);
    int32_t slot = peer_slot_[pe];
    if (slot < 0) return nullptr;
    return reinterpret_cast<void*>(window_base() + static_cast<uintptr_t>(slot) * size_ +
                                   (reinterpret_cast<uintptr_t>(sym) - base_));
  }

  // Collective, with the same arguments on every PE (checked when check_symmetry is on: a
  // mismatch is reported on every PE, names the PEs and their arguments, and nothing is
  // allocated). `call` names the API call in messages. size 0 returns nullptr.
  Result<void*> allocate(size_t size, size_t alignment, const char* call);
  // Collective. ptr must be the start of a live block (nullptr: no action).
  Status free(void* ptr, const char* call);
  // Collective, same bytes on every PE: commits physical memory until at least `bytes` (capped
  // at the heap's size) are backed, so that allocations up to that never grow the heap.
  Status commit_at_least(size_t bytes, const char* call);
  // Size of the live block that starts at ptr.
  Result<size_t> block_size(const void* ptr) const;

  // Collective, same size and flags (0: none are defined) on every PE (always checked): the
  // application's own memory
  // [buf, buf + size) (provider.retain_mapped: for cuda, whole cuMemCreate allocations) is
  // mapped again into H, at the same offset on every PE, and every mapped peer's into its window
  // slot; returns that symmetric address. buf's own mapping stays the application's. Every PE
  // fails alike, naming the PEs and the first cause, when one cannot; nothing is left mapped.
  Result<void*> register_buffer(void* buf, size_t size, int flags, const char* call);
  // Collective: undoes register_buffer (sym: its result, size: the same size). The range of H
  // is reused by later registrations.
  Status unregister_buffer(void* sym, size_t size, const char* call);
  size_t registered_count() const { return registered_.size(); }

  // Called after every growth (the device state must learn the new committed size).
  void set_growth_listener(std::function<void()> listener) { on_growth_ = std::move(listener); }
  // Called during every growth, collectively, once the new memory [offset, offset + bytes) is
  // mapped on every PE and before anything may use it: the transport registers it with the
  // network and exchanges the keys in this same step. An error fails the growth.
  void set_region_hook(std::function<Status(uint64_t offset, size_t bytes)> hook) {
    region_hook_ = std::move(hook);
  }
  // Called on every PE after every growth, before the growth listener, with this PE's new chunk
  // and its offset in H (multicast regions bind it: runtime/heap/multicast_region.hpp).
  using ChunkListener = std::function<void(size_t offset, std::shared_ptr<PhysicalAllocation>)>;
  void set_chunk_listener(ChunkListener listener) { on_chunk_ = std::move(listener); }
  // This PE's own chunks so far, as (offset in H, memory), in growth order.
  std::vector<std::pair<size_t, std::shared_ptr<PhysicalAllocation>>> own_chunks() const;

 private:
  SymmetricHeap(MemoryProvider& provider, Bootstrap& bootstrap, const HeapConfig& config,
                std::shared_ptr<VirtualReservation> range, std::vector<int32_t> peer_slot,
                std::vector<int> mapped_peers, HandleExchange handles, HandleKind kind, int my_pe,
                size_t window_slots);
  Status grow(size_t bytes);
  // Collective: ok when every PE's `mine` is ok; else every PE gets the same error naming the
  // failed PEs, what they could not do (`what`, with one %s for "its"/"their") and the first
  // one's cause.
  Status agree_on_outcome(const Status& mine, const std::string& what,
                          const char* consequence = "no PE grew its heap");
  // Every mapped peer's pieces (their sizes: peer_sizes[p]) imported and mapped at `offset` of
  // the peer's slot, in order (into *peer_maps); ours exported. At most max_pieces per PE, the
  // same on every PE. Collective: a growth's new chunk (one piece) and a registered buffer's.
  // `exchanged` (optional) gets the time the handles had arrived (growth's info line).
  Status map_peer_pieces(const std::vector<std::shared_ptr<PhysicalAllocation>>& own,
                         const std::vector<std::vector<uint64_t>>& peer_sizes, size_t offset,
                         size_t max_pieces, uint64_t tag,
                         std::vector<std::unique_ptr<Mapping>>* peer_maps,
                         std::chrono::steady_clock::time_point* exchanged = nullptr);
  Status check_symmetric(const char* call, uint64_t op, uint64_t a, uint64_t b);

  MemoryProvider& provider_;
  Bootstrap& bootstrap_;
  HeapConfig config_;
  std::shared_ptr<VirtualReservation> range_;
  uintptr_t base_;
  size_t size_;
  std::vector<int32_t> peer_slot_;
  std::vector<int> mapped_peers_;
  HandleExchange handles_;
  HandleKind handle_kind_;
  int my_pe_;
  size_t window_slots_;
  Allocator allocator_;
  std::vector<std::unique_ptr<Mapping>> mappings_;  // own chunks and peers' chunks
  uint64_t growth_count_ = 0;
  uint64_t growth_attempts_ = 0;  // tags of the handle exchanges
  std::function<void()> on_growth_;
  std::function<Status(uint64_t, size_t)> region_hook_;
  ChunkListener on_chunk_;
  struct Registered {
    size_t offset;  // in H
    size_t size;
    std::vector<std::unique_ptr<Mapping>> maps;  // ours first, then the peers'
  };
  std::vector<Registered> registered_;
  std::map<size_t, size_t> holes_;  // offset -> size: unregistered ranges of H, reused
};

}  // namespace vshmem
