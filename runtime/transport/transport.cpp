#include "runtime/transport/transport.hpp"

#include <algorithm>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/transport/staged_transport.hpp"

namespace vshmem {

const char* peer_path_name(PeerPath path) {
  switch (path) {
    case PeerPath::kSelf: return "self";
    case PeerPath::kMapped: return "p2p";
    case PeerPath::kStaged: return "staged";
  }
  return "?";
}

std::vector<bool> TransportPlan::mapped() const {
  std::vector<bool> out(path.size());
  for (size_t i = 0; i < path.size(); ++i) out[i] = path[i] == PeerPath::kMapped;
  return out;
}

int TransportPlan::n_mapped() const {
  int n = 0;
  for (PeerPath p : path) n += p == PeerPath::kMapped;
  return n;
}

std::vector<bool> TransportPlan::staged() const {
  std::vector<bool> out(path.size());
  for (size_t i = 0; i < path.size(); ++i) out[i] = path[i] == PeerPath::kStaged;
  return out;
}

bool TransportPlan::all_mapped() const {
  for (PeerPath p : path) {
    if (p == PeerPath::kStaged) return false;
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
  plan.path.resize(bootstrap.size(), PeerPath::kStaged);
  plan.same_locality_pes = 0;
  for (int p = 0; p < bootstrap.size(); ++p) {
    if (topology.node_of_pe[p] == topology.my_node && tokens[p] == token) ++plan.same_locality_pes;
  }
  for (int p = 0; p < bootstrap.size(); ++p) {
    if (p == bootstrap.rank()) {
      plan.path[p] = PeerPath::kSelf;
    } else if (!disable_p2p && topology.node_of_pe[p] == topology.my_node &&
               provider.can_map_peer(tokens[p])) {
      plan.path[p] = PeerPath::kMapped;
    }
  }
  // Mapping is mutual: if either side cannot map the other, both use the staged path.
  std::vector<uint8_t> mine(bootstrap.size()), all(bootstrap.size() * bootstrap.size());
  for (int p = 0; p < bootstrap.size(); ++p) mine[p] = plan.path[p] == PeerPath::kMapped;
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(mine.data(), all.data(), mine.size()));
  for (int p = 0; p < bootstrap.size(); ++p) {
    if (plan.path[p] == PeerPath::kMapped && !all[p * bootstrap.size() + bootstrap.rank()]) {
      plan.path[p] = PeerPath::kStaged;
    }
  }
  plan.shared_team = shared_team_of(all, bootstrap.size(), bootstrap.rank());
  // A pair is staged when either side cannot map the other; every PE sees the same matrix.
  for (int p = 0; p < bootstrap.size(); ++p) {
    for (int q = 0; q < bootstrap.size(); ++q) {
      if (p != q && (!all[p * bootstrap.size() + q] || !all[q * bootstrap.size() + p])) {
        plan.job_has_staged = true;
      }
    }
  }
  if (log::enabled(log::Level::kInfo)) {
    std::string s;
    for (int p = 0; p < bootstrap.size(); ++p) {
      s += log::format("%s%d:%s", p ? " " : "", p, peer_path_name(plan.path[p]));
    }
    VSHMEM_INFO("transports: %s", s.c_str());
  }
  return plan;
}

namespace {
Status no_transport(int pe, const char* what) {
  return error(Code::kState, log::format("%s PE %d: its memory is not mapped here and this PE has "
                                         "no staged transport (the transport plan disagrees)",
                                         what, pe));
}
}  // namespace

Status staged_put(StagedTransport* transport, int pe, void* dest, const void* source,
                  size_t bytes) {
  if (transport == nullptr) return no_transport(pe, "put to");
  return transport->put(pe, dest, source, bytes);
}

Status staged_get(StagedTransport* transport, int pe, void* dest, const void* source,
                  size_t bytes) {
  if (transport == nullptr) return no_transport(pe, "get from");
  return transport->get(pe, dest, source, bytes);
}

Status staged_atomic(StagedTransport* transport, int pe, const AtomicRequest& request,
                     uint64_t* result) {
  if (transport == nullptr) return no_transport(pe, "atomic on");
  return transport->atomic(pe, request, result);
}

}  // namespace vshmem
