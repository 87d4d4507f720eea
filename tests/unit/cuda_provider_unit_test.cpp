// The cuda provider's logic that needs no GPU: variable parsing, provider selection, the loader's
// answer on a machine without a driver, the peer-access API's clean failure, and the atomic PTX.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/memory.hpp"
#include "tests/support/test_env.hpp"
#include "vshmem/peer_access.h"

namespace vshmem {
namespace {

using detail::Backend;
using detail::HandleTypeChoice;

// Sets (or unsets, for nullopt) a variable for one scope.
using testing::contains;
using testing::ScopedEnv;

// Whether a CUDA device is usable here: decides which answer the selection tests expect.
bool device_usable() {
  ScopedEnv backend("VSHMEM_BACKEND", "cuda");
  return create_memory_provider(ProviderOptions{}).is_ok();
}

TEST(CudaBackendParsing, AcceptsTheThreeValuesInAnyCase) {
  EXPECT_EQ(detail::parse_backend(std::nullopt).value(), Backend::kAuto);
  EXPECT_EQ(detail::parse_backend(std::string()).value(), Backend::kAuto);
  EXPECT_EQ(detail::parse_backend(std::string("auto")).value(), Backend::kAuto);
  EXPECT_EQ(detail::parse_backend(std::string("CUDA")).value(), Backend::kCuda);
  EXPECT_EQ(detail::parse_backend(std::string("Host")).value(), Backend::kHost);
}

TEST(CudaBackendParsing, RejectsOtherValuesNamingTheVariable) {
  for (const char* bad : {"gpu", "cuda ", "hostt", "1"}) {
    auto r = detail::parse_backend(std::string(bad));
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_TRUE(contains(r.status().message(), "VSHMEM_BACKEND")) << r.status().message();
    EXPECT_TRUE(contains(r.status().message(), bad)) << r.status().message();
    EXPECT_TRUE(contains(r.status().message(), "auto|cuda|host")) << r.status().message();
  }
}

// PEs on several nodes ask for eager kernel loading before CUDA starts (memory.hpp says why), and
// leave a user's choice alone.
TEST(CudaModuleLoading, EagerBeforeCudaStartsUnlessTheUserChose) {
  {
    ScopedEnv user("CUDA_MODULE_LOADING", "LAZY");
    EXPECT_EQ(prefer_eager_module_loading(), ModuleLoading::kUserChoice);
    EXPECT_STREQ(std::getenv("CUDA_MODULE_LOADING"), "LAZY");
  }
  ScopedEnv unset("CUDA_MODULE_LOADING", std::nullopt);
  void* cuda = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (cuda != nullptr) {
    ::dlclose(cuda);
    EXPECT_EQ(prefer_eager_module_loading(), ModuleLoading::kCudaStarted);
    EXPECT_EQ(std::getenv("CUDA_MODULE_LOADING"), nullptr);
  } else {
    EXPECT_EQ(prefer_eager_module_loading(), ModuleLoading::kEagerSet);
    EXPECT_STREQ(std::getenv("CUDA_MODULE_LOADING"), "EAGER");
  }
}

TEST(CudaHandleTypeParsing, AcceptsTheThreeValues) {
  EXPECT_EQ(detail::parse_handle_type(std::nullopt).value(), HandleTypeChoice::kAuto);
  EXPECT_EQ(detail::parse_handle_type(std::string("auto")).value(), HandleTypeChoice::kAuto);
  EXPECT_EQ(detail::parse_handle_type(std::string("fabric")).value(), HandleTypeChoice::kFabric);
  EXPECT_EQ(detail::parse_handle_type(std::string("POSIX_FD")).value(), HandleTypeChoice::kPosixFd);
}

TEST(CudaHandleTypeParsing, RejectsOtherValuesNamingTheVariable) {
  for (const char* bad : {"posix", "fd", "imex", "fabric,posix_fd"}) {
    auto r = detail::parse_handle_type(std::string(bad));
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_TRUE(contains(r.status().message(), "VSHMEM_HANDLE_TYPE")) << r.status().message();
    EXPECT_TRUE(contains(r.status().message(), bad)) << r.status().message();
  }
}

TEST(CudaProviderSelection, HostIsHonoured) {
  ScopedEnv backend("VSHMEM_BACKEND", "host");
  auto p = create_memory_provider(ProviderOptions{});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_STREQ(p.value()->name(), "host");
}

TEST(CudaProviderSelection, AutoPicksCudaOnlyWhenADeviceIsUsable) {
  const bool usable = device_usable();
  for (const std::optional<std::string>& value :
       {std::optional<std::string>(), std::optional<std::string>("auto")}) {
    ScopedEnv backend("VSHMEM_BACKEND", value);
    auto p = create_memory_provider(ProviderOptions{});
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_STREQ(p.value()->name(), usable ? "cuda" : "host");
  }
}

// Programs that do not link the device library reach symmetric objects with the CPU: auto gives
// them host memory, GPU or not, and says why; an explicit cuda is still honoured.
TEST(CudaProviderSelection, AutoWithoutTheDeviceLibraryIsHostAndSaysWhy) {
  for (const std::optional<std::string>& value :
       {std::optional<std::string>(), std::optional<std::string>("auto")}) {
    ScopedEnv backend("VSHMEM_BACKEND", value);
    ProviderOptions options;
    options.auto_tries_device = false;
    std::string why;
    options.chosen_because = &why;
    auto p = create_memory_provider(options);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_STREQ(p.value()->name(), "host");
    EXPECT_TRUE(contains(why, "does not link the vshmem device library")) << why;
    EXPECT_TRUE(contains(why, "VSHMEM_BACKEND=cuda")) << why;  // how to get GPU memory
  }
  const bool usable = device_usable();
  ScopedEnv backend("VSHMEM_BACKEND", "cuda");
  ProviderOptions options;
  options.auto_tries_device = false;
  std::string why;
  options.chosen_because = &why;
  auto p = create_memory_provider(options);
  EXPECT_EQ(p.is_ok(), usable);
  if (usable) {
    EXPECT_STREQ(p.value()->name(), "cuda");
    EXPECT_EQ(why, "VSHMEM_BACKEND=cuda");
  }
}

TEST(CudaProviderSelection, AutoWithTheDeviceLibrarySaysWhy) {
  const bool usable = device_usable();
  ScopedEnv backend("VSHMEM_BACKEND", std::nullopt);
  ProviderOptions options;  // auto_tries_device: the program links the device library
  std::string why;
  options.chosen_because = &why;
  auto p = create_memory_provider(options);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_TRUE(contains(why, "links the vshmem device library")) << why;
  EXPECT_TRUE(contains(why, usable ? "a GPU is usable" : "no CUDA device is usable")) << why;
}

TEST(CudaProviderSelection, CudaWithoutADeviceIsAClearError) {
  if (device_usable()) GTEST_SKIP() << "a CUDA device is usable here";
  ScopedEnv backend("VSHMEM_BACKEND", "cuda");
  auto p = create_memory_provider(ProviderOptions{});
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), Code::kUnsupported);
  const std::string m = p.status().message();  // status() returns a copy
  EXPECT_TRUE(contains(m, "VSHMEM_BACKEND=cuda")) << m;
  EXPECT_TRUE(contains(m, "no usable CUDA device")) << m;
  if (!detail::cuda_provider_built()) {
    EXPECT_TRUE(contains(m, "without the CUDA toolkit")) << m;
  } else if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); lib == nullptr) {
    // The cause, not just the symptom: the driver library is missing.
    EXPECT_TRUE(contains(m, "libcuda.so.1")) << m;
  }
}

