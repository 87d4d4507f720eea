#include "runtime/transport/transport.hpp"

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

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

bool TransportPlan::all_mapped() const {
  for (PeerPath p : path) {
    if (p == PeerPath::kStaged) return false;
  }
  return true;
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
Status unreachable(int pe, const char* what) {
  return error(Code::kUnsupported,
               log::format("%s PE %d: its memory is not mapped here (another node, no peer path, "
                           "or VSHMEM_DISABLE_P2P) and the staged (proxy) transport is not "
                           "available in this build",
                           what, pe));
}
}  // namespace

Status staged_put(int pe, void*, const void*, size_t) { return unreachable(pe, "put to"); }
Status staged_get(int pe, void*, const void*, size_t) { return unreachable(pe, "get from"); }
Status staged_atomic(int pe, const AtomicRequest&, uint64_t*) {
  return unreachable(pe, "atomic on");
}

}  // namespace vshmem
