// Every block-wide device call launches and works in a block of 1024 threads, the largest CUDA
// allows. A block of 1024 has 64 registers a thread at most (65536 per SM on sm_70 to sm_90): a
// call whose inline code needs more makes the user's kernel fail at launch with "too many
// resources requested". Each kernel here is one block-wide call family in the shape a bandwidth
// test gives it (a loop, a grid-wide counter, shmem_quiet by one thread); the same file is
// compiled by tests/unit/register_budget.cmake with -Xptxas -v, which fails above 64 registers on
// machines without a GPU. Here each kernel also runs at 1024 threads on 2-8 PEs, and every
// receiver checks every byte (fresh data, poisoned destinations).
#include <algorithm>

#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr int kThreads = 1024;
constexpr size_t kBytes = 1 << 20;  // per message: 1 KiB per thread

__device__ unsigned g_arrived;

// The bandwidth-test shape: a block-wide non-blocking put of one chunk per block in a loop, a
// grid-wide arrival counter, and one thread's shmem_quiet at the end. The chunks are `chunk`
// bytes at `offset`, so that neither need be a multiple of 16.
__global__ void put_nbi_block_kernel(char* dest, const char* source, size_t chunk, size_t offset,
                                     int iters, int pe) {
  for (int i = 0; i < iters; ++i) {
    const size_t at = offset + blockIdx.x * chunk;
    shmemx_putmem_nbi_block(dest + at, source + at, chunk, pe);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&g_arrived, 1u);
    if (blockIdx.x == 0) {
      while (atomicAdd(&g_arrived, 0u) < gridDim.x) {
      }
      shmem_quiet();
    }
  }
}

__global__ void get_block_kernel(double* dest, const double* source, size_t nelems, int pe) {
  const size_t per_block = nelems / gridDim.x;
  shmemx_double_get_nbi_block(dest + blockIdx.x * per_block, source + blockIdx.x * per_block,
                              per_block, pe);
  if (threadIdx.x == 0) shmem_quiet();
}

__global__ void iput_block_kernel(uint32_t* dest, const uint32_t* source, size_t nelems, int pe) {
  shmemx_uint32_iput_block(dest, source, 3, 2, nelems, pe);
}

__global__ void put_signal_block_kernel(uint64_t* dest, const uint64_t* source, size_t nelems,
                                        uint64_t* sig, int pe) {
  shmemx_uint64_put_signal_block(dest, source, nelems, sig, 1, SHMEM_SIGNAL_ADD, pe);
}

// Block barriers in a loop, each round publishing a value the next round's reader checks.
__global__ void barrier_block_kernel(uint64_t* box, uint64_t salt, int rounds, int* bad) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) shmem_uint64_p(box + (r & 1), pattern(salt, me, r), (me + 1) % n);
    if (r & 1) {
      shmemx_team_sync_block(SHMEM_TEAM_WORLD);
    } else {
      shmemx_barrier_all_block();
    }
    if (threadIdx.x == 0 && box[r & 1] != pattern(salt, (me + n - 1) % n, r)) atomicAdd(bad, 1);
    shmemx_barrier_all_block();  // nobody overwrites box[r & 1] before it was read
  }
}

// One kernel per collective, so that each call's register count is its own.
__global__ void broadcast_block_kernel(uint64_t* dest, const uint64_t* source, size_t nelems,
                                       int root) {
  shmemx_uint64_broadcast_block(SHMEM_TEAM_WORLD, dest, source, nelems, root);
}
__global__ void fcollect_block_kernel(uint64_t* dest, const uint64_t* source, size_t nelems) {
  shmemx_uint64_fcollect_block(SHMEM_TEAM_WORLD, dest, source, nelems);
}
__global__ void alltoall_block_kernel(uint64_t* dest, const uint64_t* source, size_t nelems) {
  shmemx_uint64_alltoall_block(SHMEM_TEAM_WORLD, dest, source, nelems);
}
__global__ void sum_reduce_block_kernel(long* dest, const long* source, size_t nelems) {
  shmemx_long_sum_reduce_block(SHMEM_TEAM_WORLD, dest, source, nelems);
}
__global__ void max_reduce_block_kernel(double* dest, const double* source, size_t nelems) {
  shmemx_double_max_reduce_block(SHMEM_TEAM_WORLD, dest, source, nelems);
}

template <class K>
void require_1024(K kernel, const char* name) {
  cudaFuncAttributes a{};
  CUDA_OK(cudaFuncGetAttributes(&a, kernel));
  if (shmem_my_pe() == 0) std::printf("  %s: %d registers a thread\n", name, a.numRegs);
  EXPECT(a.maxThreadsPerBlock >= kThreads && a.numRegs <= 64,
         "%s: %d registers a thread, at most %d threads a block", name, a.numRegs,
         a.maxThreadsPerBlock);
}

