// shmem_quiet on the cuda provider (MemoryProvider::quiet) waits for the calling thread's
// default streams: a synchronous cudaMemcpy from pageable memory returns once its data is
// staged, and CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, which would make it wait, is refused for VMM
// memory (the H200: 113 of 300 copies of 32 KiB unfinished at return). The FAKE driver records
// the streams synchronized; libcuda is never loaded.
#include <gtest/gtest.h>

#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/memory.hpp"
#include "tests/support/fake_cuda_driver.hpp"

namespace vshmem {
namespace {

using testing::fake_stream_syncs;
using testing::FakeDriverConfig;

TEST(CudaProviderQuiet, WaitsForTheLegacyAndPerThreadDefaultStreams) {
  ASSERT_FALSE(testing::real_libcuda_loaded());
  auto made =
      detail::make_cuda_provider_with_driver(testing::fake_cuda_driver(FakeDriverConfig{}), {});
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  std::unique_ptr<MemoryProvider> p = std::move(made).value();
  const int legacy = fake_stream_syncs(CU_STREAM_LEGACY);
  const int per_thread = fake_stream_syncs(CU_STREAM_PER_THREAD);
  ASSERT_TRUE(p->quiet().is_ok());
  EXPECT_EQ(fake_stream_syncs(CU_STREAM_LEGACY), legacy + 1);
  EXPECT_EQ(fake_stream_syncs(CU_STREAM_PER_THREAD), per_thread + 1);
  EXPECT_FALSE(testing::real_libcuda_loaded());
}

TEST(CudaProviderQuiet, AFailedStreamIsReportedNamingTheStream) {
  FakeDriverConfig cfg;
  cfg.stream_query_result = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto made = detail::make_cuda_provider_with_driver(testing::fake_cuda_driver(cfg), {});
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  std::unique_ptr<MemoryProvider> p = std::move(made).value();
  Status st = p->quiet();
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("legacy default stream"), std::string::npos) << st.message();
  testing::fake_cuda_driver(FakeDriverConfig{});
}

}  // namespace
}  // namespace vshmem
