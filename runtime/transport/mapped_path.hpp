// The mapped path: ourselves and the peers whose memory is mapped into our window. A transfer is
// a translation (arithmetic on job-wide constants) and one provider call: memcpy / plain atomics
// on the host heap, the CUDA driver on the GPU heap. Its barrier is the node's shared host
// counters (HostSyncArea) when every PE of the job is mapped.
#pragma once

#include <atomic>
#include <memory>

#include "runtime/heap/symmetric_heap.hpp"
#include "runtime/transport/host_sync.hpp"
#include "runtime/transport/peer_path.hpp"

namespace vshmem {

class MappedPath final : public PeerPath {
 public:
  MappedPath(SymmetricHeap& heap, MemoryProvider& provider, std::unique_ptr<HostSyncArea> sync)
      : heap_(heap),
        provider_(provider),
        sync_(std::move(sync)),
        wakes_data_(sync_ != nullptr && !provider.is_device_memory()) {
    caps_ = kPathLoadStore | kPathRma | kPathNetworkAtomics;
    if (provider.is_device_memory()) caps_ |= kPathDeviceMemory;
    if (sync_ != nullptr) caps_ |= kPathNodeBarrier;
    if (wakes_data_) prepare_copy_wakes();  // before the first put: see wake_after_copy
  }
  const char* name() const override { return "p2p"; }

  Status put(int pe, void* dest, const void* source, size_t bytes) override {
    VSHMEM_RETURN_IF_ERROR(provider_.copy(heap_.translate(dest, pe), source, bytes));
    wake_data(pe);
    return Status::ok();
  }
  Status get(int pe, void* dest, const void* source, size_t bytes) override {
    return provider_.copy(dest, heap_.translate(source, pe), bytes);
  }
  Status atomic(int pe, const AtomicRequest& request, uint64_t* result) override {
    AtomicRequest r = request;
    r.address = heap_.translate(request.address, pe);
    VSHMEM_RETURN_IF_ERROR(provider_.atomic(r, result));
    if (request.op != AtomicOp::kFetch) wake_data(pe);
    return Status::ok();
  }
  // Copies and atomics through the mapping have completed when they return: ordering is a
  // memory barrier for this thread's own stores through shmem_ptr.
  Status fence() override {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Status::ok();
  }
  Status quiet() override {
    VSHMEM_RETURN_IF_ERROR(provider_.quiet());
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Status::ok();
  }

  // Null unless every PE of the job is mapped (one node).
  HostSyncArea* node_barrier() const { return sync_.get(); }

  // What a wait for a change of PE pe's heap made by other PEs may sleep on: pe's data wake
  // word, which every put and atomic through this path wakes after its store (host_wake.hpp).
  // Empty (the wait must poll) unless every write to the heap goes through here: one node (a
  // remote PE's put would not wake it) and a host heap (GPU kernels write a GPU heap directly).
  // Stores through shmem_ptr do not wake either: a sleep is bounded (Backoff) so they are seen.
  WakeWord data_wake_word(int pe) const {
    return wakes_data_ ? sync_->data_wake_word(pe) : WakeWord{};
  }

 private:
  SymmetricHeap& heap_;
  MemoryProvider& provider_;
  std::unique_ptr<HostSyncArea> sync_;
  const bool wakes_data_;  // data_wake_word() is not empty

  // After a store into pe's heap: one load when nobody sleeps on pe's data word (no fence where
  // membarrier is available: host_wake.hpp).
  void wake_data(int pe) const {
    if (wakes_data_) wake_after_copy(sync_->data_wake_word(pe));
  }
};

}  // namespace vshmem
