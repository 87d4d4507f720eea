#include "runtime/common/connection.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "runtime/common/log.hpp"

namespace vshmem {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kHelloMagic = 0x56534843;  // "VSHC"

Status sys_error(const std::string& what, int err) {
  std::string text = log::format("%s: %s", what.c_str(), std::strerror(err));
  if (err == EMFILE || err == ENFILE) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
      text += log::format(" (this process may have at most %llu open descriptors: ulimit -n)",
                          static_cast<unsigned long long>(rl.rlim_cur));
    }
  }
  return error(Code::kSystem, text);
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

// Waits until fd is ready for `events` or the deadline passes. kTimeout, or ok.
Status wait_for(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    if (Clock::now() >= deadline) return error(Code::kTimeout, log::format("%s timed out", what));
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (r < 0 && errno != EINTR) return sys_error("poll", errno);
    if (r > 0) return Status::ok();
  }
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0 && fd_ != fd) ::close(fd_);
  fd_ = fd;
}

int poll_timeout_ms(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  // Round up so that we never spin on a sub-millisecond remainder.
  return static_cast<int>(std::min<long long>(left.count() + 1, 1000LL * 1000));
}

Status check_unix_address(const std::string& address) {
  if (address.size() < 2 || address.size() >= sizeof(sockaddr_un::sun_path)) {
    return error(Code::kInvalidArgument,
                 log::format("socket address '%s' must have 2 to %zu characters", address.c_str(),
                             sizeof(sockaddr_un::sun_path) - 1));
  }
  return Status::ok();
}

Result<UniqueFd> listen_unix(const std::string& address, int backlog) {
  VSHMEM_RETURN_IF_ERROR(check_unix_address(address));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return sys_error("socket(AF_UNIX)", errno);
  sockaddr_un sa;
  socklen_t len = make_address(address, &sa);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    int e = errno;
    return error(Code::kSystem,
                 log::format("cannot listen at %s: bind: %s%s", address.c_str(), std::strerror(e),
                             e == EADDRINUSE ? " (another job uses this address)" : ""));
  }
  if (::listen(fd.get(), backlog) != 0) return sys_error("listen(" + address + ")", errno);
  return fd;
}

Result<UniqueFd> connect_unix(const std::string& address, Deadline deadline, const char* what) {
  VSHMEM_RETURN_IF_ERROR(check_unix_address(address));
  sockaddr_un sa;
  socklen_t len = make_address(address, &sa);
  auto delay = std::chrono::milliseconds(1);
  int last = 0;
  for (;;) {
    // Non-blocking: a full accept queue answers EAGAIN at once instead of blocking in connect().
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return sys_error("socket(AF_UNIX)", errno);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) == 0) return fd;
    last = errno;
    if (last == EINPROGRESS) {
      VSHMEM_RETURN_IF_ERROR(wait_for(fd.get(), POLLOUT, deadline, "connect"));
      int soerr = 0;
      socklen_t sl = sizeof(soerr);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &sl);
      if (soerr == 0) return fd;
      last = soerr;
    }
    if (last != ENOENT && last != ECONNREFUSED && last != EAGAIN && last != EINTR) {
      return error(last == EACCES || last == EPERM ? Code::kPeerFailure : Code::kSystem,
                   log::format("cannot connect to %s at %s: %s", what, address.c_str(),
                               std::strerror(last)));
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(delay, deadline - Clock::now()));
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
  return error(
      Code::kTimeout,
      log::format(
          "cannot connect to %s at %s before the deadline: %s", what, address.c_str(),
          last == EAGAIN ? "its queue of pending connections stays full" : std::strerror(last)));
}

Result<UniqueFd> accept_unix(int listen_fd) {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) return UniqueFd(fd);
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return UniqueFd();
    return sys_error("accept", errno);
  }
}

bool is_tcp_address(const std::string& address) { return address.rfind("tcp:", 0) == 0; }

namespace {
// "tcp:1.2.3.4:5678" as a socket address; false when malformed.
bool tcp_sockaddr(const std::string& address, sockaddr_in* sa) {
  std::memset(sa, 0, sizeof(*sa));
  if (!is_tcp_address(address)) return false;
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
}  // namespace

void set_nodelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Result<UniqueFd> connect_tcp(const std::string& address, Deadline deadline, const char* what) {
  sockaddr_in sa{};
  if (!tcp_sockaddr(address, &sa)) {
    return Status(
        Code::kInvalidArgument,
        log::format("%s: malformed address '%s' (want tcp:IPv4:port)", what, address.c_str()));
  }
  auto delay = std::chrono::milliseconds(2);
  for (;;) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return sys_error("socket", errno);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
      const int flags = ::fcntl(fd.get(), F_GETFL);
      if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
        return sys_error("fcntl", errno);
      }
      set_nodelay(fd.get());
      return fd;
    }
    const int e = errno;
    // The way to PE 0's host may still be coming up, or it does not listen yet.
    const bool transient = e == ECONNREFUSED || e == EAGAIN || e == EINTR || e == ETIMEDOUT ||
                           e == EHOSTUNREACH || e == ENETUNREACH;
    if (!transient) {
      return Status(Code::kSystem, log::format("cannot connect to %s at %s: %s", what,
                                               address.c_str(), std::strerror(e)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(Code::kTimeout, log::format("%s did not answer at %s before the deadline (%s)",
                                                what, address.c_str(), std::strerror(e)));
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
}

Status peer_credentials(int fd, uid_t* uid, pid_t* pid) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return sys_error("getsockopt(SO_PEERCRED)", errno);
  }
  *uid = cred.uid;
  if (pid != nullptr) *pid = cred.pid;
  return Status::ok();
}

