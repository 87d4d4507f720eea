// Device calls to PEs behind the device proxy (issue #14), run with the PEs on simulated nodes
// (vshmemrun --simulate-nodes 2): every thread of many blocks posts p, put, get and fetching
// atomics to every PE, remote ones through the proxy ring; every value is checked.
//  - p/put storm: every thread of kBlocks x kThreads writes its own words (shmem_long_p and a
//    shmem_putmem of 8..128 bytes from a local array) on every PE, then shmem_quiet;
//  - gets: every thread reads words the owner wrote (g, getmem inline and staged);
//  - contended fetch_add from both nodes on one counter of every PE: the old values seen by all
//    threads of all PEs are a permutation of [start, start + total);
//  - put_signal (block form, 1 MiB, staged) waited for in a kernel on the target, data checked,
//    and a 1 MiB block getmem (staged) back from that PE;
//  - shmem_ptr is NULL exactly for the peers that are not mapped;
//  - a device barrier and a broadcast/reduction over the world that mixes mapped and remote PEs.
#include <algorithm>

#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr int kBlocks = 32;
constexpr int kThreads = 128;
constexpr unsigned kAll = kBlocks * kThreads;
constexpr size_t kPutBytes = 200;  // per thread, the largest
constexpr size_t kBig = size_t{1} << 20;

// 8 .. 128 bytes: from a local array, so at most what travels in the request (impl/proxy.cuh).
__host__ __device__ size_t put_bytes(unsigned t) { return 8 + 8 * (t % 16); }

__global__ void storm_kernel(long* words, unsigned char* blobs, uint64_t salt) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned char mine[kPutBytes];
  for (int k = 0; k < n; ++k) {
    const int pe = (me + k) % n;
    // words[from * kAll + t] on pe
    shmem_long_p(&words[static_cast<size_t>(me) * kAll + t],
                 static_cast<long>(pattern(salt, me, t * 64 + pe)), pe);
    const size_t b = put_bytes(t);
    for (size_t i = 0; i < b; ++i)
      mine[i] = static_cast<unsigned char>(pattern(salt, me, t + i + pe) >> 7);
    shmem_putmem(&blobs[(static_cast<size_t>(me) * kAll + t) * kPutBytes], mine, b, pe);
  }
  shmem_quiet();
}

__global__ void get_kernel(const long* words, const unsigned char* blobs, int* bad, uint64_t salt) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned char got[kPutBytes];
  for (int k = 1; k <= n; ++k) {
    const int pe = (me + k) % n;  // read what I wrote into pe
    const long w = shmem_long_g(&words[static_cast<size_t>(me) * kAll + t], pe);
    if (w != static_cast<long>(pattern(salt, me, t * 64 + pe))) atomicAdd(bad, 1);
    const size_t b = put_bytes(t);
    for (size_t i = 0; i < b; ++i) got[i] = 0x5A;
    shmem_getmem(got, &blobs[(static_cast<size_t>(me) * kAll + t) * kPutBytes], b, pe);
    for (size_t i = 0; i < b; ++i) {
      if (got[i] != static_cast<unsigned char>(pattern(salt, me, t + i + pe) >> 7)) {
        atomicAdd(bad, 1);
        break;
      }
    }
  }
}

__global__ void fetch_add_kernel(unsigned long long* counter, unsigned long long* seen) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  for (int pe = 0; pe < n; ++pe) {
    seen[static_cast<size_t>(pe) * kAll + t] = shmem_ulonglong_atomic_fetch_add(counter, 1, pe);
  }
  (void)me;
}

__global__ void put_signal_kernel(unsigned char* dst, const unsigned char* src, uint64_t* sig,
                                  int pe, uint64_t value) {
  shmemx_putmem_signal_block(dst, src, kBig, sig, value, SHMEM_SIGNAL_SET, pe);
}

__global__ void getmem_kernel(unsigned char* dst, const unsigned char* src, int pe) {
  shmemx_getmem_block(dst, src, kBig, pe);
}

__global__ void wait_kernel(uint64_t* sig, uint64_t value) {
  shmem_signal_wait_until(sig, SHMEM_CMP_EQ, value);
}

__global__ void ptr_kernel(const long* sym, int* is_null) {
  for (int pe = 0; pe < shmem_n_pes(); ++pe) is_null[pe] = shmem_ptr(sym, pe) == nullptr;
}

