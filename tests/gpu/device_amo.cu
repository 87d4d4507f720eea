// Device atomics under contention: every thread of every block of every PE updates every PE's
// counters, while the host issues atomics on the same counters; totals must be exact. Tickets
// from fetch_inc must be unique (checked with fetch_or on a bitmap), bitwise AMOs must combine
// exactly, compare_swap loops must not lose increments, and fetch/set/swap must move values.
#include <thread>

#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr int kBlocks = 8;
constexpr int kThreads = 256;
constexpr int kHostAdds = 2000;

struct Counters {
  unsigned long long add64;
  unsigned long long host_and_device;
  unsigned long long tickets;
  unsigned long long cas64;
  unsigned int add32;
  unsigned int cas32;
  unsigned long long xor64;
  unsigned long long and64;
  unsigned long long or64;
};

__global__ void contention_kernel(Counters* c, unsigned long long* bitmap, int* dup) {
  const int n = shmem_n_pes();
  const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long me = static_cast<unsigned long long>(shmem_my_pe());
  for (int k = 0; k < n; ++k) {
    const int pe = (shmem_my_pe() + k) % n;  // spread the start over PEs
    shmem_ulonglong_atomic_add(&c->add64, 1, pe);
    shmem_uint_atomic_inc(&c->add32, pe);
    shmem_uint64_atomic_fetch_add(reinterpret_cast<uint64_t*>(&c->host_and_device), 2, pe);
    shmem_ulonglong_atomic_xor(&c->xor64, (me * 131 + gtid) * 0x9E3779B97F4A7C15ull, pe);
    // Each (PE, thread) owns one bit of and64/or64 per 64 threads: bit = gtid % 64.
    if (gtid < 64 && me == 0) {
      shmem_ulonglong_atomic_and(&c->and64, ~(1ull << gtid), pe);
      shmem_uint64_atomic_fetch_or(reinterpret_cast<uint64_t*>(&c->or64), 1ull << gtid, pe);
    }
  }
  // Tickets from PE 0: unique, dense; fetch_or proves that no two threads got the same one.
  unsigned long long t = shmem_ulonglong_atomic_fetch_inc(&c->tickets, 0);
  unsigned long long old = shmem_ulonglong_atomic_fetch_or(&bitmap[t / 64], 1ull << (t % 64), 0);
  if (old & (1ull << (t % 64))) atomicAdd(dup, 1);
  // compare_swap loops, one lane per warp (512 contenders with 8 PEs).
  if (threadIdx.x % 32 == 0) {
    const int pe = (shmem_my_pe() + 1) % n;
    unsigned long long v = shmem_ulonglong_atomic_fetch(&c->cas64, pe);
    for (;;) {
      unsigned long long prev = shmem_ulonglong_atomic_compare_swap(&c->cas64, v, v + 1, pe);
      if (prev == v) break;
      v = prev;
    }
    unsigned int w = shmem_uint_atomic_fetch(&c->cas32, pe);
    for (;;) {
      unsigned int prev = shmem_uint_atomic_compare_swap(&c->cas32, w, w + 3, pe);
      if (prev == w) break;
      w = prev;
    }
  }
}

// Typed add / fetch_inc over every standard AMO type: each thread adds 1 and fetch_incs at
// every PE; totals per type are 2 * n * threads.
#define TYPED_KERNEL(NAME, TYPE)                                 \
  __global__ void typed_##NAME(TYPE* cell) {                     \
    const int n = shmem_n_pes();                                 \
    for (int k = 0; k < n; ++k) {                                \
      int pe = (shmem_my_pe() + k) % n;                          \
      shmem_##NAME##_atomic_add(cell, static_cast<TYPE>(1), pe); \
      TYPE f;                                                    \
      shmem_##NAME##_atomic_fetch_inc_nbi(&f, cell, pe);         \
      (void)f;                                                   \
    }                                                            \
  }
VSHMEMI_DEV_AMO_STANDARD_TYPES(TYPED_KERNEL)

