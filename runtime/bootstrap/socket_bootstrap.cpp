// The socket bootstrap: vshmemrun's control plane on one node, no MPI needed.
//
// Environment contract (set by vshmemrun for every PE it starts; tests may set it by hand):
//   VSHMEM_BOOTSTRAP=socket    selects this bootstrap (auto also picks it when
//                              VSHMEM_SOCKET_ADDR is set)
//   VSHMEM_SOCKET_ADDR         where PE 0 listens: "@name" is a name in the abstract Unix-socket
//                              namespace (preferred: it vanishes with the process, nothing to
//                              clean up after a crash); anything else is a filesystem path,
//                              which must lie in a private (0700) directory
//   VSHMEM_JOB_ID              printable id of the job, unique on the node, <= 63 characters
//   VSHMEM_JOB_SECRET          32 hex characters (128 bits); a peer must present it
//   VSHMEM_RANK                this PE, 0 .. VSHMEM_NPES-1
//   VSHMEM_NPES                number of PEs
//   VSHMEM_LOCAL_RANK, VSHMEM_LOCAL_SIZE, VSHMEM_DEVICE
//                              informational, also set by vshmemrun (read by other layers)
//
// Protocol: PE 0 is the hub. Every other PE connects (retrying until the deadline, since PE 0
// may not listen yet), checks with SO_PEERCRED that the listener runs as our user (so that a
// squatter on the abstract name never sees the secret), and sends a Hello with rank, npes, job
// id and secret. The hub accepts only peers of our uid (SO_PEERCRED) presenting the right job
// id and secret; a refused peer is told why and dropped, and the hub keeps waiting for the real
// one. Each collective is gather-to-PE-0 + send-back: the hub polls all connections at once,
// so it can name every PE that has not arrived at the deadline and notices a dead PE (EOF)
// immediately; on any failure it sends the cause to every PE, so all of them fail promptly
// with the same explanation. A failure is sticky: later calls return it again.
#include "runtime/bootstrap/socket_bootstrap.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kHelloMagic = 0x56534842;    // "VSHB"
constexpr uint32_t kRequestMagic = 0x56534252;  // "VSBR"
constexpr uint32_t kReplyMagic = 0x56534250;    // "VSBP"
constexpr uint32_t kProtocolVersion = 1;
constexpr size_t kMaxErrorText = 4096;
// A client waits this much longer than the hub, so that when PEs are missing the hub's message
// naming them arrives before the client gives up on its own (it cannot tell who is missing).
constexpr std::chrono::milliseconds kClientGrace{2000};

struct Hello {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t npes;
  char job_id[kMaxJobIdLength + 1];
  char secret[kSecretLength];
};
struct HelloReply {
  uint32_t magic;
  int32_t status;  // 0: accepted; otherwise message says why not
  char message[248];
};
struct Request {
  uint32_t magic;
  uint32_t op;
  uint64_t seq;
  uint64_t bytes;
  int32_t root;
  uint32_t reserved;
};
struct Reply {
  uint32_t magic;
  int32_t status;  // 0, or a vshmem::Code; then `length` bytes of error text follow
  uint64_t seq;
  uint64_t length;
};

enum class Io { kOk, kTimeout, kEof, kError };

int poll_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  // Round up so that we never spin on a sub-millisecond remainder.
  return static_cast<int>(std::min<long long>(left.count() + 1, 1000 * 1000));
}

Io write_all(int fd, const void* data, size_t n, Clock::time_point deadline, int* err) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Clock::now() >= deadline) return Io::kTimeout;
      pollfd pfd{fd, POLLOUT, 0};
      int r = ::poll(&pfd, 1, poll_ms(deadline));
      if (r < 0 && errno != EINTR) {
        *err = errno;
        return Io::kError;
      }
      continue;
    }
    *err = errno;
    return (errno == EPIPE || errno == ECONNRESET) ? Io::kEof : Io::kError;
  }
  return Io::kOk;
}

