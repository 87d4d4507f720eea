// Barrier counters in host memory shared by the PEs of a node, whatever the heap is made of.
//
// The job-wide host barrier needs counters that every PE can update atomically and that a PE
// can poll cheaply. When the heap is GPU memory, polling it from the host launches GPU work for
// every poll (it competes with the application's kernels), and a bootstrap barrier has a time
// limit that a long computation between two barriers must not hit. A one-page memfd per PE,
// shared with the node-local peers through the handle exchange, serves both backends: plain
// host atomics, no GPU traffic, no time limit.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/memory/memory.hpp"
#include "runtime/transport/host_wake.hpp"

namespace vshmem {

class HostSyncArea {
 public:
  static constexpr int kCounters = 64;
  static constexpr size_t kWakeOffset = 1024;  // bytes into the page
  // The data wake word: woken by every put and atomic into the PE's heap through the mapped path
  // (what shmem_wait_until, shmem_signal_wait_until and the lock sleep on). Apart from the
  // barrier's word, so that the data a collective moves does not wake the collective's waits.
  static constexpr size_t kDataWakeOffset = 1088;
  static_assert(kCounters * sizeof(uint64_t) + 64 <= kWakeOffset);
  static_assert(kWakeOffset + 64 <= kDataWakeOffset);
  // The gathered barrier (sync.cpp) uses PE 0's page only: the last two counters (arrivals, and
  // the epoch PE 0 releases), which the dissemination barrier's rounds (one counter each, from
  // the first) never reach, and the release wake word, which every waiting member sleeps on.
  static constexpr int kArrivedCounter = kCounters - 1;
  static constexpr int kReleaseCounter = kCounters - 2;
  static constexpr size_t kReleaseWakeOffset = 1152;
  static_assert(kDataWakeOffset + 64 <= kReleaseWakeOffset);
  // What the PE is blocked in, for the deadlock watch (runtime/api/deadlock.hpp): written by its
  // own long waits, read by PE 0. owner is 0 while no wait of the PE is published; a reader takes
  // since_ns, flags and call between two equal reads of owner.
  struct WaitRecord {
    std::atomic<uint64_t> owner;     // the publishing wait's token; 0: none
    std::atomic<uint64_t> since_ns;  // when that wait began (CLOCK_MONOTONIC, node-wide)
    std::atomic<uint64_t> flags;     // kWaitCertain: nothing but a vshmem call can end it
    char call[40];                   // the call that waits, NUL-terminated
  };
  static constexpr uint64_t kWaitCertain = 1;
  static constexpr size_t kWaitRecordOffset = 2048;
  static_assert(kReleaseWakeOffset + 64 <= kWaitRecordOffset);
  static_assert(kWaitRecordOffset + sizeof(WaitRecord) <= 4096);
  static_assert(std::atomic<uint64_t>::is_always_lock_free);
  // The arguments of the PE's collective allocations (runtime/api/heap_api.cpp), two slots by
  // the call's number: written before the call's closing barrier, read by the node's PEs after
  // it. A PE cannot write the slot again before every peer has read it: that takes the next
  // call's barrier, which each peer reaches only after its reads.
  struct AllocRecord {
    std::atomic<uint64_t> number;  // the PE's count of collective allocations, this one included
    std::atomic<uint64_t> size;
    std::atomic<uint64_t> alignment;
    std::atomic<uint64_t> pad;
  };
  static constexpr size_t kAllocRecordOffset = 2176;
  static_assert(kWaitRecordOffset + sizeof(WaitRecord) <= kAllocRecordOffset);
  static_assert(kAllocRecordOffset + 2 * sizeof(AllocRecord) <= 4096);

