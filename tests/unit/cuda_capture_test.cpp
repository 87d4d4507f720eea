// The cuda provider's own driver calls run in the relaxed stream-capture mode. In the default
// (global) mode, a CUDA graph capture running in any application thread forbids "potentially
// unsafe" calls (copies, memsets, launches, stream synchronization) in every thread, and the
// forbidden call ends that capture: on the H200, device_remote_stream's capture phase failed with
// "operation failed due to a previous error during capture" while the PE's progress thread
// copied a remote PE's data into the heap. The FAKE driver fails such calls the same way;
// libcuda is never loaded.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/memory.hpp"
#include "tests/support/fake_cuda_driver.hpp"

namespace vshmem {
namespace {

using testing::FakeDriverConfig;

TEST(CudaProviderCapture, CopiesFillsAndQuietRunWhileAnotherThreadCaptures) {
  ASSERT_FALSE(testing::real_libcuda_loaded());
  auto made =
      detail::make_cuda_provider_with_driver(testing::fake_cuda_driver(FakeDriverConfig{}), {});
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  std::unique_ptr<MemoryProvider> p = std::move(made).value();
  FakeDriverConfig capturing;
  capturing.global_capture_elsewhere = true;
  const detail::CudaDriver& drv = testing::fake_cuda_driver(capturing);

  // Larger than the provider copies with the CPU between host buffers: a stream copy.
  std::vector<unsigned char> src(80 << 10), dst(80 << 10, 0xee);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  Status st = p->copy(dst.data(), src.data(), src.size());
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
  st = p->fill(dst.data(), 0x5a, 100);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(dst[0], 0x5a);
  EXPECT_EQ(dst[99], 0x5a);
  EXPECT_EQ(dst[100], src[100]);
  st = p->quiet();
  EXPECT_TRUE(st.is_ok()) << st.message();

  // The calling thread's own mode is given back: a call made in the global mode still fails.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  ASSERT_EQ(drv.cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_EQ(drv.cuStreamSynchronize(nullptr), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  testing::fake_cuda_driver(FakeDriverConfig{});
  EXPECT_FALSE(testing::real_libcuda_loaded());
}

}  // namespace
}  // namespace vshmem