Io read_all(int fd, void* data, size_t n, Clock::time_point deadline, int* err) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return Io::kEof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Clock::now() >= deadline) return Io::kTimeout;
      pollfd pfd{fd, POLLIN, 0};
      int pr = ::poll(&pfd, 1, poll_ms(deadline));
      if (pr < 0 && errno != EINTR) {
        *err = errno;
        return Io::kError;
      }
      continue;
    }
    *err = errno;
    return errno == ECONNRESET ? Io::kEof : Io::kError;
  }
  return Io::kOk;
}

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

socklen_t make_address(const std::string& address, sockaddr_un* sa) {
  std::memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  if (address[0] == '@') {
    // Abstract namespace: sun_path[0] == '\0', the name is the remaining bytes (no terminator).
    std::memcpy(sa->sun_path + 1, address.data() + 1, address.size() - 1);
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
  }
  std::memcpy(sa->sun_path, address.data(), address.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size() + 1);
}

bool is_tcp(const std::string& address) { return address.rfind("tcp:", 0) == 0; }

// "tcp:1.2.3.4:5678" as a socket address; false when malformed.
bool make_tcp_address(const std::string& address, sockaddr_in* sa) {
  std::memset(sa, 0, sizeof(*sa));
  const std::string rest = address.substr(4);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
  char* end = nullptr;
  const unsigned long p = std::strtoul(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p == 0 || p > 65535) return false;
  sa->sin_family = AF_INET;
  sa->sin_port = htons(static_cast<uint16_t>(p));
  return ::inet_pton(AF_INET, host.c_str(), &sa->sin_addr) == 1;
}

void set_nodelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool peer_uid(int fd, uid_t* uid, pid_t* pid) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  *uid = cred.uid;
  *pid = cred.pid;
  return true;
}

// Compares without an early exit so that timing does not reveal how much of a secret matched.
bool same_secret(const char* a, const char* b, size_t n) {
  unsigned char diff = 0;
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

const char* op_name(uint32_t op) {
  switch (op) {
    case 1: return "allgather";
    case 2: return "broadcast";
    case 3: return "barrier";
  }
  return "an unknown operation";
}

std::string describe(uint32_t op, uint64_t bytes, int root) {
  switch (op) {
    case 1: return log::format("allgather(%llu bytes)", static_cast<unsigned long long>(bytes));
    case 2:
      return log::format("broadcast(%llu bytes, root %d)", static_cast<unsigned long long>(bytes),
                         root);
    case 3: return "barrier()";
  }
  return log::format("operation %u", op);
}

void close_fd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

}  // namespace

bool socket_env_present() { return env::get("VSHMEM_SOCKET_ADDR").has_value(); }

Result<SocketConfig> socket_config_from_env() {
  const auto missing = [](const char* name) {
    return error(Code::kInvalidArgument,
                 log::format("vshmem bootstrap(socket): %s is not set (the socket bootstrap is "
                             "started by vshmemrun, which sets VSHMEM_SOCKET_ADDR, VSHMEM_JOB_ID, "
                             "VSHMEM_JOB_SECRET, VSHMEM_RANK and VSHMEM_NPES)",
                             name));
  };
  SocketConfig c;
  auto addr = env::get("VSHMEM_SOCKET_ADDR");
  if (!addr) return missing("VSHMEM_SOCKET_ADDR");
  if (addr->size() < 2 || addr->size() >= sizeof(sockaddr_un::sun_path)) {
    return error(Code::kInvalidArgument,
                 log::format("vshmem bootstrap(socket): VSHMEM_SOCKET_ADDR='%s' must have 2 to "
                             "%zu characters",
                             addr->c_str(), sizeof(sockaddr_un::sun_path) - 1));
  }
  c.address = *addr;
  auto id = env::get("VSHMEM_JOB_ID");
  if (!id) return missing("VSHMEM_JOB_ID");
  if (id->size() > kMaxJobIdLength ||
      !std::all_of(id->begin(), id->end(), [](char ch) { return ch > ' ' && ch < 127; })) {
    return error(Code::kInvalidArgument,
                 log::format("vshmem bootstrap(socket): VSHMEM_JOB_ID='%s' must be at most %zu "
                             "printable characters without spaces",
                             id->c_str(), kMaxJobIdLength));
  }
  c.job_id = *id;
  auto secret = env::get("VSHMEM_JOB_SECRET");
  if (!secret) return missing("VSHMEM_JOB_SECRET");
  if (secret->size() != kSecretLength ||
      !std::all_of(secret->begin(), secret->end(), [](char ch) { return std::isxdigit(ch); })) {
    return error(Code::kInvalidArgument,
                 log::format("vshmem bootstrap(socket): VSHMEM_JOB_SECRET must be %zu hex "
                             "characters (it has %zu characters)",
                             kSecretLength, secret->size()));
  }
  c.secret = *secret;
  if (!env::get("VSHMEM_NPES")) return missing("VSHMEM_NPES");
  if (!env::get("VSHMEM_RANK")) return missing("VSHMEM_RANK");
  auto npes = env::int_var("VSHMEM_NPES", 0, 1, 1 << 20);
  if (!npes) return npes.status().with_context("vshmem bootstrap(socket): ");
  auto rank = env::int_var("VSHMEM_RANK", 0, 0, *npes - 1);
  if (!rank) return rank.status().with_context("vshmem bootstrap(socket): ");
  c.npes = static_cast<int>(*npes);
  c.rank = static_cast<int>(*rank);
  return c;
}

