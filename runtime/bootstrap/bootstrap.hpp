// The control plane: rank, size and small collective exchanges between all PEs of a job.
// Every operation has a time limit; on expiry the Status names the PEs that did not arrive
// (as far as the transport can tell).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/status.hpp"

namespace vshmem {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual const char* name() const = 0;  // "socket", "mpi", "pmix"
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // out receives size() * bytes: PE i's contribution at out + i * bytes. in may alias
  // out + rank() * bytes.
  virtual Status allgather(const void* in, void* out, size_t bytes) = 0;
  // root's buf is copied into every PE's buf.
  virtual Status broadcast(void* buf, size_t bytes, int root) = 0;
  virtual Status barrier() = 0;
};

// Where each PE runs. Computed from an allgather of (hostname + boot id), or VSHMEM_NODE_ID.
struct Topology {
  std::vector<int> node_of_pe;        // node index (0..n_nodes-1, in order of first appearance)
  std::vector<int> local_rank_of_pe;  // index of the PE among the PEs of its node
  int n_nodes = 0;
  int my_node = 0;
  int local_rank = 0;
  int local_size = 0;
  int max_local_size = 0;      // largest number of PEs on any one node
  std::vector<int> local_pes;  // the PEs of my node, ascending (includes me)
};

// A start from a unique ID (shmemx_get_uniqueid): this process's rank, the job's size and the
// ID's bytes (runtime/bootstrap/uid_bootstrap.cpp).
inline constexpr size_t kUniqueIdBytes = 128;
struct UniqueIdArgs {
  int rank = -1;
  int nranks = 0;
  unsigned char id[kUniqueIdBytes] = {};
};

struct BootstrapOptions {
  // Set by shmemx_init_attr when the application passes its own MPI communicator
  // (a pointer to an MPI_Comm); null otherwise.
  void* mpi_comm = nullptr;
  // Set by shmemx_init_attr with SHMEMX_INIT_WITH_UNIQUEID; null otherwise.
  const UniqueIdArgs* uid = nullptr;
};

// Makes a new unique ID: opens the TCP socket on which this process, as PE 0 of the job, will
// wait for the others, and writes its address and a fresh secret into id.
Status make_unique_id(unsigned char id[kUniqueIdBytes]);

// The time limit of every bootstrap operation: VSHMEM_BOOTSTRAP_TIMEOUT (seconds, default 120).
Result<std::chrono::milliseconds> bootstrap_timeout();

// This PE's number as known before any bootstrap has started, for the messages of shmem_init's
// first steps (a bad setting is reported before the bootstrap exists): the unique ID's rank, or
// the rank the launcher set (vshmemrun, mpirun, a PMIx or PMI launcher); -1 when there is none,
// or when the application's own MPI communicator numbers the PEs.
int rank_before_bootstrap(const BootstrapOptions& options);

// Chooses and starts the bootstrap from VSHMEM_BOOTSTRAP=auto|socket|mpi|pmix (auto recognises
// vshmemrun, PMIx and Open MPI environments, and an MPI communicator in options).
Result<std::unique_ptr<Bootstrap>> create_bootstrap(const BootstrapOptions& options);

// Collective over the bootstrap.
Result<Topology> discover_topology(Bootstrap& bootstrap);

// The job's shared secret (128 bits, hex) and id, agreed through the bootstrap: the socket
// bootstrap gets them from vshmemrun's environment, the others broadcast PE 0's random draw.
struct JobIdentity {
  std::string id;      // short, printable, unique per job on this node
  std::string secret;  // 32 hex characters
};
Result<JobIdentity> agree_job_identity(Bootstrap& bootstrap);

}  // namespace vshmem
