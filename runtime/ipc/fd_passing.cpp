#include "runtime/ipc/fd_passing.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/common/log.hpp"

namespace vshmem {
namespace {

constexpr uint32_t kMagic = 0x76736d66;  // "vsmf"
constexpr size_t kMaxFds = 64;           // per message; well under the kernel's SCM_MAX_FD

struct Header {
  uint32_t magic;
  int32_t src_pe;
  uint64_t tag;
  uint32_t nfds;
  char secret[64];
};

Status sys_error(const char* call, int err) {
  return error(Code::kSystem, log::format("%s: %s", call, std::strerror(err)));
}

socklen_t make_address(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  // Abstract namespace: leading NUL, no file system entry.
  size_t n = std::min(name.size(), sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
}

}  // namespace

std::string FdExchange::socket_name(const std::string& job_id, int pe) {
  return log::format("vshmem-%s-%d", job_id.c_str(), pe);
}

Result<std::unique_ptr<FdExchange>> FdExchange::create(const std::string& job_id,
                                                       const std::string& secret, int my_pe,
                                                       std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("socket(AF_UNIX)", errno);
  sockaddr_un addr;
  socklen_t len = make_address(socket_name(job_id, my_pe), &addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = errno;
    ::close(fd);
    return error(Code::kSystem, log::format("bind(@%s): %s", socket_name(job_id, my_pe).c_str(),
                                            std::strerror(err)));
  }
  if (::listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    return sys_error("listen", err);
  }
  return std::unique_ptr<FdExchange>(new FdExchange(fd, job_id, secret, my_pe, timeout));
}

FdExchange::FdExchange(int listen_fd, std::string job_id, std::string secret, int my_pe,
                       std::chrono::milliseconds timeout)
    : listen_fd_(listen_fd),
      job_id_(std::move(job_id)),
      secret_(std::move(secret)),
      my_pe_(my_pe),
      timeout_(timeout) {}

FdExchange::~FdExchange() {
  ::close(listen_fd_);
  for (auto& [key, fds] : pending_) close_all(fds);
}

Status FdExchange::send_to(int peer, const std::vector<int>& fds, uint64_t tag) {
  if (fds.size() > kMaxFds) {
    return error(Code::kInvalidArgument, log::format("fd exchange: %zu descriptors in one message "
                                                     "(at most %zu)",
                                                     fds.size(), kMaxFds));
  }
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return sys_error("socket(AF_UNIX)", errno);
  sockaddr_un addr;
  std::string name = socket_name(job_id_, peer);
  socklen_t len = make_address(name, &addr);
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (::connect(s, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = errno;
    if ((err == ECONNREFUSED || err == EAGAIN || err == EINTR) &&
        std::chrono::steady_clock::now() < deadline) {
      ::usleep(1000);
      continue;
    }
    ::close(s);
    return error(Code::kPeerFailure, log::format("cannot reach PE %d's handle socket @%s: %s", peer,
                                                 name.c_str(), std::strerror(err)));
  }
  Header h{};
  h.magic = kMagic;
  h.src_pe = my_pe_;
  h.tag = tag;
  h.nfds = static_cast<uint32_t>(fds.size());
  std::snprintf(h.secret, sizeof(h.secret), "%s", secret_.c_str());
  iovec iov{&h, sizeof(h)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<size_t>(fds.size(), 1)));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = ::sendmsg(s, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  ::close(s);
  if (n != static_cast<ssize_t>(sizeof(h))) {
    return error(Code::kPeerFailure, log::format("sending handles to PE %d: %s", peer,
                                                 n < 0 ? std::strerror(err) : "short write"));
  }
  return Status::ok();
}

Status FdExchange::receive_one(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return error(Code::kTimeout, "timed out");
    pollfd p{listen_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) return sys_error("poll", errno);
    if (r <= 0) continue;
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      return sys_error("accept", errno);
    }
    ucred cred{};
    socklen_t cl = sizeof(cred);
    if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != ::getuid()) {
      VSHMEM_WARN("handle socket: rejected a connection from uid %u (not ours)",
                  static_cast<unsigned>(cred.uid));
      ::close(c);
      continue;
    }
    // Bounded wait for the message itself.
    pollfd pc{c, POLLIN, 0};
    if (::poll(&pc, 1, 5000) <= 0) {
      ::close(c);
      continue;
    }
    Header h{};
    iovec iov{&h, sizeof(h)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFds));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    ssize_t n = ::recvmsg(c, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    ::close(c);
    std::vector<int> fds;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const int* data = reinterpret_cast<const int*>(CMSG_DATA(cm));
        fds.insert(fds.end(), data, data + k);
      }
    }
    h.secret[sizeof(h.secret) - 1] = '\0';
    if (n != static_cast<ssize_t>(sizeof(h)) || h.magic != kMagic || secret_ != h.secret ||
        fds.size() != h.nfds || (msg.msg_flags & MSG_CTRUNC)) {
      VSHMEM_WARN("handle socket: rejected a malformed or unauthenticated message");
      close_all(fds);
      continue;
    }
    auto& slot = pending_[{h.tag, h.src_pe}];
    close_all(slot);  // a duplicate replaces; never leak
    slot = std::move(fds);
    return Status::ok();
  }
}

Result<std::map<int, std::vector<int>>> FdExchange::exchange(const std::vector<int>& peers,
                                                             const std::vector<int>& fds,
                                                             uint64_t tag) {
  for (int p : peers) VSHMEM_RETURN_IF_ERROR(send_to(p, fds, tag).with_context("fd exchange: "));
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::map<int, std::vector<int>> out;
  for (;;) {
    std::vector<int> missing;
    for (int p : peers) {
      if (out.count(p)) continue;
      auto it = pending_.find({tag, p});
      if (it != pending_.end()) {
        out[p] = std::move(it->second);
        pending_.erase(it);
      } else {
        missing.push_back(p);
      }
    }
    if (missing.empty()) return out;
    Status st = receive_one(deadline);
    if (!st) {
      for (auto& [p, v] : out) close_all(v);
      std::string who;
      for (int p : missing) who += (who.empty() ? "" : ", ") + std::to_string(p);
      return st.with_context(log::format("fd exchange (tag %llu): no handles from PEs %s: ",
                                         static_cast<unsigned long long>(tag), who.c_str()));
    }
  }
}

}  // namespace vshmem
