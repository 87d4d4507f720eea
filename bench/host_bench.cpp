// Host-API benchmarks: what a CPU thread pays for shmem_init, shmem_malloc (with and without
// heap growth), put/get latency and bandwidth, p/g, ping-pong, atomics, barrier_all and the
// collectives. Runs on either heap backend (VSHMEM_BACKEND=host or cuda); on the cuda backend
// the local buffers are host memory, so the bandwidths there include the PCIe/C2C hop.
//
// Started through vshmemrun (or mpirun); PE 0 writes one JSON line per figure (bench_util.hpp).
// Bandwidths carry a ceiling measured in the same run: memcpy between private buffers, done by
// the same PEs at the same time, so that contention for memory bandwidth is the same on both
// sides of the ratio.
#include <shmem.h>

#include <cinttypes>
#include <memory>
#include <random>

#include "bench/bench_util.hpp"

// The API groups beyond RMA land in libvshmem one by one; reference them weakly so that this
// program links against any library state and reports, at run time, what it could not measure.
#if __has_include("vshmem/shmem_api_more.h")
#define BENCH_HAVE_API_MORE 1
#pragma weak shmem_long_atomic_fetch_add
#pragma weak shmem_long_atomic_add
#pragma weak shmem_long_wait_until
#pragma weak shmem_putmem_signal
#pragma weak shmem_signal_wait_until
#pragma weak SHMEM_TEAM_WORLD
#pragma weak shmem_alltoallmem
#pragma weak shmem_long_sum_reduce
#else
#define BENCH_HAVE_API_MORE 0
#endif

