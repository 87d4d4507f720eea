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

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <limits>
#include <thread>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/bootstrap/gather_round.hpp"
#include "runtime/common/connection.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/private_dir.hpp"
#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kHelloMagic = 0x56534842;    // "VSHB": the hub's answer to a hello
constexpr uint32_t kRequestMagic = 0x56534252;  // "VSBR"
constexpr uint32_t kReplyMagic = 0x56534250;    // "VSBP"
// The hello (connection.hpp) announces this protocol; the number changes with the wire format.
constexpr uint32_t kBootstrapProtocol = 0x56534202;
// A connection must introduce itself this soon after it is accepted, and at most this many wait
// to do so: strangers that connect and say nothing (or one byte) cannot hold the hub's
// descriptors, nor keep a real PE out.
constexpr std::chrono::milliseconds kHandshakeDeadline{2000};
constexpr size_t kMaxPendingConnections = 64;
constexpr size_t kMaxErrorText = 4096;
// A client waits this much longer than the hub, so that when PEs are missing the hub's message
// naming them arrives before the client gives up on its own (it cannot tell who is missing).
constexpr std::chrono::milliseconds kClientGrace{2000};

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

// The substrate's Status, as the three outcomes the messages below distinguish.
Io io_of(const Status& st, std::string* why) {
  if (st.is_ok()) return Io::kOk;
  *why = st.message();
  switch (st.code()) {
    case Code::kTimeout: return Io::kTimeout;
    case Code::kPeerFailure: return Io::kEof;
    default: return Io::kError;
  }
}
Io write_all(int fd, const void* data, size_t n, Clock::time_point deadline, std::string* why) {
  return io_of(vshmem::write_all(fd, data, n, deadline), why);
}
Io read_all(int fd, void* data, size_t n, Clock::time_point deadline, std::string* why) {
  return io_of(vshmem::read_all(fd, data, n, deadline), why);
}

using gather::op_name;

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
    : config_(std::move(config)), timeout_(timeout), listen_fd_(config_.listen_fd) {
  config_.listen_fd = -1;  // adopted: closed by listen_fd_ from now on
}

