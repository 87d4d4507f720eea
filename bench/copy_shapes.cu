// How the device library's group copy (vshmem::device::copy_bytes, behind every _warp/_block put
// and get and the collectives) does on the shapes users cut large messages into, against
// cudaMemcpy device-to-device and two alternatives, in one process on one GPU (issue #18;
// bench/RESULTS.md, run 11). Diagnostic, no target figure:
//   - "library": copy_bytes as shipped (the destination aligned to 512 bytes first);
//   - "16-byte head": the same loop with only the 16-byte alignment it had before;
//   - "warp slices": each warp copies its own contiguous slice (cut at 512-byte boundaries).
// Shapes: one chunk per block (aligned to 16 bytes or odd), pieces dealt round-robin, messages
// that fit in L2, and one block alone. GB/s counts the bytes copied (not read plus written).
//   build/bench/vshmem_copy_shapes
#include <cuda_runtime.h>
#include <shmem.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CK(x)                                                       \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      return 1;                                                     \
    }                                                               \
  } while (0)

namespace {

enum Variant { kLibrary, kHead16, kWarpSlices, kVariants };
const char* const kVariantName[] = {"library", "16-byte head", "warp slices"};

template <int V>
__device__ __forceinline__ void copy(char* d, const char* s, size_t n) {
  if (V == kLibrary) {
    vshmem::device::copy_bytes(d, s, n, threadIdx.x, blockDim.x);
  } else if (V == kHead16) {
    vshmem::device::copy_interleaved(d, s, n, threadIdx.x, blockDim.x);
  } else {
    const unsigned warps = blockDim.x / 32, w = threadIdx.x / 32;
    const size_t lead = (512 - reinterpret_cast<uintptr_t>(d) % 512) % 512;
    const size_t per = (n / warps + 511) / 512 * 512;
    size_t lo = w == 0 ? 0 : lead + w * per, hi = w + 1 == warps ? n : lead + (w + 1) * per;
    lo = lo < n ? lo : n;
    hi = hi < n ? hi : n;
    vshmem::device::copy_interleaved(d + lo, s + lo, hi - lo, threadIdx.x % 32, 32);
  }
}

// Block b copies pieces b, b + gridDim.x, ... of `chunk` bytes, `iters` times.
template <int V>
__global__ void pieces_kernel(char* d, const char* s, size_t bytes, size_t chunk, int iters) {
  const size_t pieces = (bytes + chunk - 1) / chunk;
  for (int it = 0; it < iters; ++it) {
    for (size_t p = blockIdx.x; p < pieces; p += gridDim.x) {
      const size_t off = p * chunk, len = bytes - off < chunk ? bytes - off : chunk;
      copy<V>(d + off, s + off, len);
    }
  }
}

using Kernel = void (*)(char*, const char*, size_t, size_t, int);
const Kernel kKernels[] = {pieces_kernel<kLibrary>, pieces_kernel<kHead16>,
                           pieces_kernel<kWarpSlices>};

struct Shape {
  const char* name;
  unsigned grid, block;
  size_t chunk, offset, bytes;
};

}  // namespace

int main() {
  const size_t kBig = 512ull << 20;
  char *a = nullptr, *b = nullptr;
  CK(cudaMalloc(&a, kBig + 4096));
  CK(cudaMalloc(&b, kBig + 4096));
  CK(cudaMemset(a, 1, kBig + 4096));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // Median of 5 timings of `copies` copies of `bytes`, in GB/s.
  auto gbs = [&](auto launch, size_t bytes, int copies) {
    std::vector<float> ms;
    for (int r = 0; r < 5; ++r) {
      cudaEventRecord(e0);
      launch();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float t = 0;
      cudaEventElapsedTime(&t, e0, e1);
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(bytes) * copies / (ms[2] * 1e-3) / 1e9;
  };
  const int kCopies = 4;
  const double ceiling = gbs(
      [&] {
        for (int i = 0; i < kCopies; ++i) cudaMemcpyAsync(b, a, kBig, cudaMemcpyDeviceToDevice);
      },
      kBig, kCopies);
  std::printf("cudaMemcpy D2D, 512 MiB: %.1f GB/s (the ceiling of every %% below)\n", ceiling);
  const size_t k16 = 16u << 20;
  const Shape shapes[] = {
      {"512 MiB, a 16-aligned chunk/block, 264x1024", 264, 1024, (kBig / 264 + 15) / 16 * 16, 0,
       kBig},
      {"512 MiB, an odd chunk/block, 264x1024", 264, 1024, kBig / 264 + 5, 3, kBig},
      {"512 MiB, an odd chunk/block, 264x512", 264, 512, kBig / 264 + 5, 3, kBig},
      {"512 MiB, an odd chunk/block, 132x1024", 132, 1024, kBig / 132 + 5, 3, kBig},
      {"512 MiB, 256 KiB pieces round-robin", 264, 1024, 256u << 10, 0, kBig},
      {"512 MiB, 256 KiB+3 pieces round-robin", 264, 1024, (256u << 10) + 3, 5, kBig},
      {"512 MiB, 64 KiB pieces round-robin, 512 thr", 264, 512, 64u << 10, 0, kBig},
      {"16 MiB (L2), 256 KiB pieces round-robin", 264, 1024, 256u << 10, 0, k16},
      {"16 MiB (L2), an odd chunk/block, 264x1024", 264, 1024, k16 / 264 + 5, 3, k16},
  };
  for (const Shape& sh : shapes) {
    const size_t n = sh.bytes - sh.offset;
    const int iters = kCopies * static_cast<int>(kBig / sh.bytes);
    for (int v = 0; v < kVariants; ++v) {
      const double g = gbs(
          [&] {
            kKernels[v]<<<sh.grid, sh.block>>>(b + sh.offset, a + sh.offset, n, sh.chunk, iters);
          },
          n, iters);
      CK(cudaGetLastError());
      std::printf("%-46s %-13s %8.1f GB/s %6.1f%%\n", sh.name, kVariantName[v], g,
                  100 * g / ceiling);
    }
  }
  // One block alone: a latency-bound copy (time per copy).
  for (size_t bytes : {size_t{64} << 10, size_t{1} << 20}) {
    for (unsigned threads : {512u, 1024u}) {
      for (int v = 0; v < kVariants; ++v) {
        const int iters = 2000;
        const double g =
            gbs([&] { kKernels[v]<<<1, threads>>>(b, a, bytes, bytes, iters); }, bytes, iters);
        CK(cudaGetLastError());
        std::printf("one block of %4u, %7zu B %-13s %8.3f us a copy\n", threads, bytes,
                    kVariantName[v], bytes / g / 1e3);
      }
    }
  }
  return 0;
}
