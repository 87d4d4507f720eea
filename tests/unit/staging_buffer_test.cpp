// Staging buffers of the remote path (MemoryProvider::alloc_staging): on the cuda provider they
// are page-locked host memory from cuMemHostAlloc (the FAKE driver, tests/support: libcuda is
// never loaded), usable as ordinary host memory and released with cuMemFreeHost; on the host
// provider, ordinary host memory.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/memory.hpp"
#include "tests/support/fake_cuda_driver.hpp"
#include "tests/support/fresh_bytes.hpp"

namespace vshmem {
namespace {

using testing::fake_calls;
using testing::FakeDriverConfig;

// The buffer holds what is written to it and copy() moves it out (what the remote path does).
void round_trip(MemoryProvider& p, void* buf, size_t bytes) {
  std::vector<unsigned char> data = testing::fresh_bytes(bytes), back(bytes, 0);
  std::memcpy(buf, data.data(), bytes);
  ASSERT_TRUE(p.copy(back.data(), buf, bytes).is_ok());
  EXPECT_EQ(back, data);
}

TEST(StagingBuffers, CudaProviderPageLocksThem) {
  ASSERT_FALSE(testing::real_libcuda_loaded());
  testing::reset_fake_calls();
  const detail::CudaDriver& drv = testing::fake_cuda_driver(FakeDriverConfig{});
  auto made = detail::make_cuda_provider_with_driver(drv, {});
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  std::unique_ptr<MemoryProvider> p = std::move(made).value();
  const size_t bytes = 512 << 10;
  Result<void*> buf = p->alloc_staging(bytes);
  ASSERT_TRUE(buf.is_ok()) << buf.status().message();
  EXPECT_EQ(fake_calls("cuMemHostAlloc"), 1);
  round_trip(*p, *buf, bytes);
  p->free_staging(*buf);
  EXPECT_EQ(fake_calls("cuMemFreeHost"), 1);
  EXPECT_FALSE(testing::real_libcuda_loaded());
}

TEST(StagingBuffers, HostProviderGivesHostMemory) {
  std::unique_ptr<MemoryProvider> p = make_host_provider();
  const size_t bytes = 100000;  // not a page multiple
  Result<void*> buf = p->alloc_staging(bytes);
  ASSERT_TRUE(buf.is_ok()) << buf.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*buf) % 4096, 0u);
  round_trip(*p, *buf, bytes);
  p->free_staging(*buf);
}

}  // namespace
}  // namespace vshmem
