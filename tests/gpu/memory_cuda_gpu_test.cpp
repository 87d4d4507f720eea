// The cuda memory provider on a real device. Every test reports SKIPPED when no device is usable
// (no driver, no GPU); on a GPU machine none of them skips.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/memory/cuda_driver.hpp"
#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/memory.hpp"
#include "tests/support/test_env.hpp"
#include "vshmem/peer_access.h"

namespace vshmem {
namespace {

using testing::contains;
using testing::ScopedEnv;

std::mt19937_64& rng() {
  static std::mt19937_64 engine([] {
    const uint64_t seed = std::random_device{}();
    std::printf("memory_cuda_gpu_test: random seed %llu\n", static_cast<unsigned long long>(seed));
    return seed;
  }());
  return engine;
}

std::vector<uint8_t> random_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng()());
  return v;
}

// A provider, or the reason to skip: only "no usable device" skips; anything else fails.
std::unique_ptr<MemoryProvider> open_provider(std::string* skip_reason) {
  auto p = detail::make_cuda_provider(ProviderOptions{});
  if (!p) {
    if (p.status().code() == Code::kUnsupported) {
      *skip_reason = p.status().message();
      return nullptr;
    }
    ADD_FAILURE() << "make_cuda_provider: " << p.status().message();
    return nullptr;
  }
  return std::move(p).value();
}

struct Mapped {
  std::shared_ptr<VirtualReservation> reservation;
  std::shared_ptr<PhysicalAllocation> physical;
  std::unique_ptr<Mapping> mapping;
  uint8_t* ptr() const { return static_cast<uint8_t*>(mapping->address()); }
};

Mapped map_new(MemoryProvider& p, size_t size) {
  Mapped m;
  auto addr = p.find_free_range(size, p.granularity());
  EXPECT_TRUE(addr.is_ok()) << addr.status().message();
  if (!addr) return m;
  auto res = p.reserve(addr.value(), size);
  EXPECT_TRUE(res.is_ok()) << res.status().message();
  if (!res) return m;
  m.reservation = res.value();
  auto phys = p.create(size);
  EXPECT_TRUE(phys.is_ok()) << phys.status().message();
  if (!phys) return m;
  m.physical = phys.value();
  auto map = p.map(m.reservation, 0, m.physical);
  EXPECT_TRUE(map.is_ok()) << map.status().message();
  if (map) m.mapping = std::move(map).value();
  return m;
}

std::vector<uint8_t> read_back(MemoryProvider& p, const void* src, size_t n) {
  std::vector<uint8_t> out = random_bytes(n);  // poison
  Status st = p.copy(out.data(), src, n);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return out;
}

size_t free_device_memory() {
  auto drv = detail::cuda_driver();
  if (!drv) return 0;
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(drv.value()->cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
  return free_bytes;
}

class CudaMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    provider_ = open_provider(&why);
    if (provider_ == nullptr && !why.empty()) GTEST_SKIP() << "no usable CUDA device: " << why;
    ASSERT_NE(provider_, nullptr);
    g_ = provider_->granularity();
  }

  std::unique_ptr<MemoryProvider> provider_;
  size_t g_ = 0;
};

TEST_F(CudaMemory, DescribesItself) {
  EXPECT_STREQ(provider_->name(), "cuda");
  EXPECT_TRUE(provider_->is_device_memory());
  EXPECT_GE(g_, 4096u);
  EXPECT_EQ(g_ & (g_ - 1), 0u) << "granularity " << g_ << " is not a power of two";
  auto kinds = provider_->handle_kinds();
  std::set<HandleKind> unique(kinds.begin(), kinds.end());
  EXPECT_EQ(unique.size(), kinds.size());
  EXPECT_EQ(unique.count(HandleKind::kNone), 0u);
}

TEST_F(CudaMemory, MapsPeersOnItsOwnGpuAndRefusesUnknownGpus) {
  // The transport layer maps a peer when the peer's GPU (its PCI location) is one this device
  // can reach: its own always, an unknown one never.
  uint64_t own = provider_->locality_token();
  EXPECT_TRUE(provider_->can_map_peer(own));
  EXPECT_FALSE(provider_->can_map_peer(own ^ 0xfff00000000ull));
  EXPECT_NE(own, 0u) << "the host provider's token; a GPU must name its PCI location";
}

