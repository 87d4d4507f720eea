#include "runtime/memory/fabric_domain.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/common/log.hpp"

namespace vshmem {

Status check_imex_channel(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return error(Code::kUnsupported,
                 log::format("no IMEX channel: %s: %s (fabric handles need the nvidia-imex "
                             "service and a channel device such as %s/channel0)",
                             dir.c_str(), std::strerror(errno), dir.c_str()));
  }
  std::string first_error;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "channel", 7) != 0) continue;
    found = true;
    const std::string path = dir + "/" + e->d_name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      ::closedir(d);
      return Status::ok();
    }
    if (first_error.empty()) first_error = path + ": " + std::strerror(errno);
  }
  ::closedir(d);
  if (!found) {
    return error(Code::kUnsupported,
                 log::format("no IMEX channel: %s holds no channel device (create one, e.g. "
                             "%s/channel0, for the nvidia-imex service)",
                             dir.c_str(), dir.c_str()));
  }
  return error(Code::kUnsupported,
               "no usable IMEX channel: " + first_error + " (channel device not accessible)");
}

std::vector<bool> fabric_peers(const std::vector<FabricIdentity>& identity,
                               const std::vector<int>& node_of_pe, int me) {
  const size_t n = identity.size();
  std::vector<bool> out(n, false);
  if (me < 0 || static_cast<size_t>(me) >= n || node_of_pe.size() != n) return out;
  const FabricIdentity& mine = identity[me];
  if (!mine.usable) return out;
  for (size_t p = 0; p < n; ++p) {
    const FabricIdentity& other = identity[p];
    out[p] = static_cast<int>(p) != me && node_of_pe[p] != node_of_pe[me] && other.usable &&
             other.clique_id == mine.clique_id &&
             std::memcmp(other.cluster_uuid, mine.cluster_uuid, sizeof(mine.cluster_uuid)) == 0;
  }
  return out;
}

}  // namespace vshmem