__global__ void coll_kernel(long* bsrc, long* bdst, long* rsrc, long* rdst, size_t nelems,
                            int root) {
  shmemx_barrier_all_block();
  shmemx_long_broadcast_block(SHMEM_TEAM_WORLD, bdst, bsrc, nelems, root);
  shmemx_long_sum_reduce_block(SHMEM_TEAM_WORLD, rdst, rsrc, nelems);
  shmemx_barrier_all_block();
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_proxy");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const uint64_t salt = common_salt();

  auto* words = static_cast<long*>(shmem_malloc(sizeof(long) * kAll * n));
  auto* blobs = static_cast<unsigned char*>(shmem_malloc(kPutBytes * kAll * n));
  poison(words, sizeof(long) * kAll * n);
  poison(blobs, kPutBytes * kAll * n);
  int* bad = nullptr;
  CUDA_OK(cudaMalloc(&bad, sizeof(int)));
  CUDA_OK(cudaMemset(bad, 0, sizeof(int)));
  sync_device_and_pes();

  phase("shmem_ptr is NULL for the peers behind the proxy");
  {
    int* is_null = nullptr;
    CUDA_OK(cudaMallocManaged(&is_null, sizeof(int) * n));
    ptr_kernel<<<1, 1>>>(words, is_null);
    CUDA_OK(cudaDeviceSynchronize());
    int remote = 0;
    for (int pe = 0; pe < n; ++pe) {
      const bool host_null = shmem_ptr(words, pe) == nullptr;
      EXPECT(static_cast<bool>(is_null[pe]) == host_null,
             "device and host shmem_ptr differ for PE %d", pe);
      remote += is_null[pe];
    }
    EXPECT(remote > 0, "no peer is behind the proxy: run with vshmemrun --simulate-nodes 2");
    CUDA_OK(cudaFree(is_null));
  }

  phase("p/put storm to every PE, quiet");
  storm_kernel<<<kBlocks, kThreads>>>(words, blobs, salt);
  CUDA_OK(cudaGetLastError());
  sync_device_and_pes();
  {
    const std::vector<long> w = to_host(words, static_cast<size_t>(kAll) * n);
    const std::vector<unsigned char> b = to_host(blobs, kPutBytes * kAll * n);
    for (int from = 0; from < n; ++from) {
      for (unsigned t = 0; t < kAll; ++t) {
        EXPECT(w[static_cast<size_t>(from) * kAll + t] ==
                   static_cast<long>(pattern(salt, from, t * 64 + me)),
               "word of thread %u from PE %d", t, from);
        const size_t bytes = put_bytes(t);
        for (size_t i = 0; i < bytes; ++i) {
          EXPECT(b[(static_cast<size_t>(from) * kAll + t) * kPutBytes + i] ==
                     static_cast<unsigned char>(pattern(salt, from, t + i + me) >> 7),
                 "byte %zu of thread %u's put from PE %d", i, t, from);
        }
        if (bytes < kPutBytes) {  // the poison after the put is intact
          EXPECT(b[(static_cast<size_t>(from) * kAll + t) * kPutBytes + bytes] == 0xA5,
                 "put of thread %u from PE %d ran over", t, from);
        }
      }
    }
  }

  phase("g/getmem from every PE");
  get_kernel<<<kBlocks, kThreads>>>(words, blobs, bad, salt);
  CUDA_OK(cudaGetLastError());
  sync_device_and_pes();
  {
    int h = -1;
    CUDA_OK(cudaMemcpy(&h, bad, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(h == 0, "%d gets returned wrong data", h);
  }

  phase("contended fetch_add on every PE from both nodes");
  {
    auto* counter = static_cast<unsigned long long*>(shmem_malloc(sizeof(unsigned long long)));
    const unsigned long long start = salt >> 20;
    CUDA_OK(cudaMemcpy(counter, &start, sizeof(start), cudaMemcpyHostToDevice));
    auto* seen = static_cast<unsigned long long*>(
        shmem_malloc(sizeof(unsigned long long) * kAll * n));  // [pe][t], on every PE
    poison(seen, sizeof(unsigned long long) * kAll * n);
    sync_device_and_pes();
    fetch_add_kernel<<<kBlocks, kThreads>>>(counter, seen);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    unsigned long long fin = 0;
    CUDA_OK(cudaMemcpy(&fin, counter, sizeof(fin), cudaMemcpyDeviceToHost));
    EXPECT(fin == start + static_cast<unsigned long long>(kAll) * n, "counter %llu, want %llu", fin,
           start + static_cast<unsigned long long>(kAll) * n);
    // Every PE's old values for counter on PE `me`: gathered by host gets.
    std::vector<unsigned long long> all;
    std::vector<unsigned long long> part(kAll);
    for (int from = 0; from < n; ++from) {
      shmem_getmem(part.data(), seen + static_cast<size_t>(me) * kAll, kAll * sizeof(part[0]),
                   from);
      all.insert(all.end(), part.begin(), part.end());
    }
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT(all[i] == start + i, "fetch_add old values are not a permutation at %zu: %llu", i,
             all[i]);
    }
    shmem_barrier_all();
  }

  phase("put_signal (block, 1 MiB) to the next PE, waited for on the target");
  {
    auto* dst = static_cast<unsigned char*>(shmem_malloc(kBig));
    auto* src = static_cast<unsigned char*>(shmem_malloc(kBig));
    auto* sig = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
    poison(dst, kBig);
    CUDA_OK(cudaMemset(sig, 0, sizeof(uint64_t)));
    std::vector<unsigned char> h(kBig);
    for (size_t i = 0; i < kBig; ++i) h[i] = static_cast<unsigned char>(pattern(salt, me, i));
    to_device(src, h);
    sync_device_and_pes();
    const uint64_t value = (salt | 1) + static_cast<uint64_t>(me);
    const int prev = (me + n - 1) % n;
    cudaStream_t s2;
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    wait_kernel<<<1, 1, 0, s2>>>(sig, (salt | 1) + static_cast<uint64_t>(prev));
    put_signal_kernel<<<1, 256>>>(dst, src, sig, (me + 1) % n, value);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(s2));
    const std::vector<unsigned char> got = to_host(dst, kBig);
    for (size_t i = 0; i < kBig; ++i) {
      EXPECT(got[i] == static_cast<unsigned char>(pattern(salt, prev, i)),
             "put_signal byte %zu from PE %d", i, prev);
    }
    CUDA_OK(cudaStreamDestroy(s2));
    sync_device_and_pes();
    // Back from the next PE: what we put there (GPU global memory destination, staged).
    unsigned char* back = nullptr;
    CUDA_OK(cudaMalloc(&back, kBig));
    poison(back, kBig);
    getmem_kernel<<<1, 256>>>(back, dst, (me + 1) % n);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<unsigned char> gb = to_host(back, kBig);
    for (size_t i = 0; i < kBig; ++i) {
      EXPECT(gb[i] == h[i], "getmem byte %zu from PE %d", i, (me + 1) % n);
    }
    CUDA_OK(cudaFree(back));
    sync_device_and_pes();
  }

  phase("device barrier, broadcast and sum reduction over mapped and remote PEs");
  {
    constexpr size_t kN = 300;
    auto* bsrc = static_cast<long*>(shmem_malloc(kN * sizeof(long)));
    auto* bdst = static_cast<long*>(shmem_malloc(kN * sizeof(long)));
    auto* rsrc = static_cast<long*>(shmem_malloc(kN * sizeof(long)));
    auto* rdst = static_cast<long*>(shmem_malloc(kN * sizeof(long)));
    std::vector<long> b(kN), r(kN);
    for (size_t i = 0; i < kN; ++i) {
      b[i] = static_cast<long>(pattern(salt, me, i + 5000));
      r[i] = static_cast<long>(pattern(salt, me, i + 9000) >> 8);
    }
    to_device(bsrc, b);
    to_device(rsrc, r);
    poison(bdst, kN * sizeof(long));
    poison(rdst, kN * sizeof(long));
    sync_device_and_pes();
    const int root = n - 1;
    coll_kernel<<<1, 256>>>(bsrc, bdst, rsrc, rdst, kN, root);
    CUDA_OK(cudaGetLastError());
    sync_device_and_pes();
    const std::vector<long> gb = to_host(bdst, kN), gr = to_host(rdst, kN);
    for (size_t i = 0; i < kN; ++i) {
      EXPECT(gb[i] == static_cast<long>(pattern(salt, root, i + 5000)), "broadcast word %zu", i);
      long sum = 0;
      for (int pe = 0; pe < n; ++pe) sum += static_cast<long>(pattern(salt, pe, i + 9000) >> 8);
      EXPECT(gr[i] == sum, "sum reduction word %zu", i);
    }
  }

  phase("done");
  if (me == 0) std::printf("device_proxy: OK (%d PEs)\n", n);
  shmem_finalize();
  return 0;
}
