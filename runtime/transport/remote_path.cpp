#include "runtime/transport/remote_path.hpp"

#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/hot.hpp"
#include "runtime/common/log.hpp"

namespace vshmem {
namespace {

constexpr size_t kErrLen = 1024;

// The plugin's message buffer. Only its first byte is cleared (a call that fails writes a
// terminated message): clearing all of it cost 130 instructions per put or get, a tenth of
// OSHMEM's whole 8-byte get over TCP.
struct ErrText {
  char text[kErrLen];
  ErrText() { text[0] = '\0'; }
};

int write_err(char* err, size_t errlen, const Status& st) {
  if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s", st.message().c_str());
  return st ? 0 : static_cast<int>(st.code());
}

Code code_of(int rc) {
  return rc > 0 && rc <= static_cast<int>(Code::kState) ? static_cast<Code>(rc)
                                                        : Code::kPeerFailure;
}

}  // namespace

// What libvshmem lends the plugin (plugin_abi.h, vshmem_transport_host).
struct RemotePath::Host {
  Bootstrap& bootstrap;
  MemoryProvider& provider;

  static int allgather(void* ctx, const void* in, void* out, size_t bytes, char* err,
                       size_t errlen) {
    return write_err(err, errlen, static_cast<Host*>(ctx)->bootstrap.allgather(in, out, bytes));
  }
  static int copy(void* ctx, void* dst, const void* src, size_t bytes, char* err, size_t errlen) {
    return write_err(err, errlen, static_cast<Host*>(ctx)->provider.copy(dst, src, bytes));
  }
  static int atomic(void* ctx, int op, void* addr, unsigned width, uint64_t operand,
                    uint64_t compare, uint64_t* result, char* err, size_t errlen) {
    if (op < VSHMEM_TRANSPORT_AMO_FETCH || op > VSHMEM_TRANSPORT_AMO_FETCH_XOR ||
        (width != 4 && width != 8) || reinterpret_cast<uintptr_t>(addr) % width != 0) {
      return write_err(
          err, errlen,
          error(Code::kInvalidArgument,
                log::format("malformed atomic (op %d, %u bytes at %p)", op, width, addr)));
    }
    AtomicRequest r{static_cast<AtomicOp>(op), addr, width, operand, compare};
    return write_err(err, errlen, static_cast<Host*>(ctx)->provider.atomic(r, result));
  }
  static int alloc_staging(void* ctx, size_t bytes, void** out, char* err, size_t errlen) {
    Result<void*> p = static_cast<Host*>(ctx)->provider.alloc_staging(bytes);
    if (!p.is_ok()) return write_err(err, errlen, p.status());
    *out = *p;
    return 0;
  }
  static int copy_start(void* ctx, void* dst, const void* src, size_t bytes, uint64_t* ticket,
                        char* err, size_t errlen) {
    Result<uint64_t> t = static_cast<Host*>(ctx)->provider.copy_start(dst, src, bytes);
    if (!t.is_ok()) return write_err(err, errlen, t.status());
    *ticket = *t;
    return 0;
  }
  static int copy_test(void* ctx, uint64_t ticket, int* done, char* err, size_t errlen) {
    Result<bool> d = static_cast<Host*>(ctx)->provider.copy_test(ticket);
    if (!d.is_ok()) return write_err(err, errlen, d.status());
    *done = *d ? 1 : 0;
    return 0;
  }
  static void free_staging(void* ctx, void* p) {
    static_cast<Host*>(ctx)->provider.free_staging(p);
  }
  static int register_host(void* ctx, void* p, size_t bytes, char* err, size_t errlen) {
    return write_err(err, errlen, static_cast<Host*>(ctx)->provider.register_host(p, bytes));
  }
  static void unregister_host(void* ctx, void* p) {
    static_cast<Host*>(ctx)->provider.unregister_host(p);
  }
  static void log_message(void*, int level, const char* message) {
    log::message(static_cast<log::Level>(level), "%s", message);
  }
  static int log_enabled(void*, int level) {
    return log::enabled(static_cast<log::Level>(level)) ? 1 : 0;
  }
};

std::string transport_plugin_file(const char* kind) {
  return std::string("libvshmem_transport_") + kind + ".so";
}

RemotePath::RemotePath(Bootstrap& bootstrap, MemoryProvider& provider, RemoteOptions options)
    : host_(new Host{bootstrap, provider}), options_(std::move(options)) {}

RemotePath::~RemotePath() {
  // The plugin stays loaded: UCX registers memory hooks and global state that do not support
  // being unloaded while the process lives.
  if (loaded_) plugin_.finalize(plugin_.ctx);
}

namespace {

// UCX installs handlers for SIGSEGV, SIGBUS, SIGILL and SIGFPE when its libraries load
// (UCX_ERROR_SIGNALS) that print UCX's backtrace and end the process: they would take the place
// of vshmem's report of a CPU access to GPU memory (seen on the H200: gpu.cpu_access_fault got
// UCX's backtrace once UCX was loaded for the global and static variables) and of the
// application's own handlers. Off unless the user sets the variable.
void* load_ucx_plugin(const std::string& path) {
  ::setenv("UCX_ERROR_SIGNALS", "", 0);
  return ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

}  // namespace

Result<std::unique_ptr<RemotePath>> RemotePath::create(Bootstrap& bootstrap,
                                                       MemoryProvider& provider,
                                                       const RemoteOptions& options,
                                                       std::string* unavailable) {
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const Clock::time_point t_start = Clock::now();
  std::unique_ptr<RemotePath> path(new RemotePath(bootstrap, provider, options));
  const std::string file = transport_plugin_file("ucx");
  std::string found, dirs;
  for (const std::string& dir : detail::plugin_search_path()) {
    std::string candidate = dir + "/" + file;
    dirs += (dirs.empty() ? "" : ":") + dir;
    if (found.empty() && ::access(candidate.c_str(), R_OK) == 0) found = candidate;
  }
  // Loading can fail on one PE only (a node without UCX): all PEs learn who before anyone
  // enters the plugin's own collective set-up.
  Status loaded;
  vshmem_transport_plugin_init_fn init = nullptr;
  if (found.empty()) {
    loaded = error(Code::kUnsupported,
                   log::format("the remote path needs %s, not found in %s (was vshmem built with "
                               "UCX? install libucx-dev and rebuild, or set VSHMEM_PLUGIN_PATH to "
                               "its directory)",
                               file.c_str(), dirs.c_str()));
  } else if (void* handle = load_ucx_plugin(found)) {
    init = reinterpret_cast<vshmem_transport_plugin_init_fn>(
        ::dlsym(handle, VSHMEM_TRANSPORT_PLUGIN_INIT_SYMBOL));
    if (init == nullptr) {
      loaded = error(Code::kUnsupported, log::format("%s does not export %s", found.c_str(),
                                                     VSHMEM_TRANSPORT_PLUGIN_INIT_SYMBOL));
    }
  } else {
    loaded = error(Code::kUnsupported,
                   log::format("the remote path cannot load %s: %s (install UCX: the libucx0 "
                               "package, libucp.so.0)",
                               found.c_str(), ::dlerror()));
  }
  const double load_ms = ms_since(t_start);
  const int32_t ok = loaded ? 1 : 0;
  std::vector<int32_t> oks(static_cast<size_t>(bootstrap.size()));
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&ok, oks.data(), sizeof(ok)));
  if (options.optional) {
    int first = -1;
    for (int p = 0; p < bootstrap.size() && first < 0; ++p) {
      if (!oks[p]) first = p;
    }
    if (first >= 0) {
      if (unavailable != nullptr) {
        *unavailable = !loaded ? loaded.message()
                               : log::format(
                                     "PE %d cannot load the UCX transport plugin (see its "
                                     "VSHMEM_DEBUG=info message)",
                                     first);
      }
      if (!loaded) VSHMEM_INFO("UCX transport plugin not loaded: %s", loaded.message().c_str());
      return std::unique_ptr<RemotePath>();
    }
  }
  if (!loaded) return loaded;
  for (int p = 0; p < bootstrap.size(); ++p) {
    if (!oks[p]) {
      return error(Code::kUnsupported,
                   log::format("PE %d cannot load the UCX transport plugin (see its message); "
                               "PEs on other nodes need it",
                               p));
    }
  }
  vshmem_transport_init_args args{};
  args.abi_version = VSHMEM_TRANSPORT_ABI_VERSION;
  args.my_pe = options.my_pe;
  args.n_pes = options.n_pes;
  args.remote = path->options_.remote.data();
  args.heap_base = options.heap_base;
  args.heap_size = options.heap_size;
  args.heap_is_device = provider.is_device_memory() ? 1 : 0;
  if (options.statics != nullptr) {
    args.static_base = options.statics->base;
    args.static_size = options.statics->size;
  }
  args.timeout_ms = static_cast<long>(options.timeout.count());
  args.host = {path->host_.get(),    &Host::allgather,     &Host::copy,
               &Host::atomic,        &Host::log_message,   &Host::log_enabled,
               &Host::alloc_staging, &Host::free_staging,  &Host::copy_start,
               &Host::copy_test,     &Host::register_host, &Host::unregister_host};
  // The plugin's settings come from the configuration table (already checked at shmem_init):
  // the plugin reads no variable itself.
  args.rma_at_target = strcasecmp(env::text("VSHMEM_UCX_RMA").c_str(), "target") == 0 ? 1 : 0;
  const std::string atomics = env::text("VSHMEM_UCX_ATOMICS");
  args.atomics_on_network =
      strcasecmp(atomics.c_str(), "network") == 0  ? VSHMEM_TRANSPORT_ATOMICS_NETWORK
      : strcasecmp(atomics.c_str(), "target") == 0 ? VSHMEM_TRANSPORT_ATOMICS_TARGET
                                                   : VSHMEM_TRANSPORT_ATOMICS_AUTO;
  Result<long long> spin = env::int_var("VSHMEM_UCX_SPIN_US", -1, 0, 1000000);
  Result<long long> chunk_kib = env::int_var("VSHMEM_UCX_CHUNK_KIB", 0, 4, 65536);
  Result<long long> chunks = env::int_var("VSHMEM_UCX_CHUNKS", 0, 1, 64);
  VSHMEM_RETURN_IF_ERROR(spin.status());
  VSHMEM_RETURN_IF_ERROR(chunk_kib.status());
  VSHMEM_RETURN_IF_ERROR(chunks.status());
  args.spin_us = static_cast<long>(spin.value());
  args.stage_chunk_kib = static_cast<long>(chunk_kib.value());
  args.stage_chunks = static_cast<long>(chunks.value());
  Result<bool> stage_direct = env::bool_var("VSHMEM_UCX_STAGE_DIRECT", true);
  VSHMEM_RETURN_IF_ERROR(stage_direct.status());
  args.stage_direct = stage_direct.value() ? 1 : 0;
  Result<bool> peer_errors = env::bool_var("VSHMEM_UCX_PEER_ERRORS", true);
  VSHMEM_RETURN_IF_ERROR(peer_errors.status());
  args.no_peer_errors = peer_errors.value() ? 0 : 1;
  Result<bool> data_ep = env::bool_var("VSHMEM_UCX_DATA_ENDPOINT", true);
  VSHMEM_RETURN_IF_ERROR(data_ep.status());
  args.no_data_ep = data_ep.value() ? 0 : 1;
  const std::string put_messages = env::text("VSHMEM_UCX_PUT_MESSAGES");
  args.put_messages = put_messages == "1" ? 1 : put_messages == "0" ? 0 : 2;
  Result<bool> get_messages = env::bool_var("VSHMEM_UCX_GET_MESSAGES", true);
  VSHMEM_RETURN_IF_ERROR(get_messages.status());
  args.get_messages = get_messages.value() ? 1 : 0;
  const std::optional<std::string> user_tls = env::get("UCX_TLS");
  args.user_tls = user_tls ? user_tls->c_str() : nullptr;
  args.user_sm_error_handling =
      env::is_set("UCX_MM_ERROR_HANDLING") || env::is_set("UCX_POSIX_ERROR_HANDLING") ? 1 : 0;
  ErrText e;
  const Clock::time_point t_init = Clock::now();
  int rc = init(&args, &path->plugin_, e.text, sizeof(e.text));
  const double init_ms = ms_since(t_init);
  if (options.optional) {
    // Only the global and static variables need it: a PE where UCX would not start leaves every
    // PE without it (a job that never touches another PE's globals still runs).
    const int32_t started = rc == 0 ? 1 : 0;
    std::vector<int32_t> all(static_cast<size_t>(bootstrap.size()));
    VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&started, all.data(), sizeof(started)));
    int first = -1;
    for (int p = 0; p < bootstrap.size() && first < 0; ++p) {
      if (!all[p]) first = p;
    }
    if (first >= 0) {
      if (rc == 0) path->plugin_.finalize(path->plugin_.ctx);
      if (unavailable != nullptr) {
        *unavailable = rc != 0 ? log::format("UCX did not start: %s", e.text)
                               : log::format(
                                     "UCX did not start on PE %d (see its "
                                     "VSHMEM_DEBUG=info message)",
                                     first);
      }
      if (rc != 0) VSHMEM_INFO("UCX did not start: %s", e.text);
      return std::unique_ptr<RemotePath>();
    }
  }
  if (rc != 0) return error(code_of(rc), log::format("remote path (ucx): %s", e.text));
  if (path->plugin_.abi_version != VSHMEM_TRANSPORT_ABI_VERSION) {
    return error(Code::kUnsupported,
                 log::format("%s speaks transport ABI %d, not %d", found.c_str(),
                             path->plugin_.abi_version, VSHMEM_TRANSPORT_ABI_VERSION));
  }
  path->loaded_ = true;
  const uint32_t c = path->plugin_.caps;
  const auto bit = [c](uint32_t plugin_cap, PathCaps cap) {
    return (c & plugin_cap) != 0 ? static_cast<uint32_t>(cap) : 0u;
  };
  path->caps_ = bit(VSHMEM_TRANSPORT_CAP_RMA, kPathRma) |
                bit(VSHMEM_TRANSPORT_CAP_AMO, kPathNetworkAtomics) |
                bit(VSHMEM_TRANSPORT_CAP_TARGET_OPS, kPathTargetOps) |
                bit(VSHMEM_TRANSPORT_CAP_DEVICE_MEMORY, kPathDeviceMemory);
  VSHMEM_INFO("remote path: %s loaded from %s (%.1f ms: loading %.1f, plugin set-up %.1f)",
              path->plugin_.name, found.c_str(), ms_since(t_start), load_ms, init_ms);
  return path;
}

