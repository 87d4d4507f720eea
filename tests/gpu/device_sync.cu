// Device signals, waits, barriers and collectives in kernels, with PEs sharing the GPU.
//  - put_signal (thread/warp/block, SET and ADD) around a ring for many rounds; the receiver
//    checks the whole payload after each signal (a signal must never overtake its data);
//  - wait_until_all/any/some (+ vector forms) and test* on an array of flags;
//  - thousands of barriers in one kernel, checked by a counter that each barrier must order;
//  - broadcast, fcollect, alltoall and reductions in thread, warp and block forms, in place too.
#include <algorithm>

#include "device_test_util.cuh"

using namespace device_test;

namespace {

// Rounds and barriers with MPS; without it (time-sliced kernels, ~2 ms per cross-PE wait) the
// counts are cut so that the test still finishes in its time limit.
constexpr int kRounds = 200;
constexpr int kRoundsTimeSliced = 20;
constexpr size_t kPayload = 2048;  // uint64 per message
constexpr int kBarriers = 3000;
constexpr int kBarriersTimeSliced = 60;

// Round r: write the payload of round r to next, signal it; wait for prev's round r; check.
__global__ void ring_signal_kernel(uint64_t* buf, uint64_t* sig, uint64_t salt, int form,
                                   int rounds, int* errors) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  __shared__ uint64_t msg[kPayload];
  for (int r = 0; r < rounds; ++r) {
    // Double-buffered by round parity; the wait of round r also says that next has finished
    // reading the buffer of round r-2 (it signals us back through a barrier every other round).
    uint64_t* slot = buf + (r % 2) * kPayload;
    for (size_t i = threadIdx.x; i < kPayload; i += blockDim.x) msg[i] = pattern(salt + r, me, i);
    __syncthreads();
    if (form == 0) {
      if (threadIdx.x == 0) {
        shmem_uint64_put_signal(slot, msg, kPayload, sig, 1, SHMEM_SIGNAL_ADD, next);
      }
    } else if (form == 1) {
      if (threadIdx.x < 32) {
        shmemx_uint64_put_signal_warp(slot, msg, kPayload, sig, r + 1, SHMEM_SIGNAL_SET, next);
      }
    } else {
      shmemx_putmem_signal_nbi_block(slot, msg, kPayload * 8, sig, 1, SHMEM_SIGNAL_ADD, next);
    }
    if (threadIdx.x == 0) {
      shmem_signal_wait_until(sig, SHMEM_CMP_GE, static_cast<uint64_t>(r + 1));
    }
    __syncthreads();
    for (size_t i = threadIdx.x; i < kPayload; i += blockDim.x) {
      if (slot[i] != pattern(salt + r, prev, i)) atomicAdd(errors, 1);
    }
    // Nobody overwrites a buffer its receiver has not checked: a sync every round.
    shmemx_sync_all_block();
  }
}

__global__ void waits_kernel(int* flags, int nflags, int* out) {
  // PE me sets flag[me] on every PE, after which waits over the array must complete.
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (threadIdx.x != 0) return;
  for (int pe = 0; pe < n; ++pe) shmem_int_atomic_set(flags + me, me + 100, pe);
  shmem_int_wait_until_all(flags, n, nullptr, SHMEM_CMP_GE, 100);
  size_t idx = shmem_int_wait_until_any(flags, n, nullptr, SHMEM_CMP_GE, 100);
  out[0] = idx < static_cast<size_t>(n) ? 1 : 0;
  size_t indices[64];
  out[1] =
      static_cast<int>(shmem_int_wait_until_some(flags, n, indices, nullptr, SHMEM_CMP_GE, 100));
  int values[64];
  for (int i = 0; i < n; ++i) values[i] = i + 100;
  shmem_int_wait_until_all_vector(flags, n, nullptr, SHMEM_CMP_EQ, values);
  out[2] = shmem_int_test_all(flags, n, nullptr, SHMEM_CMP_GE, 100);
  out[3] = shmem_int_test(flags + me, SHMEM_CMP_EQ, me + 100);
  // Masked: excluding every element, _any gives SIZE_MAX and _some gives 0.
  int status[64];
  for (int i = 0; i < n; ++i) status[i] = 1;
  out[4] = shmem_int_test_any(flags, n, status, SHMEM_CMP_GE, 0) == SIZE_MAX;
  out[5] = shmem_int_wait_until_some(flags, n, indices, status, SHMEM_CMP_GE, 0) == 0;
  out[6] = shmem_int_test_any(flags + nflags - 1, 1, nullptr, SHMEM_CMP_EQ, -7) == SIZE_MAX;
  out[7] = static_cast<int>(
      shmem_int_test_some_vector(flags, n, indices, nullptr, SHMEM_CMP_EQ, values));
  out[8] = static_cast<int>(shmem_signal_fetch(reinterpret_cast<uint64_t*>(flags + 64)));
}

