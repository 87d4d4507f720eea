// Heap growth's all-or-nothing step (SymmetricHeap::grow) with threads as PEs
// (tests/support/thread_bootstrap.hpp), each with its own heap of real host memory: when one PE
// cannot make its chunk, or dies, every PE fails the same growth naming it, no heap grows, and
// (after a refusal) the next growth works everywhere at the same offsets.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/heap/symmetric_heap.hpp"
#include "tests/support/thread_bootstrap.hpp"

namespace vshmem {
namespace {

using namespace std::chrono_literals;
using testing::ThreadJob;

// The PEs' address spaces are one process's: PE p's reservations are placed p strides above the
// agreed address, in one free range found once for the job.
struct SharedRange {
  std::mutex mu;
  uintptr_t base = 0;
  size_t stride = 0;
};

// Host memory, with an injected refusal: the `fail_at`-th chunk this PE makes (1-based).
class PeMemory final : public MemoryProvider {
 public:
  PeMemory(int rank, int npes, SharedRange& range, int fail_at)
      : inner_(make_host_provider()), rank_(rank), npes_(npes), range_(range), fail_at_(fail_at) {}

  const char* name() const override { return "host"; }
  bool is_device_memory() const override { return false; }
  size_t granularity() const override { return inner_->granularity(); }
  std::vector<HandleKind> handle_kinds() const override { return inner_->handle_kinds(); }
  Result<uintptr_t> find_free_range(size_t size, size_t alignment) override {
    std::lock_guard<std::mutex> lock(range_.mu);
    if (range_.base == 0) {
      range_.stride = (size + alignment - 1) / alignment * alignment;
      VSHMEM_ASSIGN_OR_RETURN(range_.base,
                              inner_->find_free_range(range_.stride * npes_, alignment));
    }
    return range_.base;
  }
  Result<std::shared_ptr<VirtualReservation>> reserve(uintptr_t addr, size_t size) override {
    return inner_->reserve(addr + static_cast<uintptr_t>(rank_) * range_.stride, size);
  }
  Result<std::shared_ptr<PhysicalAllocation>> create(size_t size) override {
    if (++creates_ == fail_at_) return error(Code::kOutOfMemory, "out of memory (injected)");
    return inner_->create(size);
  }
  Result<std::shared_ptr<PhysicalAllocation>> import(ShareableHandle h, size_t size) override {
    return inner_->import(std::move(h), size);
  }
  Result<std::unique_ptr<Mapping>> map(std::shared_ptr<VirtualReservation> reservation,
                                       size_t offset,
                                       std::shared_ptr<PhysicalAllocation> physical) override {
    return inner_->map(std::move(reservation), offset, std::move(physical));
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    return inner_->copy(dst, src, bytes);
  }
  Status atomic(const AtomicRequest& request, uint64_t* result) override {
    return inner_->atomic(request, result);
  }
  Status fill(void* dst, int c, size_t bytes) override { return inner_->fill(dst, c, bytes); }

