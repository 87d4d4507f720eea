// The unique-ID start: a job whose processes were started by anything (torchrun, Ray, a job
// script, mpirun) meets without a launcher contract. The process that will be PE 0 calls
// shmemx_get_uniqueid, which opens a TCP socket and writes its address and a fresh secret into the
// ID; the application hands the ID to every process; each then starts the socket bootstrap's
// hub protocol (socket_bootstrap.cpp) over TCP, PE 0 adopting the socket it already holds. One
// protocol serves both starts: the hub's checks (job id, secret, rank, size), its time limits and
// its messages naming missing PEs are the same.
//
// Layout of the 128 bytes (shmemx_uniqueid_t): version (int, host order) = kIdVersion, then
// "vshmemID", the IPv4 address and the port (network order), the secret (32 hex characters) and
// the job tag (16 hex characters); the rest is zero.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/bootstrap/socket_bootstrap.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/process_info.hpp"

namespace vshmem {
namespace detail {
namespace {

constexpr int kIdVersion = 1;
constexpr char kIdMagic[8] = {'v', 's', 'h', 'm', 'e', 'm', 'I', 'D'};
constexpr size_t kMagicAt = 4, kAddrAt = 12, kPortAt = 16, kSecretAt = 18, kTagAt = 50;
constexpr size_t kTagLength = 16;
static_assert(kTagAt + kTagLength <= kUniqueIdBytes, "the ID's fields fit its 128 bytes");

struct DecodedId {
  in_addr addr{};
  uint16_t port = 0;  // host order
  std::string secret;
  std::string tag;
};

// The sockets shmemx_get_uniqueid opened in this process, by the secret of their ID.
struct Listener {
  std::string secret;
  int fd;
};
std::mutex g_listeners_mutex;
std::vector<Listener> g_listeners;

Status id_error(const std::string& cause) {
  return error(Code::kInvalidArgument, "vshmem bootstrap(uid): " + cause);
}

bool all_hex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<DecodedId> decode(const unsigned char id[kUniqueIdBytes], int rank) {
  int version = 0;
  std::memcpy(&version, id, sizeof(version));
  if (version != kIdVersion || std::memcmp(id + kMagicAt, kIdMagic, sizeof(kIdMagic)) != 0) {
    return id_error(log::format(
        "PE %d: the unique ID is not one shmemx_get_uniqueid made (all zeros: rank 0's ID was "
        "not handed to this process; otherwise it is damaged or from another library)",
        rank));
  }
  DecodedId d;
  std::memcpy(&d.addr, id + kAddrAt, sizeof(d.addr));
  uint16_t port = 0;
  std::memcpy(&port, id + kPortAt, sizeof(port));
  d.port = ntohs(port);
  d.secret.assign(reinterpret_cast<const char*>(id + kSecretAt), kSecretLength);
  d.tag.assign(reinterpret_cast<const char*>(id + kTagAt), kTagLength);
  if (d.port == 0 || !all_hex(d.secret) || !all_hex(d.tag)) {
    return id_error(log::format("PE %d: the unique ID is damaged (bad port, secret or tag)", rank));
  }
  return d;
}

std::string address_text(in_addr a) {
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}

// The IPv4 address of interface `name`, or of the first interface that is up and not loopback
// when name is empty; nullopt when there is none.
std::optional<in_addr> interface_address(const std::string& name) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<in_addr> found;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP)) continue;
    if (name.empty() ? (i->ifa_flags & IFF_LOOPBACK) != 0 : name != i->ifa_name) continue;
    found = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
  }
  ::freeifaddrs(list);
  return found;
}

