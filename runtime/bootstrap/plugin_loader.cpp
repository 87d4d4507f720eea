// Loads the MPI / PMIx bootstrap plugins with dlopen, so that libvshmem itself never links MPI
// or PMIx and runs on machines that have neither.
#include <dlfcn.h>
#include <unistd.h>

#include <cstring>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/bootstrap/plugin_abi.h"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

constexpr size_t kErrLen = 1024;

class PluginBootstrap final : public Bootstrap {
 public:
  PluginBootstrap(PluginKind kind, vshmem_bootstrap_plugin plugin) : kind_(kind), plugin_(plugin) {}
  // The library stays loaded: MPI implementations do not support being unloaded and loaded
  // again in one process, and a second shmem_init would do exactly that.
  ~PluginBootstrap() override { plugin_.finalize(plugin_.ctx); }

  const char* name() const override { return plugin_kind_name(kind_); }
  int rank() const override { return plugin_.rank; }
  int size() const override { return plugin_.size; }

  Status allgather(const void* in, void* out, size_t bytes) override {
    if (bytes > 0 && (in == nullptr || out == nullptr)) return invalid("allgather", "null buffer");
    char err[kErrLen] = {};
    return check(plugin_.allgather(plugin_.ctx, in, out, bytes, err, sizeof(err)), err);
  }
  Status broadcast(void* buf, size_t bytes, int root) override {
    if (root < 0 || root >= plugin_.size) {
      return invalid("broadcast", log::format("root %d is outside [0, %d)", root, plugin_.size));
    }
    if (bytes > 0 && buf == nullptr) return invalid("broadcast", "null buffer");
    char err[kErrLen] = {};
    return check(plugin_.broadcast(plugin_.ctx, buf, bytes, root, err, sizeof(err)), err);
  }
  Status barrier() override {
    char err[kErrLen] = {};
    return check(plugin_.barrier(plugin_.ctx, err, sizeof(err)), err);
  }

 private:
  Status invalid(const char* call, const std::string& cause) const {
    return error(Code::kInvalidArgument, log::format("vshmem bootstrap(%s): PE %d: %s: %s", name(),
                                                     plugin_.rank, call, cause.c_str()));
  }
  // Plugins return a vshmem::Code and a message "call: cause".
  Status check(int rc, const char* err) const {
    if (rc == 0) return Status::ok();
    Code code =
        rc > 0 && rc <= static_cast<int>(Code::kState) ? static_cast<Code>(rc) : Code::kPeerFailure;
    return error(code, log::format("vshmem bootstrap(%s): PE %d: %s", name(), plugin_.rank, err));
  }

  PluginKind kind_;
  vshmem_bootstrap_plugin plugin_;
};

std::string library_dir() {
  Dl_info info{};
  // Any symbol of libvshmem tells us where libvshmem itself lives.
  if (::dladdr(reinterpret_cast<void*>(&plugin_search_path), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string plugin_file(PluginKind kind) {
  return std::string("libvshmem_bootstrap_") + plugin_kind_name(kind) + ".so";
}

}  // namespace

const char* plugin_kind_name(PluginKind kind) { return kind == PluginKind::kMpi ? "mpi" : "pmix"; }

std::vector<std::string> plugin_search_path() {
  std::vector<std::string> dirs;
  if (auto v = env::get("VSHMEM_PLUGIN_PATH")) {
    size_t start = 0;
    while (start <= v->size()) {
      size_t colon = v->find(':', start);
      if (colon == std::string::npos) colon = v->size();
      if (colon > start) dirs.push_back(v->substr(start, colon - start));
      start = colon + 1;
    }
  }
  std::string lib = library_dir();
  if (!lib.empty()) dirs.push_back(lib + "/vshmem");
  dirs.push_back(VSHMEM_BUILD_PLUGIN_DIR);
  dirs.push_back(VSHMEM_PLUGIN_DIR);
  return dirs;
}

std::string find_plugin(PluginKind kind) {
  for (const std::string& dir : plugin_search_path()) {
    std::string path = dir + "/" + plugin_file(kind);
    if (::access(path.c_str(), R_OK) == 0) return path;
  }
  return {};
}

Result<std::unique_ptr<Bootstrap>> load_plugin_bootstrap(PluginKind kind,
                                                         const BootstrapOptions& options,
                                                         std::chrono::milliseconds timeout) {
  const char* kname = plugin_kind_name(kind);
  std::string path = find_plugin(kind);
  if (path.empty()) {
    std::string dirs;
    for (const std::string& d : plugin_search_path()) dirs += (dirs.empty() ? "" : ":") + d;
    return error(Code::kUnsupported,
                 log::format("vshmem bootstrap(%s): %s not found in %s (was vshmem built with "
                             "%s? set VSHMEM_PLUGIN_PATH to its directory)",
                             kname, plugin_file(kind).c_str(), dirs.c_str(),
                             kind == PluginKind::kMpi ? "MPI" : "PMIx"));
  }
  // RTLD_GLOBAL: Open MPI's own components are dlopen'ed by libmpi and expect its symbols to
  // be globally visible.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    return error(Code::kUnsupported, log::format("vshmem bootstrap(%s): dlopen(%s): %s", kname,
                                                 path.c_str(), ::dlerror()));
  }
  auto init = reinterpret_cast<vshmem_bootstrap_plugin_init_fn>(
      ::dlsym(handle, VSHMEM_BOOTSTRAP_PLUGIN_INIT_SYMBOL));
  if (init == nullptr) {
    return error(Code::kUnsupported,
                 log::format("vshmem bootstrap(%s): %s does not export %s", kname, path.c_str(),
                             VSHMEM_BOOTSTRAP_PLUGIN_INIT_SYMBOL));
  }
  vshmem_bootstrap_init_args args{};
  args.abi_version = VSHMEM_BOOTSTRAP_ABI_VERSION;
  args.mpi_comm = kind == PluginKind::kMpi ? options.mpi_comm : nullptr;
  args.timeout_ms = static_cast<long>(timeout.count());
  args.log_level = static_cast<int>(log::threshold());
  vshmem_bootstrap_plugin plugin{};
  char err[kErrLen] = {};
  int rc = init(&args, &plugin, err, sizeof(err));
  if (rc != 0) {
    Code code =
        rc > 0 && rc <= static_cast<int>(Code::kState) ? static_cast<Code>(rc) : Code::kSystem;
    return error(code, log::format("vshmem bootstrap(%s): %s", kname, err));
  }
  if (plugin.abi_version != VSHMEM_BOOTSTRAP_ABI_VERSION || plugin.allgather == nullptr ||
      plugin.broadcast == nullptr || plugin.barrier == nullptr || plugin.finalize == nullptr) {
    return error(Code::kUnsupported,
                 log::format("vshmem bootstrap(%s): %s speaks plugin ABI %d, not %d", kname,
                             path.c_str(), plugin.abi_version, VSHMEM_BOOTSTRAP_ABI_VERSION));
  }
  return std::unique_ptr<Bootstrap>(new PluginBootstrap(kind, plugin));
}

}  // namespace vshmem::detail
