// The cuda provider copies small buffers between two host buffers with the CPU (copy() without a
// stream copy and its synchronization): the remote path's bounce copies of a device call's inline
// data and of a get's answer cost microseconds each on the stream (issue 14, device calls to
// remote PEs). Anything CUDA says is device memory still goes through the stream, as do large
// copies. The FAKE driver (tests/support) counts the stream copies; libcuda is never loaded.
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

class CudaHostCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::real_libcuda_loaded());
    auto made = detail::make_cuda_provider_with_driver(drv, {});
    ASSERT_TRUE(made.is_ok()) << made.status().message();
    p = std::move(made).value();
  }
  const detail::CudaDriver& drv = testing::fake_cuda_driver(FakeDriverConfig{});
  std::unique_ptr<MemoryProvider> p;
};

TEST_F(CudaHostCopy, SmallCopiesBetweenHostBuffersUseTheCpu) {
  Result<void*> staging = p->alloc_staging(4096);  // page-locked (cuMemHostAlloc)
  ASSERT_TRUE(staging.is_ok()) << staging.status().message();
  for (size_t bytes : {size_t{1}, size_t{8}, size_t{128}, size_t{4096}}) {
    std::vector<unsigned char> src = testing::fresh_bytes(bytes), back(bytes, 0xA5);
    const int before = fake_calls("cuMemcpyAsync");
    ASSERT_TRUE(p->copy(*staging, src.data(), bytes).is_ok());   // pageable -> page-locked
    ASSERT_TRUE(p->copy(back.data(), *staging, bytes).is_ok());  // page-locked -> pageable
    EXPECT_EQ(back, src) << bytes << " bytes";
    EXPECT_EQ(fake_calls("cuMemcpyAsync"), before) << bytes << " bytes went through a stream";
  }
  p->free_staging(*staging);
}

// The started form (copy_start / copy_test, what the remote path's staging pipeline uses): a
// small copy between host buffers is done before copy_start returns (ticket 0, no stream copy).
TEST_F(CudaHostCopy, StartedSmallCopiesBetweenHostBuffersAreDoneAtOnce) {
  Result<void*> staging = p->alloc_staging(4096);
  ASSERT_TRUE(staging.is_ok()) << staging.status().message();
  std::vector<unsigned char> src = testing::fresh_bytes(128), back(128, 0xA5);
  const int before = fake_calls("cuMemcpyAsync");
  Result<uint64_t> in = p->copy_start(*staging, src.data(), src.size());
  ASSERT_TRUE(in.is_ok()) << in.status().message();
  EXPECT_EQ(*in, 0u);
  Result<uint64_t> out = p->copy_start(back.data(), *staging, back.size());
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(*out, 0u);
  Result<bool> done = p->copy_test(*out);
  ASSERT_TRUE(done.is_ok());
  EXPECT_TRUE(*done);
  EXPECT_EQ(back, src);
  EXPECT_EQ(fake_calls("cuMemcpyAsync"), before);
  // Device memory is still a started stream copy.
  CUdeviceptr dev = 0;
  ASSERT_EQ(drv.cuMemAlloc(&dev, 128), CUDA_SUCCESS);
  Result<uint64_t> d = p->copy_start(reinterpret_cast<void*>(dev), src.data(), src.size());
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  EXPECT_NE(*d, 0u);
  for (int i = 0; i < 1000; ++i) {
    Result<bool> t = p->copy_test(*d);
    ASSERT_TRUE(t.is_ok());
    if (*t) break;
  }
  EXPECT_EQ(fake_calls("cuMemcpyAsync"), before + 1);
  drv.cuMemFree(dev);
  p->free_staging(*staging);
}

TEST_F(CudaHostCopy, DeviceMemoryAndLargeCopiesStillUseTheStream) {
  CUdeviceptr dev = 0;
  ASSERT_EQ(drv.cuMemAlloc(&dev, 256), CUDA_SUCCESS);  // device memory, by CUDA's answer
  void* d = reinterpret_cast<void*>(dev);
  std::vector<unsigned char> src = testing::fresh_bytes(256), back(256, 0xA5);
  int before = fake_calls("cuMemcpyAsync");
  ASSERT_TRUE(p->copy(d, src.data(), 256).is_ok());
  ASSERT_TRUE(p->copy(back.data(), d, 256).is_ok());
  EXPECT_EQ(back, src);
  EXPECT_EQ(fake_calls("cuMemcpyAsync"), before + 2);
  drv.cuMemFree(dev);

  const size_t big = (64 << 10) + 8;  // past the CPU copy's limit
  std::vector<unsigned char> a = testing::fresh_bytes(big), b(big, 0xA5);
  before = fake_calls("cuMemcpyAsync");
  ASSERT_TRUE(p->copy(b.data(), a.data(), big).is_ok());
  EXPECT_EQ(b, a);
  EXPECT_EQ(fake_calls("cuMemcpyAsync"), before + 1);
}

}  // namespace
}  // namespace vshmem