TEST_F(CudaMemory, CopyAndFillRoundTrip) {
  const size_t size = 2 * g_;
  Mapped a = map_new(*provider_, size);
  Mapped b = map_new(*provider_, size);
  ASSERT_TRUE(a.mapping && b.mapping);
  ASSERT_TRUE(provider_->fill(a.ptr(), static_cast<int>(rng()() & 0xff), size).is_ok());

  const std::vector<uint8_t> data = random_bytes(size);
  ASSERT_TRUE(provider_->copy(a.ptr(), data.data(), size).is_ok());
  EXPECT_EQ(read_back(*provider_, a.ptr(), size), data);

  // Device to device, at unaligned offsets.
  const size_t off = 1 + rng()() % 4093, len = g_ + rng()() % 8191;
  ASSERT_TRUE(provider_->fill(b.ptr(), 0xa5, size).is_ok());
  ASSERT_TRUE(provider_->copy(b.ptr() + off, a.ptr() + off, len).is_ok());
  std::vector<uint8_t> got = read_back(*provider_, b.ptr(), size);
  for (size_t i = 0; i < size; ++i) {
    const uint8_t want = (i >= off && i < off + len) ? data[i] : 0xa5;
    ASSERT_EQ(got[i], want) << "byte " << i;
  }

  // Fill a random sub-range; the rest keeps the data.
  const size_t foff = rng()() % g_, flen = 1 + rng()() % g_;
  const uint8_t c = static_cast<uint8_t>(0x11 + rng()() % 200);
  ASSERT_TRUE(provider_->fill(a.ptr() + foff, c, flen).is_ok());
  got = read_back(*provider_, a.ptr(), size);
  for (size_t i = 0; i < size; ++i) {
    const uint8_t want = (i >= foff && i < foff + flen) ? c : data[i];
    ASSERT_EQ(got[i], want) << "byte " << i;
  }
  EXPECT_TRUE(provider_->copy(a.ptr(), data.data(), 0).is_ok());
  EXPECT_FALSE(provider_->copy(nullptr, data.data(), 8).is_ok());
}

uint64_t model(AtomicOp op, uint64_t old, uint64_t operand, uint64_t compare, uint64_t mask) {
  switch (op) {
    case AtomicOp::kFetch: return old;
    case AtomicOp::kSet:
    case AtomicOp::kSwap: return operand & mask;
    case AtomicOp::kCompareSwap: return old == (compare & mask) ? operand & mask : old;
    case AtomicOp::kFetchAdd: return (old + operand) & mask;
    case AtomicOp::kFetchAnd: return old & operand & mask;
    case AtomicOp::kFetchOr: return (old | operand) & mask;
    case AtomicOp::kFetchXor: return (old ^ operand) & mask;
  }
  return 0;
}

TEST_F(CudaMemory, AtomicsMatchTheModelAt32And64Bits) {
  Mapped m = map_new(*provider_, g_);
  ASSERT_TRUE(m.mapping);
  const std::vector<uint8_t> background = random_bytes(64);
  const AtomicOp ops[] = {AtomicOp::kFetch,       AtomicOp::kSet,      AtomicOp::kSwap,
                          AtomicOp::kCompareSwap, AtomicOp::kFetchAdd, AtomicOp::kFetchAnd,
                          AtomicOp::kFetchOr,     AtomicOp::kFetchXor};
  for (unsigned width : {4u, 8u}) {
    const uint64_t mask = width == 4 ? 0xffffffffull : ~0ull;
    for (AtomicOp op : ops) {
      for (int match = 0; match < 2; ++match) {
        ASSERT_TRUE(provider_->copy(m.ptr(), background.data(), background.size()).is_ok());
        uint8_t* target = m.ptr() + 8 * (1 + rng()() % 6) + (width == 4 ? 4 * (rng()() % 2) : 0);
        const uint64_t old = rng()() & mask;
        ASSERT_TRUE(provider_->copy(target, &old, width).is_ok());
        AtomicRequest req;
        req.op = op;
        req.address = target;
        req.width = width;
        req.operand = rng()();  // high bits set on purpose: 32-bit ops must ignore them
        req.compare = match ? old : (old ^ (1 + rng()() % 1000)) & mask;
        uint64_t result = 0x5a5a5a5a5a5a5a5aull;
        Status st = provider_->atomic(req, &result);
        ASSERT_TRUE(st.is_ok()) << st.message();
        if (op != AtomicOp::kSet) {
          EXPECT_EQ(result, old) << "op " << static_cast<int>(op) << " width " << width;
        }
        uint64_t now = 0;
        ASSERT_TRUE(provider_->copy(&now, target, width).is_ok());
        EXPECT_EQ(now, model(op, old, req.operand, req.compare, mask))
            << "op " << static_cast<int>(op) << " width " << width << " match " << match;
        // The neighbours are untouched.
        std::vector<uint8_t> after = read_back(*provider_, m.ptr(), background.size());
        const size_t at = static_cast<size_t>(target - m.ptr());
        for (size_t i = 0; i < background.size(); ++i) {
          if (i >= at && i < at + width) continue;
          ASSERT_EQ(after[i], background[i]) << "byte " << i << " op " << static_cast<int>(op);
        }
      }
    }
  }
}

