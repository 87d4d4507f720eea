// Host-API transfers of several GiB on the GPU heap, each in one call: a put of 3 GiB + 4100
// bytes to the next PE of a ring, a get of the same size from it into private device memory, and
// both again at odd byte offsets (dest + 3, source + 5, 16 bytes shorter). Sources are filled
// and destinations checked by kernels (no host buffer of that size), destinations are poisoned
// (0xA5) first, and every byte of every destination is checked: the covered range against its
// sender's pattern, the rest for the poison.
#include "device_test_util.cuh"

using namespace device_test;

namespace {

// Not a multiple of anything nice: past 2^31 bytes (an int would overflow), 4 bytes past a word.
constexpr size_t kBytes = (3ull << 30) + 4100;
constexpr int kThreads = 256;

// Byte i of a region that `pe` filled: byte i % 8 of pattern(salt, pe, i / 8) (little endian).
__host__ __device__ inline unsigned char pattern_byte(uint64_t salt, int pe, size_t i) {
  return static_cast<unsigned char>(pattern(salt, pe, i / 8) >> (8 * (i % 8)));
}

__global__ void fill_kernel(unsigned char* buf, size_t bytes, uint64_t salt, int pe) {
  const size_t words = bytes / 8;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  auto* w = reinterpret_cast<uint64_t*>(buf);
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    w[i] = pattern(salt, pe, i);
  }
  const size_t t = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < bytes - words * 8) buf[words * 8 + t] = pattern_byte(salt, pe, words * 8 + t);
}

// counters[0]: mismatching bytes; counters[1]: the first of them (~0 when none).
// Byte j of `got` must be byte (j - lo + src_off) of `from`'s pattern for lo <= j < hi, and the
// poison 0xA5 elsewhere.
__global__ void verify_kernel(const unsigned char* got, size_t bytes, size_t lo, size_t hi,
                              size_t src_off, uint64_t salt, int from,
                              unsigned long long* counters) {
  unsigned long long bad = 0, first = ~0ull;
  const size_t words = (bytes + 7) / 8;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t w = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words;
       w += stride) {
    const size_t b0 = w * 8;
    const size_t b1 = b0 + 8 <= bytes ? b0 + 8 : bytes;
    uint64_t have = 0;
    if (b1 - b0 == 8) {
      have = reinterpret_cast<const uint64_t*>(got)[w];
    } else {
      for (size_t b = b0; b < b1; ++b) have |= static_cast<uint64_t>(got[b]) << (8 * (b - b0));
    }
    size_t cached_word = ~size_t{0};
    uint64_t cached = 0;
    for (size_t b = b0; b < b1; ++b) {
      unsigned want = 0xA5;
      if (b >= lo && b < hi) {
        const size_t s = b - lo + src_off;
        if (s / 8 != cached_word) {
          cached_word = s / 8;
          cached = pattern(salt, from, cached_word);
        }
        want = static_cast<unsigned>(cached >> (8 * (s % 8))) & 0xFF;
      }
      if (static_cast<unsigned>(have >> (8 * (b - b0)) & 0xFF) != want) {
        ++bad;
        if (b < first) first = b;
      }
    }
  }
  if (bad != 0) {
    atomicAdd(&counters[0], bad);
    atomicMin(&counters[1], first);
  }
}

int g_blocks = 0;

void fill(unsigned char* buf, size_t bytes, uint64_t salt, int pe) {
  fill_kernel<<<g_blocks, kThreads>>>(buf, bytes, salt, pe);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
}