SocketBootstrap::SocketBootstrap(SocketConfig config, std::chrono::milliseconds timeout)
    : config_(std::move(config)), timeout_(timeout) {
  listen_fd_ = config_.listen_fd;  // adopted (closed by us from now on)
  config_.listen_fd = -1;
}

SocketBootstrap::~SocketBootstrap() {
  close_fd(&listen_fd_);
  for (int& fd : peer_fds_) close_fd(&fd);
}

Status SocketBootstrap::make_error(Code code, const char* call, const std::string& cause) const {
  return error(code, log::format("vshmem bootstrap(socket): PE %d: %s: %s", config_.rank, call,
                                 cause.c_str()));
}

Result<std::unique_ptr<SocketBootstrap>> SocketBootstrap::connect(
    const SocketConfig& config, std::chrono::milliseconds timeout) {
  if (config.npes < 1 || config.rank < 0 || config.rank >= config.npes) {
    return error(Code::kInvalidArgument,
                 log::format("vshmem bootstrap(socket): rank %d is outside [0, %d)", config.rank,
                             config.npes));
  }
  sockaddr_in tcp{};
  if (config.address.size() < 2 || config.address.size() >= sizeof(sockaddr_un::sun_path) ||
      config.job_id.size() > kMaxJobIdLength || config.secret.size() != kSecretLength ||
      (is_tcp(config.address) && !make_tcp_address(config.address, &tcp))) {
    if (config.listen_fd >= 0) ::close(config.listen_fd);
    return error(Code::kInvalidArgument,
                 "vshmem bootstrap(socket): malformed address, job id or secret");
  }
  std::unique_ptr<SocketBootstrap> b(new SocketBootstrap(config, timeout));
  Status st = config.rank == 0 ? b->hub_accept() : b->client_connect();
  if (!st) return st;
  return b;
}