TEST_F(CudaMemory, AtomicsAreAtomicUnderContention) {
  Mapped m = map_new(*provider_, g_);
  ASSERT_TRUE(m.mapping);
  const uint64_t base = rng()() >> 8;
  AtomicRequest set{AtomicOp::kSet, m.ptr(), 8, base, 0};
  ASSERT_TRUE(provider_->atomic(set, nullptr).is_ok());
  constexpr int kThreads = 4, kAdds = 500;
  std::vector<std::vector<uint64_t>> seen(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) {
        AtomicRequest add{AtomicOp::kFetchAdd, m.ptr(), 8, 1, 0};
        uint64_t old = 0;
        if (!provider_->atomic(add, &old).is_ok()) {
          ++failures;
          return;
        }
        seen[t].push_back(old);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  std::vector<uint64_t> all;
  for (auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kAdds));
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], base + i) << "fetched values";
  uint64_t final_value = 0;
  AtomicRequest fetch{AtomicOp::kFetch, m.ptr(), 8, 0, 0};
  ASSERT_TRUE(provider_->atomic(fetch, &final_value).is_ok());
  EXPECT_EQ(final_value, base + kThreads * kAdds);
}

TEST_F(CudaMemory, AtomicRejectsBadInputAndStaysUsable) {
  Mapped m = map_new(*provider_, g_);
  ASSERT_TRUE(m.mapping);
  uint64_t host_word = 0;
  uint64_t result = 0x1234;
  AtomicRequest req{AtomicOp::kFetchAdd, &host_word, 8, 1, 0};
  Status st = provider_->atomic(req, &result);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  EXPECT_TRUE(contains(st.message(), "not inside memory mapped")) << st.message();
  req.address = m.ptr() + 4;
  EXPECT_EQ(provider_->atomic(req, &result).code(), Code::kInvalidArgument);  // misaligned
  req.address = m.ptr();
  req.width = 3;
  EXPECT_EQ(provider_->atomic(req, &result).code(), Code::kInvalidArgument);
  req.width = 8;
  req.address = m.ptr() + g_ - 4;
  req.width = 8;
  EXPECT_EQ(provider_->atomic(req, &result).code(), Code::kInvalidArgument);  // straddles end
  EXPECT_EQ(result, 0x1234u);  // never written on failure
  void* gone = m.ptr();
  m.mapping.reset();
  req.address = gone;
  EXPECT_EQ(provider_->atomic(req, &result).code(), Code::kInvalidArgument);  // unmapped now
  // The context is healthy: a good atomic still works.
  Mapped n = map_new(*provider_, g_);
  ASSERT_TRUE(n.mapping);
  const uint64_t v = rng()();
  ASSERT_TRUE(provider_->copy(n.ptr(), &v, 8).is_ok());
  req.address = n.ptr();
  req.op = AtomicOp::kFetch;
  ASSERT_TRUE(provider_->atomic(req, &result).is_ok());
  EXPECT_EQ(result, v);
}

