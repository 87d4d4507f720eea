// Device RMA in kernels: put/get/p/g/iput/iget in thread, warp and block forms, aligned and
// misaligned, to the next PE of a ring, to ourselves, and all-to-all. Data is fresh per run,
// destinations are poisoned first, and every byte is checked by its receiver.
#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr size_t kWords = 4096;  // uint64 per region
constexpr int kThreads = 256;

// Every thread puts its own slice (thread form); the warp puts its slice (warp form); the block
// puts the whole region (block form, with a byte skew to exercise heads and tails).
__global__ void put_kernel(uint64_t* sym, const uint64_t* src, int form, size_t skew_dst,
                           size_t skew_src) {
  const int to = (shmem_my_pe() + 1) % shmem_n_pes();
  const size_t per_thread = kWords / kThreads;
  if (form == 0) {
    size_t off = threadIdx.x * per_thread;
    shmem_uint64_put(sym + off, src + off, per_thread, to);
  } else if (form == 1) {
    const size_t per_warp = kWords / (kThreads / 32);
    size_t off = (threadIdx.x / 32) * per_warp;
    shmemx_uint64_put_warp(sym + off, src + off, per_warp, to);
  } else if (form == 2) {
    shmemx_putmem_block(reinterpret_cast<char*>(sym) + skew_dst,
                        reinterpret_cast<const char*>(src) + skew_src, kWords * 8 - 16, to);
  } else if (form == 3) {
    size_t off = threadIdx.x * per_thread;
    shmem_putmem_nbi(sym + off, src + off, per_thread * 8, to);
    shmem_quiet();
  } else if (form == 4) {
    shmemx_put64_nbi_block(sym, src, kWords, to);
  }
}

// Gets from the previous PE's symmetric region into local memory.
__global__ void get_kernel(uint64_t* local, const uint64_t* sym, int form) {
  const int n = shmem_n_pes();
  const int from = (shmem_my_pe() + n - 1) % n;
  const size_t per_thread = kWords / kThreads;
  if (form == 0) {
    size_t off = threadIdx.x * per_thread;
    shmem_uint64_get(local + off, sym + off, per_thread, from);
  } else if (form == 1) {
    const size_t per_warp = kWords / (kThreads / 32);
    size_t off = (threadIdx.x / 32) * per_warp;
    shmemx_getmem_warp(local + off, sym + off, per_warp * 8, from);
  } else if (form == 2) {
    shmemx_uint64_get_block(local, sym, kWords, from);
  } else if (form == 3) {
    size_t off = threadIdx.x * per_thread;
    shmem_get64_nbi(local + off, sym + off, per_thread, from);
    shmem_quiet();
  }
}

// p/g and strided forms.
__global__ void pg_kernel(int* sym_int, double* sym_dbl, uint32_t* sym_strided, int salt_bits,
                          double dval, const uint32_t* src_strided, uint32_t* got) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int to = (me + 1) % n;
  if (threadIdx.x < 64) shmem_int_p(sym_int + threadIdx.x, salt_bits + me * 64 + threadIdx.x, to);
  if (threadIdx.x == 64) shmem_double_p(sym_dbl, dval, to);
  if (threadIdx.x == 65) shmem_iput32(sym_strided, src_strided, 3, 2, 100, to);
  // iget into got with stride 2 from our own region (filled by the host beforehand).
  if (threadIdx.x == 66) shmem_uint32_iget(got, sym_strided + 1000, 2, 5, 50, me);
}

__global__ void g_kernel(const int* sym_int, int* out, int from) {
  out[threadIdx.x] = shmem_int_g(sym_int + threadIdx.x, from);
}

// Block b puts block b of `src` to PE b (all-to-all); PE p's copy is at me's slot.
__global__ void alltoall_kernel(uint64_t* sym, const uint64_t* src, size_t per_pe) {
  const int me = shmem_my_pe();
  const int to = blockIdx.x;
  shmemx_uint64_put_block(sym + me * per_pe, src + to * per_pe, per_pe, to);
}

