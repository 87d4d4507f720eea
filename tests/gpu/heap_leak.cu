// shmem_finalize gives the GPU heap back: over two init/finalize cycles, each of which grows the
// heap across many chunks and moves data through it, the device's free memory returns to what it
// was before the first shmem_init (within a fixed tolerance for the driver's own one-time
// overhead: module loads, streams), and the heap's addresses (ours and the peer's window) are no
// longer mapped. tests/mpe/teardown.c checks the same on the host backend.
//
// cudaMemGetInfo counts the whole device, so PEs sharing the GPU see each other: the baseline is
// the lowest value measured before shmem_init by the PEs on this GPU (each measures after
// creating its own context, so the last one to measure saw every PE's context), and every PE
// takes part in one more init/finalize after its last check, so that no PE exits (and gives its
// context back, which would hide a leak) while another still measures.
#include <cstdarg>
#include <cstring>
#include <deque>
#include <string>

#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr int kCycles = 2;
// A few hundred MiB: the heap grows across many chunks (VSHMEM_HEAP_CHUNK_SIZE, 32M by default).
constexpr size_t kBytes = (300ull << 20) + 12345;
constexpr size_t kSlice = (1ull << 20) + 7;  // bytes moved at each checked offset
constexpr size_t kTolerance = 96ull << 20;   // the driver's own overhead (module loads, streams)
constexpr int kSettleMs = 10000;             // how long a PE waits for the free memory to return

constexpr double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// Outside shmem_init/shmem_finalize shmem_my_pe() and shmem_global_exit() are not usable: these
// failures name the PE we keep and end this process (vshmemrun then stops the others).
std::string g_who = "PE ? (before shmem_init)";

__attribute__((format(printf, 1, 2))) [[noreturn]] void fail_outside(const char* fmt, ...) {
  std::fprintf(stderr, "%s: ", g_who.c_str());
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::exit(1);
}

#define CUDA_OUTSIDE(expr)                                                              \
  do {                                                                                  \
    cudaError_t e_ = (expr);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fail_outside("%s:%d: %s: %s", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
    }                                                                                   \
  } while (0)

// Phase names that outlive the call (the watchdog reads them), set without shmem_my_pe() so that
// they work between shmem_finalize and the next shmem_init too.
__attribute__((format(printf, 1, 2))) const char* name(const char* fmt, ...) {
  static std::deque<std::string> names;
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  names.emplace_back(buf);
  return names.back().c_str();
}
void phase_outside(const char* name) {
  phase_started() = now_s();
  current_phase() = name;
}

// Byte i of a region that `pe` filled with pattern(salt, pe, word).
unsigned char pattern_byte(uint64_t salt, int pe, size_t i) {
  return static_cast<unsigned char>(pattern(salt, pe, i / 8) >> (8 * (i % 8)));
}

// What the device says about an address: its memory type, or the error it returned (cleared).
struct PointerInfo {
  cudaError_t error = cudaSuccess;
  cudaMemoryType type = cudaMemoryTypeUnregistered;
  int device = -1;
};
PointerInfo pointer_info(const void* p) {
  cudaPointerAttributes attr;
  std::memset(&attr, 0, sizeof(attr));
  PointerInfo info;
  info.error = cudaPointerGetAttributes(&attr, p);
  cudaGetLastError();
  if (info.error == cudaSuccess) {
    info.type = attr.type;
    info.device = attr.device;
  }
  return info;
}

const char* type_name(cudaMemoryType t) {
  switch (t) {
    case cudaMemoryTypeUnregistered: return "unregistered";
    case cudaMemoryTypeHost: return "host";
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeManaged: return "managed";
  }
  return "unknown";
}

// A value all PEs agree on: PE 0's, sent to everyone through the heap.
uint64_t agreed(uint64_t mine) {
  auto* slot = static_cast<uint64_t*>(shmem_malloc(sizeof(uint64_t)));
  EXPECT(slot != nullptr, "shmem_malloc(8)");
  if (shmem_my_pe() == 0) {
    for (int pe = 0; pe < shmem_n_pes(); ++pe) shmem_putmem(slot, &mine, sizeof(mine), pe);
  }
  shmem_barrier_all();
  uint64_t v = 0;
  shmem_getmem(&v, slot, sizeof(v), shmem_my_pe());
  shmem_barrier_all();
  shmem_free(slot);
  return v;
}

