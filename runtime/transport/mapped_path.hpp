// The mapped path: ourselves and the peers whose memory is mapped into our window. A transfer is
// a translation (arithmetic on job-wide constants) and one provider call: memcpy / plain atomics
// on the host heap, the CUDA driver on the GPU heap. Its barrier is the node's shared host
// counters (HostSyncArea) when every PE of the job is mapped.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

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
        wakes_data_(sync_ != nullptr && !provider.is_device_memory()),
        // Registering must come before the first put: see wake_after_copy.
        wake_fence_(wakes_data_ && !prepare_copy_wakes()) {
    caps_ = kPathLoadStore | kPathRma | kPathNetworkAtomics;
    if (provider.is_device_memory()) caps_ |= kPathDeviceMemory;
    if (sync_ != nullptr) caps_ |= kPathNodeBarrier;
    const size_t n_pes = heap_.peer_slots().size();
    data_sleepers_.assign(n_pes, &kNobody);
    if (wakes_data_) {
      for (size_t pe = 0; pe < n_pes; ++pe) {
        const WakeWord w = sync_->data_wake_word(static_cast<int>(pe));
        if (w) data_sleepers_[pe] = w.sleepers;
      }
    }
  }
  const char* name() const override { return "p2p"; }

  // The provider's Status is returned as it is (built in place, not moved or rebuilt): on this
  // path, a few nanoseconds a put.
  Status put(int pe, void* dest, const void* source, size_t bytes) override {
    Status st = provider_.copy(heap_.translate(dest, pe), source, bytes);
    if (st) wake_data(pe);
    return st;
  }
  Status get(int pe, void* dest, const void* source, size_t bytes) override {
    return provider_.copy(dest, heap_.translate(source, pe), bytes);
  }
  Status atomic(int pe, const AtomicRequest& request, uint64_t* result) override {
    AtomicRequest r = request;
    r.address = heap_.translate(request.address, pe);
    Status st = provider_.atomic(r, result);
    if (st && request.op != AtomicOp::kFetch) wake_data(pe);
    return st;
  }
  // Copies and atomics through the mapping have completed when they return: ordering is a
  // memory barrier for this thread's own stores through shmem_ptr.
  Status fence() override {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Status::ok();
  }
  Status quiet() override {
    VSHMEM_RETURN_IF_ERROR(complete());
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Status::ok();
  }
  // quiet without its fence: the provider's own transfers complete
  // (Transport::quiet_before_release).
  Status complete() { return provider_.quiet(); }

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
  const bool wake_fence_;  // wakes_data_, and writers need the fence (no membarrier: host_wake.hpp)
  // Per PE, the sleeper count of its data wake word, found once here so that a put pays only its
  // load; kNobody (always 0) where puts wake nobody (GPU heap, PEs on other nodes).
  std::vector<const uint32_t*> data_sleepers_;
  static constexpr uint32_t kNobody = 0;

  // After a store into pe's heap: one load and a branch not taken when nobody sleeps on pe's data
  // word. The store and the load are ordered by the sleeper's membarrier, by this fence where it
  // is unavailable (host_wake.hpp).
  void wake_data(int pe) const {
    if (wake_fence_) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    if (__builtin_expect(__atomic_load_n(data_sleepers_[pe], __ATOMIC_SEQ_CST) != 0, 0)) {
      wake_sleepers(sync_->data_wake_word(pe));
    }
  }
};

}  // namespace vshmem