// One barrier of kind K (sync.cuh) by one thread (scope 0), warp 0 (1) or the whole block (2).
template <vshmem::device::BarrierKind K>
__device__ void barrier_of_kind(int scope) {
  using vshmem::device::sync_group;
  if (scope == 2) {
    sync_group<vshmem::device::BlockGroup, K>("stress", true);
    return;
  }
  __syncthreads();
  if (scope == 0 && threadIdx.x == 0) sync_group<vshmem::device::ThreadGroup, K>("stress", true);
  if (scope == 1 && threadIdx.x < 32) sync_group<vshmem::device::WarpGroup, K>("stress", true);
  __syncthreads();
}

// `barriers` barriers; between barriers k and k+1 every PE adds 1 to next's counter, and after
// barrier k+1 each PE's counter must be exactly k+1 (a barrier that let a PE through early would
// show a smaller count). Thread, warp and block forms of the default barrier (the public calls)
// and of the flag, counting and central barriers (sync.cuh, BarrierKind; the central one is the
// flag barrier where a PE is behind the proxy) in turn, so that each kind also follows barriers
// of the others.
__global__ void barrier_kernel(unsigned long long* counter, int barriers, int* errors) {
  using vshmem::device::BarrierKind;
  const int n = shmem_n_pes();
  const int next = (shmem_my_pe() + 1) % n;
  for (int k = 0; k < barriers; ++k) {
    if (threadIdx.x == 0) shmem_ulonglong_atomic_add(counter, 1, next);
    const int form = k % 12, scope = form % 3;
    if (form >= 9) {
      barrier_of_kind<BarrierKind::kFlags>(scope);
    } else if (form >= 6) {
      barrier_of_kind<BarrierKind::kCentral>(scope);
    } else if (form >= 3) {
      barrier_of_kind<BarrierKind::kCounter>(scope);
    } else if (scope == 0) {
      __syncthreads();
      if (threadIdx.x == 0) shmem_barrier_all();
      __syncthreads();
    } else if (scope == 1) {
      __syncthreads();
      if (threadIdx.x < 32) shmemx_barrier_all_warp();
      __syncthreads();
    } else {
      shmemx_barrier_all_block();
    }
    if (threadIdx.x == 0 && shmem_ulonglong_atomic_fetch(counter, shmem_my_pe()) !=
                                static_cast<unsigned long long>(k + 1)) {
      atomicAdd(errors, 1);
    }
    shmemx_sync_all_block();  // nobody adds for round k+1 before everyone has checked round k
  }
}

struct CollArgs {
  shmem_team_t world;
  int root;
  double *bsrc, *bdst;
  int *fsrc, *fdst;
  uint64_t *asrc, *adst;
  size_t nelems;
  int *rsrc, *rsum, *rmin, *rmax;
  double *dsrc, *dsum;
  uint64_t *usrc, *uxor, *uand, *uor;
  long* inplace;
  int *prod_src, *prod_dst;
};

