// vshmem-info: what this vshmem is and what this machine offers it. Prints the version, the
// build's features, the machine's capabilities (GPUs, their memory-sharing handle types, peer
// access, MPS; UCX's transports where the UCX plugin loads) and every variable of the
// configuration table with its value. Runs without a GPU and without libcuda (the driver is
// loaded with dlopen, as libvshmem does).
//
//   vshmem-info            everything
//   vshmem-info --readme   the README's variable table (markdown), from the table
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/common/config.hpp"
#include "runtime/common/log.hpp"
#include "runtime/transport/remote_path.hpp"
#if defined(VSHMEM_CUDA_PROVIDER)
#include "runtime/memory/cuda_caps.hpp"
#include "runtime/memory/cuda_driver.hpp"
#endif
#if __has_include(<ucp/api/ucp.h>)
#include <ucp/api/ucp.h>
#define VSHMEM_INFO_HAS_UCX_HEADERS 1
#endif

namespace vshmem {
namespace {

const char* yes_no(bool b) { return b ? "yes" : "no"; }

void print_build() {
  std::printf("vshmem %s\n\nbuild:\n", VSHMEM_VERSION_STRING);
#if defined(VSHMEM_CUDA_PROVIDER)
  constexpr bool kCudaProvider = true;
#else
  constexpr bool kCudaProvider = false;
#endif
  std::printf("  GPU heap (cuda memory provider)  %s\n", yes_no(kCudaProvider));
  std::printf("  device library (vshmem::device)  %s\n", yes_no(VSHMEM_INFO_DEVICE_LIBRARY));
  std::printf("  build type                       %s\n", VSHMEM_INFO_BUILD_TYPE);
  for (auto kind : {detail::PluginKind::kMpi, detail::PluginKind::kPmix}) {
    const std::string path = detail::find_plugin(kind);
    std::printf("  %-4s bootstrap plugin            %s\n", detail::plugin_kind_name(kind),
                path.empty() ? "not found" : path.c_str());
  }
}

// The UCX plugin, found as libvshmem finds it; where it loads, UCX's own list of transports.
void print_ucx() {
  const std::string file = transport_plugin_file("ucx");
  std::string found;
  for (const std::string& dir : detail::plugin_search_path()) {
    if (found.empty() && ::access((dir + "/" + file).c_str(), R_OK) == 0) found = dir + "/" + file;
  }
  std::printf("\nremote path (UCX):\n");
  if (found.empty()) {
    std::printf("  %s not found (no remote path: only peers that map each other)\n", file.c_str());
    return;
  }
  void* plugin = ::dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::printf("  %s does not load: %s\n", found.c_str(), ::dlerror());
    return;
  }
  std::printf("  plugin %s\n", found.c_str());
#if defined(VSHMEM_INFO_HAS_UCX_HEADERS)
  // The plugin's dependency is loaded now; ask it directly (no link to UCX here).
  void* ucp = ::dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (ucp == nullptr) ucp = ::dlopen("libucp.so", RTLD_NOW | RTLD_NOLOAD);
  auto version =
      ucp ? reinterpret_cast<const char* (*)()>(::dlsym(ucp, "ucp_get_version_string")) : nullptr;
  auto config_read =
      ucp ? reinterpret_cast<decltype(&ucp_config_read)>(::dlsym(ucp, "ucp_config_read")) : nullptr;
  auto config_release =
      ucp ? reinterpret_cast<decltype(&ucp_config_release)>(::dlsym(ucp, "ucp_config_release"))
          : nullptr;
  auto init = ucp ? reinterpret_cast<decltype(&ucp_init_version)>(::dlsym(ucp, "ucp_init_version"))
                  : nullptr;
  auto print_info = ucp ? reinterpret_cast<decltype(&ucp_context_print_info)>(
                              ::dlsym(ucp, "ucp_context_print_info"))
                        : nullptr;
  auto cleanup =
      ucp ? reinterpret_cast<decltype(&ucp_cleanup)>(::dlsym(ucp, "ucp_cleanup")) : nullptr;
  if (!version || !config_read || !config_release || !init || !print_info || !cleanup) {
    std::printf("  (libucp's entry points not found: transports not listed)\n");
    return;
  }
  std::printf("  UCX %s; transports (UCX_TLS, UCX_NET_DEVICES choose among them):\n", version());
  ucp_config_t* config = nullptr;
  if (config_read(nullptr, nullptr, &config) != UCS_OK) {
    std::printf("  UCX's configuration (UCX_* variables) does not parse\n");
    return;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
  ucp_context_h context = nullptr;
  const ucs_status_t s = init(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context);
  config_release(config);
  if (s != UCS_OK) {
    std::printf("  ucp_init failed (%d)\n", static_cast<int>(s));
    return;
  }
  FILE* text = std::tmpfile();
  if (text != nullptr) {
    print_info(context, text);
    const bool at_start = std::fseek(text, 0, SEEK_SET) == 0;
    char line[512];
    while (at_start && std::fgets(line, sizeof(line), text) != nullptr) {
      // "#      resource 1  :  md 1  dev 1  flags -- tcp/lo"
      const char* r = std::strstr(line, "resource");
      const char* dashes = std::strstr(line, "-- ");
      if (r != nullptr && dashes != nullptr) std::printf("    %s", dashes + 3);
    }
    std::fclose(text);
  }
  cleanup(context);
#else
  std::printf("  (built without UCX's headers: transports not listed)\n");
#endif
}

void print_gpus() {
  std::printf("\nGPUs:\n");
#if defined(VSHMEM_CUDA_PROVIDER)
  auto driver = detail::cuda_driver();
  if (!driver) {
    std::printf("  none usable: %s\n", driver.status().message().c_str());
    return;
  }
  const detail::CudaDriver& drv = **driver;
  auto caps = detail::query_node_caps(drv);
  if (!caps) {
    std::printf("  %s\n", caps.status().message().c_str());
    return;
  }
  std::printf("  driver %s, %zu device(s)\n",
              detail::driver_version_string(caps->driver_version).c_str(), caps->devices.size());
  for (const detail::CudaDeviceCaps& d : caps->devices) {
    int mps = 0;
    const bool mps_known =
        drv.cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, d.ordinal) == CUDA_SUCCESS;
    std::printf(
        "  GPU %d: %s (sm_%d%d): VMM %s; handle types: posix_fd %s, fabric %s; multicast %s; "
        "compression %s; GPUDirect RDMA with VMM %s; MPS %s\n",
        d.ordinal, d.name.c_str(), d.cc_major, d.cc_minor, yes_no(d.vmm), yes_no(d.posix_fd),
        yes_no(d.fabric), yes_no(d.multicast), yes_no(d.compression), yes_no(d.gdr_with_vmm),
        mps_known ? yes_no(mps != 0) : "unknown");
  }
  std::printf("  peer access (row reaches column):\n");
  for (size_t from = 0; from < caps->can_access_peer.size(); ++from) {
    std::printf("    GPU %zu:", from);
    for (bool b : caps->can_access_peer[from]) std::printf(" %s", b ? "yes" : "no ");
    std::printf("\n");
  }
#else
  std::printf("  not built (no CUDA toolkit at build time): host heap only\n");
#endif
}

void print_variables() {
  const Status loaded = config::load();
  std::printf("\nenvironment variables:\n");
  for (size_t i = 0; i < config::kVarCount; ++i) {
    std::printf("  %s\n", config::describe(i).c_str());
  }
  if (!loaded.is_ok()) std::printf("shmem_init would fail: %s\n", loaded.message().c_str());
}

}  // namespace
}  // namespace vshmem

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--readme") == 0) {
    std::fputs(vshmem::config::markdown_table().c_str(), stdout);
    return 0;
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--readme]\n", argv[0]);
    return 2;
  }
  try {
    vshmem::print_build();
    vshmem::print_gpus();
    vshmem::print_ucx();
    vshmem::print_variables();
  } catch (const std::exception& e) {  // e.g. out of memory: a message, not std::terminate
    std::fprintf(stderr, "vshmem-info: %s\n", e.what());
    return 1;
  }
  return 0;
}
