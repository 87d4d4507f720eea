// Choosing a bootstrap, and the collectives every bootstrap supports on top of the interface:
// topology discovery and the job identity.
#include "runtime/bootstrap/bootstrap.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/bootstrap/gather_round.hpp"
#include "runtime/bootstrap/socket_bootstrap.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/process_info.hpp"

namespace vshmem {
namespace detail {

std::string format_pe_list(const std::vector<int>& pes) { return gather::pe_list(pes); }

Result<std::chrono::milliseconds> parse_bootstrap_timeout(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  // A week is far beyond any sane bootstrap wait; the bound keeps the arithmetic finite.
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > 7 * 24 * 3600.0) {
    return error(Code::kInvalidArgument,
                 log::format("VSHMEM_BOOTSTRAP_TIMEOUT='%s' is not a positive number of seconds "
                             "(expected e.g. 120 or 2.5, at most 604800)",
                             text.c_str()));
  }
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(seconds * 1000)));
}

std::string format_seconds(std::chrono::milliseconds d) { return gather::seconds(d); }

namespace {

class SingletonBootstrap final : public Bootstrap {
 public:
  const char* name() const override { return "singleton"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allgather(const void* in, void* out, size_t bytes) override {
    if (bytes > 0 && (in == nullptr || out == nullptr)) {
      return error(Code::kInvalidArgument,
                   "vshmem bootstrap(singleton): PE 0: allgather: null buffer");
    }
    if (bytes > 0) std::memmove(out, in, bytes);
    return Status::ok();
  }
  Status broadcast(void* buf, size_t bytes, int root) override {
    if (root != 0) {
      return error(Code::kInvalidArgument,
                   log::format("vshmem bootstrap(singleton): PE 0: broadcast: root %d is outside "
                               "[0, 1)",
                               root));
    }
    return Status::ok();
  }
  Status barrier() override { return Status::ok(); }
};

bool any_env(std::initializer_list<config::Name> names) {
  for (config::Name n : names) {
    if (env::get(n)) return true;
  }
  return false;
}

bool pmix_env_present() {
  if (env::get("PMIX_RANK")) return true;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PMIX_SERVER_URI", 15) == 0) return true;
  }
  return false;
}

Result<std::unique_ptr<Bootstrap>> start_socket(std::chrono::milliseconds timeout) {
  VSHMEM_ASSIGN_OR_RETURN(SocketConfig config, socket_config_from_env());
  VSHMEM_ASSIGN_OR_RETURN(std::unique_ptr<SocketBootstrap> b,
                          SocketBootstrap::connect(config, timeout));
  return std::unique_ptr<Bootstrap>(std::move(b));
}

// A PMIx job's control plane after its first collective: PMIx carries PE 0's unique ID once, and
// every later collective goes over the socket bootstrap's hub on TCP (uid_bootstrap.cpp). Why
// not PMIx itself: a fence with data collection carries every key a process ever put, so keys
// must be reused for collectives to cost the same, and OpenPMIx 5 clients keep serving the first
// copy of a key put again (Open MPI 4.1.6's server on the H200 refuses the refresh that would
// fetch the new one); there each collective needed a key of its own, and an allgather grew from
// 0.98 to 27.7 ms over 300. The hub stays flat, names the PEs missing at its time limit and sees
// a dead PE at once. The PMIx bootstrap is kept open for the job (PMIx_Finalize at the end).
class PmixHandoff final : public Bootstrap {
 public:
  PmixHandoff(std::unique_ptr<Bootstrap> pmix, std::unique_ptr<Bootstrap> hub)
      : pmix_(std::move(pmix)), hub_(std::move(hub)) {}
  const char* name() const override { return "pmix"; }
  int rank() const override { return hub_->rank(); }
  int size() const override { return hub_->size(); }
  Status allgather(const void* in, void* out, size_t bytes) override {
    return hub_->allgather(in, out, bytes);
  }
  Status broadcast(void* buf, size_t bytes, int root) override {
    return hub_->broadcast(buf, bytes, root);
  }
  Status barrier() override { return hub_->barrier(); }