Status write_all(int fd, const void* data, size_t n, Deadline deadline) {
  return send_with_fds(fd, data, n, {}, deadline);
}

Status read_all(int fd, void* data, size_t n, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return error(Code::kPeerFailure, "the peer closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      VSHMEM_RETURN_IF_ERROR(wait_for(fd, POLLIN, deadline, "read"));
      continue;
    }
    if (errno == ECONNRESET) return error(Code::kPeerFailure, "the peer reset the connection");
    return sys_error("recv", errno);
  }
  return Status::ok();
}

Status send_with_fds(int fd, const void* data, size_t n, const std::vector<int>& fds,
                     Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  std::vector<char> control;
  bool fds_sent = fds.empty();
  while (n > 0) {
    iovec iov{const_cast<char*>(p), n};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds_sent) {
      // The descriptors travel with the first byte that goes out.
      control.assign(CMSG_SPACE(sizeof(int) * fds.size()), 0);
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w > 0) {
      fds_sent = true;
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      VSHMEM_RETURN_IF_ERROR(wait_for(fd, POLLOUT, deadline, "write"));
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) {
      return error(Code::kPeerFailure, "the peer closed the connection");
    }
    return sys_error("sendmsg", errno);
  }
  return Status::ok();
}

Result<size_t> receive_some(int fd, void* data, size_t n, std::vector<UniqueFd>* fds) {
  constexpr size_t kMaxFds = 64;
  iovec iov{data, n};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t r;
  do {
    r = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return static_cast<size_t>(0);
    if (errno == ECONNRESET) return error(Code::kPeerFailure, "the peer reset the connection");
    return sys_error("recvmsg", errno);
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const unsigned char* d = CMSG_DATA(c);
      for (size_t i = 0; i < k; ++i) {
        int v;
        std::memcpy(&v, d + i * sizeof(int), sizeof(int));
        fds->emplace_back(v);
      }
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) {
    // The kernel drops descriptors it cannot install: at the open-file limit, or more than fit.
    return sys_error("recvmsg: descriptors sent by the peer were dropped", EMFILE);
  }
  if (r == 0) return error(Code::kPeerFailure, "the peer closed the connection");
  return static_cast<size_t>(r);
}

bool secrets_equal(std::string_view a, std::string_view b) {
  // The length of a secret is public (fixed by the protocol); only its bytes are compared blind.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  // Keep the compiler from turning the loop into an early-exit comparison.
  volatile unsigned char sink = diff;
  return sink == 0;
}

Hello make_hello(uint32_t protocol, int rank, int npes, const std::string& job_id,
                 const std::string& secret) {
  Hello h{};
  h.magic = kHelloMagic;
  h.protocol = protocol;
  h.rank = rank;
  h.npes = npes;
  std::memcpy(h.job_id, job_id.data(), std::min(job_id.size(), kHelloJobIdBytes - 1));
  std::memcpy(h.secret, secret.data(), std::min(secret.size(), kHelloSecretBytes));
  return h;
}

Status verify_hello(const Hello& h, uint32_t protocol, const std::string& job_id,
                    const std::string& secret) {
  if (h.magic != kHelloMagic || h.protocol != protocol) {
    return error(Code::kPeerFailure, "not a vshmem peer speaking this protocol");
  }
  std::string their_job(h.job_id, strnlen(h.job_id, kHelloJobIdBytes));
  if (their_job != job_id) {
    return error(Code::kPeerFailure, log::format("it belongs to job '%s', not '%s'",
                                                 their_job.c_str(), job_id.c_str()));
  }
  std::string mine(kHelloSecretBytes, '\0');
  std::memcpy(mine.data(), secret.data(), std::min(secret.size(), kHelloSecretBytes));
  if (!secrets_equal(std::string_view(h.secret, kHelloSecretBytes), mine)) {
    return error(Code::kPeerFailure, "wrong job secret");
  }
  return Status::ok();
}

}  // namespace vshmem