// Copy shapes (issue #18: the group copy counts its 16-byte words from the destination's 512-byte
// boundary and copies the bytes outside the whole words one per thread). Block b moves case b:
// n[b] bytes from src + soff[b] to PE `to`'s sym + doff[b], in region b of `region` bytes of each;
// form 0 thread 0 (shmem_putmem), 1 warp 0 (shmemx_putmem_warp), 2 the whole block
// (shmemx_putmem_block), 3 the whole block getting from PE `to` (shmemx_getmem_block) into src.
__global__ void shapes_kernel(char* sym, char* src, const size_t* doff, const size_t* soff,
                              const size_t* n, size_t region, int form, int to) {
  char* d = sym + blockIdx.x * region + doff[blockIdx.x];
  char* s = src + blockIdx.x * region + soff[blockIdx.x];
  const size_t len = n[blockIdx.x];
  if (form == 0) {
    if (threadIdx.x == 0) shmem_putmem(d, s, len, to);
  } else if (form == 1) {
    if (threadIdx.x < 32) shmemx_putmem_warp(d, s, len, to);
  } else if (form == 2) {
    shmemx_putmem_block(d, s, len, to);
  } else {
    shmemx_getmem_block(s, d, len, to);
  }
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_rma");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int prev = (me + n - 1) % n;
  const uint64_t salt = common_salt();

  auto* sym = static_cast<uint64_t*>(shmem_malloc(kWords * 8 * (n > 4 ? n : 4)));
  EXPECT(sym != nullptr, "shmem_malloc");
  uint64_t* src = nullptr;
  uint64_t* local = nullptr;
  CUDA_OK(cudaMalloc(&src, kWords * 8 * n));
  CUDA_OK(cudaMalloc(&local, kWords * 8));

  // Puts, five forms.
  phase("puts");
  for (int form = 0; form < 5; ++form) {
    const uint64_t s = salt + form;
    std::vector<uint64_t> mine(kWords), expect(kWords);
    for (size_t i = 0; i < kWords; ++i) {
      mine[i] = pattern(s, me, i);
      expect[i] = pattern(s, prev, i);
    }
    to_device(src, mine);
    poison(sym, kWords * 8);
    sync_device_and_pes();
    const size_t skew_dst = form == 2 ? 3 : 0, skew_src = form == 2 ? (me % 2 ? 3 : 5) : 0;
    put_kernel<<<1, kThreads>>>(sym, src, form, skew_dst, skew_src);
    sync_device_and_pes();
    auto got = to_host(sym, kWords);
    if (form == 2) {
      const auto* gb = reinterpret_cast<const unsigned char*>(got.data());
      // Rebuild prev's source bytes and compare the shifted window byte by byte.
      std::vector<uint64_t> psrc(kWords);
      for (size_t i = 0; i < kWords; ++i) psrc[i] = pattern(s, prev, i);
      const auto* pb = reinterpret_cast<const unsigned char*>(psrc.data());
      const size_t prev_skew = prev % 2 ? 3 : 5;
      for (size_t b = 0; b < kWords * 8 - 16; ++b) {
        EXPECT(gb[skew_dst + b] == pb[prev_skew + b], "putmem_block byte %zu", b);
      }
      EXPECT(gb[0] == 0xA5 && gb[1] == 0xA5 && gb[2] == 0xA5, "bytes before dest were written");
      EXPECT(gb[skew_dst + kWords * 8 - 16] == 0xA5, "byte after dest was written");
    } else {
      for (size_t i = 0; i < kWords; ++i) {
        EXPECT(got[i] == expect[i], "put form %d word %zu: %#llx, want %#llx", form, i,
               (unsigned long long)got[i], (unsigned long long)expect[i]);
      }
    }
  }

  // Gets, four forms: our symmetric region holds our pattern; we read prev's.
  phase("gets");
  for (int form = 0; form < 4; ++form) {
    const uint64_t s = salt * 3 + form;
    std::vector<uint64_t> mine(kWords);
    for (size_t i = 0; i < kWords; ++i) mine[i] = pattern(s, me, i);
    to_device(sym, mine);
    poison(local, kWords * 8);
    sync_device_and_pes();
    get_kernel<<<1, kThreads>>>(local, sym, form);
    sync_device_and_pes();
    auto got = to_host(local, kWords);
    for (size_t i = 0; i < kWords; ++i) {
      EXPECT(got[i] == pattern(s, prev, i), "get form %d word %zu", form, i);
    }
  }

  // p / g / iput / iget.
  {
    phase("p/g/iput/iget");
    auto* sym_int = static_cast<int*>(shmem_malloc(64 * sizeof(int)));
    auto* sym_dbl = static_cast<double*>(shmem_malloc(sizeof(double)));
    auto* sym_str = static_cast<uint32_t*>(shmem_malloc(2000 * sizeof(uint32_t)));
    uint32_t *src_str = nullptr, *got = nullptr;
    int* out = nullptr;
    CUDA_OK(cudaMalloc(&src_str, 400 * sizeof(uint32_t)));
    CUDA_OK(cudaMalloc(&got, 200 * sizeof(uint32_t)));
    CUDA_OK(cudaMalloc(&out, 64 * sizeof(int)));
    const int salt_bits = static_cast<int>(salt & 0xFFFFF);
    std::vector<uint32_t> s_str(400), own(2000);
    for (int i = 0; i < 400; ++i) s_str[i] = static_cast<uint32_t>(pattern(salt, me, i + 7));
    for (int i = 0; i < 2000; ++i) own[i] = static_cast<uint32_t>(pattern(salt, me, i + 9));
    to_device(src_str, s_str);
    poison(sym_int, 64 * sizeof(int));
    poison(sym_dbl, sizeof(double));
    poison(got, 200 * sizeof(uint32_t));
    to_device(sym_str, own);
    sync_device_and_pes();
    const double dval = static_cast<double>(pattern(salt, me, 1) % 1000000) / 7.0;
    pg_kernel<<<1, 128>>>(sym_int, sym_dbl, sym_str, salt_bits, dval, src_str, got);
    sync_device_and_pes();
    auto gi = to_host(sym_int, 64);
    for (int i = 0; i < 64; ++i) EXPECT(gi[i] == salt_bits + prev * 64 + i, "int_p %d", i);
    double gd = to_host(sym_dbl, 1)[0];
    const double pd = static_cast<double>(pattern(salt, prev, 1) % 1000000) / 7.0;
    EXPECT(gd == pd, "double_p: %f want %f", gd, pd);
    auto gs = to_host(sym_str, 2000);
    for (int i = 0; i < 2000; ++i) {
      bool written = i % 3 == 0 && i / 3 < 100;
      uint32_t want = written ? static_cast<uint32_t>(pattern(salt, prev, (i / 3) * 2 + 7))
                              : static_cast<uint32_t>(pattern(salt, me, i + 9));
      EXPECT(gs[i] == want, "iput32 element %d", i);
    }
    auto gg = to_host(got, 200);
    for (int i = 0; i < 200; ++i) {
      uint32_t want = i % 2 == 0 && i / 2 < 50
                          ? static_cast<uint32_t>(pattern(salt, me, 1000 + (i / 2) * 5 + 9))
                          : 0xA5A5A5A5u;
      EXPECT(gg[i] == want, "uint32_iget element %d", i);
    }
    // g from the next PE: its sym_int holds our values (we put them there).
    poison(out, 64 * sizeof(int));
    g_kernel<<<1, 64>>>(sym_int, out, (me + 1) % n);
    sync_device_and_pes();
    auto go = to_host(out, 64);
    for (int i = 0; i < 64; ++i) EXPECT(go[i] == salt_bits + me * 64 + i, "int_g %d", i);
    cudaFree(src_str);
    cudaFree(got);
    cudaFree(out);
  }

  // All-to-all with block puts (including to ourselves: p == me is the address itself).
  {
    phase("all-to-all");
    const size_t per_pe = 512;
    std::vector<uint64_t> mine(per_pe * n);
    for (int to = 0; to < n; ++to) {
      for (size_t i = 0; i < per_pe; ++i) mine[to * per_pe + i] = pattern(salt + to, me, i);
    }
    to_device(src, mine);
    poison(sym, per_pe * n * 8);
    sync_device_and_pes();
    alltoall_kernel<<<n, kThreads>>>(sym, src, per_pe);
    sync_device_and_pes();
    auto got = to_host(sym, per_pe * n);
    for (int from = 0; from < n; ++from) {
      for (size_t i = 0; i < per_pe; ++i) {
        EXPECT(got[from * per_pe + i] == pattern(salt + me, from, i), "alltoall from %d word %zu",
               from, i);
      }
    }
  }

  // Copy shapes: destinations at many offsets from a 512-byte boundary, sources that agree with
  // them modulo 16 (and a few that do not), sizes around 16 and 512 and larger, in every form and
  // in blocks of fewer than 32 threads, not a multiple of 32, and 256. Every byte of every region
  // is checked, the poison around the copy included.
  {
    phase("copy shapes");
    constexpr size_t kRegion = 24 << 10;
    std::vector<size_t> doffs, soffs, lens;
    for (size_t doff : {0, 1, 3, 15, 16, 48, 64, 200, 448, 497, 511}) {
      for (size_t len : {0, 1, 7, 15, 16, 17, 31, 33, 500, 512, 1024, 1040, 4097, 20000}) {
        doffs.push_back(doff);
        soffs.push_back(doff + 16 * (len % 3) + (len == 33 || len == 4097 ? 5 : 0));
        lens.push_back(len);
      }
    }
    const size_t cases = doffs.size();
    // Regions start 512-byte aligned in both buffers, so that doff is the offset from a boundary.
    char* sym_raw = static_cast<char*>(shmem_malloc(cases * kRegion + 512));
    EXPECT(sym_raw != nullptr, "shmem_malloc for copy shapes");
    char* sym_at = sym_raw + (512 - reinterpret_cast<uintptr_t>(sym_raw) % 512) % 512;
    char* src_at = nullptr;
    size_t* params = nullptr;
    CUDA_OK(cudaMalloc(&src_at, cases * kRegion));
    CUDA_OK(cudaMalloc(&params, 3 * cases * sizeof(size_t)));
    std::vector<size_t> all(doffs);
    all.insert(all.end(), soffs.begin(), soffs.end());
    all.insert(all.end(), lens.begin(), lens.end());
    to_device(params, all);
    auto byte_of = [](uint64_t s, int pe, size_t i) {
      return static_cast<unsigned char>(pattern(s, pe, i / 8) >> (8 * (i % 8)));
    };
    const int to = (me + 1) % n;
    struct Launch {
      int form;
      unsigned threads;
    };
    for (const Launch l : {Launch{0, 1}, Launch{1, 32}, Launch{2, 16}, Launch{2, 40},
                           Launch{2, 256}, Launch{3, 40}, Launch{3, 256}}) {
      const uint64_t s = salt * 5 + l.form * 1000 + l.threads;
      const bool get = l.form == 3;
      // A put moves our src to the next PE's sym; a get moves the next PE's sym to our src.
      std::vector<unsigned char> data(cases * kRegion);
      for (size_t i = 0; i < data.size(); ++i) data[i] = byte_of(s, me, i);
      if (get) {
        CUDA_OK(cudaMemcpy(sym_at, data.data(), data.size(), cudaMemcpyHostToDevice));
        poison(src_at, cases * kRegion);
      } else {
        CUDA_OK(cudaMemcpy(src_at, data.data(), data.size(), cudaMemcpyHostToDevice));
        poison(sym_at, cases * kRegion);
      }
      sync_device_and_pes();
      shapes_kernel<<<static_cast<unsigned>(cases), l.threads>>>(
          sym_at, src_at, params, params + cases, params + 2 * cases, kRegion, l.form, to);
      CUDA_OK(cudaGetLastError());
      sync_device_and_pes();
      std::vector<unsigned char> got(cases * kRegion);
      CUDA_OK(cudaMemcpy(got.data(), get ? src_at : sym_at, got.size(), cudaMemcpyDeviceToHost));
      // Put: region b of our sym holds prev's src bytes from soff; get: region b of our src holds
      // the next PE's sym bytes from doff.
      const int from = get ? to : prev;
      for (size_t b = 0; b < cases; ++b) {
        const size_t at = get ? soffs[b] : doffs[b], other = get ? doffs[b] : soffs[b];
        for (size_t i = 0; i < kRegion; ++i) {
          const bool in = i >= at && i < at + lens[b];
          const unsigned char want = in ? byte_of(s, from, b * kRegion + other + (i - at)) : 0xA5;
          EXPECT(got[b * kRegion + i] == want,
                 "copy shapes, form %d, %u threads: %zu bytes, dest offset %zu, source offset "
                 "%zu: byte %zu of the region is %#x, want %#x",
                 l.form, l.threads, lens[b], doffs[b], soffs[b], i, got[b * kRegion + i], want);
        }
      }
    }
    CUDA_OK(cudaFree(src_at));
    CUDA_OK(cudaFree(params));
    shmem_free(sym_raw);
  }

  phase("finalize");
  cudaFree(src);
  cudaFree(local);
  shmem_free(sym);
  shmem_finalize();
  if (me == 0) std::printf("device_rma: OK\n");
  return 0;
}
