#include "runtime/transport/staged_transport.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kHelloMagic = 0x48485356;    // "VSHH"
constexpr uint32_t kRequestMagic = 0x51525356;  // "VSRQ"
constexpr uint32_t kReplyMagic = 0x50525356;    // "VSRP"
constexpr uint32_t kVersion = 1;
constexpr size_t kSecretBytes = 64;
constexpr size_t kMaxErrorText = 4096;

struct Hello {
  uint32_t magic;
  uint32_t version;
  int32_t from_pe;
  uint32_t reserved;
  char secret[kSecretBytes];
};

struct HelloReply {
  uint32_t magic;
  uint32_t status;
};

enum class WireOp : uint8_t { kPut = 1, kGet = 2, kAtomic = 3 };

struct Request {
  uint32_t magic;
  uint8_t op;         // WireOp
  uint8_t atomic_op;  // AtomicOp, for kAtomic
  uint8_t width;      // 4 or 8, for kAtomic
  uint8_t reserved;
  uint64_t seq;
  uint64_t offset;  // from the heap base H
  uint64_t length;  // bytes of a put or get
  uint64_t operand;
  uint64_t compare;
};

enum ReplyStatus : uint32_t { kReplyOk = 0, kReplyBadRequest = 1, kReplyFailed = 2 };

struct Reply {
  uint32_t magic;
  uint32_t status;  // ReplyStatus
  uint64_t seq;
  uint64_t value;   // fetched value of an atomic
  uint64_t length;  // bytes that follow: a get's data, or the error text
};

static_assert(std::is_trivially_copyable_v<Hello> && sizeof(Hello) == 80);
static_assert(std::is_trivially_copyable_v<Request> && sizeof(Request) == 48);
static_assert(std::is_trivially_copyable_v<Reply> && sizeof(Reply) == 32);

enum class Io { kOk, kClosed, kTimeout, kError };
struct IoStatus {
  Io io = Io::kOk;
  int err = 0;
  size_t done = 0;  // bytes moved before the failure
};

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes.
IoStatus wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = remaining_ms(deadline);
    int r = ::poll(&p, 1, ms);
    if (r > 0) return {};
    if (r == 0) return {Io::kTimeout, 0, 0};
    if (errno != EINTR) return {Io::kError, errno, 0};
  }
}

IoStatus recv_all(int fd, void* buf, size_t bytes, Clock::time_point deadline) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::recv(fd, p + done, bytes - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return {Io::kClosed, 0, done};
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return {Io::kClosed, errno, done};
    if (errno != EAGAIN && errno != EWOULDBLOCK) return {Io::kError, errno, done};
    IoStatus w = wait_ready(fd, POLLIN, deadline);
    if (w.io != Io::kOk) return {w.io, w.err, done};
  }
  return {Io::kOk, 0, done};
}