// One function per collective and form, kept out of line: inlined into one kernel, the 36 calls
// made ~300k lines of PTX that ptxas took 4-5 minutes of one core to compile (the longest step of
// the whole build, on CI and on the GPU machine); as 36 functions they take it seconds. What
// runs on the GPU is the same calls in the same order.
#define VSHMEM_TEST_COLL(name, thread_call, warp_call, block_call) \
  template <int Form>                                              \
  __device__ __noinline__ void name(const CollArgs& a) {           \
    if constexpr (Form == 0) {                                     \
      thread_call;                                                 \
    } else if constexpr (Form == 1) {                              \
      warp_call;                                                   \
    } else {                                                       \
      block_call;                                                  \
    }                                                              \
  }
VSHMEM_TEST_COLL(broadcast, shmem_double_broadcast(a.world, a.bdst, a.bsrc, a.nelems, a.root),
                 shmemx_double_broadcast_warp(a.world, a.bdst, a.bsrc, a.nelems, a.root),
                 shmemx_double_broadcast_block(a.world, a.bdst, a.bsrc, a.nelems, a.root))
VSHMEM_TEST_COLL(fcollect, shmem_int_fcollect(a.world, a.fdst, a.fsrc, a.nelems),
                 shmemx_int_fcollect_warp(a.world, a.fdst, a.fsrc, a.nelems),
                 shmemx_int_fcollect_block(a.world, a.fdst, a.fsrc, a.nelems))
VSHMEM_TEST_COLL(alltoall, shmem_uint64_alltoall(a.world, a.adst, a.asrc, a.nelems),
                 shmemx_uint64_alltoall_warp(a.world, a.adst, a.asrc, a.nelems),
                 shmemx_uint64_alltoall_block(a.world, a.adst, a.asrc, a.nelems))
VSHMEM_TEST_COLL(int_sum, shmem_int_sum_reduce(a.world, a.rsum, a.rsrc, a.nelems),
                 shmemx_int_sum_reduce_warp(a.world, a.rsum, a.rsrc, a.nelems),
                 shmemx_int_sum_reduce_block(a.world, a.rsum, a.rsrc, a.nelems))
VSHMEM_TEST_COLL(int_min, shmem_int_min_reduce(a.world, a.rmin, a.rsrc, a.nelems),
                 shmemx_int_min_reduce_warp(a.world, a.rmin, a.rsrc, a.nelems),
                 shmemx_int_min_reduce_block(a.world, a.rmin, a.rsrc, a.nelems))
VSHMEM_TEST_COLL(int_max, shmem_int_max_reduce(a.world, a.rmax, a.rsrc, a.nelems),
                 shmemx_int_max_reduce_warp(a.world, a.rmax, a.rsrc, a.nelems),
                 shmemx_int_max_reduce_block(a.world, a.rmax, a.rsrc, a.nelems))
VSHMEM_TEST_COLL(double_sum, shmem_double_sum_reduce(a.world, a.dsum, a.dsrc, a.nelems),
                 shmemx_double_sum_reduce_warp(a.world, a.dsum, a.dsrc, a.nelems),
                 shmemx_double_sum_reduce_block(a.world, a.dsum, a.dsrc, a.nelems))
VSHMEM_TEST_COLL(u64_xor, shmem_uint64_xor_reduce(a.world, a.uxor, a.usrc, a.nelems),
                 shmemx_uint64_xor_reduce_warp(a.world, a.uxor, a.usrc, a.nelems),
                 shmemx_uint64_xor_reduce_block(a.world, a.uxor, a.usrc, a.nelems))
VSHMEM_TEST_COLL(u64_and, shmem_uint64_and_reduce(a.world, a.uand, a.usrc, a.nelems),
                 shmemx_uint64_and_reduce_warp(a.world, a.uand, a.usrc, a.nelems),
                 shmemx_uint64_and_reduce_block(a.world, a.uand, a.usrc, a.nelems))
VSHMEM_TEST_COLL(u64_or, shmem_uint64_or_reduce(a.world, a.uor, a.usrc, a.nelems),
                 shmemx_uint64_or_reduce_warp(a.world, a.uor, a.usrc, a.nelems),
                 shmemx_uint64_or_reduce_block(a.world, a.uor, a.usrc, a.nelems))
