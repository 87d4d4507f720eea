// Issue 19, item 9: every PE learns that the job cannot complete, and ends naming the cause,
// even while it computes (no OpenSHMEM call to notice anything in) or waits inside a kernel, under
// a launcher that does not stop the job itself (mpirun --enable-recovery).
//
// Modes (argv[1]); after shmem_init and a barrier, the PEs other than the victim (PE 1) "compute"
// for 20 s without calling the library, then fail with "still running" (a passing run ends in
// a second or two):
//   device_trap  the GPU heap on the FAKE driver (tests/support/fake_cuda_driver); PE 1's device
//                then answers CUDA_ERROR_ILLEGAL_INSTRUCTION, as after a kernel's trap. PE 1
//                computes too: the runtime must end it naming its GPU, and the others must end
//                naming PE 1.
//   peer_exits   PE 1 exits (status 0) without shmem_finalize; the others end naming it
//                (node-local: its pidfd).
//   remote_exits as peer_exits with PE 1 on another (simulated) node, reached over UCX/TCP: the
//                others end naming it when the network sees its connection break. Every PE first
//                puts to every other, so that the connections exist.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "shmem.h"
#include "tests/support/fake_cuda_driver.hpp"
#include "runtime/memory/cuda_provider.hpp"

namespace {

[[noreturn]] void die(int pe, const std::string& what) {
  std::fprintf(stderr, "job_watch: PE %d: FAIL: %s\n", pe, what.c_str());
  std::exit(2);
}

void compute(int me, int seconds, const char* what) {
  const auto t0 = std::chrono::steady_clock::now();
  volatile double x = 1.0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(seconds)) {
    for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 1e-9;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  die(me, "still running " + std::to_string(seconds) + " s after " + what);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  vshmem::testing::FakeDriverConfig cfg;
  if (mode == "device_trap") {
    vshmem::detail::use_fake_driver_for_tests(&vshmem::testing::fake_cuda_driver(cfg));
    ::setenv("VSHMEM_BACKEND", "cuda", 1);
  } else if (mode != "peer_exits" && mode != "remote_exits") {
    std::fprintf(stderr, "usage: job_watch device_trap|peer_exits|remote_exits\n");
    return 2;
  }
  shmem_init();
  const int me = shmem_my_pe();
  const int n = shmem_n_pes();
  if (n < 2) die(me, "needs 2 PEs or more");
  long* box = static_cast<long*>(shmem_malloc(n * sizeof(long)));
  if (box == nullptr) die(me, "shmem_malloc");
  // Fresh values through every pair of PEs (over UCX where a peer is remote): the connections
  // the network watches exist from here on.
  std::mt19937_64 gen(std::random_device{}());
  const long mine = static_cast<long>(gen() >> 1);
  for (int pe = 0; pe < n; ++pe) shmem_long_p(box + me, mine + pe, pe);
  shmem_barrier_all();
  for (int pe = 0; pe < n; ++pe) {
    const long from = shmem_long_g(box + me, pe);
    if (from != mine + pe) die(me, "a put to PE " + std::to_string(pe) + " was lost");
  }
  shmem_barrier_all();
  std::fprintf(stderr, "job_watch: PE %d ready\n", me);
  if (me == 1) {
    if (mode == "device_trap") {
      cfg.stream_query_result = CUDA_ERROR_ILLEGAL_INSTRUCTION;
      vshmem::testing::fake_cuda_driver(cfg);
      // Longer than the others: they must learn of PE 1's end, not of their own time limit.
      compute(me, 60, "its GPU failed");
    }
    std::_Exit(0);  // no shmem_finalize
  }
  compute(me, 20, "PE 1 was gone");
}