TEST_F(CudaMemory, ReservesExactlyAtTheHintOrFails) {
  const size_t size = 4 * g_;
  auto addr = provider_->find_free_range(size, g_);
  ASSERT_TRUE(addr.is_ok()) << addr.status().message();
  EXPECT_EQ(addr.value() % g_, 0u);
  auto first = provider_->reserve(addr.value(), size);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(first.value()->base(), addr.value());
  EXPECT_EQ(first.value()->size(), size);

  auto again = provider_->reserve(addr.value(), size);
  ASSERT_FALSE(again.is_ok());
  EXPECT_TRUE(contains(again.status().message(), "cuMemAddressReserve"))
      << again.status().message();
  auto overlap = provider_->reserve(addr.value() + 2 * g_, size);
  EXPECT_FALSE(overlap.is_ok());
  auto misaligned = provider_->reserve(addr.value() + 1, g_);
  EXPECT_EQ(misaligned.status().code(), Code::kInvalidArgument);
  auto odd_size = provider_->reserve(addr.value(), g_ + 1);
  EXPECT_EQ(odd_size.status().code(), Code::kInvalidArgument);

  first.value().reset();  // frees the range
  auto retry = provider_->reserve(addr.value(), size);
  ASSERT_TRUE(retry.is_ok()) << retry.status().message();
  EXPECT_EQ(retry.value()->base(), addr.value());
}