Status SocketBootstrap::hub_accept() {
  const int npes = config_.npes;
  peer_fds_.assign(npes, -1);
  const bool tcp = is_tcp(config_.address);
  if (npes == 1) {
    close_fd(&listen_fd_);
    return Status::ok();
  }
  const auto deadline = Clock::now() + timeout_;
  if (listen_fd_ >= 0) {
    if (!set_nonblocking(listen_fd_)) {
      return make_error(Code::kSystem, "init", log::format("fcntl(): %s", strerror(errno)));
    }
  } else {
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0) {
      return make_error(Code::kSystem, "init", log::format("socket(): %s", strerror(errno)));
    }
    sockaddr_un sa;
    socklen_t len = make_address(config_.address, &sa);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
        ::listen(listen_fd_, std::min(npes, 4096)) != 0) {
      int e = errno;
      return make_error(
          Code::kSystem, "init",
          log::format("cannot listen at %s: %s%s", config_.address.c_str(), strerror(e),
                      e == EADDRINUSE ? " (another job uses this address)" : ""));
    }
  }
  const bool on_filesystem = !tcp && config_.address[0] != '@';

  struct Pending {
    int fd;
    uid_t uid;
    pid_t pid;
    Hello hello;
    size_t got;
  };
  std::vector<Pending> pending;
  int connected = 1;
  const uid_t my_uid = ::geteuid();

  const auto refuse = [&](Pending& p, const std::string& why) {
    VSHMEM_WARN("bootstrap(socket): refused a connection from pid %d: %s", static_cast<int>(p.pid),
                why.c_str());
    HelloReply reply{};
    reply.magic = kHelloMagic;
    reply.status = 1;
    std::snprintf(reply.message, sizeof(reply.message), "%s", why.c_str());
    int err = 0;
    (void)write_all(p.fd, &reply, sizeof(reply), Clock::now() + std::chrono::milliseconds(200),
                    &err);
    close_fd(&p.fd);
  };

  Status result;
  while (connected < npes) {
    if (Clock::now() >= deadline) {
      std::vector<int> missing;
      for (int r = 1; r < npes; ++r) {
        if (peer_fds_[r] < 0) missing.push_back(r);
      }
      result = Status(Code::kTimeout,
                      log::format("timed out after %s waiting for PE%s %s to connect",
                                  format_seconds(timeout_).c_str(), missing.size() > 1 ? "s" : "",
                                  format_pe_list(missing).c_str()));
      break;
    }
    std::vector<pollfd> pfds;
    pfds.push_back({listen_fd_, POLLIN, 0});
    for (auto& p : pending) pfds.push_back({p.fd, POLLIN, 0});
    int pr = ::poll(pfds.data(), pfds.size(), poll_ms(deadline));
    if (pr < 0 && errno != EINTR) {
      result = Status(Code::kSystem, log::format("poll(): %s", strerror(errno)));
      break;
    }
    if (pr <= 0) continue;
    if (pfds[0].revents & POLLIN) {
      for (;;) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        Pending p{fd, my_uid, 0, {}, 0};
        if (tcp) {
          set_nodelay(fd);
        } else if (!peer_uid(fd, &p.uid, &p.pid)) {
          close_fd(&p.fd);
          continue;
        }
        if (p.uid != my_uid) {
          refuse(p, log::format("uid %u is not the job's user (uid %u)", p.uid, my_uid));
          continue;
        }
        pending.push_back(p);
      }
    }
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (!(pfds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, 0);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        close_fd(&p.fd);  // a peer that gave up before introducing itself
        continue;
      }
      if (r < 0) continue;
      p.got += static_cast<size_t>(r);
      if (p.got < sizeof(Hello)) continue;
      const Hello& h = p.hello;
      std::string job_id(h.job_id, strnlen(h.job_id, sizeof(h.job_id)));
      if (h.magic != kHelloMagic || h.version != kProtocolVersion) {
        refuse(p, "not a vshmem bootstrap peer of this version");
      } else if (job_id != config_.job_id) {
        refuse(p, log::format("it belongs to job '%s', not '%s'", job_id.c_str(),
                              config_.job_id.c_str()));
      } else if (!same_secret(h.secret, config_.secret.data(), kSecretLength)) {
        refuse(p, "wrong job secret");
      } else if (h.npes != npes) {
        refuse(p, log::format("it expects %d PEs, the job has %d", h.npes, npes));
      } else if (h.rank < 1 || h.rank >= npes) {
        refuse(p, log::format("rank %d is outside [1, %d)", h.rank, npes));
      } else if (peer_fds_[h.rank] >= 0) {
        refuse(p, log::format("PE %d is already connected", h.rank));
      } else {
        HelloReply reply{};
        reply.magic = kHelloMagic;
        int err = 0;
        if (write_all(p.fd, &reply, sizeof(reply), deadline, &err) == Io::kOk) {
          peer_fds_[h.rank] = p.fd;
          ++connected;
        } else {
          close_fd(&p.fd);
        }
        p.fd = -1;
      }
    }
    std::erase_if(pending, [](const Pending& p) { return p.fd < 0; });
  }
  for (auto& p : pending) close_fd(&p.fd);
  // Nobody else may join: stop listening, and remove a filesystem socket right away.
  close_fd(&listen_fd_);
  if (on_filesystem) ::unlink(config_.address.c_str());
  if (!result) return fail("init", result);
  return Status::ok();
}

