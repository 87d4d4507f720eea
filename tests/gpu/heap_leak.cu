// shmem_finalize gives the GPU heap back: over three init/finalize cycles, each of which grows the
// heap across many chunks and moves data through it, the device's free memory returns to what it
// was before the first shmem_init, and the heap's addresses (ours and the peer's window) are no
// longer mapped. tests/mpe/teardown.c checks the same on the host backend.
//
// Two checks on the free memory after each shmem_finalize:
//  - against the baseline measured before the first shmem_init, within the driver's one-time
//    overhead per process (what a context keeps once it has run this code: local memory for the
//    kernels, the CUDA runtime's internal buffers), kOneTime per PE on the GPU. Module loads are
//    paid before the baseline (CUDA_MODULE_LOADING=EAGER unless the environment says otherwise).
//  - against the free memory after the first cycle, within kPerCycle for the whole GPU: less
//    than one 2 MiB granule, so a single chunk, table or stream buffer kept per cycle fails.
//
// cudaMemGetInfo counts the whole device, so PEs sharing the GPU see each other: the baseline is
// the lowest value measured before shmem_init by the PEs on this GPU (each measures after
// creating its own context, so the last one to measure saw every PE's context), the reference
// after the first cycle is the highest value the PEs on this GPU measured then (the most settled
// one), and every PE takes part in one more init/finalize after its last check, so that no PE
// exits (and gives its context back, which would hide a leak) while another still measures.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>

#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr int kCycles = 3;
// A few hundred MiB: the heap grows across many chunks (VSHMEM_HEAP_CHUNK_SIZE, 32M by default).
constexpr size_t kBytes = (300ull << 20) + 12345;
constexpr size_t kSlice = (1ull << 20) + 7;  // bytes moved at each checked offset
// Per PE: the driver's one-time overhead. Measured on the H200 with modules loaded eagerly:
// 2 MiB per PE (8 MiB for 4 PEs); lazily loaded modules made it 68 MiB.
constexpr size_t kOneTime = 16ull << 20;
constexpr size_t kPerCycle = 1ull << 20;  // per GPU: what may differ from cycle to cycle
constexpr int kSettleMs = 10000;          // how long a PE waits for the free memory to return
constexpr int kStableMs = 300;            // a value unchanged this long has settled

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

// A value each PE measured, and on which GPU.
struct Measured {
  unsigned char uuid[16];
  uint64_t free_bytes;
};

// What the PEs on our GPU measured: how many there are, the lowest and the highest value.
struct OnGpu {
  int pes = 0;
  uint64_t lowest = 0, highest = 0;
};
OnGpu on_our_gpu(const Measured& mine) {
  const int n = shmem_n_pes();
  auto* all = static_cast<Measured*>(shmem_malloc(n * sizeof(Measured)));
  EXPECT(all != nullptr, "shmem_malloc(%zu)", n * sizeof(Measured));
  for (int pe = 0; pe < n; ++pe) shmem_putmem(all + shmem_my_pe(), &mine, sizeof(mine), pe);
  shmem_barrier_all();
  std::vector<Measured> got(n);
  shmem_getmem(got.data(), all, n * sizeof(Measured), shmem_my_pe());
  shmem_barrier_all();
  shmem_free(all);
  OnGpu r{0, mine.free_bytes, mine.free_bytes};
  for (const Measured& m : got) {
    if (std::memcmp(m.uuid, mine.uuid, sizeof(m.uuid)) != 0) continue;
    ++r.pes;
    r.lowest = std::min(r.lowest, m.free_bytes);
    r.highest = std::max(r.highest, m.free_bytes);
  }
  return r;
}

