#include "runtime/ipc/fd_passing.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/private_dir.hpp"

namespace vshmem {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kFdProtocol = 0x76736d66;  // "vsmf": a handle message follows the hello
constexpr size_t kMaxFds = 64;                // per message; well under the kernel's SCM_MAX_FD

std::string detail_pe_list(const std::vector<int>& pes) {
  std::string s;
  for (int p : pes) s += (s.empty() ? "" : ", ") + std::to_string(p);
  return s;
}

struct Header {
  uint64_t tag;
  uint32_t nfds;
  uint32_t reserved;
};
struct Message {
  Hello hello;
  Header header;
};

}  // namespace

struct FdExchange::Incoming {
  UniqueFd fd;
  Deadline until;
  Message msg{};
  size_t got = 0;
  std::vector<UniqueFd> fds;
};

std::string FdExchange::socket_path(const std::string& dir, int pe) {
  return log::format("%s/pe%d", dir.c_str(), pe);
}

Result<std::unique_ptr<FdExchange>> FdExchange::create(const std::string& dir,
                                                       const std::string& job_id,
                                                       const std::string& secret, int my_pe,
                                                       std::chrono::milliseconds timeout) {
  ::mkdir(dir.c_str(), 0700);  // gone when the last PE of an earlier init cycle removed it
  VSHMEM_RETURN_IF_ERROR(check_private_dir(dir).with_context("handle socket: "));
  const std::string path = socket_path(dir, my_pe);
  ::unlink(path.c_str());  // a socket left by a previous init of this very PE
  UniqueFd fd;
  VSHMEM_ASSIGN_OR_RETURN(fd, listen_unix(path, kBacklog));
  return std::unique_ptr<FdExchange>(
      new FdExchange(std::move(fd), dir, job_id, secret, my_pe, timeout));
}

FdExchange::FdExchange(UniqueFd listen_fd, std::string dir, std::string job_id, std::string secret,
                       int my_pe, std::chrono::milliseconds timeout)
    : listen_fd_(std::move(listen_fd)),
      dir_(std::move(dir)),
      job_id_(std::move(job_id)),
      secret_(std::move(secret)),
      my_pe_(my_pe),
      timeout_(timeout) {}

FdExchange::~FdExchange() {
  ::unlink(socket_path(dir_, my_pe_).c_str());
  // The last PE to leave removes the directory, unless vshmemrun made it: then the job may init
  // again (with the same directory), and vshmemrun removes it at the end.
  if (env::get("VSHMEM_SOCKET_DIR").value_or("") != dir_) ::rmdir(dir_.c_str());
}

Status FdExchange::send_to(int peer, const std::vector<int>& fds, uint64_t tag, Deadline deadline) {
  if (fds.size() > kMaxFds) {
    return error(Code::kInvalidArgument,
                 log::format("%zu descriptors in one message (at most %zu)", fds.size(), kMaxFds));
  }
  const std::string who = log::format("PE %d's handle socket", peer);
  UniqueFd s;
  VSHMEM_ASSIGN_OR_RETURN(s, connect_unix(socket_path(dir_, peer), deadline, who.c_str()));
  // The secret goes only to a process of our own user.
  uid_t uid = 0;
  pid_t pid = 0;
  VSHMEM_RETURN_IF_ERROR(peer_credentials(s.get(), &uid, &pid));
  if (uid != ::geteuid()) {
    return error(Code::kPeerFailure,
                 log::format("%s is held by pid %d of uid %u, not by our user", who.c_str(),
                             static_cast<int>(pid), static_cast<unsigned>(uid)));
  }
  Message m{};
  m.hello = make_hello(kFdProtocol, my_pe_, 0, job_id_, secret_);
  m.header.tag = tag;
  m.header.nfds = static_cast<uint32_t>(fds.size());
  return send_with_fds(s.get(), &m, sizeof(m), fds, deadline)
      .with_context(log::format("sending handles to PE %d: ", peer));
}

bool FdExchange::serve(Incoming& in) {
  auto got = receive_some(in.fd.get(), reinterpret_cast<char*>(&in.msg) + in.got,
                          sizeof(Message) - in.got, &in.fds);
  if (!got) {
    last_rejection_ = got.status().message();
    // Our own failure (e.g. the open-file limit), not the sender's: waiting on cannot help.
    if (got.status().code() == Code::kSystem) own_failure_ = got.status();
    return true;
  }
  in.got += *got;
  if (in.got < sizeof(Message)) return false;
  Status ok = verify_hello(in.msg.hello, kFdProtocol, job_id_, secret_);
  if (ok && in.fds.size() != in.msg.header.nfds) {
    ok = error(Code::kPeerFailure, log::format("it announced %u descriptors and sent %zu",
                                               in.msg.header.nfds, in.fds.size()));
  }
  if (!ok) {
    last_rejection_ = "rejected a connection: " + ok.message();
    VSHMEM_WARN("handle socket: %s", last_rejection_.c_str());
    return true;
  }
  pending_[{in.msg.header.tag, in.msg.hello.rank}] = std::move(in.fds);  // a duplicate replaces
  return true;
}