 private:
  std::unique_ptr<MemoryProvider> inner_;
  int rank_, npes_;
  SharedRange& range_;
  int fail_at_;
  int creates_ = 0;
};

Topology one_node(int n, int me) {
  Topology t;
  t.node_of_pe.assign(n, 0);
  for (int p = 0; p < n; ++p) t.local_rank_of_pe.push_back(p);
  t.n_nodes = 1;
  t.local_rank = me;
  t.local_size = t.max_local_size = n;
  for (int p = 0; p < n; ++p) t.local_pes.push_back(p);
  return t;
}

constexpr size_t kChunk = 1u << 20;

struct Grown {
  std::string first_error;     // the growth that should fail
  size_t committed_after = 0;  // after it
  std::string second_error;    // the next growth
  uint64_t offset = 0;         // of the block the second growth made room for
  size_t committed_end = 0;
};

// Every PE: a heap, its first chunk, then an allocation that needs a second chunk (fail_pe's
// chunk maker refuses it), then the same allocation again. `dies`: fail_pe dies instead.
std::vector<Grown> grow_twice(int n, int fail_pe, bool dies) {
  ThreadJob job(n, dies ? 300ms : 10s);
  SharedRange range;
  std::random_device rd;
  const unsigned seed = rd();
  return job.run<Grown>([&](int pe, Bootstrap& boot) {
    Grown g;
    PeMemory memory(pe, n, range, !dies && pe == fail_pe ? 2 : 0);
    HeapConfig cfg;
    cfg.size = 16 * kChunk;
    cfg.chunk_size = kChunk;
    auto heap = SymmetricHeap::create(memory, boot, one_node(n, pe), std::vector<bool>(n, false),
                                      nullptr, cfg);
    if (!heap.is_ok()) {
      g.first_error = "create: " + heap.status().message();
      return g;
    }
    SymmetricHeap& h = *heap.value();
    if (Status s = h.commit_at_least(kChunk, "test"); !s.is_ok()) {
      g.first_error = "commit: " + s.message();
      return g;
    }
    void* small = h.allocate(kChunk / 2, 64, "shmem_malloc").value();
    if (dies && pe == fail_pe) job.die(pe);
    auto big = h.allocate(kChunk, 64, "shmem_malloc");
    g.first_error = big.is_ok() ? "" : big.status().message();
    g.committed_after = h.committed();
    if (dies) return g;
    auto again = h.allocate(kChunk, 64, "shmem_malloc");
    if (!again.is_ok()) {
      g.second_error = again.status().message();
      return g;
    }
    // The new memory is there: fresh random bytes read back, the first block untouched.
    std::mt19937_64 rng(seed + static_cast<unsigned>(pe));
    std::vector<uint8_t> data(kChunk), back(kChunk);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    std::memset(small, 0x5a, kChunk / 2);
    std::memcpy(again.value(), data.data(), kChunk);
    std::memcpy(back.data(), again.value(), kChunk);
    EXPECT_EQ(back, data) << "PE " << pe;
    EXPECT_EQ(static_cast<uint8_t*>(small)[kChunk / 2 - 1], 0x5a) << "PE " << pe;
    g.offset = reinterpret_cast<uintptr_t>(again.value()) - h.base();
    g.committed_end = h.committed();
    return g;
  });
}

TEST(HeapGrowth, OnePeRefusingFailsTheGrowthOnEveryPeAndNoHeapGrows) {
  for (int n : {2, 4}) {
    const int fail_pe = n - 1;
    auto out = grow_twice(n, fail_pe, false);
    const std::string cause = "PE " + std::to_string(fail_pe) + ": out of memory (injected)";
    for (int pe = 0; pe < n; ++pe) {
      const std::string& e = out[pe].first_error;
      EXPECT_NE(e.find("shmem_malloc: growing the heap: PE " + std::to_string(fail_pe) +
                       " could not add " + std::to_string(kChunk) +
                       " bytes of memory to its heap; no PE grew its heap"),
                std::string::npos)
          << "PE " << pe << ": " << e;
      EXPECT_NE(e.find(cause), std::string::npos) << "PE " << pe << ": " << e;
      EXPECT_EQ(out[pe].committed_after, kChunk) << "PE " << pe << " grew alone";
      // The refusal was one-off: the next growth works on every PE, at the same offset.
      EXPECT_EQ(out[pe].second_error, "") << "PE " << pe;
      EXPECT_EQ(out[pe].offset, out[0].offset) << "PE " << pe;
      EXPECT_EQ(out[pe].committed_end, out[0].committed_end) << "PE " << pe;
      EXPECT_GT(out[pe].committed_end, kChunk) << "PE " << pe;
    }
  }
}

TEST(HeapGrowth, APeDyingDuringGrowthIsNamedAndNoHeapGrows) {
  const int n = 3, dead = 1;
  const auto start = std::chrono::steady_clock::now();
  auto out = grow_twice(n, dead, true);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  for (int pe = 0; pe < n; ++pe) {
    const std::string& e = out[pe].first_error;
    if (pe == dead) {
      EXPECT_NE(e.find("died (injected)"), std::string::npos) << e;
    } else {
      EXPECT_NE(e.find("shmem_malloc: growing the heap: PE " + std::to_string(pe) +
                       ": allgather(512 bytes): timed out after 0.3 s waiting for PE 1"),
                std::string::npos)
          << "PE " << pe << ": " << e;
    }
    EXPECT_EQ(out[pe].committed_after, kChunk) << "PE " << pe << " grew";
  }
}

}  // namespace
}  // namespace vshmem