// Free device memory once it has stopped changing (peers on this GPU may still be releasing
// theirs after the last barrier of shmem_finalize; none can allocate again before every PE has
// entered the next shmem_init, whose topology exchange comes before any allocation): returns as
// soon as it reaches `want`, else when unchanged for kStableMs, else after kSettleMs.
uint64_t settled_free(uint64_t want) {
  size_t free_b = 0, total = 0;
  CUDA_OUTSIDE(cudaMemGetInfo(&free_b, &total));
  uint64_t last = free_b;
  int unchanged = 0;
  for (int waited = 0; free_b < want && waited < kSettleMs && unchanged < kStableMs; waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CUDA_OUTSIDE(cudaMemGetInfo(&free_b, &total));
    unchanged = free_b == last ? unchanged + 20 : 0;
    last = free_b;
  }
  return free_b;
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
  // Every module is loaded with the context, before the baseline: loading is the driver's cost,
  // and a lazily loaded module would otherwise count against the first cycle.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
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
  Measured before{};
  {
    cudaDeviceProp prop;
    CUDA_OUTSIDE(cudaGetDeviceProperties(&prop, device));
    static_assert(sizeof(prop.uuid.bytes) == sizeof(before.uuid), "a CUDA UUID has 16 bytes");
    std::memcpy(before.uuid, prop.uuid.bytes, sizeof(before.uuid));
    size_t free_b = 0, total_b = 0;
    CUDA_OUTSIDE(cudaMemGetInfo(&free_b, &total_b));
    before.free_bytes = free_b;
  }

  int me = -1, n = 0;
  uint64_t baseline = before.free_bytes;  // lowest on our GPU before the first shmem_init
  uint64_t one_time = kOneTime;           // kOneTime per PE on our GPU
  uint64_t reference = 0;                 // highest on our GPU after the first cycle
  Measured after_first = before;
  uint64_t salt_seed = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    g_who = name("PE %d", me);
    if (cycle == 0) {
      print_seed("gpu_heap_leak");
      phase("baseline");
      const OnGpu b = on_our_gpu(before);
      baseline = b.lowest;
      one_time = kOneTime * static_cast<uint64_t>(b.pes);
      salt_seed = agreed(seed());
      if (me == 0) {
        std::printf("gpu_heap_leak: %d PEs on PE 0's GPU, one-time allowance %.0f MiB\n", b.pes,
                    mib(one_time));
      }
    } else if (cycle == 1) {
      phase("reference after the first cycle");
      reference = on_our_gpu(after_first).highest;
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
    // After the first cycle, wait until the GPU's free memory settles (it becomes the reference);
    // after the others, until it is back at the reference.
    const uint64_t want = cycle == 0 ? UINT64_MAX : reference - std::min(reference, kPerCycle);
    const uint64_t free_after = settled_free(want);
    std::printf(
        "PE %d cycle %d: free device memory after shmem_finalize %.1f MiB: %+.1f MiB from before "
        "the first shmem_init (lowest on this GPU; this PE measured %.1f MiB)%s\n",
        me, cycle, mib(free_after), mib(free_after) - mib(baseline), mib(before.free_bytes),
        cycle == 0 ? ""
                   : name(", %+.1f MiB from after the first cycle (highest on this GPU)",
                          mib(free_after) - mib(reference)));
    std::fflush(stdout);
    if (free_after + one_time < baseline) {
      fail_outside(
          "cycle %d: device memory not returned by shmem_finalize: %llu bytes free after, %llu "
          "before the first shmem_init: %.1f MiB missing, more than the driver's one-time "
          "overhead (%.0f MiB for the PEs on this GPU)",
          cycle, static_cast<unsigned long long>(free_after),
          static_cast<unsigned long long>(baseline), mib(baseline - free_after), mib(one_time));
    }
    if (cycle == 0) {
      after_first.free_bytes = free_after;
    } else if (free_after + kPerCycle < reference) {
      fail_outside(
          "cycle %d: device memory lost since the first cycle: %llu bytes free after "
          "shmem_finalize, %llu after the first cycle's: %.1f MiB missing (tolerance %.0f MiB)",
          cycle, static_cast<unsigned long long>(free_after),
          static_cast<unsigned long long>(reference), mib(reference - free_after), mib(kPerCycle));
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