TEST_F(CudaMemory, CreateRejectsSizesOffTheGranularity) {
  EXPECT_EQ(provider_->create(g_ + 1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(provider_->create(0).status().code(), Code::kInvalidArgument);
}

TEST_F(CudaMemory, DestructionOrderHoldsByConstruction) {
  const size_t size = 2 * g_;
  Mapped m = map_new(*provider_, size);
  ASSERT_TRUE(m.mapping);
  const std::vector<uint8_t> data = random_bytes(size);
  ASSERT_TRUE(provider_->copy(m.ptr(), data.data(), size).is_ok());
  std::weak_ptr<VirtualReservation> weak_res = m.reservation;
  std::weak_ptr<PhysicalAllocation> weak_phys = m.physical;
  // Drop the owners first: the mapping keeps both alive and the memory readable.
  m.reservation.reset();
  m.physical.reset();
  EXPECT_FALSE(weak_res.expired());
  EXPECT_FALSE(weak_phys.expired());
  EXPECT_EQ(read_back(*provider_, m.ptr(), size), data);
  // Even the provider may go first: the mapping holds the device and its context.
  provider_.reset();
  m.mapping.reset();
  EXPECT_TRUE(weak_res.expired());
  EXPECT_TRUE(weak_phys.expired());
}

TEST_F(CudaMemory, FreeMemoryComesBackAfterRelease) {
  const size_t chunk = std::max<size_t>(g_, 32u << 20) / g_ * g_;
  const size_t before = free_device_memory();
  ASSERT_GT(before, 4 * chunk);
  {
    std::vector<Mapped> maps;
    for (int i = 0; i < 3; ++i) {
      maps.push_back(map_new(*provider_, chunk));
      ASSERT_TRUE(maps.back().mapping);
    }
    const size_t during = free_device_memory();
    EXPECT_GE(before - std::min(before, during), 3 * chunk - g_)
        << "before " << before << " during " << during;
  }
  const size_t after = free_device_memory();
  EXPECT_GE(after + 2 * g_, before) << "before " << before << " after " << after;
}

TEST_F(CudaMemory, OnePhysicalAllocationAtTwoAddresses) {
  // Two VAs of one physical chunk (virtual aliasing): accesses ordered by the stream agree.
  const size_t size = g_;
  auto phys = provider_->create(size);
  ASSERT_TRUE(phys.is_ok()) << phys.status().message();
  auto a_addr = provider_->find_free_range(size, g_);
  ASSERT_TRUE(a_addr.is_ok());
  auto a_res = provider_->reserve(a_addr.value(), size);
  ASSERT_TRUE(a_res.is_ok()) << a_res.status().message();
  auto b_addr = provider_->find_free_range(size, g_);
  ASSERT_TRUE(b_addr.is_ok());
  auto b_res = provider_->reserve(b_addr.value(), size);
  ASSERT_TRUE(b_res.is_ok()) << b_res.status().message();
  ASSERT_NE(a_addr.value(), b_addr.value());
  auto a = provider_->map(a_res.value(), 0, phys.value());
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  auto b = provider_->map(b_res.value(), 0, phys.value());
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  const std::vector<uint8_t> data = random_bytes(size);
  ASSERT_TRUE(provider_->copy(a.value()->address(), data.data(), size).is_ok());
  EXPECT_EQ(read_back(*provider_, b.value()->address(), size), data);
  AtomicRequest add{AtomicOp::kFetchAdd, b.value()->address(), 8, 7, 0};
  uint64_t old = 0;
  ASSERT_TRUE(provider_->atomic(add, &old).is_ok());
  uint64_t first_word = 0;
  std::memcpy(&first_word, data.data(), 8);
  EXPECT_EQ(old, first_word);
  uint64_t now = 0;
  ASSERT_TRUE(provider_->copy(&now, a.value()->address(), 8).is_ok());
  EXPECT_EQ(now, first_word + 7);
}

TEST_F(CudaMemory, MapRejectsWhatDoesNotFit) {
  auto addr = provider_->find_free_range(g_, g_);
  ASSERT_TRUE(addr.is_ok());
  auto res = provider_->reserve(addr.value(), g_);
  ASSERT_TRUE(res.is_ok());
  auto phys = provider_->create(2 * g_);
  ASSERT_TRUE(phys.is_ok());
  EXPECT_EQ(provider_->map(res.value(), 0, phys.value()).status().code(), Code::kInvalidArgument);
  auto small = provider_->create(g_);
  ASSERT_TRUE(small.is_ok());
  EXPECT_EQ(provider_->map(res.value(), g_, small.value()).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(provider_->map(nullptr, 0, small.value()).status().code(), Code::kInvalidArgument);
}

// Export, import in this process, map, and check both views agree.
void export_import_round_trip(MemoryProvider& p, HandleKind kind) {
  const size_t g = p.granularity();
  Mapped src = map_new(p, 2 * g);
  ASSERT_TRUE(src.mapping);
  const std::vector<uint8_t> data = random_bytes(2 * g);
  ASSERT_TRUE(p.copy(src.ptr(), data.data(), data.size()).is_ok());
  auto handle = src.physical->export_handle(kind);
  ASSERT_TRUE(handle.is_ok()) << handle.status().message();
  EXPECT_EQ(handle.value().kind(), kind);
  if (kind == HandleKind::kPosixFd) {
    EXPECT_GE(handle.value().fd(), 0);
  }
  auto imported = p.import(std::move(handle).value(), 2 * g);
  ASSERT_TRUE(imported.is_ok()) << imported.status().message();
  auto addr = p.find_free_range(2 * g, g);
  ASSERT_TRUE(addr.is_ok());
  auto res = p.reserve(addr.value(), 2 * g);
  ASSERT_TRUE(res.is_ok()) << res.status().message();
  auto view = p.map(res.value(), 0, imported.value());
  ASSERT_TRUE(view.is_ok()) << view.status().message();
  EXPECT_EQ(read_back(p, view.value()->address(), data.size()), data);
  const std::vector<uint8_t> back = random_bytes(g);
  ASSERT_TRUE(p.copy(view.value()->address(), back.data(), back.size()).is_ok());
  EXPECT_EQ(read_back(p, src.ptr(), back.size()), back);
}

TEST(CudaHandles, ForcedPosixFdPath) {
  ScopedEnv handle_type("VSHMEM_HANDLE_TYPE", "posix_fd");
  auto p = detail::make_cuda_provider(ProviderOptions{});
  if (!p && p.status().code() == Code::kUnsupported &&
      !contains(p.status().message(), "VSHMEM_HANDLE_TYPE")) {
    GTEST_SKIP() << "no usable CUDA device: " << p.status().message();
  }
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p.value()->handle_kinds(), std::vector<HandleKind>{HandleKind::kPosixFd});
  export_import_round_trip(*p.value(), HandleKind::kPosixFd);
  // A kind the provider was not set up for fails with the driver's cause.
  Mapped m = map_new(*p.value(), p.value()->granularity());
  ASSERT_TRUE(m.physical);
  auto fabric = m.physical->export_handle(HandleKind::kFabric);
  EXPECT_FALSE(fabric.is_ok());
  EXPECT_TRUE(contains(fabric.status().message(), "cuMemExportToShareableHandle"))
      << fabric.status().message();
}

TEST(CudaHandles, FabricPathOrCleanFallback) {
  std::string why;
  {
    auto probe = open_provider(&why);
    if (probe == nullptr && !why.empty()) GTEST_SKIP() << "no usable CUDA device: " << why;
    ASSERT_NE(probe, nullptr);
    auto kinds = probe->handle_kinds();
    auto fabric_at = std::find(kinds.begin(), kinds.end(), HandleKind::kFabric);
    if (fabric_at != kinds.end()) {
      EXPECT_EQ(fabric_at, kinds.begin()) << "fabric is preferred when it works";
    }
    std::printf("auto handle kinds:");
    for (HandleKind k : kinds) std::printf(" %s", handle_kind_name(k));
    std::printf("\n");
  }
  ScopedEnv handle_type("VSHMEM_HANDLE_TYPE", "fabric");
  auto p = detail::make_cuda_provider(ProviderOptions{});
  if (p) {
    std::printf("fabric handles are usable here\n");
    EXPECT_EQ(p.value()->handle_kinds(), std::vector<HandleKind>{HandleKind::kFabric});
    export_import_round_trip(*p.value(), HandleKind::kFabric);
  } else {
    std::printf("forced fabric refused: %s\n", p.status().message().c_str());
    EXPECT_EQ(p.status().code(), Code::kUnsupported);
    EXPECT_TRUE(contains(p.status().message(), "VSHMEM_HANDLE_TYPE=fabric"))
        << p.status().message();
  }
}

TEST(CudaProviderOptions, DeviceAndCompressionVariables) {
  std::string why;
  {
    auto probe = open_provider(&why);
    if (probe == nullptr && !why.empty()) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
  const int count = detail::cuda_driver().value()->device_count;
  {
    ScopedEnv dev("VSHMEM_DEVICE", std::to_string(count));
    auto p = detail::make_cuda_provider(ProviderOptions{});
    ASSERT_FALSE(p.is_ok());
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
    EXPECT_TRUE(contains(p.status().message(), "VSHMEM_DEVICE")) << p.status().message();
  }
  {
    ScopedEnv dev("VSHMEM_DEVICE", "zero");
    EXPECT_EQ(detail::make_cuda_provider(ProviderOptions{}).status().code(),
              Code::kInvalidArgument);
  }
  {
    ScopedEnv dev("VSHMEM_DEVICE", std::to_string(count - 1));
    auto p = detail::make_cuda_provider(ProviderOptions{});
    ASSERT_TRUE(p.is_ok()) << p.status().message();
  }
  {
    ScopedEnv comp("VSHMEM_COMPRESSIBLE", "maybe");
    auto p = detail::make_cuda_provider(ProviderOptions{});
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
    EXPECT_TRUE(contains(p.status().message(), "VSHMEM_COMPRESSIBLE")) << p.status().message();
  }
  {
    // Compressible where supported, plain otherwise: either way the memory works.
    ScopedEnv comp("VSHMEM_COMPRESSIBLE", "1");
    auto p = detail::make_cuda_provider(ProviderOptions{});
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    Mapped m = map_new(*p.value(), p.value()->granularity());
    ASSERT_TRUE(m.mapping);
    const std::vector<uint8_t> data = random_bytes(p.value()->granularity());
    ASSERT_TRUE(p.value()->copy(m.ptr(), data.data(), data.size()).is_ok());
    EXPECT_EQ(read_back(*p.value(), m.ptr(), data.size()), data);
  }
  {
    // local_rank picks the device when nothing else does (this thread has a current context
    // from the providers above, so clear that first).
    const detail::CudaDriver* drv = detail::cuda_driver().value();
    ASSERT_EQ(drv->cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
    ProviderOptions options;
    options.local_rank = count + 0;  // wraps to device 0
    auto p = detail::make_cuda_provider(options);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    CUdevice dev = -1;
    ASSERT_EQ(drv->cuCtxGetDevice(&dev), CUDA_SUCCESS);
    EXPECT_EQ(dev, 0);
  }
}

TEST(CudaProviderOptions, SecondProviderFollowsTheCurrentContext) {
  // The first provider leaves its primary context current; the second finds it through
  // cuCtxGetDevice (the path that once called a 13.0 variant with the wrong signature).
  std::string why;
  auto first = open_provider(&why);
  if (first == nullptr && !why.empty()) GTEST_SKIP() << "no usable CUDA device: " << why;
  ASSERT_NE(first, nullptr);
  for (int round = 0; round < 2; ++round) {
    auto second = detail::make_cuda_provider(ProviderOptions{});
    ASSERT_TRUE(second.is_ok()) << second.status().message();
    for (MemoryProvider* p : {first.get(), second.value().get()}) {
      Mapped m = map_new(*p, p->granularity());
      ASSERT_TRUE(m.mapping);
      const std::vector<uint8_t> data = random_bytes(4096);
      ASSERT_TRUE(p->copy(m.ptr(), data.data(), data.size()).is_ok());
      EXPECT_EQ(read_back(*p, m.ptr(), data.size()), data);
    }
  }
  first.reset();
  auto again = detail::make_cuda_provider(ProviderOptions{});
  ASSERT_TRUE(again.is_ok()) << again.status().message();
}

TEST(CudaPeerAccess, QueryEnableDisable) {
  std::string why;
  auto probe = open_provider(&why);
  if (probe == nullptr && !why.empty()) GTEST_SKIP() << "no usable CUDA device: " << why;
  const int count = detail::cuda_driver().value()->device_count;
  int can = -1;
  ASSERT_EQ(shmemx_peer_access_query(0, 0, &can), SHMEMX_PEER_ACCESS_SUCCESS);
  EXPECT_EQ(can, 1);
  can = -1;
  EXPECT_EQ(shmemx_peer_access_query(0, count, &can), SHMEMX_PEER_ACCESS_ERR_INVALID_ARG);
  EXPECT_EQ(can, -1);
  EXPECT_EQ(shmemx_peer_access_enable(0, 0), SHMEMX_PEER_ACCESS_ERR_INVALID_ARG);
  EXPECT_EQ(shmemx_peer_access_enable(-1, 0), SHMEMX_PEER_ACCESS_ERR_INVALID_ARG);
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      ASSERT_EQ(shmemx_peer_access_query(from, to, &can), SHMEMX_PEER_ACCESS_SUCCESS);
      if (can) {
        EXPECT_EQ(shmemx_peer_access_enable(from, to), SHMEMX_PEER_ACCESS_SUCCESS);
        EXPECT_EQ(shmemx_peer_access_enable(from, to), SHMEMX_PEER_ACCESS_SUCCESS);  // again
        EXPECT_EQ(shmemx_peer_access_disable(from, to), SHMEMX_PEER_ACCESS_SUCCESS);
        EXPECT_EQ(shmemx_peer_access_disable(from, to), SHMEMX_PEER_ACCESS_SUCCESS);  // again
      } else {
        EXPECT_EQ(shmemx_peer_access_enable(from, to), SHMEMX_PEER_ACCESS_ERR_NOT_SUPPORTED);
        EXPECT_EQ(shmemx_peer_access_disable(from, to), SHMEMX_PEER_ACCESS_SUCCESS);
      }
    }
  }
  std::printf("peer access checked across %d device(s)\n", count);
}

// ---- Two processes: the parent exports a POSIX FD, the child imports it. ----------------------

constexpr size_t kSample = 64 << 10;
constexpr int kCrossAdds = 300;
const char kChildSocketVar[] = "VSHMEM_TEST_CHILD_SOCKET";

struct Header {
  uint64_t size;
  uint64_t counter_offset;
};

bool send_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool recv_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t k = ::recv(fd, c, n, 0);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool send_fd(int sock, int fd, const Header& h) {
  msghdr msg = {};
  iovec iov = {const_cast<Header*>(&h), sizeof(h)};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  return ::sendmsg(sock, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(h));
}

int recv_fd(int sock, Header* h) {
  msghdr msg = {};
  iovec iov = {h, sizeof(*h)};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != static_cast<ssize_t>(sizeof(*h))) return -1;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  if (cm == nullptr || cm->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cm), sizeof(int));
  return fd;
}