namespace vshmem::bench {
namespace {

constexpr char kGroups[] = "init,malloc,rma_lat,rma_bw,pingpong,amo,barrier,coll";

struct Ctx {
  const Options& opt;
  Reporter& rep;
  int me, npes;
  int reps;
  int lat_iters;
};

// Reads a long of our own symmetric memory through the API: on the cuda backend the heap is
// device memory, which the CPU cannot load from directly.
long read_own(const long* p, int me) { return shmem_long_g(p, me); }

// Makes a fetched value count as used, so that no fetch is optimized away.
void keep(long v) { asm volatile("" ::"r"(v)); }

void fill_random(void* buf, size_t bytes, uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto* w = static_cast<uint64_t*>(buf);
  for (size_t i = 0; i < bytes / 8; ++i) w[i] = gen() | 1;  // never zero
  auto* b = static_cast<unsigned char*>(buf);
  for (size_t i = bytes / 8 * 8; i < bytes; ++i) b[i] = (unsigned char)(gen() | 1);
}

// Runs `body(iters)` on the PEs where `active` holds, reps + 1 times (the first is warm-up), and
// returns the median seconds per iteration. Local timing: PE 0's own clock around its body (PE 0
// must be active). Global timing: PE 0's clock from the barrier before to the barrier after,
// so the slowest active PE sets the figure.
enum class Timing { kLocal, kGlobal };

template <class F>
double timed(const Ctx& c, int iters, bool active, Timing timing, F&& body) {
  std::vector<double> samples;
  for (int r = -1; r < c.reps; ++r) {
    shmem_barrier_all();
    double t0 = now_s();
    if (active) {
      body(iters);
      shmem_quiet();
    }
    double t_local = now_s() - t0;
    shmem_barrier_all();
    double t_global = now_s() - t0;
    if (r >= 0) samples.push_back((timing == Timing::kLocal ? t_local : t_global) / iters);
  }
  return median(samples);
}

std::vector<uint64_t> sweep(uint64_t lo, uint64_t hi, int step_shift) {
  std::vector<uint64_t> v;
  for (uint64_t s = lo; s <= hi; s <<= step_shift) v.push_back(s);
  if (v.empty() || v.back() != hi) v.push_back(hi);
  return v;
}

// From the last PE entering shmem_init to the last one leaving it, on the node's one real-time
// clock: the skew with which the launcher starts the processes is not counted.
void bench_init(const Ctx& c, double t_in, double t_out) {
  auto* t = static_cast<double*>(shmem_malloc(sizeof(double) * 2 * c.npes));
  shmem_double_p(&t[2 * c.me], t_in, 0);
  shmem_double_p(&t[2 * c.me + 1], t_out, 0);
  shmem_barrier_all();
  if (c.me == 0) {
    double last_in = 0, last_out = 0;
    for (int p = 0; p < c.npes; ++p) {
      last_in = std::max(last_in, shmem_double_g(&t[2 * p], 0));
      last_out = std::max(last_out, shmem_double_g(&t[2 * p + 1], 0));
    }
    c.rep.emit({"init", "last_in_to_last_out", 0, (last_out - last_in) * 1e3, "ms", "", NAN, 1, 1});
  }
  shmem_barrier_all();
  shmem_free(t);
}

void bench_malloc(const Ctx& c) {
  // Small allocations served from memory already committed: the cost of the collective call
  // itself (argument agreement + barrier).
  const int n = c.opt.quick ? 50 : 500;
  std::vector<void*> ptrs(n);
  std::vector<double> t_malloc(n), t_free(n);
  for (int i = 0; i < n; ++i) {
    double t0 = now_s();
    ptrs[i] = shmem_malloc(4096);
    t_malloc[i] = now_s() - t0;
    if (!ptrs[i]) {
      fprintf(stderr, "bench: PE %d: shmem_malloc(4096) failed\n", c.me);
      shmem_global_exit(1);
    }
  }
  for (int i = n - 1; i >= 0; --i) {
    double t0 = now_s();
    shmem_free(ptrs[i]);
    t_free[i] = now_s() - t0;
  }
  c.rep.emit({"malloc", "no_growth", 4096, median(t_malloc) * 1e6, "us", "", NAN, n, 1});
  c.rep.emit({"free", "no_growth", 4096, median(t_free) * 1e6, "us", "", NAN, n, 1});

  // Allocations larger than what is committed: each one grows the heap (every PE creates,
  // exports and maps physical chunks). Kept alive so that every step is a fresh growth.
  const uint64_t grow = c.opt.quick ? (64ull << 20) : (128ull << 20);
  const int steps = c.opt.quick ? 2 : 4;
  std::vector<void*> big;
  std::vector<double> t_grow;
  for (int i = 0; i < steps; ++i) {
    double t0 = now_s();
    void* p = shmem_malloc(grow);
    double t = now_s() - t0;
    if (!p) {
      c.rep.progress("malloc growth: shmem_malloc(%s) failed; heap budget too small?",
                     size_str(grow).c_str());
      break;
    }
    big.push_back(p);
    t_grow.push_back(t);
  }
  if (!t_grow.empty()) {
    c.rep.emit({"malloc", "with_growth", grow, median(t_grow) * 1e3, "ms", "", NAN,
                (int)t_grow.size(), 1});
  }
  for (auto it = big.rbegin(); it != big.rend(); ++it) shmem_free(*it);
}

// Point-to-point between PE 0 and PE 1: the other PEs only take part in the barriers.
void bench_rma_lat(const Ctx& c) {
  auto* sym = static_cast<char*>(shmem_malloc(1 << 20));
  std::vector<char> local(1 << 20);
  fill_random(local.data(), local.size(), 42 + c.me);
  long* lsym = reinterpret_cast<long*>(sym);
  const bool active = c.me == 0;
  const int it = c.lat_iters;

  double p = timed(c, it, active, Timing::kLocal, [&](int n) {
    for (int i = 0; i < n; ++i) shmem_long_p(lsym, (long)i + 1, 1);
  });
  c.rep.emit({"p_lat", "long", 8, p * 1e6, "us", "", NAN, it, c.reps});
  long sink = 0;
  double g = timed(c, it, active, Timing::kLocal, [&](int n) {
    for (int i = 0; i < n; ++i) sink += shmem_long_g(lsym, 1);
  });
  keep(sink);
  c.rep.emit({"g_lat", "long", 8, g * 1e6, "us", "", NAN, it, c.reps});

  for (uint64_t s : sweep(8, c.opt.quick ? 4096 : (1 << 20), c.opt.quick ? 4 : 2)) {
    c.rep.progress("rma latency %s", size_str(s).c_str());
    double put = timed(c, it, active, Timing::kLocal, [&](int n) {
      for (int i = 0; i < n; ++i) shmem_putmem(sym, local.data(), s, 1);
    });
    c.rep.emit({"put_lat", "blocking", s, put * 1e6, "us", "", NAN, it, c.reps});
    double get = timed(c, it, active, Timing::kLocal, [&](int n) {
      for (int i = 0; i < n; ++i) shmem_getmem(local.data(), sym, s, 1);
    });
    c.rep.emit({"get_lat", "blocking", s, get * 1e6, "us", "", NAN, it, c.reps});
  }
  shmem_barrier_all();
  shmem_free(sym);
}

// Every even PE sends to the next odd one at the same time (pairs = npes / 2).
void bench_rma_bw(const Ctx& c) {
  const uint64_t max = c.opt.max_bytes ? c.opt.max_bytes : (c.opt.quick ? (1u << 20) : (64u << 20));
  const uint64_t target = c.opt.quick ? (8u << 20) : (512u << 20);
  auto* sym = static_cast<char*>(shmem_malloc(max));
  if (!sym) {
    c.rep.progress("rma_bw: shmem_malloc(%s) failed", size_str(max).c_str());
    return;
  }
  std::unique_ptr<char[]> src(new char[max]), dst(new char[max]);
  fill_random(src.get(), max, 1000 + c.me);
  fill_random(dst.get(), max, 2000 + c.me);
  const int pairs = c.npes / 2;
  const bool sender = c.me % 2 == 0 && c.me + 1 < c.npes;
  const int peer = c.me + 1;
  const int window = 64;

  for (uint64_t s : sweep(8, max, c.opt.quick ? 7 : 3)) {
    c.rep.progress("rma bandwidth %s", size_str(s).c_str());
    const int it = iters_for(s, target, c.opt.quick ? 4 : 16, c.opt.quick ? 2000 : 100000);
    auto gbs = [&](double sec_per_iter) { return (double)s / sec_per_iter / 1e9; };
    double ceil = timed(c, it, sender, Timing::kGlobal, [&](int n) {
      for (int i = 0; i < n; ++i) {
        memcpy(dst.get(), src.get(), s);
        asm volatile("" ::: "memory");  // keep every copy
      }
    });
    struct Variant {
      const char* bench;
      const char* variant;
      void (*op)(void*, const void*, size_t, int);
      bool is_put;
    };
    const Variant variants[] = {
        {"put_bw", "blocking", shmem_putmem, true},
        {"put_bw", "nbi", shmem_putmem_nbi, true},
        {"get_bw", "blocking", shmem_getmem, false},
        {"get_bw", "nbi", shmem_getmem_nbi, false},
    };
    for (const Variant& v : variants) {
      double t = timed(c, it, sender, Timing::kGlobal, [&](int n) {
        for (int i = 0; i < n; ++i) {
          if (v.is_put) {
            v.op(sym, src.get(), s, peer);
          } else {
            v.op(dst.get(), sym, s, peer);
          }
          if ((i + 1) % window == 0) shmem_quiet();
        }
      });
      c.rep.emit({v.bench, v.variant, s, gbs(t), "GB/s", "memcpy", gbs(ceil), it, c.reps});
      if (pairs > 1) {
        c.rep.emit({std::string(v.bench) + "_aggregate", v.variant, s, gbs(t) * pairs, "GB/s",
                    "memcpy", gbs(ceil) * pairs, it, c.reps});
      }
    }
    // What was put must have arrived: PE 0 reads its last put back from PE 1.
    if (c.me == 0 && c.npes > 1) {
      shmem_getmem(dst.get(), sym, s, 1);
      if (memcmp(dst.get(), src.get(), s) != 0) {
        fprintf(stderr, "bench: put_bw %s: data at PE 1 differs from what PE 0 put\n",
                size_str(s).c_str());
        shmem_global_exit(1);
      }
    }
  }
  shmem_barrier_all();
  shmem_free(sym);
}

// Half round trip between PE 0 and PE 1: p of a counter, the peer waits for it and answers.
void bench_pingpong(const Ctx& c) {
  auto* flags = static_cast<long*>(shmem_calloc(2, sizeof(long)));
  long* ping = &flags[0];  // written on PE 1 by PE 0
  long* pong = &flags[1];  // written on PE 0 by PE 1
  long seq = 0;
  auto wait_for = [&](long* var, long value) {
#if BENCH_HAVE_API_MORE
    if (shmem_long_wait_until) {
      shmem_long_wait_until(var, SHMEM_CMP_GE, value);
      return;
    }
#endif
    while (read_own(var, c.me) < value) {
    }
  };
  const int it = c.opt.quick ? 100 : 2000;
  const bool active = c.me < 2;
  std::vector<double> samples;
  for (int r = -1; r < c.reps; ++r) {
    shmem_barrier_all();
    double t0 = now_s();
    if (active) {
      for (int i = 0; i < it; ++i) {
        ++seq;
        if (c.me == 0) {
          shmem_long_p(ping, seq, 1);
          wait_for(pong, seq);
        } else {
          wait_for(ping, seq);
          shmem_long_p(pong, seq, 0);
        }
      }
    }
    double t = now_s() - t0;
    if (r >= 0) samples.push_back(t / it / 2);
  }
  c.rep.emit({"pingpong_lat", "p", 8, median(samples) * 1e6, "us", "", NAN, it, c.reps});

#if BENCH_HAVE_API_MORE
  if (shmem_putmem_signal && shmem_signal_wait_until) {
    auto* sig = static_cast<uint64_t*>(shmem_calloc(2, sizeof(uint64_t)));
    auto* data = static_cast<char*>(shmem_malloc(64));
    char payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t sseq = 0;
    samples.clear();
    for (int r = -1; r < c.reps; ++r) {
      shmem_barrier_all();
      double t0 = now_s();
      if (active) {
        for (int i = 0; i < it; ++i) {
          ++sseq;
          if (c.me == 0) {
            shmem_putmem_signal(data, payload, 8, &sig[0], sseq, SHMEM_SIGNAL_SET, 1);
            shmem_signal_wait_until(&sig[1], SHMEM_CMP_GE, sseq);
          } else {
            shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, sseq);
            shmem_putmem_signal(data, payload, 8, &sig[1], sseq, SHMEM_SIGNAL_SET, 0);
          }
        }
      }
      double t = now_s() - t0;
      if (r >= 0) samples.push_back(t / it / 2);
    }
    c.rep.emit({"pingpong_lat", "put_signal", 8, median(samples) * 1e6, "us", "", NAN, it, c.reps});
    shmem_free(data);
    shmem_free(sig);
  } else {
    c.rep.progress("put_signal ping-pong skipped: shmem_putmem_signal not in this libvshmem");
  }
#endif
  shmem_barrier_all();
  shmem_free(flags);
}

void bench_amo(const Ctx& c) {
#if BENCH_HAVE_API_MORE
  if (!shmem_long_atomic_fetch_add || !shmem_long_atomic_add) {
    c.rep.progress("atomics skipped: shmem_long_atomic_fetch_add not in this libvshmem");
    return;
  }
  auto* ctr = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  const int it = c.lat_iters;
  long sink = 0;
  double lat = timed(c, it, c.me == 0, Timing::kLocal, [&](int n) {
    for (int i = 0; i < n; ++i) sink += shmem_long_atomic_fetch_add(ctr, 1, 1);
  });
  c.rep.emit({"fetch_add_lat", "long", 8, lat * 1e6, "us", "", NAN, it, c.reps});

  // Contention: every PE adds to PE 0's counter. The total is checked afterwards.
  long expected = 0;
  shmem_long_p(ctr, 0, c.me);
  shmem_barrier_all();
  for (int fetching = 1; fetching >= 0; --fetching) {
    double t = timed(c, it, true, Timing::kGlobal, [&](int n) {
      for (int i = 0; i < n; ++i) {
        if (fetching) {
          sink += shmem_long_atomic_fetch_add(ctr, 1, 0);
        } else {
          shmem_long_atomic_add(ctr, 1, 0);
        }
      }
    });
    expected += (long)(c.reps + 1) * it * c.npes;
    c.rep.emit({fetching ? "fetch_add_rate" : "add_rate", "all_pes_to_pe0", 8,
                (double)c.npes / t / 1e6, "Mops/s", "", NAN, it, c.reps});
  }
  keep(sink);
  if (c.me == 0 && read_own(ctr, 0) != expected) {
    fprintf(stderr, "bench: atomic contention: counter %ld, expected %ld\n", read_own(ctr, 0),
            expected);
    shmem_global_exit(1);
  }
  shmem_barrier_all();
  shmem_free(ctr);
#else
  c.rep.progress("atomics skipped: this build has no atomics header");
#endif
}

void bench_barrier(const Ctx& c) {
  const int it = c.lat_iters;
  double t = timed(c, it, true, Timing::kLocal, [&](int n) {
    for (int i = 0; i < n; ++i) shmem_barrier_all();
  });
  c.rep.emit({"barrier_all_lat", "host", 0, t * 1e6, "us", "", NAN, it, c.reps});
}

void bench_coll(const Ctx& c) {
#if BENCH_HAVE_API_MORE
  if (!&SHMEM_TEAM_WORLD || !shmem_alltoallmem || !shmem_long_sum_reduce) {
    c.rep.progress("collectives skipped: team collectives not in this libvshmem");
    return;
  }
  const uint64_t max_per_pe = c.opt.quick ? 1024 : (256u << 10);
  auto* src = static_cast<char*>(shmem_malloc(max_per_pe * c.npes));
  auto* dst = static_cast<char*>(shmem_malloc(max_per_pe * c.npes));
  {
    std::vector<char> init(max_per_pe * c.npes);
    fill_random(init.data(), init.size(), 3000 + c.me);
    shmem_putmem(src, init.data(), init.size(), c.me);
  }
  const int it = c.opt.quick ? 20 : 200;
  for (uint64_t s : sweep(8, max_per_pe, c.opt.quick ? 7 : 3)) {
    c.rep.progress("alltoall / reduce %s per PE", size_str(s).c_str());
    double a2a = timed(c, it, true, Timing::kLocal, [&](int n) {
      for (int i = 0; i < n; ++i) shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, s);
    });
    c.rep.emit({"alltoall_lat", "host", s, a2a * 1e6, "us", "", NAN, it, c.reps});
    double red = timed(c, it, true, Timing::kLocal, [&](int n) {
      for (int i = 0; i < n; ++i) {
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, reinterpret_cast<long*>(dst),
                              reinterpret_cast<const long*>(src), s / sizeof(long));
      }
    });
    c.rep.emit({"reduce_lat", "long_sum", s, red * 1e6, "us", "", NAN, it, c.reps});
  }
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
#else
  c.rep.progress("collectives skipped: this build has no collectives header");