TEST(CudaProviderSelection, InvalidBackendIsAnErrorNotAFallback) {
  ScopedEnv backend("VSHMEM_BACKEND", "gpu");
  auto p = create_memory_provider(ProviderOptions{});
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(contains(p.status().message(), "VSHMEM_BACKEND='gpu'")) << p.status().message();
}

TEST(CudaProviderSelection, AnswerIsStableAcrossCalls) {
  // The loader caches its answer; a second attempt must say the same, not crash or hang.
  ScopedEnv backend("VSHMEM_BACKEND", "cuda");
  auto a = create_memory_provider(ProviderOptions{});
  auto b = create_memory_provider(ProviderOptions{});
  EXPECT_EQ(a.is_ok(), b.is_ok());
  if (!a.is_ok()) EXPECT_EQ(a.status().message(), b.status().message());
}

TEST(CudaPeerAccessApi, NullOutputIsRejected) {
  EXPECT_EQ(shmemx_peer_access_query(0, 0, nullptr), SHMEMX_PEER_ACCESS_ERR_INVALID_ARG);
}

TEST(CudaPeerAccessApi, FailsCleanlyWithoutADevice) {
  if (device_usable()) GTEST_SKIP() << "a CUDA device is usable here";
  const int poison = 0x5a5a;
  int can = poison;
  EXPECT_EQ(shmemx_peer_access_query(0, 1, &can), SHMEMX_PEER_ACCESS_ERR_NO_DEVICE);
  EXPECT_EQ(can, poison);  // written only on success
  EXPECT_EQ(shmemx_peer_access_enable(0, 1), SHMEMX_PEER_ACCESS_ERR_NO_DEVICE);
  EXPECT_EQ(shmemx_peer_access_disable(0, 1), SHMEMX_PEER_ACCESS_ERR_NO_DEVICE);
}

TEST(CudaAtomicPtx, NamesBothKernelsAndTargetsSm70) {
  const std::string ptx = detail::atomic_ptx();
  EXPECT_TRUE(contains(ptx, ".target sm_70"));
  EXPECT_TRUE(contains(ptx, ".entry vshmem_atomic_b32("));
  EXPECT_TRUE(contains(ptx, ".entry vshmem_atomic_b64("));
  for (const char* op : {"exch", "cas", "add", "and", "or", "xor"}) {
    EXPECT_TRUE(contains(ptx, std::string("atom.sys.global.") + op + ".")) << op;
  }
}

TEST(CudaAtomicPtx, AssemblesWithPtxas) {
#if defined(VSHMEM_PTXAS)
  char dir_template[] = "/tmp/vshmem_ptx_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string ptx_path = dir + "/atomic.ptx";
  {
    std::ofstream out(ptx_path);
    out << detail::atomic_ptx();
  }
  // sm_75 is the oldest target CUDA 13's ptxas accepts; sm_90 is the H100/H200.
  for (const char* arch : {"sm_75", "sm_80", "sm_90"}) {
    const std::string cmd = std::string(VSHMEM_PTXAS) + " -arch=" + arch + " " + ptx_path + " -o " +
                            dir + "/atomic.cubin 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buf[512];
    while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
    const int status = pclose(pipe);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
        contains(output, "is not defined for option")) {
      continue;  // this ptxas does not know that architecture
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "ptxas -arch=" << arch << " failed:\n"
        << output;
  }
  std::remove((dir + "/atomic.cubin").c_str());
  std::remove(ptx_path.c_str());
  rmdir(dir.c_str());
#else
  GTEST_SKIP() << "no ptxas found at configure time";
#endif
}

}  // namespace
}  // namespace vshmem
