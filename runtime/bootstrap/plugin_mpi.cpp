// The MPI bootstrap plugin (libvshmem_bootstrap_mpi.so): loaded by libvshmem with dlopen, so that
// only this file links MPI.
//
// Every collective is gather-to-rank-0 + send-back with non-blocking point-to-point calls polled
// against the deadline: rank 0 posts one receive per rank, so at the deadline it knows exactly
// which PEs have not arrived and tells everybody; it also checks that all PEs called the same
// operation with the same size. The traffic runs on a duplicate of the communicator, so it
// never matches the application's messages.
#include <mpi.h>

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bootstrap/gather_round.hpp"
#include "runtime/bootstrap/plugin_abi.h"
#include "runtime/common/status.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using vshmem::Code;

constexpr int kTagUp = 0x5653;    // contributions, to rank 0
constexpr int kTagDown = 0x5654;  // results and errors, from rank 0
constexpr size_t kMaxErrorText = 4096;
// Non-root ranks wait this much longer, so that rank 0's message naming the missing PEs reaches
// them before they give up on their own.
constexpr std::chrono::milliseconds kClientGrace{2000};

namespace gather = vshmem::gather;
using gather::kAllgather;
using gather::kBarrier;
using gather::kBroadcast;
using gather::op_name;
using gather::seconds;

struct Header {
  uint32_t op;
  int32_t status;  // replies: 0 or a vshmem::Code, then error text
  uint64_t seq;
  uint64_t bytes;
  int32_t root;
  uint32_t length;  // payload bytes that follow
};

struct Ctx {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owns_mpi = false;
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{120000};
  uint64_t seq = 0;
  int broken = 0;
  std::string broken_text;
  // Buffers of requests abandoned after a failure: MPI may still touch them, so they live as
  // long as the context.
  std::vector<std::vector<char>> graveyard;
};

int report(char* err, size_t errlen, Code code, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
int report(char* err, size_t errlen, Code code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err != nullptr && errlen > 0) std::vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return static_cast<int>(code);
}

std::string mpi_error(int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(s, len);
}

gather::Call call_of(const Header& h) { return {h.op, h.seq, h.bytes, h.root}; }

// Waits for the requests, yielding the CPU so that oversubscribed ranks make progress.
// Returns false at the deadline.
bool wait_all(std::vector<MPI_Request>& reqs, Clock::time_point deadline, int* rc) {
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    *rc = MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (*rc != MPI_SUCCESS || done) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
  }
}

void abandon(std::vector<MPI_Request>& reqs) {
  for (MPI_Request& r : reqs) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Request_free(&r);
  }
}

// Rank 0 tells every other rank that the collective failed (small, so the sends complete
// eagerly; they are not waited for).
void broadcast_error(Ctx* c, int code, const std::string& text) {
  std::vector<char> msg(sizeof(Header) + text.size());
  Header h{0, code, c->seq, 0, 0, static_cast<uint32_t>(text.size())};
  std::memcpy(msg.data(), &h, sizeof(h));
  std::memcpy(msg.data() + sizeof(h), text.data(), text.size());
  for (int r = 1; r < c->size; ++r) {
    MPI_Request req;
    if (MPI_Isend(msg.data(), static_cast<int>(msg.size()), MPI_BYTE, r, kTagDown, c->comm, &req) ==
        MPI_SUCCESS) {
      MPI_Request_free(&req);
    }
  }
  c->graveyard.push_back(std::move(msg));
}

// Set once a collective failed (peers dead or gone): MPI_Finalize could then block forever, so
// the exit handler leaves MPI as it is and the launcher reports the failed job.
bool g_mpi_broken = false;
// Bootstraps made and not yet finalized. A process that exits with one still live left
// shmem_init without shmem_finalize: MPI_Finalize at exit would wait for peers that are waiting
// for this process, so MPI is left unfinalized, and the launcher and the peers (which watch
// node-local processes, runtime/api/peer_watch.hpp) see the exit and stop the job.
int g_live_contexts = 0;

int fail(Ctx* c, char* err, size_t errlen, Code code, const char* call, const std::string& cause) {
  if (c->broken != 0)
    return report(err, errlen, static_cast<Code>(c->broken), "%s", c->broken_text.c_str());
  c->broken = static_cast<int>(code);
  c->broken_text = std::string(call) + ": " + cause;
  g_mpi_broken = true;
  if (c->rank == 0)
    broadcast_error(c, static_cast<int>(code), c->broken_text + " (reported by PE 0)");
  return report(err, errlen, code, "%s", c->broken_text.c_str());
}