IoStatus send_all(int fd, const void* buf, size_t bytes, Clock::time_point deadline) {
  const auto* p = static_cast<const uint8_t*>(buf);
  size_t done = 0;
  while (done < bytes) {
    // MSG_NOSIGNAL: a peer that went away is an error to report, not a SIGPIPE.
    ssize_t n = ::send(fd, p + done, bytes - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return {Io::kClosed, errno, done};
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return {Io::kError, errno, done};
    IoStatus w = wait_ready(fd, POLLOUT, deadline);
    if (w.io != Io::kOk) return {w.io, w.err, done};
  }
  return {Io::kOk, 0, done};
}

std::string endpoint_name(uint32_t address, uint16_t port) {
  char text[INET_ADDRSTRLEN] = "?";
  in_addr a{};
  a.s_addr = address;
  ::inet_ntop(AF_INET, &a, text, sizeof(text));
  return log::format("%s:%u", text, static_cast<unsigned>(ntohs(port)));
}

std::string seconds(std::chrono::milliseconds ms) {
  return log::format("%.3g s", static_cast<double>(ms.count()) / 1000.0);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool secrets_match(const char* a, const char* b) {
  // Constant time: how far a guess matched is not observable.
  unsigned char diff = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void fill_secret(const std::string& secret, char* out) {
  std::memset(out, 0, kSecretBytes);
  std::memcpy(out, secret.data(), std::min(secret.size(), kSecretBytes));
}

const char* op_name(WireOp op) {
  switch (op) {
    case WireOp::kPut: return "put";
    case WireOp::kGet: return "get";
    case WireOp::kAtomic: return "atomic";
  }
  return "?";
}

}  // namespace

// Our side of the connection to one peer's proxy.
struct StagedTransport::Connection {
  std::mutex mutex;  // one request in flight per connection (SHMEM_THREAD_MULTIPLE)
  int fd = -1;
  uint64_t seq = 0;
  std::string failure;  // set once the connection broke: later calls report it
  std::vector<uint8_t> buffer;
  ~Connection() { close_fd(fd); }
};

// The proxy's side of a connection from one peer.
struct StagedTransport::ProxyClient {
  int fd = -1;
  bool authenticated = false;
  int pe = -1;
  std::string name;  // address:port, for messages
  ~ProxyClient() { close_fd(fd); }
};

StagedTransport::StagedTransport(StagedOptions options)
    : options_(std::move(options)), committed_(options_.committed) {
  connections_.resize(options_.n_pes);
  for (auto& c : connections_) c = std::make_unique<Connection>();
  endpoints_.resize(options_.n_pes);
}

StagedTransport::~StagedTransport() {
  stopping_.store(true);
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (proxy_.joinable()) proxy_.join();
  close_fd(listen_fd_);
  close_fd(wake_fd_);
}

Clock::time_point StagedTransport::deadline() const { return Clock::now() + options_.timeout; }

Result<std::unique_ptr<StagedTransport>> StagedTransport::start(StagedOptions options) {
  if (options.provider == nullptr || options.heap_size == 0) {
    return error(Code::kInvalidArgument, "staged transport: no heap to serve");
  }
  std::unique_ptr<StagedTransport> t(new StagedTransport(std::move(options)));
  VSHMEM_RETURN_IF_ERROR(t->listen());
  t->proxy_buffer_.resize(kChunkBytes);
  StagedTransport* raw = t.get();
  t->proxy_ = std::thread([raw] { raw->serve(); });
  return t;
}

Status StagedTransport::listen() {
  in_addr bind_address{};
  bind_address.s_addr = htonl(INADDR_ANY);
  in_addr advertised{};
  if (!options_.address.empty()) {
    if (::inet_pton(AF_INET, options_.address.c_str(), &advertised) != 1) {
      return error(Code::kInvalidArgument,
                   log::format("VSHMEM_STAGED_ADDR: '%s' is not an IPv4 address (a.b.c.d)",
                               options_.address.c_str()));
    }
    // An explicit address is also the only one we listen on (e.g. loopback for tests).
    bind_address = advertised;
  } else {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) != 0) {
      return error(Code::kSystem,
                   log::format("staged transport: gethostname(): %s", strerror(errno)));
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host, nullptr, &hints, &found);
    if (rc != 0 || found == nullptr) {
      return error(Code::kSystem,
                   log::format("staged transport: no IPv4 address for this host '%s' (%s); set "
                               "VSHMEM_STAGED_ADDR to the address peers should connect to",
                               host, rc != 0 ? gai_strerror(rc) : "none"));
    }
    advertised = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
    ::freeaddrinfo(found);
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    return error(Code::kSystem, log::format("staged transport: socket(): %s", strerror(errno)));
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = bind_address;
  sa.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0) {
    return error(Code::kSystem,
                 log::format("staged transport: cannot listen on %s: %s",
                             endpoint_name(bind_address.s_addr, 0).c_str(), strerror(errno)));
  }
  socklen_t len = sizeof(sa);
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    return error(Code::kSystem,
                 log::format("staged transport: getsockname(): %s", strerror(errno)));
  }
  endpoint_.address = advertised.s_addr;
  endpoint_.port = sa.sin_port;
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    return error(Code::kSystem, log::format("staged transport: eventfd(): %s", strerror(errno)));
  }
  VSHMEM_INFO("staged proxy listening on %s",
              endpoint_name(endpoint_.address, endpoint_.port).c_str());
  return Status::ok();
}