 private:
  std::unique_ptr<Bootstrap> pmix_;
  std::unique_ptr<Bootstrap> hub_;
};

// Moves a freshly started PMIx bootstrap's collectives to a TCP hub (see PmixHandoff). When PE 0
// cannot open the hub's socket, every PE keeps PMIx (a zeroed ID tells them).
Result<std::unique_ptr<Bootstrap>> hand_off_pmix(std::unique_ptr<Bootstrap> pmix,
                                                 std::chrono::milliseconds timeout) {
  if (pmix->size() == 1) return pmix;
  UniqueIdArgs args;
  args.rank = pmix->rank();
  args.nranks = pmix->size();
  if (args.rank == 0) {
    // PE 0's setting decides for all (a zeroed ID keeps PMIx), so the PEs cannot part ways here.
    Result<bool> tcp = env::bool_var("VSHMEM_BOOTSTRAP_PMIX_TCP", true);
    if (!tcp) {
      VSHMEM_WARN("bootstrap(pmix): %s: the collectives stay on PMIx",
                  tcp.status().message().c_str());
    } else if (*tcp) {
      if (Status st = make_unique_id(args.id); !st) {
        VSHMEM_WARN(
            "bootstrap(pmix): PE 0 cannot open a TCP socket for the job's collectives (%s): "
            "they stay on PMIx, each costing a little more than the last on OpenPMIx 5",
            st.message().c_str());
        std::memset(args.id, 0, sizeof(args.id));
      }
    }
  }
  VSHMEM_RETURN_IF_ERROR(pmix->broadcast(args.id, sizeof(args.id), 0));
  const bool zero =
      std::all_of(args.id, args.id + sizeof(args.id), [](unsigned char c) { return c == 0; });
  if (zero) return pmix;
  VSHMEM_ASSIGN_OR_RETURN(std::unique_ptr<Bootstrap> hub, start_uid_bootstrap(args, timeout));
  return std::unique_ptr<Bootstrap>(std::make_unique<PmixHandoff>(std::move(pmix), std::move(hub)));
}

Result<std::unique_ptr<Bootstrap>> start_pmix(const BootstrapOptions& options,
                                              std::chrono::milliseconds timeout) {
  VSHMEM_ASSIGN_OR_RETURN(std::unique_ptr<Bootstrap> pmix,
                          load_plugin_bootstrap(PluginKind::kPmix, options, timeout));
  return hand_off_pmix(std::move(pmix), timeout);
}

}  // namespace

std::unique_ptr<Bootstrap> make_singleton_bootstrap() {
  return std::make_unique<SingletonBootstrap>();
}

}  // namespace detail

int rank_before_bootstrap(const BootstrapOptions& options) {
  if (options.uid != nullptr) return options.uid->rank;
  if (options.mpi_comm != nullptr) return -1;
  const auto rank_in = [](const std::optional<std::string>& v) {
    if (!v) return -1;
    Result<long long> rank = env::parse_int(*v, 0, 1 << 24);
    return rank ? static_cast<int>(*rank) : -1;
  };
  for (const int rank :
       {rank_in(env::get("VSHMEM_RANK")), rank_in(env::get("OMPI_COMM_WORLD_RANK")),
        rank_in(env::get("PMIX_RANK")), rank_in(env::get("PMI_RANK"))}) {
    if (rank >= 0) return rank;
  }
  return -1;
}

Result<std::chrono::milliseconds> bootstrap_timeout() {
  auto v = env::get("VSHMEM_BOOTSTRAP_TIMEOUT");
  if (!v) return std::chrono::milliseconds(120 * 1000);
  return detail::parse_bootstrap_timeout(*v);
}