// Where PE 0 listens: VSHMEM_BOOTSTRAP_UID_ADDR (or NVSHMEM's NVSHMEM_BOOTSTRAP_UID_SESSION_ID),
// "IPv4" or "IPv4:port"; else the IPv4 address of VSHMEM_BOOTSTRAP_UID_IFNAME (or
// NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME); else the first non-loopback interface; else 127.0.0.1.
Status listen_address(in_addr* addr, uint16_t* port) {
  config::Name var = "VSHMEM_BOOTSTRAP_UID_ADDR";
  auto given = env::get(var);
  if (!given) {
    var = "NVSHMEM_BOOTSTRAP_UID_SESSION_ID";
    given = env::get(var);
  }
  *port = 0;
  if (given) {
    std::string host = *given;
    const size_t colon = host.find(':');
    if (colon != std::string::npos) {
      auto p = env::parse_int(host.substr(colon + 1), 1, 65535);
      if (!p) {
        return id_error(log::format("%s='%s': the port is not a number in [1, 65535]", var.str(),
                                    given->c_str()));
      }
      *port = static_cast<uint16_t>(*p);
      host.resize(colon);
    }
    if (::inet_pton(AF_INET, host.c_str(), addr) != 1) {
      return id_error(log::format("%s='%s' is not an IPv4 address (optionally :port)", var.str(),
                                  given->c_str()));
    }
    return Status::ok();
  }
  var = "VSHMEM_BOOTSTRAP_UID_IFNAME";
  auto ifname = env::get(var);
  if (!ifname) {
    var = "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME";
    ifname = env::get(var);
  }
  if (ifname) {
    auto a = interface_address(*ifname);
    if (!a) {
      return id_error(log::format("%s='%s': no such interface with an IPv4 address that is up",
                                  var.str(), ifname->c_str()));
    }
    *addr = *a;
    return Status::ok();
  }
  auto a = interface_address("");
  addr->s_addr = htonl(INADDR_LOOPBACK);
  if (a) *addr = *a;
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> start_uid_bootstrap(const UniqueIdArgs& args,
                                                       std::chrono::milliseconds timeout) {
  if (args.nranks < 1 || args.rank < 0 || args.rank >= args.nranks) {
    return id_error(log::format("rank %d is outside [0, %d) (shmemx_set_attr_uniqueid_args)",
                                args.rank, args.nranks));
  }
  VSHMEM_ASSIGN_OR_RETURN(DecodedId id, decode(args.id, args.rank));
  SocketConfig config;
  config.address = log::format("tcp:%s:%u", address_text(id.addr).c_str(), id.port);
  config.job_id = "uid-" + id.tag;
  config.secret = id.secret;
  config.rank = args.rank;
  config.npes = args.nranks;
  {
    std::lock_guard<std::mutex> lock(g_listeners_mutex);
    for (size_t i = 0; i < g_listeners.size(); ++i) {
      if (g_listeners[i].secret != id.secret) continue;
      if (args.rank != 0) {
        return id_error(log::format(
            "PE %d: this process made the unique ID with shmemx_get_uniqueid, so it must be "
            "rank 0 (it holds the socket the others connect to)",
            args.rank));
      }
      config.listen_fd = g_listeners[i].fd;
      g_listeners.erase(g_listeners.begin() + static_cast<long>(i));
      break;
    }
  }
  if (args.rank == 0 && config.listen_fd < 0) {
    return id_error(log::format(
        "PE 0: the unique ID was made by another process (its socket is at %s): rank 0 must be "
        "the process that called shmemx_get_uniqueid, and an ID serves one start only",
        config.address.c_str() + 4));
  }
  VSHMEM_INFO("bootstrap(uid): PE %d of %d meets at %s", args.rank, args.nranks,
              config.address.c_str() + 4);
  VSHMEM_ASSIGN_OR_RETURN(std::unique_ptr<SocketBootstrap> b,
                          SocketBootstrap::connect(config, timeout));
  return std::unique_ptr<Bootstrap>(std::move(b));
}

}  // namespace detail

Status make_unique_id(unsigned char id[kUniqueIdBytes]) {
  using namespace detail;
  in_addr addr{};
  uint16_t port = 0;
  VSHMEM_RETURN_IF_ERROR(listen_address(&addr, &port));
  VSHMEM_ASSIGN_OR_RETURN(std::string secret, random_hex(kSecretLength / 2));
  VSHMEM_ASSIGN_OR_RETURN(std::string tag, random_hex(kTagLength / 2));

  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return error(Code::kSystem,
                 log::format("vshmem bootstrap(uid): socket(): %s", strerror(errno)));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  sa.sin_port = htons(port);
  socklen_t len = sizeof(sa);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(fd, 4096) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    const int e = errno;
    ::close(fd);
    return error(Code::kSystem,
                 log::format("vshmem bootstrap(uid): cannot listen at %s:%u: %s (set "
                             "VSHMEM_BOOTSTRAP_UID_ADDR or VSHMEM_BOOTSTRAP_UID_IFNAME)",
                             address_text(addr).c_str(), port, strerror(e)));
  }
  std::memset(id, 0, kUniqueIdBytes);
  std::memcpy(id, &kIdVersion, sizeof(kIdVersion));
  std::memcpy(id + kMagicAt, kIdMagic, sizeof(kIdMagic));
  std::memcpy(id + kAddrAt, &sa.sin_addr, sizeof(sa.sin_addr));
  std::memcpy(id + kPortAt, &sa.sin_port, sizeof(sa.sin_port));
  std::memcpy(id + kSecretAt, secret.data(), kSecretLength);
  std::memcpy(id + kTagAt, tag.data(), kTagLength);
  {
    std::lock_guard<std::mutex> lock(g_listeners_mutex);
    g_listeners.push_back({secret, fd});
  }
  VSHMEM_INFO("bootstrap(uid): unique ID made; PE 0 will wait at %s:%u",
              address_text(sa.sin_addr).c_str(), ntohs(sa.sin_port));
  return Status::ok();
}

}  // namespace vshmem