// fetch/set/swap on the extended types (float, double): PE me sets next's cell, swaps, fetches.
__global__ void extended_kernel(float* f, double* d, float fv, double dv, float* out_f,
                                double* out_d) {
  const int next = (shmem_my_pe() + 1) % shmem_n_pes();
  shmem_float_atomic_set(f, fv, next);
  shmem_quiet();
  out_f[0] = shmem_float_atomic_fetch(f, next);
  out_d[0] = shmem_double_atomic_swap(d, dv, next);
  shmem_double_atomic_fetch_nbi(&out_d[1], d, next);
  out_f[1] = shmem_float_atomic_swap(f, fv * 2, next);
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_amo");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const uint64_t salt = common_salt();
  const unsigned total_threads = kBlocks * kThreads;

  auto* c = static_cast<Counters*>(shmem_malloc(sizeof(Counters)));
  const size_t bitmap_words = (static_cast<size_t>(n) * total_threads + 63) / 64;
  auto* bitmap = static_cast<unsigned long long*>(shmem_malloc(bitmap_words * 8));
  Counters init{};
  init.add64 = salt;  // not zero: the totals are offsets from a random start
  init.host_and_device = salt >> 3;
  init.cas64 = salt >> 5;
  init.add32 = static_cast<unsigned>(salt);
  init.cas32 = static_cast<unsigned>(salt >> 7);
  init.xor64 = salt * 7;
  init.and64 = ~0ull;
  init.or64 = 0;
  CUDA_OK(cudaMemcpy(c, &init, sizeof(init), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(bitmap, 0, bitmap_words * 8));
  int* dup = nullptr;
  CUDA_OK(cudaMalloc(&dup, sizeof(int)));
  CUDA_OK(cudaMemset(dup, 0, sizeof(int)));
  CUDA_OK(cudaDeviceSynchronize());
  shmem_barrier_all();

  phase("contention (device and host atomics)");
  // The host adds 1 to every PE's host_and_device counter while the kernels add 2.
  contention_kernel<<<kBlocks, kThreads>>>(c, bitmap, dup);
  CUDA_OK(cudaGetLastError());
  for (int i = 0; i < kHostAdds; ++i) {
    shmem_uint64_atomic_add(reinterpret_cast<uint64_t*>(&c->host_and_device), 1, (me + i) % n);
  }
  CUDA_OK(cudaDeviceSynchronize());
  shmem_barrier_all();

  Counters got{};
  CUDA_OK(cudaMemcpy(&got, c, sizeof(got), cudaMemcpyDeviceToHost));
  const unsigned long long all = static_cast<unsigned long long>(n) * total_threads;
  EXPECT(got.add64 == init.add64 + all, "add64 %llu, want %llu", got.add64, init.add64 + all);
  EXPECT(got.add32 == init.add32 + static_cast<unsigned>(all), "add32");
  // Host adds: every PE adds kHostAdds in total, spread round-robin from PE me.
  unsigned long long host_here = 0;
  for (int pe = 0; pe < n; ++pe) {
    for (int i = 0; i < kHostAdds; ++i) host_here += (pe + i) % n == me;
  }
  EXPECT(got.host_and_device == init.host_and_device + 2 * all + host_here,
         "host+device adds %llu, want %llu", got.host_and_device,
         init.host_and_device + 2 * all + host_here);
  unsigned long long x = init.xor64;
  for (int pe = 0; pe < n; ++pe) {
    for (unsigned t = 0; t < total_threads; ++t) {
      x ^= (static_cast<unsigned long long>(pe) * 131 + t) * 0x9E3779B97F4A7C15ull;
    }
  }
  EXPECT(got.xor64 == x, "xor64");
  EXPECT(got.and64 == 0, "and64 %#llx", got.and64);
  EXPECT(got.or64 == ~0ull, "or64 %#llx", got.or64);
  const unsigned warps_per_pe = total_threads / 32;
  EXPECT(got.cas64 == init.cas64 + warps_per_pe, "cas64");
  EXPECT(got.cas32 == init.cas32 + 3 * warps_per_pe, "cas32");
  int dups = 0;
  CUDA_OK(cudaMemcpy(&dups, dup, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(dups == 0, "%d duplicate tickets", dups);
  if (me == 0) {
    EXPECT(got.tickets == all, "tickets %llu want %llu", got.tickets, all);
    auto bits = to_host(bitmap, bitmap_words);
    for (unsigned long long t = 0; t < all; ++t) {
      EXPECT(bits[t / 64] & (1ull << (t % 64)), "ticket %llu never handed out", t);
    }
  }
  shmem_barrier_all();

  // Every standard type.
  phase("typed add/fetch_inc");
#define RUN_TYPED(NAME, TYPE)                                                               \
  {                                                                                         \
    auto* cell = static_cast<TYPE*>(shmem_malloc(sizeof(TYPE)));                            \
    TYPE start = static_cast<TYPE>(salt % 1000);                                            \
    CUDA_OK(cudaMemcpy(cell, &start, sizeof(TYPE), cudaMemcpyHostToDevice));                \
    CUDA_OK(cudaDeviceSynchronize());                                                       \
    shmem_barrier_all();                                                                    \
    typed_##NAME<<<2, 128>>>(cell);                                                         \
    CUDA_OK(cudaDeviceSynchronize());                                                       \
    shmem_barrier_all();                                                                    \
    TYPE v;                                                                                 \
    CUDA_OK(cudaMemcpy(&v, cell, sizeof(TYPE), cudaMemcpyDeviceToHost));                    \
    EXPECT(v == static_cast<TYPE>(start + 2 * n * 256), #NAME " total %lld", (long long)v); \
    shmem_barrier_all();                                                                    \
    shmem_free(cell);                                                                       \
  }
  VSHMEMI_DEV_AMO_STANDARD_TYPES(RUN_TYPED)

  // Extended types.
  {
    phase("extended fetch/set/swap");
    auto* f = static_cast<float*>(shmem_malloc(sizeof(float)));
    auto* d = static_cast<double*>(shmem_malloc(sizeof(double)));
    float* out_f = nullptr;
    double* out_d = nullptr;
    CUDA_OK(cudaMalloc(&out_f, 2 * sizeof(float)));
    CUDA_OK(cudaMalloc(&out_d, 2 * sizeof(double)));
    const double d0 = static_cast<double>(salt % 100000) + 0.25;
    CUDA_OK(cudaMemcpy(d, &d0, sizeof(double), cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    shmem_barrier_all();
    const float fv = static_cast<float>(me * 10 + 1) + 0.5f;
    const double dv = static_cast<double>(me) * 1000.0 + 0.125;
    extended_kernel<<<1, 1>>>(f, d, fv, dv, out_f, out_d);
    CUDA_OK(cudaDeviceSynchronize());
    shmem_barrier_all();
    auto of = to_host(out_f, 2);
    auto od = to_host(out_d, 2);
    EXPECT(of[0] == fv && of[1] == fv, "float fetch/swap %f %f want %f", of[0], of[1], fv);
    EXPECT(od[0] == d0 && od[1] == dv, "double swap/fetch %f %f", od[0], od[1]);
    const int prev = (me + n - 1) % n;
    float fl = to_host(f, 1)[0];
    EXPECT(fl == (static_cast<float>(prev * 10 + 1) + 0.5f) * 2, "float swap result %f", fl);
    cudaFree(out_f);
    cudaFree(out_d);
  }

  phase("finalize");
  shmem_finalize();
  if (me == 0) std::printf("device_amo: OK\n");
  return 0;
}