int root_collective(Ctx* c, const Header& mine, const void* in, void* out, char* err,
                    size_t errlen) {
  const char* call = op_name(mine.op);
  const auto deadline = Clock::now() + c->timeout;
  const int n = c->size;
  gather::Round round(call_of(mine), n, in);
  // Each receive buffer is one larger than expected: a PE that calls with a different size is
  // then seen as a mismatch (its length field), not an MPI truncation error.
  std::vector<std::vector<char>> bufs(n);
  std::vector<MPI_Request> reqs(n, MPI_REQUEST_NULL);
  for (int r = 1; r < n; ++r) {
    bufs[r].resize(sizeof(Header) + gather::contribution_bytes(round.call(), r) + 1);
    int rc = MPI_Irecv(bufs[r].data(), static_cast<int>(bufs[r].size()), MPI_BYTE, r, kTagUp,
                       c->comm, &reqs[r]);
    if (rc != MPI_SUCCESS) {
      abandon(reqs);
      for (auto& b : bufs) c->graveyard.push_back(std::move(b));
      return fail(c, err, errlen, Code::kSystem, call, "MPI_Irecv: " + mpi_error(rc));
    }
  }
  auto nap = std::chrono::microseconds(20);
  while (!round.complete()) {
    int index = MPI_UNDEFINED, flag = 0;
    MPI_Status st;
    int rc = MPI_Testany(n, reqs.data(), &index, &flag, &st);
    if (rc != MPI_SUCCESS) {
      abandon(reqs);
      for (auto& b : bufs) c->graveyard.push_back(std::move(b));
      return fail(c, err, errlen, Code::kSystem, call, "MPI_Testany: " + mpi_error(rc));
    }
    if (flag && index != MPI_UNDEFINED) {
      int got = 0;
      MPI_Get_count(&st, MPI_BYTE, &got);
      Header h{};
      if (static_cast<size_t>(got) >= sizeof(Header))
        std::memcpy(&h, bufs[index].data(), sizeof(h));
      if (static_cast<size_t>(got) != bufs[index].size() - 1 || !round.same(call_of(h))) {
        abandon(reqs);
        for (auto& b : bufs) c->graveyard.push_back(std::move(b));
        return fail(c, err, errlen, Code::kInvalidArgument, call,
                    round.disagreement(index, call_of(h)));
      }
      const size_t contribution = gather::contribution_bytes(round.call(), index);
      if (contribution > 0) {
        std::memcpy(round.slot(index), bufs[index].data() + sizeof(Header), contribution);
      }
      round.arrived(index);
      nap = std::chrono::microseconds(20);
      continue;
    }
    if (Clock::now() >= deadline) {
      abandon(reqs);
      for (auto& b : bufs) c->graveyard.push_back(std::move(b));
      return fail(c, err, errlen, Code::kTimeout, call, round.missing_text(c->timeout));
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
  }

  // Send the result to everybody.
  const size_t result_len = round.result_len();
  std::vector<char> reply(sizeof(Header) + result_len);
  Header rh{mine.op, 0, mine.seq, mine.bytes, mine.root, static_cast<uint32_t>(result_len)};
  std::memcpy(reply.data(), &rh, sizeof(rh));
  char* res = reply.data() + sizeof(Header);
  if (result_len > 0) std::memcpy(res, round.result(), result_len);
  std::vector<MPI_Request> sends(n - 1, MPI_REQUEST_NULL);
  for (int r = 1; r < n; ++r) {
    int rc = MPI_Isend(reply.data(), static_cast<int>(reply.size()), MPI_BYTE, r, kTagDown, c->comm,
                       &sends[r - 1]);
    if (rc != MPI_SUCCESS) {
      abandon(sends);
      c->graveyard.push_back(std::move(reply));
      return fail(c, err, errlen, Code::kSystem, call, "MPI_Isend: " + mpi_error(rc));
    }
  }
  int rc = MPI_SUCCESS;
  if (!wait_all(sends, deadline, &rc)) {
    abandon(sends);
    c->graveyard.push_back(std::move(reply));
    return fail(c, err, errlen, Code::kTimeout, call,
                "timed out after " + seconds(c->timeout) + " sending the result");
  }
  if (rc != MPI_SUCCESS) {
    return fail(c, err, errlen, Code::kPeerFailure, call, "sending the result: " + mpi_error(rc));
  }
  if (result_len > 0) std::memcpy(out, res, result_len);
  return 0;
}

int leaf_collective(Ctx* c, const Header& mine, const void* payload, size_t payload_len, void* out,
                    size_t result_len, char* err, size_t errlen) {
  const char* call = op_name(mine.op);
  const auto deadline = Clock::now() + c->timeout + kClientGrace;
  std::vector<char> msg(sizeof(Header) + payload_len);
  Header h = mine;
  h.length = static_cast<uint32_t>(payload_len);
  std::memcpy(msg.data(), &h, sizeof(h));
  if (payload_len > 0) std::memcpy(msg.data() + sizeof(h), payload, payload_len);
  std::vector<char> reply(sizeof(Header) + std::max(result_len, kMaxErrorText));
  std::vector<MPI_Request> reqs(2, MPI_REQUEST_NULL);
  int rc = MPI_Irecv(reply.data(), static_cast<int>(reply.size()), MPI_BYTE, 0, kTagDown, c->comm,
                     &reqs[1]);
  if (rc == MPI_SUCCESS) {
    rc =
        MPI_Isend(msg.data(), static_cast<int>(msg.size()), MPI_BYTE, 0, kTagUp, c->comm, &reqs[0]);
  }
  if (rc != MPI_SUCCESS) {
    abandon(reqs);
    c->graveyard.push_back(std::move(msg));
    c->graveyard.push_back(std::move(reply));
    return fail(c, err, errlen, Code::kSystem, call, "MPI_Isend/Irecv: " + mpi_error(rc));
  }
  // The reply can come before our send completes (an error from rank 0 that never received it).
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    int flag = 0;
    MPI_Status st;
    rc = MPI_Test(&reqs[1], &flag, &st);
    if (rc != MPI_SUCCESS) {
      abandon(reqs);
      c->graveyard.push_back(std::move(msg));
      c->graveyard.push_back(std::move(reply));
      return fail(c, err, errlen, Code::kPeerFailure, call,
                  "receiving from PE 0: " + mpi_error(rc));
    }
    if (flag) {
      Header rh{};
      std::memcpy(&rh, reply.data(), sizeof(rh));
      if (rh.status != 0) {
        abandon(reqs);
        c->graveyard.push_back(std::move(msg));
        std::string text(reply.data() + sizeof(Header),
                         std::min<size_t>(rh.length, reply.size() - sizeof(Header)));
        c->broken = rh.status;
        c->broken_text = text;
        g_mpi_broken = true;
        return report(err, errlen, static_cast<Code>(rh.status), "%s", text.c_str());
      }
      if (rh.seq != mine.seq || rh.length != result_len) {
        abandon(reqs);
        c->graveyard.push_back(std::move(msg));
        return fail(c, err, errlen, Code::kPeerFailure, call,
                    "PE 0 answered a different collective (protocol error)");
      }
      int src = MPI_SUCCESS;
      std::vector<MPI_Request> send_only{reqs[0]};
      if (!wait_all(send_only, deadline, &src)) {
        abandon(send_only);
        c->graveyard.push_back(std::move(msg));
        return fail(c, err, errlen, Code::kTimeout, call, "timed out sending to PE 0");
      }
      if (result_len > 0) std::memcpy(out, reply.data() + sizeof(Header), result_len);
      return 0;
    }
    if (Clock::now() >= deadline) {
      abandon(reqs);
      c->graveyard.push_back(std::move(msg));
      c->graveyard.push_back(std::move(reply));
      return fail(c, err, errlen, Code::kTimeout, call,
                  "timed out after " + seconds(c->timeout) +
                      " waiting for PE 0, which coordinates the collective (PE 0 did not arrive "
                      "or did not answer)");
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(2000));
  }
}