Status FdExchange::receive_one(Deadline deadline, Deadline exchange_deadline) {
  const size_t before = pending_.size();
  for (;;) {
    // (A duplicate replaces its entry without growing pending_: the caller's loop just waits on.)
    const auto now = Clock::now();
    // Connections that did not deliver in time go, whoever holds them open.
    std::erase_if(incoming_, [&](const std::unique_ptr<Incoming>& in) {
      if (now < in->until) return false;
      last_rejection_ = "dropped a connection that sent no complete message in time";
      return true;
    });
    if (now >= deadline) return error(Code::kTimeout, "timed out");
    std::vector<pollfd> pfds{{listen_fd_.get(), POLLIN, 0}};
    for (auto& in : incoming_) pfds.push_back({in->fd.get(), POLLIN, 0});
    Deadline wake = deadline;
    for (auto& in : incoming_) wake = std::min(wake, in->until);
    int r = ::poll(pfds.data(), pfds.size(), poll_timeout_ms(wake));
    if (r < 0 && errno != EINTR)
      return error(Code::kSystem, log::format("poll: %s", strerror(errno)));
    if (r <= 0) continue;
    // Serve the connections first (the listening socket's new ones are appended after).
    std::vector<bool> done(incoming_.size(), false);
    for (size_t i = 0; i < incoming_.size(); ++i) {
      if (pfds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) done[i] = serve(*incoming_[i]);
    }
    size_t k = 0;
    std::erase_if(incoming_, [&](const std::unique_ptr<Incoming>&) { return done[k++]; });
    if (pfds[0].revents & POLLIN) {
      for (;;) {
        auto acc = accept_unix(listen_fd_.get());
        if (!acc) {
          // E.g. out of descriptors: waiting would not help (and the queue stays readable).
          return acc.status();
        }
        if (!acc->valid()) break;
        uid_t uid = 0;
        if (!peer_credentials(acc->get(), &uid, nullptr) || uid != ::geteuid()) {
          last_rejection_ = log::format("rejected a connection from uid %u (not ours)", uid);
          VSHMEM_WARN("handle socket: %s", last_rejection_.c_str());
          continue;
        }
        if (incoming_.size() >= kMaxIncoming) incoming_.erase(incoming_.begin());
        auto in = std::make_unique<Incoming>();
        in->fd = std::move(*acc);
        in->until = std::min(exchange_deadline, Clock::now() + kConnectionDeadline);
        // A real peer's message is usually there already.
        if (!serve(*in)) incoming_.push_back(std::move(in));
        if (!own_failure_.is_ok()) break;
      }
    }
    if (!own_failure_.is_ok()) {
      Status st = own_failure_;
      own_failure_ = Status::ok();
      return st;
    }
    if (pending_.size() > before) return Status::ok();
  }
}

Result<std::map<int, std::vector<int>>> FdExchange::exchange(const std::vector<int>& peers,
                                                             const std::vector<int>& fds,
                                                             uint64_t tag) {
  const Deadline deadline = deadline_after(timeout_);
  // Messages of earlier exchanges that did not complete (a failed growth) are never used.
  if ((tag & kOneShotTag) == 0) {
    std::erase_if(pending_, [&](const auto& entry) {
      return (entry.first.first & kOneShotTag) == 0 && entry.first.first < tag;
    });
  }
  const auto fail = [&](const std::vector<int>& who, const char* what, const Status& st) {
    std::string cause = st.message();
    if (!last_rejection_.empty() && last_rejection_ != cause) {
      cause += " (last problem seen: " + last_rejection_ + ")";
    }
    return error(
        st.code(),
        log::format("fd exchange (tag %llu): %s PE%s %s: %s", static_cast<unsigned long long>(tag),
                    what, who.size() > 1 ? "s" : "", detail_pe_list(who).c_str(), cause.c_str()));
  };
  // Sending and receiving interleave: while a peer's queue is full or it does not listen yet,
  // this PE keeps emptying its own queue, so that two PEs sending to each other never wait on
  // each other (nor on connections a stranger left in the queues).
  std::vector<int> unsent = peers;
  Status last_send;
  while (!unsent.empty()) {
    std::vector<int> still;
    for (int p : unsent) {
      Status st = send_to(p, fds, tag, Clock::now());
      if (st) continue;
      if (st.code() != Code::kTimeout) return fail({p}, "cannot send handles to", st);
      last_send = st;
      still.push_back(p);
    }
    unsent = std::move(still);
    if (unsent.empty()) break;
    if (Clock::now() >= deadline) return fail(unsent, "cannot reach", last_send);
    Status st =
        receive_one(std::min(deadline, deadline_after(std::chrono::milliseconds(5))), deadline);
    if (!st && st.code() != Code::kTimeout) return fail(unsent, "cannot reach", st);
  }
  std::map<int, std::vector<UniqueFd>> got;
  for (;;) {
    std::vector<int> missing;
    for (int p : peers) {
      if (got.count(p)) continue;
      auto it = pending_.find({tag, p});
      if (it != pending_.end()) {
        got[p] = std::move(it->second);
        pending_.erase(it);
      } else {
        missing.push_back(p);
      }
    }
    if (missing.empty()) break;
    Status st = receive_one(deadline, deadline);
    if (!st) return fail(missing, "no handles from", st);
  }
  std::map<int, std::vector<int>> out;
  for (auto& [p, v] : got) {
    auto& o = out[p];
    for (auto& fd : v) o.push_back(fd.release());
  }
  return out;
}

}  // namespace vshmem