std::vector<uint64_t> words(uint64_t salt, int pe, size_t n) {
  std::vector<uint64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pattern(salt, pe, i);
  return v;
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_block1024");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const uint64_t salt = common_salt();

  require_1024(put_nbi_block_kernel, "putmem_nbi_block");
  require_1024(get_block_kernel, "double_get_nbi_block");
  require_1024(iput_block_kernel, "uint32_iput_block");
  require_1024(put_signal_block_kernel, "uint64_put_signal_block");
  require_1024(barrier_block_kernel, "barrier_all_block/team_sync_block");
  require_1024(broadcast_block_kernel, "uint64_broadcast_block");
  require_1024(fcollect_block_kernel, "uint64_fcollect_block");
  require_1024(alltoall_block_kernel, "uint64_alltoall_block");
  require_1024(sum_reduce_block_kernel, "long_sum_reduce_block");
  require_1024(max_reduce_block_kernel, "double_max_reduce_block");

  auto* sym = static_cast<uint64_t*>(shmem_malloc(kBytes + 64));
  auto* sig = static_cast<uint64_t*>(shmem_malloc(2 * sizeof(uint64_t)));
  EXPECT(sym != nullptr && sig != nullptr, "shmem_malloc");
  uint64_t* src = nullptr;
  CUDA_OK(cudaMalloc(&src, kBytes + 64));
  const size_t nwords = (kBytes + 64) / 8;

  phase("putmem_nbi_block, 13 blocks of unaligned chunks");
  {
    const size_t chunk = 40009, offset = 7, blocks = 13;  // neither a multiple of 16
    to_device(src, words(salt, me, nwords));
    poison(sym, kBytes + 64);
    const unsigned zero = 0;
    CUDA_OK(cudaMemcpyToSymbol(g_arrived, &zero, sizeof(zero)));
    sync_device_and_pes();
    put_nbi_block_kernel<<<blocks, kThreads>>>(
        reinterpret_cast<char*>(sym), reinterpret_cast<const char*>(src), chunk, offset, 3, next);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    auto got = to_host(reinterpret_cast<unsigned char*>(sym), kBytes + 64);
    auto want = words(salt, prev, nwords);
    const auto* wb = reinterpret_cast<const unsigned char*>(want.data());
    for (size_t b = 0; b < kBytes + 64; ++b) {
      const bool inside = b >= offset && b < offset + blocks * chunk;
      EXPECT(got[b] == (inside ? wb[b] : 0xA5), "byte %zu: %#x", b, got[b]);
    }
  }

  phase("double_get_nbi_block");
  {
    const size_t nelems = 8 * 4096;
    std::vector<uint64_t> mine = words(salt + 1, me, nelems);
    to_device(sym, mine);
    poison(src, nelems * 8);
    sync_device_and_pes();
    get_block_kernel<<<8, kThreads>>>(reinterpret_cast<double*>(src),
                                      reinterpret_cast<const double*>(sym), nelems, prev);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    auto got = to_host(src, nelems);
    auto want = words(salt + 1, prev, nelems);
    for (size_t i = 0; i < nelems; ++i) EXPECT(got[i] == want[i], "get word %zu", i);
  }

  phase("uint32_iput_block");
  {
    const size_t nelems = 3000;  // more elements than threads
    std::vector<uint32_t> s(2 * nelems);
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint32_t>(pattern(salt + 2, me, i));
    to_device(reinterpret_cast<uint32_t*>(src), s);
    poison(sym, 3 * nelems * 4);
    sync_device_and_pes();
    iput_block_kernel<<<1, kThreads>>>(reinterpret_cast<uint32_t*>(sym),
                                       reinterpret_cast<const uint32_t*>(src), nelems, next);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    auto got = to_host(reinterpret_cast<uint32_t*>(sym), 3 * nelems);
    for (size_t i = 0; i < 3 * nelems; ++i) {
      const uint32_t want =
          i % 3 == 0 ? static_cast<uint32_t>(pattern(salt + 2, prev, i / 3 * 2)) : 0xA5A5A5A5u;
      EXPECT(got[i] == want, "iput element %zu", i);
    }
  }

  phase("uint64_put_signal_block");
  {
    const size_t nelems = 20000;
    to_device(src, words(salt + 3, me, nelems));
    poison(sym, nelems * 8);
    CUDA_OK(cudaMemset(sig, 0, sizeof(uint64_t)));
    sync_device_and_pes();
    put_signal_block_kernel<<<1, kThreads>>>(sym, src, nelems, sig, next);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    auto got = to_host(sym, nelems);
    auto want = words(salt + 3, prev, nelems);
    for (size_t i = 0; i < nelems; ++i) EXPECT(got[i] == want[i], "put_signal word %zu", i);
    EXPECT(to_host(sig, 1)[0] == 1, "signal %llu, want 1 (one ADD)",
           static_cast<unsigned long long>(to_host(sig, 1)[0]));
  }

  phase("barrier_all_block / team_sync_block");
  {
    int* bad = nullptr;
    CUDA_OK(cudaMalloc(&bad, sizeof(int)));
    CUDA_OK(cudaMemset(bad, 0, sizeof(int)));
    sync_device_and_pes();
    barrier_block_kernel<<<1, kThreads>>>(sig, salt + 4, 200, bad);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    EXPECT(to_host(bad, 1)[0] == 0, "%d rounds read a stale value", to_host(bad, 1)[0]);
    cudaFree(bad);
  }

  phase("broadcast/fcollect/alltoall/sum/max _block");
  {
    const size_t ne = 1500;  // more elements than threads
    auto alloc = [](size_t bytes) {
      void* p = shmem_malloc(bytes);
      EXPECT(p != nullptr, "shmem_malloc(%zu)", bytes);
      return p;
    };
    auto* bsrc = static_cast<uint64_t*>(alloc(ne * 8));
    auto* bdst = static_cast<uint64_t*>(alloc(ne * 8));
    auto* fsrc = static_cast<uint64_t*>(alloc(ne * 8));
    auto* fdst = static_cast<uint64_t*>(alloc(ne * 8 * n));
    auto* asrc = static_cast<uint64_t*>(alloc(ne * 8 * n));
    auto* adst = static_cast<uint64_t*>(alloc(ne * 8 * n));
    auto* ssrc = static_cast<long*>(alloc(ne * sizeof(long)));
    auto* sdst = static_cast<long*>(alloc(ne * sizeof(long)));
    auto* msrc = static_cast<double*>(alloc(ne * sizeof(double)));
    auto* mdst = static_cast<double*>(alloc(ne * sizeof(double)));
    const int root = static_cast<int>(salt % n);
    to_device(bsrc, words(salt + 5, me, ne));
    to_device(fsrc, words(salt + 6, me, ne));
    to_device(asrc, words(salt + 7, me, ne * n));
    std::vector<long> sv(ne);
    std::vector<double> mv(ne);
    for (size_t i = 0; i < ne; ++i) {
      sv[i] = static_cast<long>(pattern(salt + 8, me, i) % 1000003);
      mv[i] = static_cast<double>(pattern(salt + 9, me, i) % 1000003) / 3.0;
    }
    to_device(ssrc, sv);
    to_device(msrc, mv);
    for (void* p : {static_cast<void*>(bdst), static_cast<void*>(sdst), static_cast<void*>(mdst)}) {
      poison(p, ne * 8);
    }
    poison(fdst, ne * 8 * n);
    poison(adst, ne * 8 * n);
    sync_device_and_pes();
    broadcast_block_kernel<<<1, kThreads>>>(bdst, bsrc, ne, root);
    CUDA_OK(cudaGetLastError());
    fcollect_block_kernel<<<1, kThreads>>>(fdst, fsrc, ne);
    CUDA_OK(cudaGetLastError());
    alltoall_block_kernel<<<1, kThreads>>>(adst, asrc, ne);
    CUDA_OK(cudaGetLastError());
    sum_reduce_block_kernel<<<1, kThreads>>>(sdst, ssrc, ne);
    CUDA_OK(cudaGetLastError());
    max_reduce_block_kernel<<<1, kThreads>>>(mdst, msrc, ne);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    auto gb = to_host(bdst, ne);
    auto gf = to_host(fdst, ne * n);
    auto ga = to_host(adst, ne * n);
    auto gs = to_host(sdst, ne);
    auto gm = to_host(mdst, ne);
    const auto broadcast = words(salt + 5, root, ne);
    for (size_t i = 0; i < ne; ++i) {
      EXPECT(gb[i] == broadcast[i], "broadcast element %zu", i);
      long sum = 0;
      double mx = 0;
      for (int p = 0; p < n; ++p) {
        sum += static_cast<long>(pattern(salt + 8, p, i) % 1000003);
        mx = std::max(mx, static_cast<double>(pattern(salt + 9, p, i) % 1000003) / 3.0);
        EXPECT(gf[p * ne + i] == pattern(salt + 6, p, i), "fcollect from PE %d element %zu", p, i);
        EXPECT(ga[p * ne + i] == pattern(salt + 7, p, me * ne + i), "alltoall from PE %d el %zu", p,
               i);
      }
      EXPECT(gs[i] == sum, "sum element %zu: %ld, want %ld", i, gs[i], sum);
      EXPECT(gm[i] == mx, "max element %zu: %f, want %f", i, gm[i], mx);
    }
  }

  phase("finalize");
  cudaFree(src);
  shmem_finalize();
  if (me == 0) std::printf("device_block1024: OK\n");
  return 0;
}