int collective(Ctx* c, uint32_t op, const void* in, void* out, size_t bytes, int root, char* err,
               size_t errlen) {
  const char* call = op_name(op);
  if (c->broken != 0)
    return report(err, errlen, static_cast<Code>(c->broken), "%s", c->broken_text.c_str());
  const size_t result_len = gather::result_bytes({op, 0, bytes, root}, c->size);
  // MPI counts are int.
  if (bytes > (1u << 30) || result_len + sizeof(Header) + 1 > static_cast<size_t>(INT32_MAX)) {
    return report(err, errlen, Code::kInvalidArgument,
                  "%s: %zu bytes is too large for the MPI "
                  "bootstrap",
                  call, bytes);
  }
  ++c->seq;
  Header mine{op, 0, c->seq, bytes, root, 0};
  if (c->size == 1) {
    if (op == kAllgather && bytes > 0) std::memmove(out, in, bytes);
    return 0;
  }
  if (c->rank == 0) return root_collective(c, mine, in, out, err, errlen);
  const void* payload = op == kAllgather                        ? in
                        : (op == kBroadcast && root == c->rank) ? out
                                                                : nullptr;
  size_t payload_len = payload ? bytes : 0;
  return leaf_collective(c, mine, payload, payload_len, out, result_len, err, errlen);
}

