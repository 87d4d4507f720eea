#include "runtime/transport/transport.hpp"

#include <algorithm>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem {

const char* path_kind_name(PathKind kind) {
  switch (kind) {
    case PathKind::kSelf: return "self";
    case PathKind::kMapped: return "p2p";
    case PathKind::kRemote: return "remote";
  }
  return "?";
}

std::vector<bool> TransportPlan::mapped() const {
  std::vector<bool> out(path.size());
  for (size_t i = 0; i < path.size(); ++i) out[i] = path[i] == PathKind::kMapped;
  return out;
}

int TransportPlan::n_mapped() const {
  int n = 0;
  for (PathKind p : path) n += p == PathKind::kMapped;
  return n;
}

std::vector<bool> TransportPlan::remote() const {
  std::vector<bool> out(path.size());
  for (size_t i = 0; i < path.size(); ++i) out[i] = path[i] == PathKind::kRemote;
  return out;
}

bool TransportPlan::all_mapped() const {
  for (PathKind p : path) {
    if (p == PathKind::kRemote) return false;
  }
  return true;
}

std::vector<int> shared_team_of(const std::vector<uint8_t>& mapped, int n, int me) {
  const auto linked = [&](int p, int q) { return mapped[p * n + q] && mapped[q * n + p]; };
  std::vector<bool> seen(n, false);
  std::vector<int> component{me}, frontier{me};
  seen[me] = true;
  while (!frontier.empty()) {
    int p = frontier.back();
    frontier.pop_back();
    for (int q = 0; q < n; ++q) {
      if (!seen[q] && q != p && linked(p, q)) {
        seen[q] = true;
        component.push_back(q);
        frontier.push_back(q);
      }
    }
  }
  for (int p : component) {
    for (int q : component) {
      if (p != q && !linked(p, q)) return {me};
    }
  }
  std::sort(component.begin(), component.end());
  return component;
}

Result<TransportPlan> plan_transports(Bootstrap& bootstrap, const Topology& topology,
                                      MemoryProvider& provider) {
  bool disable_p2p = false;
  VSHMEM_ASSIGN_OR_RETURN(disable_p2p, env::bool_var("VSHMEM_DISABLE_P2P", false));
  // Each PE says which local devices it can reach; the memory layer answers per pair.
  uint64_t token = provider.locality_token();
  std::vector<uint64_t> tokens(bootstrap.size());
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&token, tokens.data(), sizeof(token)));
  TransportPlan plan;
  plan.path.resize(bootstrap.size(), PathKind::kRemote);
  plan.same_locality_pes = 0;
  for (int p = 0; p < bootstrap.size(); ++p) {
    if (topology.node_of_pe[p] == topology.my_node && tokens[p] == token) ++plan.same_locality_pes;
  }
  // Other nodes of our NVLink domain: the memory layer says who shares our fabric; mapping them
  // needs fabric handles on every PE, because the heap exchanges one handle kind job-wide.
  struct FabricReport {
    FabricIdentity identity;
    uint32_t offers_fabric_handles;
  };
  FabricReport mine_fabric{provider.fabric_identity(), 0};
  for (HandleKind k : provider.handle_kinds()) {
    mine_fabric.offers_fabric_handles |= k == HandleKind::kFabric ? 1u : 0u;
  }
  std::vector<FabricReport> fabric_reports(bootstrap.size());
  VSHMEM_RETURN_IF_ERROR(
      bootstrap.allgather(&mine_fabric, fabric_reports.data(), sizeof(FabricReport)));
  std::vector<FabricIdentity> identities(bootstrap.size());
  int without_fabric_handles = -1;
  for (int p = 0; p < bootstrap.size(); ++p) {
    identities[p] = fabric_reports[p].identity;
    if (!fabric_reports[p].offers_fabric_handles && without_fabric_handles < 0) {
      without_fabric_handles = p;
    }
  }
  std::vector<bool> domain = fabric_peers(identities, topology.node_of_pe, bootstrap.rank());
  plan.over_fabric.assign(bootstrap.size(), false);
  plan.one_node = topology.n_nodes <= 1;
  bool domain_refused = false;
  for (int p = 0; p < bootstrap.size(); ++p) {
    if (p == bootstrap.rank()) {
      plan.path[p] = PathKind::kSelf;
    } else if (!disable_p2p && topology.node_of_pe[p] == topology.my_node &&
               provider.can_map_peer(tokens[p])) {
      plan.path[p] = PathKind::kMapped;
    } else if (!disable_p2p && domain[p]) {
      if (without_fabric_handles < 0) {
        plan.path[p] = PathKind::kMapped;
        plan.over_fabric[p] = true;
      } else {
        domain_refused = true;
      }
    }
  }
  if (domain_refused) {
    VSHMEM_INFO(
        "PEs of other nodes share this PE's NVLink domain but use the remote path: PE %d "
        "cannot share fabric handles (no IMEX channel, or the device lacks them)",
        without_fabric_handles);
  }
  // Mapping is mutual: if either side cannot map the other, both use the remote path.
  std::vector<uint8_t> mine(bootstrap.size()),
      all(static_cast<size_t>(bootstrap.size()) * bootstrap.size());
  for (int p = 0; p < bootstrap.size(); ++p) mine[p] = plan.path[p] == PathKind::kMapped;
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(mine.data(), all.data(), mine.size()));
  for (int p = 0; p < bootstrap.size(); ++p) {
    if (plan.path[p] == PathKind::kMapped && !all[p * bootstrap.size() + bootstrap.rank()]) {
      plan.path[p] = PathKind::kRemote;
      plan.over_fabric[p] = false;
    }
  }
  plan.shared_team = shared_team_of(all, bootstrap.size(), bootstrap.rank());
  // A pair is remote when either side cannot map the other; every PE sees the same matrix.
  for (int p = 0; p < bootstrap.size(); ++p) {
    for (int q = 0; q < bootstrap.size(); ++q) {
      if (p != q && (!all[p * bootstrap.size() + q] || !all[q * bootstrap.size() + p])) {
        plan.job_has_remote = true;
      }
    }
  }
  if (log::enabled(log::Level::kInfo)) {
    std::string s;
    for (int p = 0; p < bootstrap.size(); ++p) {
      s += log::format("%s%d:%s", p ? " " : "", p,
                       plan.over_fabric[p] ? "fabric" : path_kind_name(plan.path[p]));
    }
    VSHMEM_INFO("transports: %s", s.c_str());
  }
  return plan;
}

