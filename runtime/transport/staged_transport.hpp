// The staged transport (DESIGN.md, transport): RMA and atomics to peers whose memory is not
// mapped into our window (another node, GPUs without P2P, VSHMEM_DISABLE_P2P=1).
//
// Every PE that has such peers runs a proxy thread serving requests against its own heap through
// MemoryProvider::copy/atomic, so the heap may be GPU memory: the bytes are staged through host
// buffers. Peers reach the proxy over TCP, so that it works across nodes. One connection per
// (us -> peer), opened on first use and authenticated by the job secret.
//
// Protocol (native byte order: all nodes of a job share one architecture):
//   client -> proxy  Hello {magic, version, from_pe, secret}
//   proxy -> client  HelloReply {magic, status}; a wrong secret drops the connection instead
//   client -> proxy  Request {magic, op, atomic op, width, seq, offset, length, operand, compare}
//                    followed by `length` bytes for a put
//   proxy -> client  Reply {magic, status, seq, value, length} followed by `length` bytes: the
//                    data of a get, or the text of the error when status is not ok
// A transfer is cut into chunks of at most kChunkBytes (bounded buffers on both sides), up to
// kPipelineDepth of them in flight; every request is answered, so a put returns once its bytes
// are in the target's heap. Requests on one
// connection are served in order, which gives shmem_fence its ordering to one target.
// Every blocking wait has a time limit (VSHMEM_BOOTSTRAP_TIMEOUT): nothing hangs forever.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/status.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {

// Where a PE's proxy listens: an IPv4 address and port in network byte order (port 0: no proxy).
struct StagedEndpoint {
  uint32_t address = 0;
  uint16_t port = 0;
  uint16_t reserved = 0;
};

struct StagedOptions {
  int my_pe = 0;
  int n_pes = 1;
  std::string secret;                 // the job secret: connections must present it
  std::chrono::milliseconds timeout;  // the limit of every blocking wait on a socket
  MemoryProvider* provider = nullptr;
  uintptr_t heap_base = 0;  // H: symmetric addresses are the same on every PE
  size_t heap_size = 0;     // S: the proxy never touches memory outside [H, H + S)
  size_t committed = 0;     // [H, H + committed) is backed by memory (set_committed grows it)
  std::string address;      // dotted quad to bind and advertise; empty: the hostname's address
};

class StagedTransport {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;
  // Chunks of one put or get in flight on a connection at once.
  static constexpr uint64_t kPipelineDepth = 4;

  // Collective over the bootstrap when job_has_staged (every PE must call it then): starts the
  // proxy if this PE has staged peers, and exchanges the endpoints. Returns null when this PE
  // has no staged peer. The address comes from VSHMEM_STAGED_ADDR, else it is loopback when
  // every staged peer is on this node (no P2P, VSHMEM_DISABLE_P2P), else the hostname's.
  static Result<std::unique_ptr<StagedTransport>> create(Bootstrap& bootstrap,
                                                         const Topology& topology,
                                                         const std::vector<bool>& staged,
                                                         StagedOptions options);

  // Not collective: starts the proxy listening (for create and for tests). Peers' endpoints are
  // set afterwards with set_endpoints.
  static Result<std::unique_ptr<StagedTransport>> start(StagedOptions options);

  // Stops the proxy thread and closes every socket.
  ~StagedTransport();
  StagedTransport(const StagedTransport&) = delete;
  StagedTransport& operator=(const StagedTransport&) = delete;

  StagedEndpoint endpoint() const { return endpoint_; }
  void set_endpoints(std::vector<StagedEndpoint> endpoints) { endpoints_ = std::move(endpoints); }
  // The heap grew: the proxy may now serve [H, H + committed).
  void set_committed(size_t committed) { committed_.store(committed, std::memory_order_release); }

  // dest / source are symmetric addresses (in [H, H + S)); the local buffers may be any memory
  // the provider can copy. Thread-safe: calls to one peer are serialized on its connection.
  Status put(int pe, void* dest, const void* source, size_t bytes);
  Status get(int pe, void* dest, const void* source, size_t bytes);
  Status atomic(int pe, const AtomicRequest& request, uint64_t* result);

 private:
  struct Connection;
  struct ProxyClient;

  explicit StagedTransport(StagedOptions options);
  Status listen();
  void serve();
  bool serve_one(ProxyClient& client);
  Status handle_request(ProxyClient& client);
  Result<Connection*> connection(int pe, const char* what);
  Status connect_to(int pe, Connection& c, const char* what);
  Status exchange(int pe, Connection& c, const char* what, const void* request, const void* payload,
                  size_t payload_bytes, void* reply, void* data, size_t data_capacity);
  // The two halves of exchange (pipelined puts and gets send several requests ahead). A failed
  // send or receive closes the connection (broken) for good.
  Status send_request(int pe, Connection& c, const char* what, const void* request,
                      const void* payload, size_t payload_bytes);
  Status receive_reply(int pe, Connection& c, const char* what, uint64_t seq, void* reply,
                       void* data, size_t data_capacity);
  Status broken(Connection& c, Status st);
  std::chrono::steady_clock::time_point deadline() const;

  StagedOptions options_;
  std::atomic<size_t> committed_;
  StagedEndpoint endpoint_;
  std::vector<StagedEndpoint> endpoints_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the proxy's poll loop to stop it
  std::atomic<bool> stopping_{false};
  std::thread proxy_;
  std::vector<std::unique_ptr<Connection>> connections_;  // ours, per target PE
  std::vector<uint8_t> proxy_buffer_;                     // the proxy's staging buffer
};

}  // namespace vshmem
