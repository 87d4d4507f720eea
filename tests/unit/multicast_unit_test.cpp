// The multicast and fabric parts of the cuda provider, on the FAKE driver
// (tests/support/fake_cuda_driver): the multicast gate (attribute and VSHMEM_ENABLE_MULTICAST
// before any cuMulticastCreate), the object's calls, the IMEX channel check and the NVLink
// domain decision. libcuda is never loaded here (checked after every test).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/fabric_domain.hpp"
#include "runtime/memory/memory.hpp"
#include "tests/support/fake_cuda_driver.hpp"
#include "tests/support/test_env.hpp"

namespace vshmem {
namespace {

using testing::contains;
using testing::fake_calls;
using testing::FakeDriverConfig;
using testing::ScopedEnv;

class FakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::real_libcuda_loaded());
    testing::reset_fake_calls();
  }
  void TearDown() override { EXPECT_FALSE(testing::real_libcuda_loaded()); }

  std::unique_ptr<MemoryProvider> provider(const FakeDriverConfig& cfg) {
    const detail::CudaDriver& drv = testing::fake_cuda_driver(cfg);
    EXPECT_TRUE(drv.fake);
    auto p = detail::make_cuda_provider_with_driver(drv, {});
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? std::move(p).value() : nullptr;
  }
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/vshmem-imex-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    ::unlink((path_ + "/channel0").c_str());
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_F(FakeDriverTest, MulticastNeedsTheAttribute) {
  FakeDriverConfig cfg;
  cfg.multicast_supported = false;
  auto p = provider(cfg);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(p->multicast(), nullptr);
  Status st = p->multicast()->usable();
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_TRUE(contains(st.message(), "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED")) << st.message();
  ScopedEnv on("VSHMEM_ENABLE_MULTICAST", "1");
  auto made = p->multicast()->create(64 << 10, 2, HandleKind::kPosixFd);
  EXPECT_FALSE(made.is_ok());
  EXPECT_EQ(fake_calls("cuMulticastCreate"), 0);
}

TEST_F(FakeDriverTest, CreateIsNeverCalledWithoutTheVariable) {
  auto p = provider(FakeDriverConfig{});
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->multicast()->usable().is_ok());
  for (const std::optional<std::string>& v :
       {std::optional<std::string>(), std::optional<std::string>("0")}) {
    ScopedEnv off("VSHMEM_ENABLE_MULTICAST", v);
    auto made = p->multicast()->create(64 << 10, 2, HandleKind::kPosixFd);
    ASSERT_FALSE(made.is_ok());
    EXPECT_TRUE(contains(made.status().message(), "VSHMEM_ENABLE_MULTICAST"))
        << made.status().message();
  }
  EXPECT_EQ(fake_calls("cuMulticastCreate"), 0);
}

TEST_F(FakeDriverTest, ObjectLifecycleCallsTheDriverInOrder) {
  auto p = provider(FakeDriverConfig{});
  ASSERT_NE(p, nullptr);
  ScopedEnv on("VSHMEM_ENABLE_MULTICAST", "1");
  auto made = p->multicast()->create(256 << 10, 1, HandleKind::kPosixFd);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  EXPECT_EQ(fake_calls("cuMulticastCreate"), 1);
  std::unique_ptr<MulticastObject> mc = std::move(made).value();
  ASSERT_TRUE(mc->add_device().is_ok());
  auto chunk = p->create(64 << 10);
  ASSERT_TRUE(chunk.is_ok());
  // Off the granularity: refused before the driver is asked.
  Status bad = mc->bind(4096, chunk.value());
  EXPECT_FALSE(bad.is_ok());
  EXPECT_TRUE(contains(bad.message(), "granularity")) << bad.message();
  EXPECT_EQ(fake_calls("cuMulticastBindMem"), 0);
  ASSERT_TRUE(mc->bind(64 << 10, chunk.value()).is_ok());
  EXPECT_EQ(fake_calls("cuMulticastBindMem"), 1);
  auto va = mc->map();
  ASSERT_TRUE(va.is_ok()) << va.status().message();
  // The fake backs the mapping with ordinary memory: it is writable and reads back.
  std::mt19937_64 gen(std::random_device{}());
  const uint64_t v = gen();
  *reinterpret_cast<uint64_t*>(va.value() + (64 << 10)) = v;
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(va.value() + (64 << 10)), v);
  auto exported = mc->export_handle(HandleKind::kPosixFd);
  ASSERT_TRUE(exported.is_ok());
  auto imported = p->multicast()->import(std::move(exported).value(), 256 << 10);
  ASSERT_TRUE(imported.is_ok()) << imported.status().message();
  auto va2 = imported.value()->map();
  ASSERT_TRUE(va2.is_ok());
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(va2.value() + (64 << 10)), v);
  imported.value().reset();
  mc.reset();
  EXPECT_EQ(fake_calls("cuMulticastUnbind"), 1);
}

TEST_F(FakeDriverTest, FailedBindNamesTheCallAndTheDriverError) {
  FakeDriverConfig cfg;
  cfg.multicast_bind_result = CUDA_ERROR_NOT_PERMITTED;
  auto p = provider(cfg);
  ASSERT_NE(p, nullptr);
  ScopedEnv on("VSHMEM_ENABLE_MULTICAST", "1");
  auto mc = p->multicast()->create(64 << 10, 1, HandleKind::kPosixFd);
  ASSERT_TRUE(mc.is_ok());
  auto chunk = p->create(64 << 10);
  ASSERT_TRUE(chunk.is_ok());
  Status st = mc.value()->bind(0, chunk.value());
  EXPECT_TRUE(contains(st.message(), "cuMulticastBindMem")) << st.message();
  EXPECT_TRUE(contains(st.message(), "CUDA_ERROR_NOT_PERMITTED")) << st.message();
}