Result<std::unique_ptr<Transport>> Transport::create(Bootstrap& bootstrap,
                                                     const TransportPlan& plan,
                                                     MemoryProvider& provider, SymmetricHeap& heap,
                                                     FdExchange* fd_exchange,
                                                     const DataSegment& statics) {
  const int n = bootstrap.size(), me = bootstrap.rank();
  std::unique_ptr<Transport> t(new Transport(provider));
  t->host_memory_ = !provider.is_device_memory();
  t->statics_ = &statics;
  t->static_base_ = statics.base;
  t->static_size_ = statics.size;
  std::unique_ptr<HostSyncArea> sync;
  if (n > 1 && !plan.job_has_remote && plan.one_node) {
    // Every PE maps every other on one node: the barrier counters go in shared host pages. PEs
    // mapped across the nodes of an NVLink domain share GPU memory, not host memory: they use
    // the barrier of the heap's kind below.
    std::vector<int> peers;
    for (int p = 0; p < n; ++p) {
      if (p != me) peers.push_back(p);
    }
    if (fd_exchange == nullptr) {
      return error(Code::kState, "the node barrier needs the handle exchange (no mapped peer?)");
    }
    VSHMEM_ASSIGN_OR_RETURN(sync, HostSyncArea::create(*fd_exchange, peers, me, n));
  }
  t->barrier_kind_ = sync != nullptr   ? BarrierKind::kNodeShared
                     : t->host_memory_ ? BarrierKind::kHeapCounters
                                       : BarrierKind::kBootstrap;
  t->mapped_ = std::make_unique<MappedPath>(heap, provider, std::move(sync));
  // Every PE decides alike (n and the plan are the same everywhere): the remote path's set-up is
  // collective. VSHMEM_STATICS_UCX=0 skips loading it just for the global and static variables.
  bool statics_ucx = true;
  VSHMEM_ASSIGN_OR_RETURN(statics_ucx, env::bool_var("VSHMEM_STATICS_UCX", true));
  std::string unavailable = "VSHMEM_STATICS_UCX=0";
  if (plan.job_has_remote || (n > 1 && statics_ucx && statics.size > 0)) {
    RemoteOptions options;
    options.my_pe = me;
    options.n_pes = n;
    options.remote = std::vector<uint8_t>(static_cast<size_t>(n), 0);
    for (int p = 0; p < n; ++p) options.remote[p] = plan.path[p] == PathKind::kRemote;
    options.heap_base = heap.base();
    options.heap_size = heap.size();
    options.statics = &statics;
    options.optional = !plan.job_has_remote;
    VSHMEM_ASSIGN_OR_RETURN(options.timeout, bootstrap_timeout());
    VSHMEM_ASSIGN_OR_RETURN(t->remote_,
                            RemotePath::create(bootstrap, provider, options, &unavailable));
    // Memory the heap committed before the remote path existed.
    if (t->remote_ != nullptr && heap.committed() > 0) {
      VSHMEM_RETURN_IF_ERROR(t->remote_->add_region(0, heap.committed()));
    }
  }
  t->progress_on_wait_ = plan.job_has_remote;
  t->static_path_ = std::make_unique<StaticPath>(me, provider, t->remote_.get(), unavailable);
  t->path_.resize(static_cast<size_t>(n));
  bool others_remote = n > 1 && t->remote_ != nullptr;
  for (int p = 0; p < n; ++p) {
    t->path_[p] = plan.path[p] == PathKind::kRemote ? static_cast<PeerPath*>(t->remote_.get())
                                                    : t->mapped_.get();
    if (p != me && plan.path[p] != PathKind::kRemote) others_remote = false;
  }
  if (others_remote) t->sole_writers_path_ = t->remote_.get();
  return t;
}

Transport::~Transport() = default;

Status Transport::fence() {
  if (remote_ != nullptr) VSHMEM_RETURN_IF_ERROR(remote_->fence());
  return mapped_->fence();
}

Status Transport::quiet() {
  if (remote_ != nullptr) VSHMEM_RETURN_IF_ERROR(remote_->quiet());
  return mapped_->quiet();
}

Status Transport::quiet_before_release() {
  if (remote_ != nullptr) VSHMEM_RETURN_IF_ERROR(remote_->quiet());
  return mapped_->complete();
}

Status Transport::add_region(uint64_t offset, size_t bytes) {
  if (remote_ == nullptr) return Status::ok();
  return remote_->add_region(offset, bytes);
}

Status Transport::read_own_device(const void* addr, unsigned width, uint64_t* value) {
  if (width >= 4) {
    AtomicRequest r{AtomicOp::kFetch, const_cast<void*>(addr), width, 0, 0};
    return provider_.atomic(r, value);
  }
  // No 2-byte device atomic: an aligned 2-byte copy is a single access.
  uint16_t v = 0;
  VSHMEM_RETURN_IF_ERROR(provider_.copy(&v, addr, sizeof(v)));
  *value = v;
  return Status::ok();
}

}  // namespace vshmem