Status RemotePath::check(int rc, const char* err) const {
  if (rc == 0) return Status::ok();
  return error(code_of(rc), err);
}

VSHMEM_HOT Status RemotePath::put(int pe, void* dest, const void* source, size_t bytes) {
  ErrText e;
  return check(
      plugin_.put(plugin_.ctx, pe, offset_of(dest), source, bytes, 0, e.text, sizeof(e.text)),
      e.text);
}

VSHMEM_HOT Status RemotePath::put_nbi(int pe, void* dest, const void* source, size_t bytes) {
  ErrText e;
  return check(
      plugin_.put(plugin_.ctx, pe, offset_of(dest), source, bytes, 1, e.text, sizeof(e.text)),
      e.text);
}

VSHMEM_HOT Status RemotePath::get(int pe, void* dest, const void* source, size_t bytes) {
  ErrText e;
  return check(
      plugin_.get(plugin_.ctx, pe, dest, offset_of(source), bytes, 0, e.text, sizeof(e.text)),
      e.text);
}

VSHMEM_HOT Status RemotePath::get_nbi(int pe, void* dest, const void* source, size_t bytes) {
  ErrText e;
  return check(
      plugin_.get(plugin_.ctx, pe, dest, offset_of(source), bytes, 1, e.text, sizeof(e.text)),
      e.text);
}