void set_timeouts(int sock) {
  timeval tv = {60, 0};  // a dead peer fails the test instead of hanging it
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void cross_adds(MemoryProvider& p, void* counter, int* failures) {
  for (int i = 0; i < kCrossAdds; ++i) {
    AtomicRequest add{AtomicOp::kFetchAdd, counter, 8, 1, 0};
    if (!p.atomic(add, nullptr).is_ok()) ++*failures;
  }
}

TEST_F(CudaMemory, TwoProcessPosixFdExportImport) {
  auto kinds = provider_->handle_kinds();
  ASSERT_NE(std::find(kinds.begin(), kinds.end(), HandleKind::kPosixFd), kinds.end())
      << "an H200 supports POSIX FD handles";
  const size_t size = 4 * g_;
  Mapped m = map_new(*provider_, size);
  ASSERT_TRUE(m.mapping);
  const std::vector<uint8_t> data = random_bytes(size);
  ASSERT_TRUE(provider_->copy(m.ptr(), data.data(), size).is_ok());
  const size_t counter_offset = size - g_ + 8 * (rng()() % (g_ / 8));
  const uint64_t counter_start = rng()() >> 4;
  AtomicRequest set{AtomicOp::kSet, m.ptr() + counter_offset, 8, counter_start, 0};
  ASSERT_TRUE(provider_->atomic(set, nullptr).is_ok());

  auto handle = m.physical->export_handle(HandleKind::kPosixFd);
  ASSERT_TRUE(handle.is_ok()) << handle.status().message();

  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  set_timeouts(sv[0]);
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls (CUDA must not be touched in a forked child).
  char exe[4096] = {};
  ASSERT_GT(::readlink("/proc/self/exe", exe, sizeof(exe) - 1), 0);
  const int child_fd = ::fcntl(sv[1], F_DUPFD, 100);  // without CLOEXEC: survives exec
  ASSERT_GE(child_fd, 0);
  ::setenv(kChildSocketVar, std::to_string(child_fd).c_str(), 1);
  const char* argv[] = {exe, "--gtest_also_run_disabled_tests",
                        "--gtest_filter=CudaMemoryChild.DISABLED_ImportSide", nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(exe, const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::unsetenv(kChildSocketVar);
  ::close(child_fd);
  ::close(sv[1]);
  ASSERT_GT(pid, 0);

  Header h{size, counter_offset};
  bool ok = send_fd(sv[0], handle.value().fd(), h) && send_all(sv[0], data.data(), kSample);
  EXPECT_TRUE(ok) << "sending the handle to the child";
  handle.value() = ShareableHandle();  // our copy of the descriptor goes
  std::vector<uint8_t> child_data(kSample);
  ok = ok && recv_all(sv[0], child_data.data(), kSample);
  EXPECT_TRUE(ok) << "the child's data";
  int failures = 0;
  if (ok) {
    // The child wrote its data through its own mapping of our memory; we see it here.
    EXPECT_EQ(read_back(*provider_, m.ptr() + g_, kSample), child_data);
    char go = 'g';
    EXPECT_TRUE(send_all(sv[0], &go, 1));
    cross_adds(*provider_, m.ptr() + counter_offset, &failures);  // concurrently with the child
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(sv[0]);
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child's checks failed (its output is above)";
  EXPECT_EQ(failures, 0);
  uint64_t counter = 0;
  AtomicRequest fetch{AtomicOp::kFetch, m.ptr() + counter_offset, 8, 0, 0};
  ASSERT_TRUE(provider_->atomic(fetch, &counter).is_ok());
  EXPECT_EQ(counter, counter_start + 2 * kCrossAdds);
}

// Run only as the child of TwoProcessPosixFdExportImport.
TEST(CudaMemoryChild, DISABLED_ImportSide) {
  const char* sock_text = std::getenv(kChildSocketVar);
  ASSERT_NE(sock_text, nullptr) << "run by TwoProcessPosixFdExportImport only";
  const int sock = std::atoi(sock_text);
  set_timeouts(sock);
  auto p = detail::make_cuda_provider(ProviderOptions{});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  MemoryProvider& provider = *p.value();
  const size_t g = provider.granularity();
  Header h{};
  const int fd = recv_fd(sock, &h);
  ASSERT_GE(fd, 0) << "receiving the descriptor";
  std::vector<uint8_t> expected(kSample);
  ASSERT_TRUE(recv_all(sock, expected.data(), kSample));
  auto imported = provider.import(ShareableHandle::from_fd(fd), h.size);
  ASSERT_TRUE(imported.is_ok()) << imported.status().message();
  auto addr = provider.find_free_range(h.size, g);
  ASSERT_TRUE(addr.is_ok()) << addr.status().message();
  auto res = provider.reserve(addr.value(), h.size);
  ASSERT_TRUE(res.is_ok()) << res.status().message();
  auto view = provider.map(res.value(), 0, imported.value());
  ASSERT_TRUE(view.is_ok()) << view.status().message();
  uint8_t* base = static_cast<uint8_t*>(view.value()->address());
  EXPECT_EQ(read_back(provider, base, kSample), expected);
  const std::vector<uint8_t> mine = random_bytes(kSample);
  ASSERT_TRUE(provider.copy(base + g, mine.data(), kSample).is_ok());
  ASSERT_TRUE(send_all(sock, mine.data(), kSample));
  char go = 0;
  ASSERT_TRUE(recv_all(sock, &go, 1));
  int failures = 0;
  cross_adds(provider, base + h.counter_offset, &failures);
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace vshmem