// What each PE measured before its first shmem_init, and on which GPU.
struct Baseline {
  unsigned char uuid[16];
  uint64_t free_before;
};

// The lowest pre-init free memory among the PEs on our GPU (see the comment at the top).
uint64_t gpu_baseline(const Baseline& mine) {
  const int n = shmem_n_pes();
  auto* all = static_cast<Baseline*>(shmem_malloc(n * sizeof(Baseline)));
  EXPECT(all != nullptr, "shmem_malloc(%zu)", n * sizeof(Baseline));
  for (int pe = 0; pe < n; ++pe) shmem_putmem(all + shmem_my_pe(), &mine, sizeof(mine), pe);
  shmem_barrier_all();
  std::vector<Baseline> got(n);
  shmem_getmem(got.data(), all, n * sizeof(Baseline), shmem_my_pe());
  shmem_barrier_all();
  shmem_free(all);
  uint64_t lowest = mine.free_before;
  for (const Baseline& b : got) {
    if (std::memcmp(b.uuid, mine.uuid, sizeof(b.uuid)) == 0 && b.free_before < lowest) {
      lowest = b.free_before;
    }
  }
  return lowest;
}

// Puts a slice at `off` to the next PE, then reads it back from there and checks what the
// previous PE put into our copy.
void move_and_check(char* heap, size_t off, uint64_t salt, int cycle) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  std::vector<unsigned char> out(kSlice), back(kSlice), ours(kSlice);
  for (size_t i = 0; i < kSlice; ++i) out[i] = pattern_byte(salt, me, off + i);
  shmem_putmem(heap + off, out.data(), kSlice, next);
  shmem_barrier_all();
  shmem_getmem(back.data(), heap + off, kSlice, next);
  shmem_getmem(ours.data(), heap + off, kSlice, me);
  for (size_t i = 0; i < kSlice; ++i) {
    EXPECT(back[i] == out[i], "cycle %d: byte %zu of the heap read back from PE %d: %#x, put %#x",
           cycle, off + i, next, back[i], out[i]);
    const unsigned char want = pattern_byte(salt, prev, off + i);
    EXPECT(ours[i] == want, "cycle %d: byte %zu of our heap (put by PE %d): %#x, want %#x", cycle,
           off + i, prev, ours[i], want);
  }
  shmem_barrier_all();
}

}  // namespace