TEST(ImexChannel, MissingDirectoryIsNamed) {
  Status st = check_imex_channel("/nonexistent/imex-channels");
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_TRUE(contains(st.message(), "no IMEX channel: /nonexistent/imex-channels"))
      << st.message();
}

TEST(ImexChannel, EmptyDirectoryAndPresentChannel) {
  TempDir dir;
  Status empty = check_imex_channel(dir.path());
  EXPECT_TRUE(contains(empty.message(), "holds no channel device")) << empty.message();
  std::ofstream(dir.path() + "/channel0") << "";
  EXPECT_TRUE(check_imex_channel(dir.path()).is_ok());
}

TEST_F(FakeDriverTest, FabricHandlesNeedAnImexChannel) {
  FakeDriverConfig cfg;
  cfg.fabric_supported = true;
  cfg.imex_channel_dir = "/nonexistent/imex-channels";
  {
    ScopedEnv want("VSHMEM_HANDLE_TYPE", "fabric");
    auto p = detail::make_cuda_provider_with_driver(testing::fake_cuda_driver(cfg), {});
    ASSERT_FALSE(p.is_ok());
    EXPECT_TRUE(contains(p.status().message(),
                         "VSHMEM_HANDLE_TYPE=fabric: no IMEX channel: "
                         "/nonexistent/imex-channels"))
        << p.status().message();
  }
  auto p = provider(cfg);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->handle_kinds(), std::vector<HandleKind>{HandleKind::kPosixFd});
  EXPECT_EQ(p->fabric_identity().usable, 0u);

  TempDir dir;
  std::ofstream(dir.path() + "/channel0") << "";
  cfg.imex_channel_dir = dir.path();
  cfg.fabric_info_result = CUDA_SUCCESS;
  cfg.fabric_info.registered = true;
  cfg.fabric_info.clique_id = 3;
  std::memset(cfg.fabric_info.cluster_uuid, 0x5a, 16);
  auto q = provider(cfg);
  ASSERT_NE(q, nullptr);
  ASSERT_FALSE(q->handle_kinds().empty());
  EXPECT_EQ(q->handle_kinds()[0], HandleKind::kFabric);
  FabricIdentity id = q->fabric_identity();
  EXPECT_EQ(id.usable, 1u);
  EXPECT_EQ(id.clique_id, 3u);
  EXPECT_EQ(id.cluster_uuid[15], 0x5a);
}

TEST(FabricPeers, SameCliqueOnOtherNodesOnly) {
  FabricIdentity a;
  a.usable = 1;
  a.clique_id = 1;
  std::memset(a.cluster_uuid, 1, 16);
  FabricIdentity other_clique = a;
  other_clique.clique_id = 2;
  FabricIdentity other_cluster = a;
  other_cluster.cluster_uuid[0] = 9;
  FabricIdentity none;
  // PE 0 and 1 on node 0; PEs 2..5 on node 1.
  std::vector<FabricIdentity> ids = {a, a, a, other_clique, other_cluster, none};
  std::vector<int> nodes = {0, 0, 1, 1, 1, 1};
  EXPECT_EQ(fabric_peers(ids, nodes, 0),
            (std::vector<bool>{false, false, true, false, false, false}));
  EXPECT_EQ(fabric_peers(ids, nodes, 5), std::vector<bool>(6, false));  // not in a domain
  EXPECT_EQ(fabric_peers(ids, nodes, 3), std::vector<bool>(6, false));  // its clique is alone
}

// Heap chunks and multicast objects import through one function: both refuse a handle without a
// descriptor before the driver sees it, and both name what was imported.
TEST_F(FakeDriverTest, ImportsShareOneHandlePath) {
  auto p = provider(FakeDriverConfig{});
  ASSERT_NE(p, nullptr);
  auto chunk = p->import(ShareableHandle::from_fd(-1), 64 << 10);
  ASSERT_FALSE(chunk.is_ok());
  EXPECT_TRUE(contains(chunk.status().message(), "no descriptor")) << chunk.status().message();
  auto object = p->multicast()->import(ShareableHandle::from_fd(-1), 64 << 10);
  ASSERT_FALSE(object.is_ok());
  EXPECT_EQ(object.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(contains(object.status().message(), "multicast object") &&
              contains(object.status().message(), "no descriptor"))
      << object.status().message();
  EXPECT_EQ(fake_calls("cuMemImportFromShareableHandle"), 0);
}

// Issue 19, item 9: after a kernel traps, every call on the context returns the sticky error;
// the provider reports it (runtime/api/job_watch.cpp then ends the PE naming its GPU). A busy
// stream ("not ready") is healthy.
TEST_F(FakeDriverTest, DeviceFaultIsTheContextsStickyError) {
  FakeDriverConfig cfg;
  auto p = provider(cfg);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->device_fault().is_ok());
  cfg.stream_query_result = CUDA_ERROR_NOT_READY;
  testing::fake_cuda_driver(cfg);
  EXPECT_TRUE(p->device_fault().is_ok());
  cfg.stream_query_result = CUDA_ERROR_ILLEGAL_INSTRUCTION;
  testing::fake_cuda_driver(cfg);
  Status st = p->device_fault();
  EXPECT_FALSE(st.is_ok());
  EXPECT_TRUE(contains(st.message(), "GPU 0: CUDA_ERROR_ILLEGAL_INSTRUCTION")) << st.message();
  cfg.stream_query_result = CUDA_SUCCESS;
  testing::fake_cuda_driver(cfg);
  EXPECT_TRUE(p->device_fault().is_ok());
}

}  // namespace
}  // namespace vshmem
