// Internals of the bootstrap layer shared by its implementation files and its tests.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/status.hpp"

namespace vshmem::detail {

// "3, 5, 7" — how missing PEs are named in every time-out message.
std::string format_pe_list(const std::vector<int>& pes);

// Parses a VSHMEM_BOOTSTRAP_TIMEOUT value: a positive number of seconds (fractions allowed).
Result<std::chrono::milliseconds> parse_bootstrap_timeout(const std::string& text);

// Seconds as printed in messages: "120 s", "2.5 s".
std::string format_seconds(std::chrono::milliseconds d);

// The single-PE bootstrap used when a program is started without any launcher (OpenSHMEM
// singleton init): every collective is a local copy.
std::unique_ptr<Bootstrap> make_singleton_bootstrap();

enum class PluginKind { kMpi, kPmix };
const char* plugin_kind_name(PluginKind kind);

// Directories searched for libvshmem_bootstrap_<kind>.so, in order.
std::vector<std::string> plugin_search_path();
// The path of the plugin that would be loaded, or "" when none exists.
std::string find_plugin(PluginKind kind);
Result<std::unique_ptr<Bootstrap>> load_plugin_bootstrap(PluginKind kind,
                                                         const BootstrapOptions& options,
                                                         std::chrono::milliseconds timeout);

// The socket bootstrap over TCP, from a unique ID (uid_bootstrap.cpp).
Result<std::unique_ptr<Bootstrap>> start_uid_bootstrap(const UniqueIdArgs& args,
                                                       std::chrono::milliseconds timeout);

}  // namespace vshmem::detail