VSHMEM_HOT Status RemotePath::atomic(int pe, const AtomicRequest& request, uint64_t* result) {
  ErrText e;
  return check(plugin_.atomic(plugin_.ctx, pe, static_cast<int>(request.op),
                              offset_of(request.address), request.width, request.operand,
                              request.compare, result, e.text, sizeof(e.text)),
               e.text);
}

Status RemotePath::signal_add(int pe, uint64_t* word, uint64_t value) {
  ErrText e;
  return check(plugin_.signal_add(plugin_.ctx, pe, offset_of(word), value, e.text, sizeof(e.text)),
               e.text);
}

Status RemotePath::fence() {
  ErrText e;
  return check(plugin_.fence(plugin_.ctx, e.text, sizeof(e.text)), e.text);
}

int RemotePath::failed_peer(std::string* cause) const {
  if (!loaded_ || plugin_.failed_peer == nullptr) return -1;
  ErrText e;
  const int pe = plugin_.failed_peer(plugin_.ctx, e.text, sizeof(e.text));
  if (pe >= 0 && cause != nullptr) *cause = e.text;
  return pe;
}

Status RemotePath::quiet() {
  ErrText e;
  return check(plugin_.quiet(plugin_.ctx, e.text, sizeof(e.text)), e.text);
}

Status RemotePath::add_region(uint64_t offset, size_t bytes) {
  ErrText e;
  return check(plugin_.add_region(plugin_.ctx, offset, bytes, e.text, sizeof(e.text)), e.text)
      .with_context("registering heap memory with the remote path: ");
}

}  // namespace vshmem