int main() {
  require_gpu();
  if (const char* r = std::getenv("VSHMEM_RANK")) g_who = name("PE %s (before shmem_init)", r);
  // The GPU the runtime will put the heap on: VSHMEM_DEVICE (vshmemrun sets it), else the device
  // of the context current here (device 0 unless set).
  int device = 0, count = 0;
  CUDA_OUTSIDE(cudaGetDeviceCount(&count));
  if (const char* d = std::getenv("VSHMEM_DEVICE")) {
    char* end = nullptr;
    const long v = std::strtol(d, &end, 10);
    if (end != d && *end == '\0' && v >= 0 && v < count) device = static_cast<int>(v);
  }
  CUDA_OUTSIDE(cudaSetDevice(device));
  CUDA_OUTSIDE(cudaFree(nullptr));  // the context exists before the baseline is measured
  Baseline own{};
  {
    cudaDeviceProp prop;
    CUDA_OUTSIDE(cudaGetDeviceProperties(&prop, device));
    static_assert(sizeof(prop.uuid.bytes) == sizeof(own.uuid), "a CUDA UUID has 16 bytes");
    std::memcpy(own.uuid, prop.uuid.bytes, sizeof(own.uuid));
    size_t free_b = 0, total_b = 0;
    CUDA_OUTSIDE(cudaMemGetInfo(&free_b, &total_b));
    own.free_before = free_b;
  }

  int me = -1, n = 0;
  uint64_t baseline = own.free_before;
  uint64_t salt_seed = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    g_who = name("PE %d", me);
    if (cycle == 0) {
      print_seed("gpu_heap_leak");
      phase("baseline");
      baseline = gpu_baseline(own);
      salt_seed = agreed(seed());
    }
    int dev_now = -1;
    CUDA_OK(cudaGetDevice(&dev_now));
    EXPECT(dev_now == device, "cycle %d: the heap's GPU is %d, the baseline was measured on %d",
           cycle, dev_now, device);
    const int next = (me + 1) % n;

    phase(name("cycle %d: shmem_malloc(%zu)", cycle, kBytes));
    auto* heap = static_cast<char*>(shmem_malloc(kBytes));
    EXPECT(heap != nullptr, "cycle %d: shmem_malloc(%zu) returned NULL", cycle, kBytes);
    // The addresses checked after shmem_finalize: our first and last byte, and the next PE's
    // copy in our window where it is mapped. Before, they must be device memory, or the check
    // after would prove nothing.
    const char* watched[3] = {heap, heap + kBytes - 1,
                              static_cast<const char*>(shmem_ptr(heap + kBytes - 1, next))};
    const int n_watched = watched[2] != nullptr && next != me ? 3 : 2;
    for (int w = 0; w < n_watched; ++w) {
      const PointerInfo info = pointer_info(watched[w]);
      EXPECT(info.error == cudaSuccess && info.type == cudaMemoryTypeDevice,
             "cycle %d: heap address %p is not device memory while initialized: %s, type %s", cycle,
             static_cast<const void*>(watched[w]), cudaGetErrorString(info.error),
             type_name(info.type));
    }

    phase(name("cycle %d: put/get across the heap", cycle));
    const uint64_t salt = salt_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(cycle);
    const size_t offsets[] = {0, kBytes / 2 + 1, kBytes - kSlice};
    for (size_t off : offsets) move_and_check(heap, off, salt, cycle);

    phase(name("cycle %d: shmem_free, shmem_finalize", cycle));
    shmem_barrier_all();
    shmem_free(heap);
    shmem_finalize();

    // From here until the next shmem_init, no shmem call: checks print and exit.
    phase_outside(name("PE %d cycle %d: device memory after shmem_finalize", me, cycle));
    CUDA_OUTSIDE(cudaDeviceSynchronize());
    size_t free_after = 0, total = 0;
    CUDA_OUTSIDE(cudaMemGetInfo(&free_after, &total));
    // A peer's provider may still be closing (after the last barrier of shmem_finalize).
    for (int waited = 0; free_after + kTolerance < baseline && waited < kSettleMs; waited += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      CUDA_OUTSIDE(cudaMemGetInfo(&free_after, &total));
    }
    const long long missing = static_cast<long long>(baseline) - static_cast<long long>(free_after);
    std::printf(
        "PE %d cycle %d: free device memory %llu bytes (%.1f MiB) after shmem_finalize, %llu "
        "(%.1f MiB) before shmem_init (GPU baseline; this PE measured %llu): %+.1f MiB\n",
        me, cycle, static_cast<unsigned long long>(free_after), mib(free_after),
        static_cast<unsigned long long>(baseline), mib(baseline),
        static_cast<unsigned long long>(own.free_before),
        -static_cast<double>(missing) / (1 << 20));
    std::fflush(stdout);
    if (free_after + kTolerance < baseline) {
      fail_outside(
          "cycle %d: device memory not returned by shmem_finalize: %llu bytes free after, %llu "
          "before shmem_init: %lld bytes (%.1f MiB) missing, tolerance %zu bytes (%.0f MiB)",
          cycle, static_cast<unsigned long long>(free_after),
          static_cast<unsigned long long>(baseline), missing,
          static_cast<double>(missing) / (1 << 20), kTolerance, mib(kTolerance));
    }

    phase_outside(name("PE %d cycle %d: heap addresses after shmem_finalize", me, cycle));
    for (int w = 0; w < n_watched; ++w) {
      const PointerInfo info = pointer_info(watched[w]);
      if (info.error == cudaSuccess && info.type != cudaMemoryTypeUnregistered) {
        fail_outside("cycle %d: %s %p is still mapped after shmem_finalize (type %s, device %d)",
                     cycle,
                     w == 2 ? "our window's copy of the next PE's heap at" : "the heap address",
                     static_cast<const void*>(watched[w]), type_name(info.type), info.device);
      }
    }
  }

  // Nobody exits (giving its context back) while a peer still measures; and once every PE is
  // here, every PE has passed its checks.
  shmem_init();
  phase("all PEs checked");
  shmem_barrier_all();
  shmem_finalize();
  if (me == 0) std::printf("gpu_heap_leak: OK\n");
  return 0;
}