Status SocketBootstrap::client_connect() {
  peer_fds_.assign(1, -1);
  const auto deadline = Clock::now() + timeout_;
  const bool tcp = is_tcp(config_.address);
  sockaddr_un sa;
  sockaddr_in sa_in;
  socklen_t len = 0;
  sockaddr* addr = nullptr;
  if (tcp) {
    (void)make_tcp_address(config_.address, &sa_in);  // checked in connect()
    addr = reinterpret_cast<sockaddr*>(&sa_in);
    len = sizeof(sa_in);
  } else {
    len = make_address(config_.address, &sa);
    addr = reinterpret_cast<sockaddr*>(&sa);
  }
  auto delay = std::chrono::milliseconds(2);
  int fd = -1;
  for (;;) {
    fd = ::socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return make_error(Code::kSystem, "init", log::format("socket(): %s", strerror(errno)));
    }
    if (::connect(fd, addr, len) == 0) break;
    int e = errno;
    close_fd(&fd);
    // Over TCP the way to PE 0's host may still be coming up: retry those too until the deadline.
    const bool transient = e == ECONNREFUSED || e == ENOENT || e == EAGAIN || e == EINTR ||
                           (tcp && (e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH));
    if (!transient) {
      return make_error(
          Code::kSystem, "init",
          log::format("cannot connect to PE 0 at %s: %s", config_.address.c_str(), strerror(e)));
    }
    if (Clock::now() >= deadline) {
      return make_error(Code::kTimeout, "init",
                        log::format("timed out after %s waiting for PE 0 to listen at %s",
                                    format_seconds(timeout_).c_str(), config_.address.c_str()));
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
  peer_fds_[0] = fd;
  if (!set_nonblocking(fd)) {
    return make_error(Code::kSystem, "init", log::format("fcntl(): %s", strerror(errno)));
  }
  uid_t uid = 0;
  pid_t pid = 0;
  if (tcp) {
    set_nodelay(fd);
    uid = ::geteuid();  // nothing to ask across hosts: the secret is the credential
  } else if (!peer_uid(fd, &uid, &pid)) {
    return make_error(
        Code::kSystem, "init",
        log::format("SO_PEERCRED on %s: %s", config_.address.c_str(), strerror(errno)));
  }
  if (uid != ::geteuid()) {
    return make_error(
        Code::kPeerFailure, "init",
        log::format("the process listening at %s (pid %d) runs as uid %u, not as "
                    "uid %u; refusing to send it the job secret",
                    config_.address.c_str(), static_cast<int>(pid), uid, ::geteuid()));
  }
  Hello hello{};
  hello.magic = kHelloMagic;
  hello.version = kProtocolVersion;
  hello.rank = config_.rank;
  hello.npes = config_.npes;
  std::memcpy(hello.job_id, config_.job_id.data(), config_.job_id.size());
  std::memcpy(hello.secret, config_.secret.data(), kSecretLength);
  HelloReply reply{};
  int err = 0;
  Io io = write_all(fd, &hello, sizeof(hello), deadline, &err);
  if (io == Io::kOk) io = read_all(fd, &reply, sizeof(reply), deadline + kClientGrace, &err);
  switch (io) {
    case Io::kOk: break;
    case Io::kTimeout:
      return make_error(Code::kTimeout, "init",
                        log::format("timed out after %s waiting for PE 0 to accept the "
                                    "connection",
                                    format_seconds(timeout_).c_str()));
    case Io::kEof:
      return make_error(Code::kPeerFailure, "init",
                        "PE 0 closed the connection during authentication (PE 0 died?)");
    case Io::kError:
      return make_error(Code::kSystem, "init", log::format("socket I/O: %s", strerror(err)));
  }
  if (reply.magic != kHelloMagic) {
    return make_error(Code::kPeerFailure, "init", "PE 0 answered with garbage");
  }
  if (reply.status != 0) {
    reply.message[sizeof(reply.message) - 1] = '\0';
    return make_error(Code::kPeerFailure, "init",
                      log::format("PE 0 refused the connection: %s", reply.message));
  }
  return Status::ok();
}

Status SocketBootstrap::fail(const char* call, Status cause) {
  // cause carries only the cause text; every PE gets it with its own prefix.
  broken_ = make_error(cause.code(), call, cause.message());
  if (config_.rank == 0) {
    std::string text = log::format("%s: %s (reported by PE 0)", call, cause.message().c_str());
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    for (int r = 1; r < config_.npes; ++r) {
      if (peer_fds_[r] < 0) continue;
      Reply rep{kReplyMagic, static_cast<int32_t>(cause.code()), seq_, text.size()};
      int err = 0;
      if (write_all(peer_fds_[r], &rep, sizeof(rep), deadline, &err) == Io::kOk) {
        (void)write_all(peer_fds_[r], text.data(), text.size(), deadline, &err);
      }
    }
  }
  return broken_;
}

Status SocketBootstrap::collective(Op op, const void* in, void* out, size_t bytes, int root) {
  if (!broken_.is_ok()) return broken_;
  const char* call = op_name(static_cast<uint32_t>(op));
  if (op == Op::kBroadcast && (root < 0 || root >= config_.npes)) {
    return make_error(Code::kInvalidArgument, call,
                      log::format("root %d is outside [0, %d)", root, config_.npes));
  }
  if (bytes > 0 && ((op == Op::kAllgather && (in == nullptr || out == nullptr)) ||
                    (op == Op::kBroadcast && out == nullptr))) {
    return make_error(Code::kInvalidArgument, call, "null buffer");
  }
  if (op == Op::kAllgather && bytes != 0 &&
      bytes > std::numeric_limits<size_t>::max() / static_cast<size_t>(config_.npes)) {
    return make_error(Code::kInvalidArgument, call, "size overflows");
  }
  ++seq_;
  if (config_.npes == 1) {
    if (op == Op::kAllgather && bytes > 0) std::memmove(out, in, bytes);
    return Status::ok();
  }
  return config_.rank == 0 ? hub_collective(op, in, out, bytes, root)
                           : client_collective(op, in, out, bytes, root);
}

Status SocketBootstrap::hub_collective(Op op, const void* in, void* out, size_t bytes, int root) {
  const int npes = config_.npes;
  const char* call = op_name(static_cast<uint32_t>(op));
  const auto deadline = Clock::now() + timeout_;
  // Contributions land in scratch, not in out, so that out is written only on success.
  std::vector<char> scratch;
  if (op == Op::kAllgather) {
    scratch.resize(bytes * npes);
    if (bytes > 0) std::memcpy(scratch.data(), in, bytes);
  } else if (op == Op::kBroadcast && root != 0) {
    scratch.resize(bytes);
  }
  struct Peer {
    Request req{};
    size_t hdr_got = 0;
    size_t payload_got = 0;
    size_t payload_len = 0;
    char* dest = nullptr;
    bool done = false;
  };
  std::vector<Peer> peers(npes);
  peers[0].done = true;
  int arrived = 1;
  const std::string mine = describe(static_cast<uint32_t>(op), bytes, root);

  while (arrived < npes) {
    if (Clock::now() >= deadline) {
      std::vector<int> missing;
      for (int r = 1; r < npes; ++r) {
        if (!peers[r].done) missing.push_back(r);
      }
      return fail(call, Status(Code::kTimeout, log::format("timed out after %s waiting for PE%s %s",
                                                           format_seconds(timeout_).c_str(),
                                                           missing.size() > 1 ? "s" : "",
                                                           format_pe_list(missing).c_str())));
    }
    std::vector<pollfd> pfds;
    std::vector<int> who;
    for (int r = 1; r < npes; ++r) {
      if (peers[r].done) continue;
      pfds.push_back({peer_fds_[r], POLLIN, 0});
      who.push_back(r);
    }
    int pr = ::poll(pfds.data(), pfds.size(), poll_ms(deadline));
    if (pr < 0 && errno != EINTR) {
      return fail(call, Status(Code::kSystem, log::format("poll(): %s", strerror(errno))));
    }
    if (pr <= 0) continue;
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int r = who[i];
      Peer& p = peers[r];
      // Drain what is there: header first, then the payload it announces.
      for (;;) {
        char* dst;
        size_t want;
        if (p.hdr_got < sizeof(Request)) {
          dst = reinterpret_cast<char*>(&p.req) + p.hdr_got;
          want = sizeof(Request) - p.hdr_got;
        } else {
          dst = p.dest + p.payload_got;
          want = p.payload_len - p.payload_got;
        }
        ssize_t n = want == 0 ? 0 : ::recv(peer_fds_[r], dst, want, 0);
        if (want > 0 && n == 0) {
          return fail(call, Status(Code::kPeerFailure,
                                   log::format("PE %d died (its connection closed) before "
                                               "arriving",
                                               r)));
        }
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          return fail(call, Status(Code::kPeerFailure, log::format("PE %d: connection failed: %s",
                                                                   r, strerror(errno))));
        }
        if (p.hdr_got < sizeof(Request)) {
          p.hdr_got += static_cast<size_t>(n);
          if (p.hdr_got < sizeof(Request)) continue;
          const Request& q = p.req;
          if (q.magic != kRequestMagic) {
            return fail(call, Status(Code::kPeerFailure, log::format("PE %d sent garbage", r)));
          }
          if (q.op != static_cast<uint32_t>(op) || q.bytes != bytes ||
              (op == Op::kBroadcast && q.root != root) || q.seq != seq_) {
            return fail(call,
                        Status(Code::kInvalidArgument,
                               log::format("PEs disagree: PE %d called %s (collective #%llu) "
                                           "while PE 0 called %s (collective #%llu)",
                                           r, describe(q.op, q.bytes, q.root).c_str(),
                                           static_cast<unsigned long long>(q.seq), mine.c_str(),
                                           static_cast<unsigned long long>(seq_))));
          }
          if (op == Op::kAllgather) {
            p.payload_len = bytes;
            p.dest = scratch.data() + static_cast<size_t>(r) * bytes;
          } else if (op == Op::kBroadcast && r == root) {
            p.payload_len = bytes;
            p.dest = scratch.data();
          }
        } else {
          p.payload_got += static_cast<size_t>(n);
        }
        if (p.hdr_got == sizeof(Request) && p.payload_got == p.payload_len) {
          p.done = true;
          ++arrived;
          break;
        }
      }
    }
  }

  // Everybody arrived: send each PE its result.
  const void* result = nullptr;
  size_t result_len = 0;
  if (op == Op::kAllgather) {
    result = scratch.data();
    result_len = scratch.size();
  } else if (op == Op::kBroadcast) {
    result = root == 0 ? out : scratch.data();
    result_len = bytes;
  }
  for (int r = 1; r < npes; ++r) {
    Reply rep{kReplyMagic, 0, seq_, result_len};
    int err = 0;
    Io io = write_all(peer_fds_[r], &rep, sizeof(rep), deadline, &err);
    if (io == Io::kOk && result_len > 0) {
      io = write_all(peer_fds_[r], result, result_len, deadline, &err);
    }
    if (io == Io::kEof) {
      return fail(call, Status(Code::kPeerFailure,
                               log::format("PE %d died before receiving the result", r)));
    }
    if (io == Io::kTimeout) {
      return fail(
          call, Status(Code::kTimeout, log::format("timed out after %s sending the result to PE %d",
                                                   format_seconds(timeout_).c_str(), r)));
    }
    if (io == Io::kError) {
      return fail(call,
                  Status(Code::kSystem, log::format("sending to PE %d: %s", r, strerror(err))));
    }
  }
  if (op == Op::kAllgather && bytes > 0) std::memcpy(out, scratch.data(), scratch.size());
  if (op == Op::kBroadcast && root != 0 && bytes > 0) std::memcpy(out, scratch.data(), bytes);
  return Status::ok();
}