SocketBootstrap::~SocketBootstrap() = default;

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
  if (config.address.size() < 2 || config.address.size() >= sizeof(sockaddr_un::sun_path) ||
      config.job_id.size() > kMaxJobIdLength || config.secret.size() != kSecretLength) {
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
  peer_fds_.clear();
  peer_fds_.resize(npes);
  if (npes == 1) {
    listen_fd_.reset();
    return Status::ok();
  }
  const auto deadline = Clock::now() + timeout_;
  const bool tcp = is_tcp_address(config_.address);
  const bool on_filesystem = !tcp && config_.address[0] != '@';
  if (on_filesystem) {
    // Only our user may reach the socket: its directory must be private.
    const size_t slash = config_.address.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : config_.address.substr(0, slash);
    // Recreated if a sweep removed it while it was empty (a job that inits again much later).
    ::mkdir(dir.c_str(), 0700);
    Status st = check_private_dir(dir);
    if (!st)
      return make_error(Code::kInvalidArgument, "init", "VSHMEM_SOCKET_ADDR: " + st.message());
  }
  if (listen_fd_.valid()) {
    // The unique-ID start: shmemx_get_uniqueid left this socket listening (TCP).
    const int flags = ::fcntl(listen_fd_.get(), F_GETFL);
    if (flags < 0 || ::fcntl(listen_fd_.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
      return make_error(Code::kSystem, "init", log::format("fcntl(): %s", strerror(errno)));
    }
  } else if (tcp) {
    return make_error(Code::kInvalidArgument, "init",
                      "a TCP bootstrap address needs the socket shmemx_get_uniqueid opened");
  } else {
    auto listening = listen_unix(config_.address, std::min(npes, 4096));
    if (!listening) return make_error(Code::kSystem, "init", listening.status().message());
    listen_fd_ = std::move(*listening);
  }

  struct Pending {
    UniqueFd fd;
    pid_t pid = 0;
    Hello hello{};
    size_t got = 0;
    Clock::time_point until;
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
    // A refused peer gets a moment to read why, never the hub's time.
    (void)vshmem::write_all(p.fd.get(), &reply, sizeof(reply),
                            Clock::now() + std::chrono::milliseconds(50));
    p.fd.reset();
  };
  // Reads what a pending connection has sent; judges its hello once complete.
  const auto serve = [&](Pending& p) {
    std::vector<UniqueFd> ignored;  // descriptors have no business here
    auto got = receive_some(p.fd.get(), reinterpret_cast<char*>(&p.hello) + p.got,
                            sizeof(Hello) - p.got, &ignored);
    if (!got) {
      p.fd.reset();  // a peer that gave up before introducing itself
      return;
    }
    p.got += *got;
    if (p.got < sizeof(Hello)) return;
    const Hello& h = p.hello;
    Status who = verify_hello(h, kBootstrapProtocol, config_.job_id, config_.secret);
    if (!who) {
      refuse(p, who.message());
    } else if (h.npes != npes) {
      refuse(p, log::format("it expects %d PEs, the job has %d", h.npes, npes));
    } else if (h.rank < 1 || h.rank >= npes) {
      refuse(p, log::format("rank %d is outside [1, %d)", h.rank, npes));
    } else if (peer_fds_[h.rank].valid()) {
      refuse(p, log::format("PE %d is already connected", h.rank));
    } else {
      HelloReply reply{};
      reply.magic = kHelloMagic;
      if (vshmem::write_all(p.fd.get(), &reply, sizeof(reply), deadline)) {
        peer_fds_[h.rank] = std::move(p.fd);
        ++connected;
      }
      p.fd.reset();
    }
  };

  Status result;
  while (connected < npes) {
    const auto now = Clock::now();
    if (now >= deadline) {
      std::vector<int> missing;
      for (int r = 1; r < npes; ++r) {
        if (!peer_fds_[r].valid()) missing.push_back(r);
      }
      result = Status(Code::kTimeout,
                      log::format("timed out after %s waiting for PE%s %s to connect",
                                  format_seconds(timeout_).c_str(), missing.size() > 1 ? "s" : "",
                                  format_pe_list(missing).c_str()));
      break;
    }
    for (auto& p : pending) {
      if (now >= p.until) {
        VSHMEM_INFO(
            "bootstrap(socket): dropped a connection from pid %d that did not introduce "
            "itself within %s",
            static_cast<int>(p.pid), format_seconds(kHandshakeDeadline).c_str());
        p.fd.reset();
      }
    }
    std::erase_if(pending, [](const Pending& p) { return !p.fd.valid(); });
    std::vector<pollfd> pfds;
    pfds.push_back({listen_fd_.get(), POLLIN, 0});
    auto wake = deadline;
    for (auto& p : pending) {
      pfds.push_back({p.fd.get(), POLLIN, 0});
      wake = std::min(wake, p.until);
    }
    int pr = ::poll(pfds.data(), pfds.size(), poll_timeout_ms(wake));
    if (pr < 0 && errno != EINTR) {
      result = Status(Code::kSystem, log::format("poll(): %s", strerror(errno)));
      break;
    }
    if (pr <= 0) continue;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (pfds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) serve(pending[i]);
    }
    std::erase_if(pending, [](const Pending& p) { return !p.fd.valid(); });
    if (pfds[0].revents & POLLIN) {
      for (;;) {
        auto accepted = accept_unix(listen_fd_.get());
        if (!accepted) {
          // Out of descriptors: the handshake deadlines free some soon; say why meanwhile.
          VSHMEM_WARN("bootstrap(socket): %s", accepted.status().message().c_str());
          break;
        }
        if (!accepted->valid()) break;
        Pending p;
        p.fd = std::move(*accepted);
        p.until = std::min(deadline, Clock::now() + kHandshakeDeadline);
        uid_t uid = my_uid;
        if (tcp) {
          set_nodelay(p.fd.get());  // across hosts the job secret is the credential
        } else if (!peer_credentials(p.fd.get(), &uid, &p.pid)) {
          continue;
        }
        if (uid != my_uid) {
          refuse(p, log::format("uid %u is not the job's user (uid %u)", uid, my_uid));
          continue;
        }
        serve(p);  // a real PE's hello is usually there already
        if (!p.fd.valid()) continue;
        if (pending.size() >= kMaxPendingConnections) {
          VSHMEM_INFO(
              "bootstrap(socket): %zu connections wait to introduce themselves; dropping "
              "the oldest (pid %d)",
              pending.size(), static_cast<int>(pending.front().pid));
          pending.erase(pending.begin());
        }
        pending.push_back(std::move(p));
        if (connected == npes) break;
      }
    }
  }
  pending.clear();
  // Nobody else may join: stop listening, and remove a filesystem socket right away.
  listen_fd_.reset();
  if (on_filesystem) ::unlink(config_.address.c_str());
  if (!result) return fail("init", result);
  return Status::ok();
}