  // A member's last arrival at the gathered barrier (sync.cpp), on its own page: the barrier's
  // epoch and the CPU it arrived on. PE 0 reads them to tell whether the PEs that last ran on its
  // CPU have all arrived (then its wait spins rather than yield the core to them).
  struct ArrivalRecord {
    std::atomic<uint64_t> epoch;
    std::atomic<int64_t> cpu;
  };
  static constexpr size_t kArrivalRecordOffset = 2304;
  static_assert(kAllocRecordOffset + 2 * sizeof(AllocRecord) <= kArrivalRecordOffset);
  static_assert(kArrivalRecordOffset + sizeof(ArrivalRecord) <= 4096);
  // Collective among `peers` (the node-local PEs, without my_pe) over `exchange`.
  static Result<std::unique_ptr<HostSyncArea>> create(FdExchange& exchange,
                                                      const std::vector<int>& peers, int my_pe,
                                                      int n_pes);

  // Counter k of PE pe (pe is my_pe or one of the peers).
  uint64_t* counter(int pe, int k) const { return base_[pe] + k; }
  // PE pe's wake word (host_wake.hpp), on its own cache line after the counters; empty for a PE
  // not shared with us.
  WakeWord wake_word(int pe) const { return word_at(pe, kWakeOffset, false); }
  // PE pe's release wake word (kReleaseWakeOffset); empty for a PE not shared with us.
  WakeWord release_wake_word(int pe) const { return word_at(pe, kReleaseWakeOffset, false); }
  // PE pe's data wake word (kDataWakeOffset); empty for a PE not shared with us.
  WakeWord data_wake_word(int pe) const { return word_at(pe, kDataWakeOffset, true); }
  // PE pe's allocation record for its call number `number`; null for a PE not shared with us.
  AllocRecord* alloc_record(int pe, uint64_t number) const {
    char* at = page(pe);
    return at != nullptr ? reinterpret_cast<AllocRecord*>(at + kAllocRecordOffset) + (number & 1)
                         : nullptr;
  }
  // PE pe's arrival record; null for a PE not shared with us.
  ArrivalRecord* arrival_record(int pe) const {
    char* at = page(pe);
    return at != nullptr ? reinterpret_cast<ArrivalRecord*>(at + kArrivalRecordOffset) : nullptr;
  }
  // Whether every PE of [1, n_pes) whose last arrival at the gathered barrier was on `cpu` has
  // arrived at `epoch` (a PE that never arrived counts as on CPU 0).
  bool arrived_from_cpu(int n_pes, uint64_t epoch, int64_t cpu) const {
    return arrived_from_cpu([this](int pe) { return arrival_record(pe); }, n_pes, epoch, cpu);
  }
  // The same over the records record_of(pe) gives (null: a PE not shared with us).
  template <typename RecordOf>
  static bool arrived_from_cpu(RecordOf&& record_of, int n_pes, uint64_t epoch, int64_t cpu) {
    for (int pe = 1; pe < n_pes; ++pe) {
      const ArrivalRecord* r = record_of(pe);
      if (r != nullptr && r->epoch.load(std::memory_order_acquire) < epoch &&
          r->cpu.load(std::memory_order_relaxed) == cpu) {
        return false;
      }
    }
    return true;
  }
  // PE pe's wait record; null for a PE not shared with us.
  WaitRecord* wait_record(int pe) const {
    char* at = page(pe);
    return at != nullptr ? reinterpret_cast<WaitRecord*>(at + kWaitRecordOffset) : nullptr;
  }

 private:
  HostSyncArea() = default;
  // PE pe's page; null for a PE not shared with us.
  char* page(int pe) const {
    if (pe < 0 || static_cast<size_t>(pe) >= base_.size()) return nullptr;
    return reinterpret_cast<char*>(base_[pe]);
  }
  // The wake word at `offset` bytes into PE pe's page; empty for a PE not shared with us.
  WakeWord word_at(int pe, size_t offset, bool copy_writers) const {
    char* at = page(pe);
    if (at == nullptr) return {};
    auto* words = reinterpret_cast<uint32_t*>(at + offset);
    return WakeWord{words, words + 1, copy_writers};
  }
  std::unique_ptr<MemoryProvider> provider_;
  std::vector<std::unique_ptr<Mapping>> mappings_;
  std::vector<uint64_t*> base_;  // per PE; null for PEs not shared with us
};

}  // namespace vshmem
