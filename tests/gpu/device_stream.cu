// On-stream calls, directly and captured into a CUDA graph that is replayed many times: a ring
// of putmem_signal_on_stream + signal_wait_until_on_stream, barriers and syncs on the stream,
// an on-stream reduction and all-to-all, and collective launch (its grid limit included).
#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr size_t kBytes = 1 << 16;
constexpr int kReplays = 50;

// Fills the message of round `round` (read from device memory, so a replayed graph advances).
__global__ void fill_kernel(uint64_t* msg, uint64_t salt, const uint64_t* round) {
  const size_t n = kBytes / 8;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    msg[i] = pattern(salt + *round, shmem_my_pe(), i);
  }
}

// Checks prev's message of this round, then advances the round.
__global__ void check_kernel(const uint64_t* buf, uint64_t salt, uint64_t* round, int* errors) {
  const int n = shmem_n_pes();
  const int prev = (shmem_my_pe() + n - 1) % n;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < kBytes / 8;
       i += gridDim.x * blockDim.x) {
    if (buf[i] != pattern(salt + *round, prev, i)) atomicAdd(errors, 1);
  }
}

__global__ void advance_kernel(uint64_t* round) { ++*round; }

// Collective launch target: every block of the grid does a barrier in turn with the other PEs.
__global__ void coop_kernel(int* hits) {
  if (threadIdx.x == 0) atomicAdd(hits, 1);
  if (blockIdx.x == 0) shmemx_barrier_all_block();
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_stream");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n;
  const uint64_t salt = common_salt();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  auto* buf = static_cast<uint64_t*>(shmem_malloc(kBytes));
  auto* sig = static_cast<uint64_t*>(shmem_malloc(8));
  uint64_t *msg = nullptr, *round = nullptr;
  int* errors = nullptr;
  CUDA_OK(cudaMalloc(&msg, kBytes));
  CUDA_OK(cudaMalloc(&round, 8));
  CUDA_OK(cudaMalloc(&errors, sizeof(int)));
  CUDA_OK(cudaMemset(round, 0, 8));
  CUDA_OK(cudaMemset(errors, 0, sizeof(int)));
  CUDA_OK(cudaMemset(sig, 0, 8));
  poison(buf, kBytes);
  CUDA_OK(cudaDeviceSynchronize());
  shmem_barrier_all();

  // One round: fill, barrier (next has checked the previous round), put+signal, wait, check.
  // The signal counts rounds; the wait of round r waits for r + 1.
  auto enqueue_round = [&](uint64_t expected_signal) {
    fill_kernel<<<8, 256, 0, stream>>>(msg, salt, round);
    EXPECT(shmemx_barrier_all_on_stream(stream) == 0, "barrier_all_on_stream");
    EXPECT(shmemx_putmem_signal_on_stream(buf, msg, kBytes, sig, 1, SHMEM_SIGNAL_ADD, next,
                                          stream) == 0,
           "putmem_signal_on_stream");
    EXPECT(shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, expected_signal, stream) == 0,
           "signal_wait_until_on_stream");
    check_kernel<<<8, 256, 0, stream>>>(buf, salt, round, errors);
    EXPECT(shmemx_sync_all_on_stream(stream) == 0, "sync_all_on_stream");
    advance_kernel<<<1, 1, 0, stream>>>(round);
  };

  // Direct, 3 rounds.
  phase("on-stream rounds");
  for (uint64_t r = 0; r < 3; ++r) enqueue_round(r + 1);
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT(to_host(errors, 1)[0] == 0, "direct rounds: wrong words");

  // Captured: the wait compares with a value fixed at capture, so the graph resets the signal
  // before its barrier (no PE signals us before it has passed that barrier).
  phase("graph capture and replays");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(sig, 0, 8, stream));
  enqueue_round(1);
  EXPECT(shmemx_quiet_on_stream(stream) == 0, "quiet_on_stream");
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < kReplays; ++i) CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT(to_host(errors, 1)[0] == 0, "graph replays: wrong words");
  EXPECT(to_host(round, 1)[0] == 3 + kReplays, "rounds %llu",
         (unsigned long long)to_host(round, 1)[0]);

  // On-stream reduction and all-to-all.
  {
    phase("on-stream reduction and all-to-all");
    const size_t ne = 1000;
    auto* src = static_cast<double*>(shmem_malloc(ne * 8));
    auto* dst = static_cast<double*>(shmem_malloc(ne * 8));
    auto* a_src = static_cast<int*>(shmem_malloc(ne * n * sizeof(int)));
    auto* a_dst = static_cast<int*>(shmem_malloc(ne * n * sizeof(int)));
    std::vector<double> h(ne);
    std::vector<int> ha(ne * n);
    for (size_t i = 0; i < ne; ++i) h[i] = static_cast<double>(pattern(salt, me, i) % 1000) / 4;
    for (size_t i = 0; i < ne * n; ++i) ha[i] = static_cast<int>(pattern(salt, me, i + 5));
    to_device(src, h);
    to_device(a_src, ha);
    poison(dst, ne * 8);
    poison(a_dst, ne * n * sizeof(int));
    CUDA_OK(cudaDeviceSynchronize());
    shmem_barrier_all();
    EXPECT(shmemx_double_max_reduce_on_stream(SHMEM_TEAM_WORLD, dst, src, ne, stream) == 0,
           "max_reduce_on_stream");
    EXPECT(
        shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, a_dst, a_src, ne * sizeof(int), stream) == 0,
        "alltoallmem_on_stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    auto g = to_host(dst, ne);
    auto ga = to_host(a_dst, ne * n);
    for (size_t i = 0; i < ne; ++i) {
      double mx = 0;
      for (int pe = 0; pe < n; ++pe) {
        mx = std::max(mx, static_cast<double>(pattern(salt, pe, i) % 1000) / 4);
      }
      EXPECT(g[i] == mx, "max_reduce %zu", i);
      for (int pe = 0; pe < n; ++pe) {
        EXPECT(ga[pe * ne + i] == static_cast<int>(pattern(salt, pe, me * ne + i + 5)),
               "alltoall_on_stream %d %zu", pe, i);
      }
    }
  }

  // Collective launch: the largest grid is accepted and runs; a larger one is refused.
  {
    phase("collective launch");
    int grid = 0;
    void* args[1];
    int* hits = nullptr;
    CUDA_OK(cudaMalloc(&hits, sizeof(int)));
    CUDA_OK(cudaMemset(hits, 0, sizeof(int)));
    args[0] = &hits;
    EXPECT(shmemx_collective_launch_query_gridsize(reinterpret_cast<const void*>(coop_kernel),
                                                   dim3(128), args, 0, &grid) == 0,
           "query_gridsize");
    EXPECT(grid >= 1, "grid %d", grid);
    const int use = grid < 16 ? grid : 16;
    EXPECT(shmemx_collective_launch(reinterpret_cast<const void*>(coop_kernel), dim3(use),
                                    dim3(128), args, 0, stream) == 0,
           "collective_launch");
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT(to_host(hits, 1)[0] == use, "collective launch ran %d blocks", to_host(hits, 1)[0]);
    EXPECT(shmemx_collective_launch(reinterpret_cast<const void*>(coop_kernel), dim3(grid + 1),
                                    dim3(128), args, 0, stream) != 0,
           "an oversized collective launch was accepted");
    cudaFree(hits);
  }

  phase("finalize");
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
  shmem_finalize();
  if (me == 0) std::printf("device_stream: OK (sharing GPU: %d PEs)\n", n);
  return 0;
}
