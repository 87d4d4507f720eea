// The built-in single-node bootstrap that vshmemrun starts (see socket_bootstrap.cpp for the
// environment contract and the wire protocol).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/connection.hpp"
#include "runtime/common/status.hpp"

namespace vshmem::detail {

struct SocketConfig {
  std::string address;  // "@name": abstract namespace; otherwise a filesystem path
  std::string job_id;   // printable, at most kMaxJobIdLength characters
  std::string secret;   // 32 hex characters
  int rank = -1;
  int npes = 0;
  // The unique-ID start (uid_bootstrap.cpp) uses the same protocol over TCP: the address is then
  // "tcp:<IPv4>:<port>", peers are authenticated by the secret alone (no SO_PEERCRED across
  // hosts), and PE 0 adopts the socket shmemx_get_uniqueid left listening (-1: none).
  int listen_fd = -1;
};
inline constexpr size_t kMaxJobIdLength = 63;
inline constexpr size_t kSecretLength = 32;

// True when vshmemrun's variables are present (VSHMEM_SOCKET_ADDR).
bool socket_env_present();
// Reads and validates the contract variables; errors name the variable.
Result<SocketConfig> socket_config_from_env();

class SocketBootstrap final : public Bootstrap {
 public:
  // PE 0 listens and waits for every other PE to connect and authenticate; the others connect
  // (retrying until the deadline). Both within `timeout`.
  static Result<std::unique_ptr<SocketBootstrap>> connect(const SocketConfig& config,
                                                          std::chrono::milliseconds timeout);
  ~SocketBootstrap() override;

  const char* name() const override { return "socket"; }
  int rank() const override { return config_.rank; }
  int size() const override { return config_.npes; }
  Status allgather(const void* in, void* out, size_t bytes) override;
  Status broadcast(void* buf, size_t bytes, int root) override;
  Status barrier() override;

  const std::string& job_id() const { return config_.job_id; }
  const std::string& secret() const { return config_.secret; }

 private:
  enum class Op : uint32_t { kAllgather = 1, kBroadcast = 2, kBarrier = 3 };
  SocketBootstrap(SocketConfig config, std::chrono::milliseconds timeout);

  Status hub_accept();
  Status client_connect();
  // One collective: every PE's contribution goes to PE 0, which checks that all PEs called
  // the same operation and sends each PE its result.
  Status collective(Op op, const void* in, void* out, size_t bytes, int root);
  Status hub_collective(Op op, const void* in, void* out, size_t bytes, int root);
  Status client_collective(Op op, const void* in, void* out, size_t bytes, int root);
  // Makes the failure sticky and tells every connected PE (hub only, best effort); PEs in
  // `late` are told that they were the ones missing.
  Status fail(const char* call, const Status& status, const std::vector<int>& late = {});
  Status make_error(Code code, const char* call, const std::string& cause) const;

  SocketConfig config_;
  std::chrono::milliseconds timeout_;
  UniqueFd listen_fd_;
  std::vector<UniqueFd> peer_fds_;  // hub: PE i's connection (index 0 unused); client: [0] = hub
  uint64_t seq_ = 0;
  Status broken_;
};

}  // namespace vshmem::detail