Result<std::unique_ptr<StagedTransport>> StagedTransport::create(Bootstrap& bootstrap,
                                                                 const Topology& topology,
                                                                 const std::vector<bool>& staged,
                                                                 StagedOptions options) {
  bool any = false, all_local = true;
  for (size_t p = 0; p < staged.size(); ++p) {
    any = any || staged[p];
    if (staged[p] && topology.node_of_pe[p] != topology.my_node) all_local = false;
  }
  if (auto a = env::get("VSHMEM_STAGED_ADDR")) {
    options.address = *a;
  } else if (all_local) {
    options.address = "127.0.0.1";  // nothing needs to leave this host
  }
  std::unique_ptr<StagedTransport> t;
  Status started;
  if (any) {
    auto r = start(std::move(options));
    if (r) {
      t = std::move(r).value();
    } else {
      started = r.status();
    }
  }
  // A PE that failed to start its proxy still takes part, so that nobody waits for it here.
  struct Record {
    StagedEndpoint endpoint;
    int32_t ok;
    int32_t reserved;
  };
  Record mine{t ? t->endpoint() : StagedEndpoint{}, started.is_ok() ? 1 : 0, 0};
  std::vector<Record> all(bootstrap.size());
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&mine, all.data(), sizeof(Record)));
  if (!started) return started;
  if (!t) return std::unique_ptr<StagedTransport>();
  std::vector<StagedEndpoint> endpoints(all.size());
  for (size_t p = 0; p < all.size(); ++p) {
    if (staged[p] && (!all[p].ok || all[p].endpoint.port == 0)) {
      return error(Code::kPeerFailure,
                   log::format("PE %zu could not start its staged proxy (see its message)", p));
    }
    endpoints[p] = all[p].endpoint;
  }
  t->set_endpoints(std::move(endpoints));
  return t;
}

// ---------------------------------------------------------------------------------------------
// The proxy: one thread, one request at a time, each read and written within the time limit.

void StagedTransport::serve() {
  std::vector<std::unique_ptr<ProxyClient>> clients;
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : clients) fds.push_back({c->fd, POLLIN, 0});
    int r = ::poll(fds.data(), fds.size(), -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      VSHMEM_WARN("staged proxy: poll(): %s; the proxy stops serving", strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;
    // Serve the clients of this poll round before accepting: their indexes match fds.
    std::vector<bool> drop(clients.size(), false);
    for (size_t i = 0; i < clients.size(); ++i) {
      if (fds[i + 2].revents != 0) drop[i] = !serve_one(*clients[i]);
    }
    for (size_t i = clients.size(); i-- > 0;) {
      if (drop[i]) clients.erase(clients.begin() + static_cast<long>(i));
    }
    if (fds[1].revents & POLLIN) {
      for (;;) {
        sockaddr_in from{};
        socklen_t len = sizeof(from);
        int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR) continue;
          if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
            VSHMEM_WARN("staged proxy: accept(): %s", strerror(errno));
          }
          break;
        }
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        auto c = std::make_unique<ProxyClient>();
        c->fd = fd;
        c->name = endpoint_name(from.sin_addr.s_addr, from.sin_port);
        clients.push_back(std::move(c));
      }
    }
  }
}

// Serves one message of a client; false drops the connection.
bool StagedTransport::serve_one(ProxyClient& client) {
  if (!client.authenticated) {
    Hello hello{};
    IoStatus s = recv_all(client.fd, &hello, sizeof(hello), deadline());
    if (s.io != Io::kOk) {
      if (s.done != 0 || s.io != Io::kClosed) {
        VSHMEM_WARN("staged proxy: dropped the connection from %s: no complete hello (%s)",
                    client.name.c_str(), s.io == Io::kTimeout ? "timed out" : "closed");
      }
      return false;
    }
    char secret[kSecretBytes];
    fill_secret(options_.secret, secret);
    if (hello.magic != kHelloMagic || hello.version != kVersion) {
      VSHMEM_WARN("staged proxy: dropped the connection from %s: not a vshmem staged hello",
                  client.name.c_str());
      return false;
    }
    if (!secrets_match(hello.secret, secret)) {
      VSHMEM_WARN(
          "staged proxy: rejected the connection from %s (claiming to be PE %d): wrong job "
          "secret (a process of another job, or not vshmem)",
          client.name.c_str(), hello.from_pe);
      return false;
    }
    if (hello.from_pe < 0 || hello.from_pe >= options_.n_pes) {
      VSHMEM_WARN("staged proxy: dropped the connection from %s: PE %d is not in this job",
                  client.name.c_str(), hello.from_pe);
      return false;
    }
    client.authenticated = true;
    client.pe = hello.from_pe;
    HelloReply reply{kHelloMagic, 0};
    return send_all(client.fd, &reply, sizeof(reply), deadline()).io == Io::kOk;
  }
  Status st = handle_request(client);
  if (!st && st.message().empty()) return false;
  if (!st) {
    VSHMEM_WARN("staged proxy: dropped the connection from PE %d (%s): %s", client.pe,
                client.name.c_str(), st.message().c_str());
    return false;
  }
  return true;
}

