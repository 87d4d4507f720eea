// A PE whose GPU has work queued behind kernels that wait for a remote PE still serves that PE
// (issue 14: device_remote_team.4 hung in its on-stream collectives). What a remote PE asks of
// our GPU heap (a staged get, a signal) is done by our progress or proxy thread with the memory
// provider's own stream; that stream must never wait behind our waiting kernels. Here each PE
//  - starts kStreams kernels, one per stream, that wait for a signal from its partner on the other
//    simulated node, with a second kernel queued behind each on the same stream and a memset
//    queued on the legacy default stream behind them all (streams outnumber CUDA's default 8
//    hardware queues, so every queue holds a kernel that waits);
//  - then, from one more kernel, gets fresh data from its partner's heap through the device proxy
//    and signals the partner: the partner's staging copy and signal are the provider's work.
// Every PE plays both parts at once; the data, the signal count and the queued kernels are
// checked. Run with vshmemrun --simulate-nodes 2. With CUDA's default 8 hardware queues the 16
// streams share every queue with the provider's stream (README: known hazard).
// The asking kernel is launched FIRST and held at a host flag until the waiting kernels are
// queued: launched last, it shared a hardware queue with waiting kernels and could never start
// (session 8: neither PE's proxy saw a request in 20 s), a deadlock of the test's own making that
// no library can avoid.
#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr int kStreams = 16;
constexpr size_t kWords = 512;  // 4 KiB: staged (above the 128 inline bytes)
constexpr int kRounds = 3;

__global__ void hold_kernel(const uint64_t* sig, uint64_t value) {
  shmem_signal_wait_until(const_cast<uint64_t*>(sig), SHMEM_CMP_GE, value);
}

__global__ void after_kernel(int* done) { atomicAdd(done, 1); }

// Waits until the host has queued every waiting kernel (go: pinned host memory, mapped).
__global__ void ask_kernel(long* dst, const long* src, uint64_t* sig, int pe, const int* go,
                           int round) {
  while (*static_cast<const volatile int*>(go) < round) {
  }
  shmem_getmem(dst, src, kWords * sizeof(long), pe);
  shmemx_signal_op(sig, 1, SHMEM_SIGNAL_ADD, pe);
  shmem_quiet();
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_remote_queued");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int partner = (me + n / 2) % n;  // on the other simulated node
  auto* src = static_cast<long*>(shmem_malloc(kWords * sizeof(long)));
  if (n < 2 || shmem_ptr(src, partner) != nullptr) {
    if (me == 0) std::printf("device_remote_queued: needs PEs on 2 simulated nodes: skipped\n");
    shmem_finalize();
    return kSkip;
  }
  const uint64_t salt = common_salt();
  auto* sig = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  auto* scratch = static_cast<long*>(shmem_malloc(sizeof(long)));
  long* dst = nullptr;
  int* done = nullptr;
  CUDA_OK(cudaMalloc(&dst, kWords * sizeof(long)));
  CUDA_OK(cudaMalloc(&done, sizeof(int)));
  int* go = nullptr;  // the host's "every waiting kernel is queued" for round `go`
  CUDA_OK(cudaHostAlloc(&go, sizeof(int), cudaHostAllocMapped));
  *static_cast<volatile int*>(go) = 0;
  CUDA_OK(cudaMemset(sig, 0, sizeof(uint64_t)));
  cudaStream_t streams[kStreams], asker;
  for (cudaStream_t& s : streams) CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaStreamCreateWithFlags(&asker, cudaStreamNonBlocking));

  for (int round = 1; round <= kRounds; ++round) {
    phase("kernels wait behind kernels that wait for the partner, whose data we get");
    std::vector<long> mine(kWords);
    for (size_t i = 0; i < kWords; ++i) {
      mine[i] = static_cast<long>(pattern(salt + static_cast<uint64_t>(round), me, i) >> 1);
    }
    to_device(src, mine);
    poison(dst, kWords * sizeof(long));
    CUDA_OK(cudaMemset(done, 0, sizeof(int)));
    sync_device_and_pes();
    // First, so that it heads its hardware queue: it starts once the waiting kernels are queued.
    ask_kernel<<<1, 1, 0, asker>>>(dst, src, sig, partner, go, round);
    CUDA_OK(cudaGetLastError());
    for (cudaStream_t s : streams) {
      hold_kernel<<<1, 1, 0, s>>>(sig, static_cast<uint64_t>(round));
      after_kernel<<<1, 1, 0, s>>>(done);
    }
    CUDA_OK(cudaGetLastError());
    // Behind every stream's kernels (the legacy stream waits for the blocking streams).
    CUDA_OK(cudaMemsetAsync(scratch, 0x5A, sizeof(long), 0));
    __atomic_store_n(go, round, __ATOMIC_RELEASE);
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<long> got = to_host(dst, kWords);
    for (size_t i = 0; i < kWords; ++i) {
      EXPECT(got[i] ==
                 static_cast<long>(pattern(salt + static_cast<uint64_t>(round), partner, i) >> 1),
             "round %d: word %zu got from PE %d", round, i, partner);
    }
    EXPECT(to_host(sig, 1)[0] == static_cast<uint64_t>(round), "round %d: signal %llu", round,
           static_cast<unsigned long long>(to_host(sig, 1)[0]));
    EXPECT(to_host(done, 1)[0] == kStreams, "round %d: %d of %d queued kernels ran", round,
           to_host(done, 1)[0], kStreams);
    EXPECT(to_host(scratch, 1)[0] == 0x5A5A5A5A5A5A5A5ALL, "round %d: the memset did not run",
           round);
  }
  phase("finalize");
  for (cudaStream_t s : streams) CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaStreamDestroy(asker));
  CUDA_OK(cudaFree(dst));
  CUDA_OK(cudaFree(done));
  CUDA_OK(cudaFreeHost(go));
  shmem_barrier_all();
  if (me == 0) std::printf("device_remote_queued: OK (%d PEs, %d streams)\n", n, kStreams);
  shmem_finalize();
  return 0;
}
