// Multi-PE check of whichever bootstrap the launcher selects (vshmemrun: socket; mpirun: mpi or
// pmix): allgather / broadcast / barrier with fresh random data at sizes 0 .. 1 MiB, topology
// and job identity. Exits non-zero with a message on the first wrong result.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"

namespace {

int g_rank = -1;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "launcher_bootstrap_collectives: PE %d: FAILED: %s\n", g_rank, what.c_str());
  std::exit(1);
}

void check(const vshmem::Status& st, const char* what) {
  if (!st.is_ok()) die(std::string(what) + ": " + st.message());
}

// The bytes PE `pe` contributes to step `step`: a function of a job-wide seed that PE 0 draws
// fresh every run, so every PE can verify every other PE's data.
std::vector<unsigned char> pattern(uint64_t seed, int pe, int step, size_t bytes) {
  std::mt19937_64 gen(seed ^ (static_cast<uint64_t>(pe) << 32) ^
                      (static_cast<uint64_t>(step) * 0x9e3779b97f4a7c15ULL));
  std::vector<unsigned char> v(bytes);
  for (auto& b : v) b = static_cast<unsigned char>(gen());
  return v;
}

}  // namespace

int main() {
  auto boot_r = vshmem::create_bootstrap({});
  if (!boot_r) die("create_bootstrap: " + boot_r.status().message());
  vshmem::Bootstrap& boot = **boot_r;
  const int me = boot.rank();
  const int n = boot.size();
  g_rank = me;
  if (n < 1 || me < 0 || me >= n) die("rank/size out of range");
  if (const char* expect = std::getenv("EXPECT_BOOTSTRAP")) {
    if (std::strcmp(expect, boot.name()) != 0) {
      die(std::string("bootstrap is ") + boot.name() + ", expected " + expect);
    }
  }

  // PE 0 draws the seed; the broadcast itself is the first thing checked.
  uint64_t seed = 0;
  if (me == 0)
    seed = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
  uint64_t seed_poisoned = me == 0 ? seed : 0xdeadbeefdeadbeefULL;
  check(boot.broadcast(&seed_poisoned, sizeof(seed_poisoned), 0), "broadcast(seed)");
  seed = seed_poisoned;

  const size_t sizes[] = {0, 1, 3, 8, 1000, 4096, 65537, 1 << 20};
  int step = 0;
  for (size_t bytes : sizes) {
    ++step;
    auto mine = pattern(seed, me, step, bytes);
    std::vector<unsigned char> all(bytes * n, 0xA5);  // poisoned
    check(boot.allgather(mine.data(), all.data(), bytes), "allgather");
    for (int pe = 0; pe < n; ++pe) {
      auto expect = pattern(seed, pe, step, bytes);
      if (bytes > 0 && std::memcmp(all.data() + pe * bytes, expect.data(), bytes) != 0) {
        die("allgather(" + std::to_string(bytes) + "): wrong data from PE " + std::to_string(pe));
      }
    }
    // In place: in aliases out + me * bytes.
    std::vector<unsigned char> inplace(bytes * n, 0x5A);
    if (bytes > 0) std::memcpy(inplace.data() + me * bytes, mine.data(), bytes);
    check(boot.allgather(inplace.data() + me * bytes, inplace.data(), bytes), "allgather in place");
    if (inplace != all) die("in-place allgather(" + std::to_string(bytes) + ") differs");

    const int root = step % n;
    auto expect = pattern(seed, root, step + 1000, bytes);
    std::vector<unsigned char> buf = me == root ? expect : std::vector<unsigned char>(bytes, 0x3C);
    check(boot.broadcast(buf.data(), bytes, root), "broadcast");
    if (buf != expect) {
      die("broadcast(" + std::to_string(bytes) + ", root " + std::to_string(root) +
          "): wrong data");
    }
  }

  // The barrier must hold everybody until the last PE arrives.
  const int late = n - 1;
  check(boot.barrier(), "barrier");
  auto t0 = std::chrono::steady_clock::now();
  if (me == late) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  check(boot.barrier(), "barrier");
  auto waited = std::chrono::steady_clock::now() - t0;
  if (n > 1 && waited < std::chrono::milliseconds(250)) {
    die("barrier returned before PE " + std::to_string(late) + " arrived");
  }

  auto topo = vshmem::discover_topology(boot);
  if (!topo) die("discover_topology: " + topo.status().message());
  if (topo->n_nodes != 1 || topo->local_size != n || topo->local_rank != me ||
      topo->max_local_size != n || static_cast<int>(topo->local_pes.size()) != n) {
    die("discover_topology: expected one node with every PE");
  }

  auto id = vshmem::agree_job_identity(boot);
  if (!id) die("agree_job_identity: " + id.status().message());
  if (id->secret.size() != 32 || id->id.empty()) die("malformed job identity");
  std::vector<char> mine(128, 0), all(128 * n, 1);
  std::snprintf(mine.data(), 128, "%s/%s", id->id.c_str(), id->secret.c_str());
  check(boot.allgather(mine.data(), all.data(), 128), "allgather(identity)");
  for (int pe = 0; pe < n; ++pe) {
    if (std::memcmp(all.data() + pe * 128, mine.data(), 128) != 0) {
      die("PE " + std::to_string(pe) + " has a different job identity");
    }
  }
  check(boot.barrier(), "final barrier");
  return 0;
}