Status SocketBootstrap::client_collective(Op op, const void* in, void* out, size_t bytes,
                                          int root) {
  const char* call = op_name(static_cast<uint32_t>(op));
  const int fd = peer_fds_[0];
  const auto deadline = Clock::now() + timeout_ + kClientGrace;
  const auto broken = [&](Status s) {
    broken_ = s;
    return s;
  };
  Request req{kRequestMagic, static_cast<uint32_t>(op), seq_, bytes, root, 0};
  const void* payload = nullptr;
  size_t payload_len = 0;
  if (op == Op::kAllgather) {
    payload = in;
    payload_len = bytes;
  } else if (op == Op::kBroadcast && root == config_.rank) {
    payload = out;
    payload_len = bytes;
  }
  int err = 0;
  Io io = write_all(fd, &req, sizeof(req), deadline, &err);
  if (io == Io::kOk && payload_len > 0) io = write_all(fd, payload, payload_len, deadline, &err);
  // When the send fails, PE 0 may still have left an explanation in our receive queue.
  const bool send_failed = io != Io::kOk;
  Reply rep{};
  io = read_all(fd, &rep, sizeof(rep),
                send_failed ? Clock::now() + std::chrono::milliseconds(200) : deadline, &err);
  if (io == Io::kTimeout && !send_failed) {
    return broken(make_error(Code::kTimeout, call,
                             log::format("timed out after %s waiting for PE 0, which coordinates "
                                         "the collective (PE 0 did not arrive or did not "
                                         "answer)",
                                         format_seconds(timeout_).c_str())));
  }
  if (io != Io::kOk) {
    return broken(make_error(Code::kPeerFailure, call,
                             "lost the connection to PE 0 (PE 0 died or stopped the job)"));
  }
  if (rep.magic != kReplyMagic) {
    return broken(make_error(Code::kPeerFailure, call, "PE 0 sent garbage"));
  }
  if (rep.status != 0) {
    std::string text(std::min<uint64_t>(rep.length, kMaxErrorText), '\0');
    if (read_all(fd, text.data(), text.size(), Clock::now() + std::chrono::milliseconds(500),
                 &err) != Io::kOk) {
      text = "PE 0 reported an error it could not deliver";
    }
    Code code = rep.status > 0 && rep.status <= static_cast<int>(Code::kState)
                    ? static_cast<Code>(rep.status)
                    : Code::kPeerFailure;
    // The text already names the failed call (it may be an earlier one, e.g. init).
    return broken(error(
        code, log::format("vshmem bootstrap(socket): PE %d: %s", config_.rank, text.c_str())));
  }
  size_t expect = op == Op::kAllgather ? bytes * config_.npes : op == Op::kBroadcast ? bytes : 0;
  if (rep.seq != seq_ || rep.length != expect) {
    return broken(make_error(Code::kPeerFailure, call,
                             "PE 0 answered a different collective (protocol error)"));
  }
  if (expect > 0) {
    // Receive into scratch so that out is written only on success.
    std::vector<char> scratch(expect);
    io = read_all(fd, scratch.data(), expect, deadline, &err);
    if (io == Io::kTimeout) {
      return broken(make_error(Code::kTimeout, call,
                               log::format("timed out after %s receiving the result from PE 0",
                                           format_seconds(timeout_).c_str())));
    }
    if (io != Io::kOk) {
      return broken(make_error(Code::kPeerFailure, call,
                               "lost the connection to PE 0 while receiving the result"));
    }
    std::memcpy(out, scratch.data(), expect);
  }
  return Status::ok();
}

Status SocketBootstrap::allgather(const void* in, void* out, size_t bytes) {
  return collective(Op::kAllgather, in, out, bytes, 0);
}
Status SocketBootstrap::broadcast(void* buf, size_t bytes, int root) {
  return collective(Op::kBroadcast, buf, buf, bytes, root);
}
Status SocketBootstrap::barrier() { return collective(Op::kBarrier, nullptr, nullptr, 0, 0); }

}  // namespace vshmem::detail