Status SocketBootstrap::client_connect() {
  peer_fds_.clear();
  peer_fds_.resize(1);
  const auto deadline = Clock::now() + timeout_;
  const bool tcp = is_tcp_address(config_.address);
  auto connected = tcp ? connect_tcp(config_.address, deadline, "PE 0 (the bootstrap hub)")
                       : connect_unix(config_.address, deadline, "PE 0 (the bootstrap hub)");
  if (!connected) {
    if (connected.status().code() == Code::kTimeout) {
      return make_error(Code::kTimeout, "init",
                        log::format("timed out after %s waiting for PE 0 to listen at %s",
                                    format_seconds(timeout_).c_str(), config_.address.c_str()));
    }
    return make_error(connected.status().code(), "init", connected.status().message());
  }
  const int fd = connected->get();
  peer_fds_[0] = std::move(*connected);
  uid_t uid = ::geteuid();  // over TCP nothing to ask: the job secret is the credential
  pid_t pid = 0;
  if (!tcp) {
    Status cred = peer_credentials(fd, &uid, &pid);
    if (!cred) return make_error(Code::kSystem, "init", cred.message());
  }
  if (uid != ::geteuid()) {
    return make_error(
        Code::kPeerFailure, "init",
        log::format("the process listening at %s (pid %d) runs as uid %u, not as "
                    "uid %u; refusing to send it the job secret",
                    config_.address.c_str(), static_cast<int>(pid), uid, ::geteuid()));
  }
  Hello hello =
      make_hello(kBootstrapProtocol, config_.rank, config_.npes, config_.job_id, config_.secret);
  HelloReply reply{};
  std::string why;
  Io io = write_all(fd, &hello, sizeof(hello), deadline, &why);
  if (io == Io::kOk) io = read_all(fd, &reply, sizeof(reply), deadline + kClientGrace, &why);
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
      return make_error(Code::kSystem, "init", log::format("socket I/O: %s", why.c_str()));
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

Status SocketBootstrap::fail(const char* call, const Status& cause, const std::vector<int>& late) {
  // cause carries only the cause text; every PE gets it with its own prefix.
  broken_ = make_error(cause.code(), call, cause.message());
  if (config_.rank == 0) {
    const std::string shared =
        log::format("%s: %s (reported by PE 0)", call, cause.message().c_str());
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    for (int r = 1; r < config_.npes; ++r) {
      if (!peer_fds_[r].valid()) continue;
      // A PE that is itself among the missing must not read "waiting for PE r" as news about
      // another PE: it was the late one.
      const std::string text =
          std::find(late.begin(), late.end(), r) == late.end()
              ? shared
              : log::format(
                    "%s: this PE arrived after PE 0 had given up waiting for it (%s) "
                    "(reported by PE 0)",
                    call, cause.message().c_str());
      Reply rep{kReplyMagic, static_cast<int32_t>(cause.code()), seq_, text.size()};
      std::string why;
      if (write_all(peer_fds_[r].get(), &rep, sizeof(rep), deadline, &why) == Io::kOk) {
        (void)write_all(peer_fds_[r].get(), text.data(), text.size(), deadline, &why);
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
  gather::Round round({static_cast<uint32_t>(op), seq_, bytes, root}, npes, in);
  struct Peer {
    Request req{};
    size_t hdr_got = 0;
    size_t payload_got = 0;
    size_t payload_len = 0;
    char* dest = nullptr;
  };
  std::vector<Peer> peers(npes);

  while (!round.complete()) {
    if (Clock::now() >= deadline) {
      return fail(call, Status(Code::kTimeout, round.missing_text(timeout_)), round.missing());
    }
    std::vector<pollfd> pfds;
    std::vector<int> who;
    for (int r = 1; r < npes; ++r) {
      if (round.has_arrived(r)) continue;
      pfds.push_back({peer_fds_[r].get(), POLLIN, 0});
      who.push_back(r);
    }
    int pr = ::poll(pfds.data(), pfds.size(), poll_timeout_ms(deadline));
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
        ssize_t n = want == 0 ? 0 : ::recv(peer_fds_[r].get(), dst, want, 0);
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
          const gather::Call theirs{q.op, q.seq, q.bytes, q.root};
          if (!round.same(theirs)) {
            return fail(call, Status(Code::kInvalidArgument, round.disagreement(r, theirs)));
          }
          p.payload_len = gather::contribution_bytes(round.call(), r);
          p.dest = round.slot(r);
        } else {
          p.payload_got += static_cast<size_t>(n);
        }
        if (p.hdr_got == sizeof(Request) && p.payload_got == p.payload_len) {
          round.arrived(r);
          break;
        }
      }
    }
  }

  // Everybody arrived: send each PE its result.
  const void* result = round.result();
  const size_t result_len = round.result_len();
  for (int r = 1; r < npes; ++r) {
    Reply rep{kReplyMagic, 0, seq_, result_len};
    std::string why;
    Io io = write_all(peer_fds_[r].get(), &rep, sizeof(rep), deadline, &why);
    if (io == Io::kOk && result_len > 0) {
      io = write_all(peer_fds_[r].get(), result, result_len, deadline, &why);
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
      return fail(call, Status(Code::kSystem, log::format("sending to PE %d: %s", r, why.c_str())));
    }
  }
  if (result_len > 0 && result != out) std::memcpy(out, result, result_len);
  return Status::ok();
}

Status SocketBootstrap::client_collective(Op op, const void* in, void* out, size_t bytes,
                                          int root) {
  const char* call = op_name(static_cast<uint32_t>(op));
  const int fd = peer_fds_[0].get();
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
  std::string why;
  Io io = write_all(fd, &req, sizeof(req), deadline, &why);
  if (io == Io::kOk && payload_len > 0) io = write_all(fd, payload, payload_len, deadline, &why);
  // When the send fails, PE 0 may still have left an explanation in our receive queue.
  const bool send_failed = io != Io::kOk;
  Reply rep{};
  io = read_all(fd, &rep, sizeof(rep),
                send_failed ? Clock::now() + std::chrono::milliseconds(200) : deadline, &why);
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
                 &why) != Io::kOk) {
      text = "PE 0 reported an error it could not deliver";
    }
    Code code = rep.status > 0 && rep.status <= static_cast<int>(Code::kState)
                    ? static_cast<Code>(rep.status)
                    : Code::kPeerFailure;
    // The text already names the failed call (it may be an earlier one, e.g. init).
    return broken(error(
        code, log::format("vshmem bootstrap(socket): PE %d: %s", config_.rank, text.c_str())));
  }
  const size_t expect =
      gather::result_bytes({static_cast<uint32_t>(op), seq_, bytes, root}, config_.npes);
  if (rep.seq != seq_ || rep.length != expect) {
    return broken(make_error(Code::kPeerFailure, call,
                             "PE 0 answered a different collective (protocol error)"));
  }
  if (expect > 0) {
    // Receive into scratch so that out is written only on success.
    std::vector<char> scratch(expect);
    io = read_all(fd, scratch.data(), expect, deadline, &why);
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