// Checks all `bytes` of `got` (see verify_kernel) and fails naming the transfer, the count and
// the first bad byte.
void verify(const char* what, const unsigned char* got, size_t bytes, size_t lo, size_t hi,
            size_t src_off, uint64_t salt, int from, unsigned long long* counters) {
  CUDA_OK(cudaMemset(counters, 0, sizeof(unsigned long long)));
  CUDA_OK(cudaMemset(counters + 1, 0xFF, sizeof(unsigned long long)));
  verify_kernel<<<g_blocks, kThreads>>>(got, bytes, lo, hi, src_off, salt, from, counters);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  unsigned long long c[2] = {0, 0};
  CUDA_OK(cudaMemcpy(c, counters, sizeof(c), cudaMemcpyDeviceToHost));
  if (c[0] == 0) return;
  unsigned char have = 0;
  CUDA_OK(cudaMemcpy(&have, got + c[1], 1, cudaMemcpyDeviceToHost));
  const bool covered = c[1] >= lo && c[1] < hi;
  const unsigned want = covered ? pattern_byte(salt, from, c[1] - lo + src_off) : 0xA5;
  EXPECT(c[0] == 0, "%s: %llu of %zu bytes wrong; the first is byte %llu, %s: %#x, want %#x", what,
         c[0], bytes, c[1],
         covered ? "inside the transferred range (the sender's pattern)"
                 : "outside the transferred range (must keep the poison)",
         have, want);
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("gpu_large_transfer");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const uint64_t salt = common_salt();
  int dev = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  g_blocks = sms * 8;

  phase("shmem_malloc 2 x 3 GiB + 4100 bytes, cudaMalloc 3 GiB + 4100 bytes");
  auto* src = static_cast<unsigned char*>(shmem_malloc(kBytes));
  EXPECT(src != nullptr, "shmem_malloc(%zu) for the source", kBytes);
  auto* dest = static_cast<unsigned char*>(shmem_malloc(kBytes));
  EXPECT(dest != nullptr, "shmem_malloc(%zu) for the destination", kBytes);
  unsigned char* priv = nullptr;
  CUDA_OK(cudaMalloc(&priv, kBytes));
  unsigned long long* counters = nullptr;
  CUDA_OK(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));

  phase("fill the sources");
  fill(src, kBytes, salt, me);

  char what[160];
  phase("shmem_putmem, 3 GiB + 4100 bytes");
  poison(dest, kBytes);
  sync_device_and_pes();
  shmem_putmem(dest, src, kBytes, next);
  shmem_barrier_all();
  std::snprintf(what, sizeof(what), "shmem_putmem of %zu bytes from PE %d", kBytes, prev);
  verify(what, dest, kBytes, 0, kBytes, 0, salt, prev, counters);

  phase("shmem_getmem, 3 GiB + 4100 bytes");
  poison(priv, kBytes);
  sync_device_and_pes();
  shmem_getmem(priv, src, kBytes, next);
  std::snprintf(what, sizeof(what), "shmem_getmem of %zu bytes from PE %d", kBytes, next);
  verify(what, priv, kBytes, 0, kBytes, 0, salt, next, counters);

  // dest + 3 <- source + 5, size - 16 bytes: neither end is aligned.
  const size_t kDst = 3, kSrc = 5, kLen = kBytes - 16;
  phase("shmem_putmem at byte offsets (dest + 3, source + 5, size - 16)");
  poison(dest, kBytes);
  sync_device_and_pes();
  shmem_putmem(dest + kDst, src + kSrc, kLen, next);
  shmem_barrier_all();
  std::snprintf(what, sizeof(what), "shmem_putmem(dest + %zu, source + %zu, %zu) from PE %d", kDst,
                kSrc, kLen, prev);
  verify(what, dest, kBytes, kDst, kDst + kLen, kSrc, salt, prev, counters);

  phase("shmem_getmem at byte offsets (dest + 3, source + 5, size - 16)");
  poison(priv, kBytes);
  sync_device_and_pes();
  shmem_getmem(priv + kDst, src + kSrc, kLen, next);
  std::snprintf(what, sizeof(what), "shmem_getmem(dest + %zu, source + %zu, %zu) from PE %d", kDst,
                kSrc, kLen, next);
  verify(what, priv, kBytes, kDst, kDst + kLen, kSrc, salt, next, counters);

  phase("finalize");
  shmem_barrier_all();
  CUDA_OK(cudaFree(counters));
  CUDA_OK(cudaFree(priv));
  shmem_free(dest);
  shmem_free(src);
  shmem_finalize();
  if (me == 0) std::printf("gpu_large_transfer: OK\n");
  return 0;
}