int plugin_allgather(void* ctx, const void* in, void* out, size_t bytes, char* err, size_t errlen) {
  return collective(static_cast<Ctx*>(ctx), kAllgather, in, out, bytes, 0, err, errlen);
}
int plugin_broadcast(void* ctx, void* buf, size_t bytes, int root, char* err, size_t errlen) {
  return collective(static_cast<Ctx*>(ctx), kBroadcast, buf, buf, bytes, root, err, errlen);
}
int plugin_barrier(void* ctx, char* err, size_t errlen) {
  return collective(static_cast<Ctx*>(ctx), kBarrier, nullptr, nullptr, 0, 0, err, errlen);
}

void plugin_finalize(void* ctx) {
  auto* c = static_cast<Ctx*>(ctx);
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a failure, requests may be stuck and the peers gone: freeing the communicator or
  // MPI_Finalize could block forever, so a broken bootstrap leaves MPI as it is.
  if (!finalized && c->broken == 0) {
    if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  }
  // MPI we started is finalized at exit, not here: MPI cannot be initialized twice, and a
  // program may call shmem_init again after shmem_finalize.
  delete c;
  --g_live_contexts;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int vshmem_bootstrap_plugin_init(
    const vshmem_bootstrap_init_args* args, vshmem_bootstrap_plugin* out, char* err,
    size_t errlen) {
  if (args == nullptr || args->abi_version != VSHMEM_BOOTSTRAP_ABI_VERSION) {
    return report(err, errlen, Code::kUnsupported,
                  "init: plugin ABI mismatch (libvshmem speaks %d, "
                  "the plugin %d)",
                  args ? args->abi_version : -1, VSHMEM_BOOTSTRAP_ABI_VERSION);
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    return report(err, errlen, Code::kState, "init: MPI is already finalized");
  }
  auto* c = new Ctx;
  c->timeout = std::chrono::milliseconds(args->timeout_ms);
  MPI_Comm base = MPI_COMM_WORLD;
  if (args->mpi_comm != nullptr) {
    if (!initialized) {
      delete c;
      return report(err, errlen, Code::kState,
                    "init: the application passed an MPI communicator but MPI is not "
                    "initialized");
    }
    base = *static_cast<MPI_Comm*>(args->mpi_comm);
  } else if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) {
      delete c;
      return report(err, errlen, Code::kSystem, "init: MPI_Init_thread failed (%d)", rc);
    }
    c->owns_mpi = true;
    // This plugin is never unloaded, so the handler stays valid until exit.
    std::atexit([] {
      int done = 0;
      MPI_Finalized(&done);
      if (!done && !g_mpi_broken && g_live_contexts == 0) MPI_Finalize();
    });
  }
  // MPI_Comm_dup is collective and blocking: the one step without a time limit (a rank that
  // never calls it is the launcher's to detect).
  int rc = MPI_Comm_dup(base, &c->comm);
  if (rc != MPI_SUCCESS) {
    std::string m = mpi_error(rc);
    delete c;
    return report(err, errlen, Code::kSystem, "init: MPI_Comm_dup: %s", m.c_str());
  }
  MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->comm, &c->rank);
  MPI_Comm_size(c->comm, &c->size);
  out->abi_version = VSHMEM_BOOTSTRAP_ABI_VERSION;
  out->ctx = c;
  out->rank = c->rank;
  out->size = c->size;
  out->allgather = plugin_allgather;
  out->broadcast = plugin_broadcast;
  out->barrier = plugin_barrier;
  out->finalize = plugin_finalize;
  ++g_live_contexts;
  return 0;
}