// A Status that is not ok means the connection is unusable (it is dropped; an empty message: the
// peer closed it); a bad request that leaves the stream in sync is answered with an error reply.
Status StagedTransport::handle_request(ProxyClient& client) {
  Request rq{};
  IoStatus s = recv_all(client.fd, &rq, sizeof(rq), deadline());
  if (s.io == Io::kClosed && s.done == 0) {
    return error(Code::kState, "");  // the peer closed its end: it is done with us
  }
  if (s.io != Io::kOk) {
    return error(Code::kPeerFailure,
                 s.io == Io::kTimeout ? "incomplete request (timed out)" : "incomplete request");
  }
  if (rq.magic != kRequestMagic) return error(Code::kPeerFailure, "malformed request");
  const auto op = static_cast<WireOp>(rq.op);
  if (op != WireOp::kPut && op != WireOp::kGet && op != WireOp::kAtomic) {
    return error(Code::kPeerFailure, log::format("unknown request %u", rq.op));
  }
  if ((op == WireOp::kPut || op == WireOp::kGet) && rq.length > kChunkBytes) {
    return error(Code::kPeerFailure,
                 log::format("%s of %llu bytes exceeds the %zu-byte chunk", op_name(op),
                             static_cast<unsigned long long>(rq.length), kChunkBytes));
  }
  const uint64_t length = op == WireOp::kAtomic ? rq.width : rq.length;
  if (op == WireOp::kPut) {
    s = recv_all(client.fd, proxy_buffer_.data(), length, deadline());
    if (s.io != Io::kOk) return error(Code::kPeerFailure, "incomplete put data");
  }

  // Validate: never touch memory outside [H, H + committed).
  std::string bad;
  if (rq.offset > options_.heap_size || length > options_.heap_size - rq.offset) {
    bad = log::format("[%#llx, +%llu bytes) is outside the symmetric heap (%zu bytes)",
                      static_cast<unsigned long long>(rq.offset),
                      static_cast<unsigned long long>(length), options_.heap_size);
  } else if (op == WireOp::kAtomic &&
             ((rq.width != 4 && rq.width != 8) || rq.offset % rq.width != 0 ||
              rq.atomic_op > static_cast<uint8_t>(AtomicOp::kFetchXor))) {
    bad = log::format("atomic op %u of width %u at offset %#llx is not valid", rq.atomic_op,
                      rq.width, static_cast<unsigned long long>(rq.offset));
  } else if (rq.offset + length > committed_.load(std::memory_order_acquire)) {
    // The heap grows collectively: a peer may address the new memory a moment before our own
    // growth has been published here. Wait for it, within the time limit.
    const auto until = deadline();
    while (rq.offset + length > committed_.load(std::memory_order_acquire) &&
           Clock::now() < until && !stopping_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (rq.offset + length > committed_.load(std::memory_order_acquire)) {
      bad = log::format(
          "[%#llx, +%llu bytes) is beyond the %zu bytes of this PE's heap that are "
          "allocated",
          static_cast<unsigned long long>(rq.offset), static_cast<unsigned long long>(length),
          committed_.load());
    }
  }

  Reply reply{kReplyMagic, kReplyOk, rq.seq, 0, 0};
  std::string text;
  void* target = reinterpret_cast<void*>(options_.heap_base + rq.offset);
  if (!bad.empty()) {
    reply.status = kReplyBadRequest;
    text = bad;
  } else {
    Status done;
    if (op == WireOp::kPut) {
      done = options_.provider->copy(target, proxy_buffer_.data(), length);
    } else if (op == WireOp::kGet) {
      done = options_.provider->copy(proxy_buffer_.data(), target, length);
      if (done) reply.length = length;
    } else {
      AtomicRequest a{static_cast<AtomicOp>(rq.atomic_op), target, rq.width, rq.operand,
                      rq.compare};
      done = options_.provider->atomic(a, &reply.value);
    }
    if (!done) {
      reply.status = kReplyFailed;
      text = done.message();
    }
  }
  if (!text.empty()) {
    text.resize(std::min(text.size(), kMaxErrorText));
    reply.length = text.size();
  }
  s = send_all(client.fd, &reply, sizeof(reply), deadline());
  if (s.io == Io::kOk && reply.length != 0) {
    const void* body = text.empty() ? static_cast<const void*>(proxy_buffer_.data()) : text.data();
    s = send_all(client.fd, body, reply.length, deadline());
  }
  if (s.io != Io::kOk) {
    return error(Code::kPeerFailure,
                 s.io == Io::kTimeout ? "the reply timed out" : "the reply could not be sent");
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Our side: requests to peers' proxies.

namespace {
Status io_failure(int pe, const char* what, const char* stage, const IoStatus& s,
                  std::chrono::milliseconds timeout) {
  switch (s.io) {
    case Io::kClosed:
      return error(Code::kPeerFailure,
                   log::format("%s PE %d: its proxy closed the connection (%s; PE %d exited or "
                               "failed)",
                               what, pe, stage, pe));
    case Io::kTimeout:
      return error(Code::kTimeout,
                   log::format("%s PE %d: no progress for %s (%s; PE %d may be hung or "
                               "overloaded; VSHMEM_BOOTSTRAP_TIMEOUT sets the limit)",
                               what, pe, seconds(timeout).c_str(), stage, pe));
    default:
      return error(Code::kSystem,
                   log::format("%s PE %d: %s: %s", what, pe, stage, strerror(s.err)));
  }
}
}  // namespace

Status StagedTransport::connect_to(int pe, Connection& c, const char* what) {
  const StagedEndpoint ep = endpoints_[pe];
  if (ep.port == 0) {
    return error(Code::kState, log::format("%s PE %d: it has no staged proxy (the transport "
                                           "plans of the two PEs disagree)",
                                           what, pe));
  }
  const std::string name = endpoint_name(ep.address, ep.port);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return error(Code::kSystem, log::format("%s PE %d: socket(): %s", what, pe, strerror(errno)));
  }
  c.fd = fd;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = ep.address;
  sa.sin_port = ep.port;
  const auto until = deadline();
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  int err = rc == 0 ? 0 : errno;
  if (rc != 0 && (errno == EINPROGRESS || errno == EINTR)) {
    IoStatus w = wait_ready(fd, POLLOUT, until);
    if (w.io != Io::kOk) {
      close_fd(c.fd);
      return io_failure(pe, what, ("connecting to " + name).c_str(), w, options_.timeout);
    }
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  }
  if (err != 0) {
    close_fd(c.fd);
    return error(Code::kPeerFailure,
                 log::format("%s PE %d: cannot connect to its proxy at %s: %s (PE %d exited or "
                             "failed?)",
                             what, pe, name.c_str(), strerror(err), pe));
  }
  Hello hello{kHelloMagic, kVersion, options_.my_pe, 0, {}};
  fill_secret(options_.secret, hello.secret);
  HelloReply reply{};
  IoStatus s = send_all(fd, &hello, sizeof(hello), until);
  if (s.io == Io::kOk) s = recv_all(fd, &reply, sizeof(reply), until);
  if (s.io != Io::kOk) {
    close_fd(c.fd);
    if (s.io == Io::kClosed) {
      return error(Code::kPeerFailure,
                   log::format("%s PE %d: its proxy at %s refused the connection (a different "
                               "job secret: is that address another job's? or PE %d exited)",
                               what, pe, name.c_str(), pe));
    }
    return io_failure(pe, what, ("greeting its proxy at " + name).c_str(), s, options_.timeout);
  }
  if (reply.magic != kHelloMagic || reply.status != 0) {
    close_fd(c.fd);
    return error(Code::kPeerFailure,
                 log::format("%s PE %d: %s did not answer as a vshmem staged proxy", what, pe,
                             name.c_str()));
  }
  VSHMEM_TRACE("staged: connected to PE %d at %s", pe, name.c_str());
  return Status::ok();
}

Result<StagedTransport::Connection*> StagedTransport::connection(int pe, const char* what) {
  if (pe < 0 || pe >= options_.n_pes || pe == options_.my_pe) {
    return error(Code::kInvalidArgument,
                 log::format("%s PE %d: not a peer of the staged transport", what, pe));
  }
  return connections_[pe].get();
}

// One request and its reply, with the connection's mutex held. Any failure breaks the connection
// (a late reply would be taken for the next request's), and later calls report that failure.
Status StagedTransport::send_request(int pe, Connection& c, const char* what, const void* request,
                                     const void* payload, size_t payload_bytes) {
  if (!c.failure.empty()) {
    return error(Code::kPeerFailure, log::format("%s PE %d: the connection failed earlier: %s",
                                                 what, pe, c.failure.c_str()));
  }
  if (c.fd < 0) {
    Status st = connect_to(pe, c, what);
    if (!st) {
      c.failure = st.message();  // a peer that could not be reached once is not retried
      return st;
    }
  }
  const auto until = deadline();
  IoStatus s = send_all(c.fd, request, sizeof(Request), until);
  if (s.io == Io::kOk && payload_bytes != 0) s = send_all(c.fd, payload, payload_bytes, until);
  if (s.io != Io::kOk) {
    return broken(c, io_failure(pe, what, "sending the request", s, options_.timeout));
  }
  return Status::ok();
}

Status StagedTransport::broken(Connection& c, Status st) {
  close_fd(c.fd);
  c.failure = st.message();
  return st;
}

Status StagedTransport::receive_reply(int pe, Connection& c, const char* what, uint64_t seq,
                                      void* reply_out, void* data, size_t data_capacity) {
  if (!c.failure.empty()) {
    return error(Code::kPeerFailure, log::format("%s PE %d: the connection failed earlier: %s",
                                                 what, pe, c.failure.c_str()));
  }
  Reply& reply = *static_cast<Reply*>(reply_out);
  IoStatus s = recv_all(c.fd, &reply, sizeof(reply), deadline());
  if (s.io != Io::kOk) {
    return broken(c, io_failure(pe, what, "waiting for the reply", s, options_.timeout));
  }
  if (reply.magic != kReplyMagic || reply.seq != seq) {
    return broken(c, error(Code::kPeerFailure,
                           log::format("%s PE %d: malformed reply from its proxy", what, pe)));
  }
  if (reply.status != kReplyOk) {
    std::string text(std::min<uint64_t>(reply.length, kMaxErrorText), '\0');
    s = recv_all(c.fd, text.data(), text.size(), deadline());
    if (s.io != Io::kOk || reply.length > kMaxErrorText) {
      return broken(c, io_failure(pe, what, "reading an error reply", s, options_.timeout));
    }
    return error(
        reply.status == kReplyBadRequest ? Code::kInvalidArgument : Code::kPeerFailure,
        log::format("%s PE %d: its proxy refused the request: %s", what, pe, text.c_str()));
  }
  if (reply.length != (data != nullptr ? data_capacity : 0)) {
    return broken(c, error(Code::kPeerFailure,
                           log::format("%s PE %d: its proxy replied with %llu bytes, not %zu", what,
                                       pe, static_cast<unsigned long long>(reply.length),
                                       data != nullptr ? data_capacity : 0)));
  }
  if (data != nullptr) {
    s = recv_all(c.fd, data, data_capacity, deadline());
    if (s.io != Io::kOk) {
      return broken(c, io_failure(pe, what, "receiving the data", s, options_.timeout));
    }
  }
  return Status::ok();
}

Status StagedTransport::exchange(int pe, Connection& c, const char* what, const void* request,
                                 const void* payload, size_t payload_bytes, void* reply_out,
                                 void* data, size_t data_capacity) {
  VSHMEM_RETURN_IF_ERROR(send_request(pe, c, what, request, payload, payload_bytes));
  return receive_reply(pe, c, what, static_cast<const Request*>(request)->seq, reply_out, data,
                       data_capacity);
}

Status StagedTransport::put(int pe, void* dest, const void* source, size_t bytes) {
  const char* what = "put to";
  Connection* c = nullptr;
  VSHMEM_ASSIGN_OR_RETURN(c, connection(pe, what));
  std::lock_guard<std::mutex> lock(c->mutex);
  const bool stage = options_.provider->is_device_memory();
  if (stage && c->buffer.size() < kChunkBytes) c->buffer.resize(kChunkBytes);
  const uintptr_t offset = reinterpret_cast<uintptr_t>(dest) - options_.heap_base;
  // Up to kPipelineDepth chunks in flight: the next chunk travels while the proxy stores the
  // previous one. The proxy answers every chunk, in order; after a refused chunk the replies of
  // the ones in flight are still read, so that the connection stays in step.
  uint64_t first_unanswered = c->seq + 1;
  Status failure = Status::ok();
  auto answer_one = [&]() {
    Reply reply{};
    Status st = receive_reply(pe, *c, what, first_unanswered++, &reply, nullptr, 0);
    if (!st && failure) failure = st;
    return c->failure.empty();  // false: the connection is gone, nothing more will come
  };
  for (size_t done = 0; done < bytes && failure;) {
    const size_t n = std::min(kChunkBytes, bytes - done);
    const void* from = static_cast<const uint8_t*>(source) + done;
    if (stage) {
      // The source may be GPU memory: the socket reads host memory only. The buffer is free
      // again once the previous chunk has been sent (the kernel holds its own copy).
      Status st = options_.provider->copy(c->buffer.data(), from, n);
      if (!st) {
        failure = st;
        break;
      }
      from = c->buffer.data();
    }
    Request rq{kRequestMagic,
               static_cast<uint8_t>(WireOp::kPut),
               0,
               0,
               0,
               ++c->seq,
               offset + done,
               n,
               0,
               0};
    Status st = send_request(pe, *c, what, &rq, from, n);
    if (!st) return st;  // the connection is gone: no replies to wait for
    done += n;
    if (c->seq - first_unanswered + 1 >= kPipelineDepth && !answer_one()) return failure;
  }
  while (first_unanswered <= c->seq) {
    if (!answer_one()) return failure;
  }
  return failure;
}

Status StagedTransport::get(int pe, void* dest, const void* source, size_t bytes) {
  const char* what = "get from";
  Connection* c = nullptr;
  VSHMEM_ASSIGN_OR_RETURN(c, connection(pe, what));
  std::lock_guard<std::mutex> lock(c->mutex);
  const bool stage = options_.provider->is_device_memory();
  if (stage && c->buffer.size() < kChunkBytes) c->buffer.resize(kChunkBytes);
  const uintptr_t offset = reinterpret_cast<uintptr_t>(source) - options_.heap_base;
  // Requests for up to kPipelineDepth chunks go out ahead of the replies (they are small; the
  // replies carry the data and are read in order, one chunk at a time).
  const uint64_t first_seq = c->seq + 1;
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  size_t requested = 0;
  auto request_next = [&]() {
    const size_t done = requested * kChunkBytes;
    const size_t n = std::min(kChunkBytes, bytes - done);
    Request rq{kRequestMagic,
               static_cast<uint8_t>(WireOp::kGet),
               0,
               0,
               0,
               ++c->seq,
               offset + done,
               n,
               0,
               0};
    ++requested;
    return send_request(pe, *c, what, &rq, nullptr, 0);
  };
  Status failure = Status::ok();
  for (size_t k = 0; k < chunks; ++k) {
    while (requested < chunks && requested < k + kPipelineDepth) {
      VSHMEM_RETURN_IF_ERROR(request_next());
    }
    const size_t done = k * kChunkBytes;
    const size_t n = std::min(kChunkBytes, bytes - done);
    void* to = static_cast<uint8_t*>(dest) + done;
    Reply reply{};
    Status st =
        receive_reply(pe, *c, what, first_seq + k, &reply, stage ? c->buffer.data() : to, n);
    if (!c->failure.empty()) return st;  // the connection is gone
    if (!st) {
      if (failure) failure = st;
      continue;  // the requests in flight are still answered: read them
    }
    if (stage && failure) {
      st = options_.provider->copy(to, c->buffer.data(), n);
      if (!st) failure = st;
    }
  }
  return failure;
}

Status StagedTransport::atomic(int pe, const AtomicRequest& request, uint64_t* result) {
  const char* what = "atomic on";
  Connection* c = nullptr;
  VSHMEM_ASSIGN_OR_RETURN(c, connection(pe, what));
  std::lock_guard<std::mutex> lock(c->mutex);
  const uintptr_t offset = reinterpret_cast<uintptr_t>(request.address) - options_.heap_base;
  Request rq{kRequestMagic,
             static_cast<uint8_t>(WireOp::kAtomic),
             static_cast<uint8_t>(request.op),
             static_cast<uint8_t>(request.width),
             0,
             ++c->seq,
             offset,
             0,
             request.operand,
             request.compare};
  Reply reply{};
  VSHMEM_RETURN_IF_ERROR(exchange(pe, *c, what, &rq, nullptr, 0, &reply, nullptr, 0));
  if (result != nullptr) *result = reply.value;
  return Status::ok();
}

}  // namespace vshmem