Result<std::unique_ptr<Bootstrap>> create_bootstrap(const BootstrapOptions& options) {
  using detail::PluginKind;
  VSHMEM_ASSIGN_OR_RETURN(std::chrono::milliseconds timeout, bootstrap_timeout());
  std::string choice = env::get("VSHMEM_BOOTSTRAP").value_or("auto");
  Result<std::unique_ptr<Bootstrap>> result = Status();
  if (options.uid != nullptr) {
    // The application chose how its PEs meet: the unique ID overrides VSHMEM_BOOTSTRAP.
    result = detail::start_uid_bootstrap(*options.uid, timeout);
  } else if (choice == "socket") {
    result = detail::start_socket(timeout);
  } else if (choice == "mpi") {
    result = detail::load_plugin_bootstrap(PluginKind::kMpi, options, timeout);
  } else if (choice == "pmix") {
    if (options.mpi_comm != nullptr) {
      VSHMEM_WARN(
          "bootstrap: VSHMEM_BOOTSTRAP=pmix: ignoring the MPI communicator passed to "
          "shmemx_init_attr");
    }
    result = detail::start_pmix(options, timeout);
  } else if (choice == "auto") {
    if (options.mpi_comm != nullptr) {  // NOLINT(bugprone-branch-clone): two reasons for MPI
      // The application chose its communicator: its PEs are exactly that communicator's ranks.
      result = detail::load_plugin_bootstrap(PluginKind::kMpi, options, timeout);
    } else if (detail::socket_env_present()) {
      result = detail::start_socket(timeout);
    } else if (detail::pmix_env_present() && !detail::find_plugin(PluginKind::kPmix).empty()) {
      result = detail::start_pmix(options, timeout);
    } else if (detail::any_env({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE"}) ||
               detail::pmix_env_present()) {
      result = detail::load_plugin_bootstrap(PluginKind::kMpi, options, timeout);
    } else {
      result = detail::make_singleton_bootstrap();
    }
  } else {
    return error(Code::kInvalidArgument,
                 log::format("vshmem bootstrap: VSHMEM_BOOTSTRAP='%s' is not one of auto, socket, "
                             "mpi, pmix",
                             choice.c_str()));
  }
  if (result) {
    log::set_pe((*result)->rank());
    VSHMEM_INFO("bootstrap: %s, PE %d of %d, time limit %s", (*result)->name(), (*result)->rank(),
                (*result)->size(), detail::format_seconds(timeout).c_str());
  }
  return result;
}

Result<Topology> discover_topology(Bootstrap& bootstrap) {
  // Fixed-size records keep the allgather simple; a node key longer than this is truncated,
  // which only matters if two nodes share a 250-character prefix.
  constexpr size_t kKeyBytes = 256;
  std::string key;
  if (auto id = env::get("VSHMEM_NODE_ID")) {
    key = "id:" + *id;
  } else {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) != 0) {
      return error(Code::kSystem,
                   log::format("vshmem bootstrap(%s): PE %d: discover_topology: gethostname(): %s",
                               bootstrap.name(), bootstrap.rank(), strerror(errno)));
    }
    // The boot id tells apart containers or hosts that share a hostname.
    std::string boot_id;
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::getline(f, boot_id);
    key = std::string("host:") + host + "/" + boot_id;
  }
  std::vector<char> mine(kKeyBytes, '\0');
  std::memcpy(mine.data(), key.data(), std::min(key.size(), kKeyBytes - 1));
  const int n = bootstrap.size();
  std::vector<char> all(kKeyBytes * static_cast<size_t>(n));
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(mine.data(), all.data(), kKeyBytes));

  Topology t;
  t.node_of_pe.resize(n);
  t.local_rank_of_pe.resize(n);
  std::vector<std::string> nodes;
  std::vector<int> count;
  for (int pe = 0; pe < n; ++pe) {
    std::string k(all.data() + static_cast<size_t>(pe) * kKeyBytes);
    auto it = std::find(nodes.begin(), nodes.end(), k);
    int node = static_cast<int>(it - nodes.begin());
    if (it == nodes.end()) {
      nodes.push_back(k);
      count.push_back(0);
    }
    t.node_of_pe[pe] = node;
    t.local_rank_of_pe[pe] = count[node]++;
  }
  const int me = bootstrap.rank();
  t.n_nodes = static_cast<int>(nodes.size());
  t.my_node = t.node_of_pe[me];
  t.local_rank = t.local_rank_of_pe[me];
  t.local_size = count[t.my_node];
  t.max_local_size = *std::max_element(count.begin(), count.end());
  for (int pe = 0; pe < n; ++pe) {
    if (t.node_of_pe[pe] == t.my_node) t.local_pes.push_back(pe);
  }
  return t;
}

Result<JobIdentity> agree_job_identity(Bootstrap& bootstrap) {
  if (auto* s = dynamic_cast<detail::SocketBootstrap*>(&bootstrap)) {
    return JobIdentity{s->job_id(), s->secret()};
  }
  // PE 0 draws; the id carries PE 0's pid so that it is unique on PE 0's node, and random bits
  // so that it is unique on the other nodes too.
  constexpr size_t kWire = 64 + 33;
  std::vector<char> wire(kWire, '\0');
  if (bootstrap.rank() == 0) {
    auto tag = random_hex(4);
    auto secret = random_hex(16);
    if (!tag || !secret) {
      Status st = !tag ? tag.status() : secret.status();
      return st.with_context(
          log::format("vshmem bootstrap(%s): PE 0: agree_job_identity: ", bootstrap.name()));
    }
    std::string id = log::format("%x-%s", static_cast<unsigned>(::getpid()), tag->c_str());
    std::memcpy(wire.data(), id.data(), id.size());
    std::memcpy(wire.data() + 64, secret->data(), secret->size());
  }
  VSHMEM_RETURN_IF_ERROR(bootstrap.broadcast(wire.data(), wire.size(), 0));
  JobIdentity j;
  j.id.assign(wire.data(), strnlen(wire.data(), 64));
  j.secret.assign(wire.data() + 64, strnlen(wire.data() + 64, 33));
  if (j.id.empty() || j.secret.size() != 32) {
    return error(Code::kPeerFailure,
                 log::format("vshmem bootstrap(%s): PE %d: agree_job_identity: PE 0 sent a "
                             "malformed identity",
                             bootstrap.name(), bootstrap.rank()));
  }
  return j;
}

}  // namespace vshmem