VSHMEM_TEST_COLL(long_sum_inplace, shmem_long_sum_reduce(a.world, a.inplace, a.inplace, a.nelems),
                 shmemx_long_sum_reduce_warp(a.world, a.inplace, a.inplace, a.nelems),
                 shmemx_long_sum_reduce_block(a.world, a.inplace, a.inplace, a.nelems))
VSHMEM_TEST_COLL(int_prod, shmem_int_prod_reduce(a.world, a.prod_dst, a.prod_src, a.nelems),
                 shmemx_int_prod_reduce_warp(a.world, a.prod_dst, a.prod_src, a.nelems),
                 shmemx_int_prod_reduce_block(a.world, a.prod_dst, a.prod_src, a.nelems))
#undef VSHMEM_TEST_COLL

template <int Form>
__device__ void all_collectives(const CollArgs& a) {
  broadcast<Form>(a);
  fcollect<Form>(a);
  alltoall<Form>(a);
  int_sum<Form>(a);
  int_min<Form>(a);
  int_max<Form>(a);
  double_sum<Form>(a);
  u64_xor<Form>(a);
  u64_and<Form>(a);
  u64_or<Form>(a);
  long_sum_inplace<Form>(a);
  int_prod<Form>(a);
}

__global__ void coll_kernel(CollArgs a, int form) {
  if (form == 0) {
    if (threadIdx.x != 0) return;
    all_collectives<0>(a);
  } else if (form == 1) {
    if (threadIdx.x >= 32) return;
    all_collectives<1>(a);
  } else {  // forms 2 and 3: the block form, launched with 256 and with 100 threads
    all_collectives<2>(a);
  }
}

