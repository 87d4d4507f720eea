// The device proxy's request ring as libvshmem makes it (runtime/transport/proxy_ring.hpp), on the
// cuda provider over the FAKE driver (tests/support: libcuda is never loaded; its fresh
// allocations hold garbage, like the real driver's): slots and control block in one cuMemHostAlloc
// DEVICEMAP | PORTABLE allocation that the device sees at the host's address, the ticket counter
// in cuMemAlloc memory, the proxy's stage page-locked; all zeroed, all freed with the ring. A ring
// whose memory cannot be had is an error naming the cause, and leaves nothing allocated.
#include "runtime/transport/proxy_ring.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/memory/cuda_provider.hpp"
#include "tests/support/fake_cuda_driver.hpp"

namespace vshmem {
namespace {

using testing::fake_device_alloc_bytes;
using testing::fake_host_alloc_flags;
using testing::fake_live_host_allocs;
using testing::FakeDriverConfig;

constexpr unsigned kMapped = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;

std::unique_ptr<MemoryProvider> fake_provider(const FakeDriverConfig& cfg) {
  auto made = detail::make_cuda_provider_with_driver(testing::fake_cuda_driver(cfg), {});
  EXPECT_TRUE(made.is_ok()) << made.status().message();
  return made.is_ok() ? std::move(made).value() : nullptr;
}

bool all_zero(const void* p, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i) {
    if (b[i] != 0) return false;
  }
  return true;
}

TEST(ProxyRing, MadeThroughTheDriverZeroedAndFreedWithTheRing) {
  ASSERT_FALSE(testing::real_libcuda_loaded());
  std::unique_ptr<MemoryProvider> p = fake_provider(FakeDriverConfig{});
  ASSERT_NE(p, nullptr);
  const int live_before = fake_live_host_allocs(0);
  auto made = ProxyRing::create(*p, 64, 5'000'000'000ull, 1 << 20);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  std::unique_ptr<ProxyRing> ring = std::move(made).value();
  const proxy::RingView v = ring->view();

  EXPECT_EQ(fake_host_alloc_flags(v.control), static_cast<int>(kMapped));
  EXPECT_EQ(reinterpret_cast<const void*>(v.slots), static_cast<const void*>(v.control + 1))
      << "the slots follow the control block in its allocation";
  EXPECT_EQ(fake_live_host_allocs(kMapped), 1);
  EXPECT_EQ(fake_device_alloc_bytes(v.tickets), 2 * sizeof(uint64_t));
  EXPECT_EQ(v.tickets[1], 0u);
  EXPECT_EQ(v.n_slots, 64u);
  EXPECT_EQ(v.timeout_ns, 5'000'000'000ull);
  EXPECT_TRUE(all_zero(v.control, sizeof(proxy::Control)));
  EXPECT_TRUE(all_zero(v.slots, sizeof(proxy::Slot) * v.n_slots));
  EXPECT_EQ(*v.tickets, 0u);
  // The stage: page-locked for fast copies, not mapped into the device.
  EXPECT_EQ(fake_host_alloc_flags(ring->stage()), static_cast<int>(CU_MEMHOSTALLOC_PORTABLE));
  EXPECT_EQ(ring->stage_bytes(), size_t{1} << 20);
  EXPECT_EQ(fake_live_host_allocs(0), live_before + 2);

  const void* stage = ring->stage();
  ring.reset();
  EXPECT_EQ(fake_host_alloc_flags(v.control), -1);
  EXPECT_EQ(fake_host_alloc_flags(stage), -1);
  EXPECT_EQ(fake_device_alloc_bytes(v.tickets), 0u);
  EXPECT_EQ(fake_live_host_allocs(0), live_before);
  EXPECT_FALSE(testing::real_libcuda_loaded());
}

TEST(ProxyRing, RefusesASlotCountThatIsNotAPowerOfTwo) {
  std::unique_ptr<MemoryProvider> p = fake_provider(FakeDriverConfig{});
  ASSERT_NE(p, nullptr);
  for (uint32_t slots : {0u, 100u}) {
    auto made = ProxyRing::create(*p, slots, 1);
    ASSERT_FALSE(made.is_ok());
    EXPECT_EQ(made.status().code(), Code::kInvalidArgument);
    EXPECT_NE(made.status().message().find(std::to_string(slots) + " slots"), std::string::npos)
        << made.status().message();
  }
  EXPECT_EQ(fake_live_host_allocs(kMapped), 0);
}

// What ProxyRing::create answers on a driver configured with cfg, which must refuse the ring and
// leave nothing allocated.
std::string refusal(const FakeDriverConfig& cfg) {
  std::unique_ptr<MemoryProvider> p = fake_provider(cfg);
  if (p == nullptr) return "no provider";
  const int live_before = fake_live_host_allocs(0);
  auto made = ProxyRing::create(*p, 8, 1);
  EXPECT_FALSE(made.is_ok());
  EXPECT_EQ(fake_live_host_allocs(0), live_before) << "the refused memory was not freed";
  testing::fake_cuda_driver(FakeDriverConfig{});
  return made.is_ok() ? "" : made.status().message();
}

TEST(ProxyRing, AFailedAllocationIsNamedAndLeavesNothing) {
  FakeDriverConfig cfg;
  cfg.mapped_host_alloc_result = CUDA_ERROR_OUT_OF_MEMORY;
  const std::string m = refusal(cfg);
  EXPECT_NE(m.find("cuMemHostAlloc"), std::string::npos) << m;
  EXPECT_NE(m.find("device-mapped host memory"), std::string::npos) << m;
  EXPECT_NE(m.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << m;
}

TEST(ProxyRing, MemoryTheDeviceSeesElsewhereIsRefused) {
  FakeDriverConfig cfg;
  cfg.mapped_host_elsewhere = true;
  const std::string m = refusal(cfg);
  EXPECT_NE(m.find("no unified addressing"), std::string::npos) << m;
}

TEST(ProxyRing, TheHostProviderHasNoDeviceToShareOneWith) {
  std::unique_ptr<MemoryProvider> p = make_host_provider();
  auto made = ProxyRing::create(*p, 8, 1);
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().code(), Code::kUnsupported);
}

}  // namespace
}  // namespace vshmem