#endif
}

}  // namespace
}  // namespace vshmem::bench

int main(int argc, char** argv) {
  using namespace vshmem::bench;
  Options opt = parse_options(argc, argv, kGroups);
  double t_in = wall_now();
  shmem_init();
  double t_out = wall_now();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  const char* backend = getenv("VSHMEM_BACKEND");
  Reporter rep(opt, "host", "vshmem", me, npes);
  opt.tags.emplace_back("backend", backend && *backend ? backend : "auto");
  Ctx c{opt, rep, me, npes, opt.reps ? opt.reps : (opt.quick ? 3 : 9), opt.quick ? 100 : 2000};

  if (opt.wants("init")) bench_init(c, t_in, t_out);
  // Growth is measured first, while the heap holds only what shmem_init committed.
  if (opt.wants("malloc")) bench_malloc(c);
  if (npes < 2) {
    rep.progress("one PE: point-to-point benchmarks need at least 2");
  } else {
    if (opt.wants("rma_lat")) bench_rma_lat(c);
    if (opt.wants("rma_bw")) bench_rma_bw(c);
    if (opt.wants("pingpong")) bench_pingpong(c);
    if (opt.wants("amo")) bench_amo(c);
  }
  if (opt.wants("barrier")) bench_barrier(c);
  if (opt.wants("coll")) bench_coll(c);
  shmem_finalize();
  return 0;
}