template <class T>
T* sym_alloc(size_t n) {
  auto* p = static_cast<T*>(shmem_malloc(n * sizeof(T)));
  EXPECT(p != nullptr, "shmem_malloc(%zu)", n * sizeof(T));
  return p;
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_sync");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const uint64_t salt = common_salt();
  const bool sliced = shmemx_gpu_shared_without_mps() != 0;
  const int rounds = sliced ? kRoundsTimeSliced : kRounds;
  const int barriers = sliced ? kBarriersTimeSliced : kBarriers;
  int* errors = nullptr;
  CUDA_OK(cudaMalloc(&errors, sizeof(int)));

  // put_signal rings.
  {
    phase("put_signal rings");
    auto* buf = sym_alloc<uint64_t>(2 * kPayload);
    auto* sig = sym_alloc<uint64_t>(1);
    for (int form = 0; form < 3; ++form) {
      poison(buf, 2 * kPayload * 8);
      CUDA_OK(cudaMemset(sig, 0, 8));
      CUDA_OK(cudaMemset(errors, 0, sizeof(int)));
      sync_device_and_pes();
      ring_signal_kernel<<<1, 256>>>(buf, sig, salt + form * 1000, form, rounds, errors);
      sync_device_and_pes();
      int e = to_host(errors, 1)[0];
      EXPECT(e == 0, "put_signal form %d: %d words wrong after the signal", form, e);
      EXPECT(to_host(sig, 1)[0] == static_cast<uint64_t>(rounds), "signal %llu",
             (unsigned long long)to_host(sig, 1)[0]);
    }
  }

  // Waits and tests.
  {
    phase("waits and tests");
    EXPECT(n <= 64, "at most 64 PEs here");
    const int nflags = 64 + 2;
    auto* flags = sym_alloc<int>(nflags);
    int* out = nullptr;
    CUDA_OK(cudaMalloc(&out, 16 * sizeof(int)));
    CUDA_OK(cudaMemset(flags, 0, nflags * sizeof(int)));
    const uint64_t sigval = salt & 0x7FFFFFFF;
    CUDA_OK(cudaMemcpy(flags + 64, &sigval, 8, cudaMemcpyHostToDevice));
    poison(out, 16 * sizeof(int));
    sync_device_and_pes();
    waits_kernel<<<1, 32>>>(flags, nflags, out);
    sync_device_and_pes();
    auto o = to_host(out, 9);
    EXPECT(o[0] == 1 && o[1] >= 1 && o[1] <= n && o[2] == 1 && o[3] == 1 && o[4] == 1 &&
               o[5] == 1 && o[6] == 1 && o[7] == n && o[8] == static_cast<int>(sigval),
           "waits/tests: %d %d %d %d %d %d %d %d %d", o[0], o[1], o[2], o[3], o[4], o[5], o[6],
           o[7], o[8]);
  }

  // Barrier stress.
  {
    phase("barrier stress");
    auto* counter = sym_alloc<unsigned long long>(1);
    CUDA_OK(cudaMemset(counter, 0, 8));
    CUDA_OK(cudaMemset(errors, 0, sizeof(int)));
    sync_device_and_pes();
    barrier_kernel<<<1, 128>>>(counter, barriers, errors);
    sync_device_and_pes();
    int e = to_host(errors, 1)[0];
    EXPECT(e == 0, "barrier stress: %d barriers let a PE through early", e);
    EXPECT(to_host(counter, 1)[0] == static_cast<unsigned long long>(barriers), "barrier counter");
  }

  // Collectives: thread, warp, block of 256 threads, and block of 100 threads (three whole warps
  // and four threads: alltoall and fcollect split the block by whole warps among the members).
  phase("collectives");
  for (int form = 0; form < 4; ++form) {
    const size_t ne = 300 + form * 37;
    const int root = static_cast<int>((salt + form) % n);
    auto* bsrc = sym_alloc<double>(ne);
    auto* bdst = sym_alloc<double>(ne);
    auto* fsrc = sym_alloc<int>(ne);
    auto* fdst = sym_alloc<int>(ne * n);
    auto* asrc = sym_alloc<uint64_t>(ne * n);
    auto* adst = sym_alloc<uint64_t>(ne * n);
    auto* rsrc = sym_alloc<int>(ne);
    auto* rsum = sym_alloc<int>(ne);
    auto* rmin = sym_alloc<int>(ne);
    auto* rmax = sym_alloc<int>(ne);
    auto* dsrc = sym_alloc<double>(ne);
    auto* dsum = sym_alloc<double>(ne);
    auto* usrc = sym_alloc<uint64_t>(ne);
    auto* uxor = sym_alloc<uint64_t>(ne);
    auto* uand = sym_alloc<uint64_t>(ne);
    auto* uor = sym_alloc<uint64_t>(ne);
    auto* inplace = sym_alloc<long>(ne);
    auto* psrc = sym_alloc<int>(ne);
    auto* pdst = sym_alloc<int>(ne);
    const uint64_t s = salt + 77 * form;
    auto ival = [&](int pe, size_t i) {
      return static_cast<int>(pattern(s, pe, i) % 200001) - 100000;
    };
    auto dval = [&](int pe, size_t i) { return static_cast<double>(ival(pe, i)) / 8.0; };
    std::vector<double> hb(ne), hd(ne);
    std::vector<int> hf(ne), hr(ne), hp(ne);
    std::vector<uint64_t> ha(ne * n), hu(ne);
    std::vector<long> hl(ne);
    for (size_t i = 0; i < ne; ++i) {
      hb[i] = dval(me, i + 5);
      hf[i] = ival(me, i + 11);
      hr[i] = ival(me, i);
      hd[i] = dval(me, i + 3);
      hu[i] = pattern(s, me, i + 17);
      hl[i] = ival(me, i + 23);
      hp[i] = static_cast<int>(pattern(s, me, i) % 3) + 1;
    }
    for (size_t i = 0; i < ne * n; ++i) ha[i] = pattern(s, me, i + 31);
    to_device(bsrc, hb);
    to_device(fsrc, hf);
    to_device(rsrc, hr);
    to_device(dsrc, hd);
    to_device(usrc, hu);
    to_device(inplace, hl);
    to_device(asrc, ha);
    to_device(psrc, hp);
    poison(bdst, ne * sizeof(double));
    poison(dsum, ne * sizeof(double));
    poison(uxor, ne * sizeof(uint64_t));
    poison(uand, ne * sizeof(uint64_t));
    poison(uor, ne * sizeof(uint64_t));
    for (int* p : {rsum, rmin, rmax, pdst}) poison(p, ne * sizeof(int));
    poison(fdst, ne * n * sizeof(int));
    poison(adst, ne * n * sizeof(uint64_t));
    sync_device_and_pes();
    const CollArgs args{SHMEM_TEAM_WORLD,
                        root,
                        bsrc,
                        bdst,
                        fsrc,
                        fdst,
                        asrc,
                        adst,
                        ne,
                        rsrc,
                        rsum,
                        rmin,
                        rmax,
                        dsrc,
                        dsum,
                        usrc,
                        uxor,
                        uand,
                        uor,
                        inplace,
                        psrc,
                        pdst};
    coll_kernel<<<1, form == 3 ? 100 : 256>>>(args, form);
    sync_device_and_pes();
    auto gb = to_host(bdst, ne);
    auto gf = to_host(fdst, ne * n);
    auto ga = to_host(adst, ne * n);
    auto gs = to_host(rsum, ne), gmin = to_host(rmin, ne), gmax = to_host(rmax, ne);
    auto gd = to_host(dsum, ne);
    auto gx = to_host(uxor, ne), gand = to_host(uand, ne), gor = to_host(uor, ne);
    auto gl = to_host(inplace, ne);
    auto gp = to_host(pdst, ne);
    for (size_t i = 0; i < ne; ++i) {
      EXPECT(gb[i] == dval(root, i + 5), "form %d broadcast %zu", form, i);
      int sum = 0, mn = ival(0, i), mx = ival(0, i), prod = 1;
      double ds = dval(0, i + 3);
      uint64_t x = 0, a = ~0ull, o = 0;
      long ls = 0;
      for (int pe = 0; pe < n; ++pe) {
        sum += ival(pe, i);
        mn = std::min(mn, ival(pe, i));
        mx = std::max(mx, ival(pe, i));
        if (pe > 0) ds += dval(pe, i + 3);
        x ^= pattern(s, pe, i + 17);
        a &= pattern(s, pe, i + 17);
        o |= pattern(s, pe, i + 17);
        ls += ival(pe, i + 23);
        prod *= static_cast<int>(pattern(s, pe, i) % 3) + 1;
      }
      EXPECT(gs[i] == sum && gmin[i] == mn && gmax[i] == mx, "form %d int reduce %zu", form, i);
      EXPECT(gd[i] == ds, "form %d double sum %zu: %f want %f", form, i, gd[i], ds);
      EXPECT(gx[i] == x && gand[i] == a && gor[i] == o, "form %d bitwise reduce %zu", form, i);
      EXPECT(gl[i] == ls, "form %d in-place long sum %zu", form, i);
      EXPECT(gp[i] == prod, "form %d int prod %zu", form, i);
      for (int pe = 0; pe < n; ++pe) {
        EXPECT(gf[pe * ne + i] == ival(pe, i + 11), "form %d fcollect pe %d %zu", form, pe, i);
        EXPECT(ga[pe * ne + i] == pattern(s, pe, me * ne + i + 31), "form %d alltoall pe %d %zu",
               form, pe, i);
      }
    }
    shmem_barrier_all();
    for (void* p : {static_cast<void*>(bsrc), static_cast<void*>(bdst), static_cast<void*>(fsrc),
                    static_cast<void*>(fdst), static_cast<void*>(asrc), static_cast<void*>(adst),
                    static_cast<void*>(rsrc), static_cast<void*>(rsum), static_cast<void*>(rmin),
                    static_cast<void*>(rmax), static_cast<void*>(dsrc), static_cast<void*>(dsum),
                    static_cast<void*>(usrc), static_cast<void*>(uxor), static_cast<void*>(uand),
                    static_cast<void*>(uor), static_cast<void*>(inplace), static_cast<void*>(psrc),
                    static_cast<void*>(pdst)}) {
      shmem_free(p);
    }
  }

  phase("finalize");
  cudaFree(errors);
  shmem_finalize();
  if (me == 0) std::printf("device_sync: OK\n");
  return 0;
}
