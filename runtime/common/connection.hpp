// The connection substrate: every socket of the runtime (the socket bootstrap's hub and its
// clients, the handle-passing sockets) goes through these few pieces, so that each rule holds
// everywhere at once:
//   - a descriptor has one owner (UniqueFd), closed exactly once, never leaked on an error path;
//   - every connect, accept, read and write has a deadline and returns a Status naming the cause
//     (kTimeout, kPeerFailure for a peer that went away, kSystem with the errno text);
//   - a connection speaks first with one authenticated hello (job id, job secret, rank), and the
//     secret is compared in constant time;
//   - only the job's user can reach a socket: filesystem sockets live in a 0700 directory
//     (private_dir.hpp), and the peer's uid is checked with SO_PEERCRED on both sides.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.hpp"

namespace vshmem {

using Deadline = std::chrono::steady_clock::time_point;
inline Deadline deadline_after(std::chrono::milliseconds d) {
  return std::chrono::steady_clock::now() + d;
}

// An owned file descriptor (-1: none). Move-only; closes on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Milliseconds left until `deadline`, rounded up, for poll(); 0 when it has passed.
int poll_timeout_ms(Deadline deadline);

// A Unix-domain address: "@name" is the abstract namespace, anything else a filesystem path.
// Errors when it does not fit in sockaddr_un.
Status check_unix_address(const std::string& address);

// A non-blocking listening socket at `address` (close-on-exec).
Result<UniqueFd> listen_unix(const std::string& address, int backlog);
// Connects to `address`, retrying while nobody listens yet (ENOENT, ECONNREFUSED) or the
// listener's accept queue is full (EAGAIN), until `deadline`. Never blocks past it. The result is
// non-blocking. `what` names the peer in messages ("PE 3's handle socket").
Result<UniqueFd> connect_unix(const std::string& address, Deadline deadline, const char* what);
// One pending connection (non-blocking), or an invalid UniqueFd when none is waiting. Errors
// other than "nothing pending" are returned (EMFILE names the open-file limit).
Result<UniqueFd> accept_unix(int listen_fd);

// TCP, for the unique-ID start (runtime/bootstrap/uid_bootstrap.cpp), whose PEs may be on other
// hosts. "tcp:<IPv4>:<port>" names such an address; peers are authenticated by the job secret
// alone (no SO_PEERCRED across hosts).
bool is_tcp_address(const std::string& address);
// Connects to "tcp:<IPv4>:<port>", retrying while nobody listens yet or the way to the host is
// still coming up, until `deadline`. The result is non-blocking, with TCP_NODELAY.
Result<UniqueFd> connect_tcp(const std::string& address, Deadline deadline, const char* what);
// Small messages go out at once (the bootstrap's exchanges are latency-bound).
void set_nodelay(int fd);

// The uid (and pid) of the process at the other end of a Unix-domain socket.
Status peer_credentials(int fd, uid_t* uid, pid_t* pid);

// Whole-buffer I/O on a non-blocking socket, bounded by `deadline`. kTimeout when it passes,
// kPeerFailure when the peer closed the connection, kSystem otherwise.
Status write_all(int fd, const void* data, size_t n, Deadline deadline);
Status read_all(int fd, void* data, size_t n, Deadline deadline);

// Data and descriptors (SCM_RIGHTS) in one message. The receiver takes ownership of every
// descriptor it gets, also when the message turns out to be bad.
Status send_with_fds(int fd, const void* data, size_t n, const std::vector<int>& fds,
                     Deadline deadline);
// Reads what is available, at most `n` bytes, without waiting: the count (0 when nothing is
// there yet), appending any descriptors that came with it. kPeerFailure at end of stream.
// Descriptors dropped by the kernel because this process is at its open-file limit are reported
// as such (kSystem, naming RLIMIT_NOFILE), not as a malformed message.
Result<size_t> receive_some(int fd, void* data, size_t n, std::vector<UniqueFd>* fds);

// Compares two secrets without an early exit, so that timing does not reveal how much matched.
bool secrets_equal(std::string_view a, std::string_view b);

// The hello every connection opens with.
inline constexpr size_t kHelloJobIdBytes = 64;
inline constexpr size_t kHelloSecretBytes = 32;
struct Hello {
  uint32_t magic;
  uint32_t protocol;  // what follows on this connection (a caller-chosen constant)
  int32_t rank;       // the sender
  int32_t npes;
  char job_id[kHelloJobIdBytes];
  char secret[kHelloSecretBytes];
};
static_assert(sizeof(Hello) == 112, "wire format");

Hello make_hello(uint32_t protocol, int rank, int npes, const std::string& job_id,
                 const std::string& secret);
// Checks magic, protocol, job id and secret (constant time); the cause when it does not match.
// Rank and npes are the caller's to check.
Status verify_hello(const Hello& hello, uint32_t protocol, const std::string& job_id,
                    const std::string& secret);

}  // namespace vshmem
