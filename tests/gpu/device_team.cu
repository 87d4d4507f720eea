// Teams in device code: team queries, barriers and collectives on split teams, with PEs sharing
// the GPU.
//  - even/odd teams (split_strided, stride 2) and the rows and columns of split_2d: each PE checks
//    shmem_team_my_pe / n_pes / translate_pe in a kernel against the host's answers (and -1 for
//    SHMEM_TEAM_INVALID);
//  - a barrier ring in one kernel per team form (thread, warp, block): in every round each member
//    puts the round number to the next member of its team, then barriers the team, then checks
//    what the previous member put; teams of different members run at the same time;
//  - broadcast, fcollect, alltoall and sum reductions over a team (block forms and on a stream),
//    on fresh random data, checked against the values every member can compute; in-place
//    reductions on the row and the column team at once, from two blocks of one kernel;
//  - the teams are destroyed and the world is split again into halves, which reuse the slots
//    with other members: barriers must still pair up (their counts are kept per peer).
#include "device_test_util.cuh"

using namespace device_test;

namespace {

constexpr int kRounds = 500;
constexpr int kRoundsTimeSliced = 20;
constexpr size_t kElems = 1000;

constexpr int kMaxPtrs = 16;

struct TeamFacts {
  int my_pe, n_pes, first_world;                        // team's PE 0 in the world (translate_pe)
  int invalid_my_pe, invalid_n_pes, invalid_translate;  // queries on SHMEM_TEAM_INVALID: -1
  void* ptr[kMaxPtrs];               // shmem_team_ptr(team, probe, i) for the first team PEs
  void *ptr_invalid, *ptr_past_end;  // on SHMEM_TEAM_INVALID, and for PE n_pes: NULL
};

__global__ void facts_kernel(shmem_team_t team, const long* probe, TeamFacts* out) {
  const int n = shmem_team_n_pes(team);
  for (int i = 0; i < kMaxPtrs; ++i) out->ptr[i] = i < n ? shmem_team_ptr(team, probe, i) : nullptr;
  out->ptr_invalid = shmem_team_ptr(SHMEM_TEAM_INVALID, probe, 0);
  out->ptr_past_end = shmem_team_ptr(team, probe, n);
  out->my_pe = shmem_team_my_pe(team);
  out->n_pes = shmem_team_n_pes(team);
  out->first_world = shmem_team_translate_pe(team, 0, SHMEM_TEAM_WORLD);
  out->invalid_my_pe = shmem_team_my_pe(SHMEM_TEAM_INVALID);
  out->invalid_n_pes = shmem_team_n_pes(SHMEM_TEAM_INVALID);
  out->invalid_translate = shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, team);
}

// Two teams at once from one kernel: block 0 reduces in place over `a`, block 1 over `b` (each
// team's in-place results wait in its own slot's scratch, several chunks for kElems longs).
__global__ void two_teams_kernel(shmem_team_t a, long* abuf, shmem_team_t b, long* bbuf,
                                 size_t nelems) {
  if (blockIdx.x == 0) {
    shmemx_long_sum_reduce_block(a, abuf, abuf, nelems);
  } else {
    shmemx_long_sum_reduce_block(b, bbuf, bbuf, nelems);
  }
}

// form 0: thread, 1: warp, 2: block. box is symmetric: long[2] (double-buffered by round).
__global__ void barrier_ring_kernel(shmem_team_t team, long* box, int rounds, int form,
                                    int* errors) {
  const int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
  const int next = shmem_team_translate_pe(team, (me + 1) % n, SHMEM_TEAM_WORLD);
  for (int r = 1; r <= rounds; ++r) {
    if (threadIdx.x == 0) shmem_long_p(&box[r % 2], r, next);
    if (form == 0) {
      if (threadIdx.x == 0) shmemx_barrier(team);
      __syncthreads();
    } else if (form == 1) {
      if (threadIdx.x < 32) shmemx_barrier_warp(team);
      __syncthreads();
    } else {
      shmemx_barrier_block(team);
    }
    if (threadIdx.x == 0 && box[r % 2] != r) atomicAdd(errors, 1);
    // Nobody writes box[r % 2] again (round r + 2) before everyone has read it.
    if (form == 2) {
      shmemx_team_sync_block(team);
    } else {
      if (threadIdx.x == 0) shmem_team_sync(team);
      __syncthreads();
    }
  }
}

__global__ void collectives_kernel(shmem_team_t team, long* bsrc, long* bdst, long* csrc,
                                   long* cdst, long* asrc, long* adst, long* rsrc, long* rdst,
                                   size_t nelems, int root) {
  shmemx_long_broadcast_block(team, bdst, bsrc, nelems, root);
  shmemx_long_fcollect_block(team, cdst, csrc, nelems);
  shmemx_long_alltoall_block(team, adst, asrc, nelems);
  shmemx_long_sum_reduce_block(team, rdst, rsrc, nelems);
}

long value(uint64_t salt, int world_pe, size_t i) {
  return static_cast<long>(pattern(salt, world_pe, i) >> 8);
}

int world_of(shmem_team_t team, int i) {
  return shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
}

void check_facts(shmem_team_t team, const char* name, const long* probe, TeamFacts* facts) {
  facts_kernel<<<1, 1>>>(team, probe, facts);
  CUDA_OK(cudaDeviceSynchronize());
  TeamFacts f = to_host(facts, 1)[0];
  // shmem_team_ptr in a kernel: the host's answer for every team PE, the probe itself for ours.
  for (int i = 0; i < shmem_team_n_pes(team) && i < kMaxPtrs; ++i) {
    void* host = shmem_team_ptr(team, probe, i);
    EXPECT(f.ptr[i] == host, "%s: device shmem_team_ptr(team PE %d) = %p, host %p", name, i,
           f.ptr[i], host);
  }
  EXPECT(shmem_team_my_pe(team) >= kMaxPtrs || f.ptr[shmem_team_my_pe(team)] == probe,
         "%s: device shmem_team_ptr for this PE is not the address itself", name);
  EXPECT(f.ptr_invalid == nullptr && f.ptr_past_end == nullptr,
         "%s: device shmem_team_ptr on an invalid team / PE gave %p / %p, want NULL", name,
         f.ptr_invalid, f.ptr_past_end);
  EXPECT(f.my_pe == shmem_team_my_pe(team) && f.n_pes == shmem_team_n_pes(team) &&
             f.first_world == world_of(team, 0),
         "%s: device says PE %d of %d (first %d), host %d of %d (first %d)", name, f.my_pe, f.n_pes,
         f.first_world, shmem_team_my_pe(team), shmem_team_n_pes(team), world_of(team, 0));
  EXPECT(f.invalid_my_pe == -1 && f.invalid_n_pes == -1 && f.invalid_translate == -1,
         "%s: device queries on SHMEM_TEAM_INVALID gave %d %d %d, want -1", name, f.invalid_my_pe,
         f.invalid_n_pes, f.invalid_translate);
}

void barrier_rings(shmem_team_t team, const char* name, int rounds, int* errors) {
  auto* box = static_cast<long*>(shmem_calloc(2, sizeof(long)));
  for (int form = 0; form < 3; ++form) {
    CUDA_OK(cudaMemset(errors, 0, sizeof(int)));
    CUDA_OK(cudaMemset(box, 0, 2 * sizeof(long)));
    CUDA_OK(cudaDeviceSynchronize());
    shmem_barrier_all();
    barrier_ring_kernel<<<1, 128>>>(team, box, rounds, form, errors);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    const int e = to_host(errors, 1)[0];
    EXPECT(e == 0, "%s: %d of %d rounds of the form-%d barrier ring saw a stale value", name, e,
           rounds, form);
  }
  shmem_barrier_all();
  shmem_free(box);
}

void collectives(shmem_team_t team, const char* name, uint64_t salt) {
  const int n = shmem_team_n_pes(team), me = shmem_team_my_pe(team);
  const int mypes = shmem_my_pe();
  const size_t ne = kElems, all = ne * static_cast<size_t>(n);
  // Every PE allocates the same (symmetric): sizes from the largest team.
  const size_t cap = ne * static_cast<size_t>(shmem_n_pes());
  auto* bsrc = static_cast<long*>(shmem_malloc(ne * sizeof(long)));
  auto* bdst = static_cast<long*>(shmem_malloc(ne * sizeof(long)));
  auto* csrc = static_cast<long*>(shmem_malloc(ne * sizeof(long)));
  auto* cdst = static_cast<long*>(shmem_malloc(cap * sizeof(long)));
  auto* asrc = static_cast<long*>(shmem_malloc(cap * sizeof(long)));
  auto* adst = static_cast<long*>(shmem_malloc(cap * sizeof(long)));
  auto* rsrc = static_cast<long*>(shmem_malloc(ne * sizeof(long)));
  auto* rdst = static_cast<long*>(shmem_malloc(ne * sizeof(long)));
  std::vector<long> h(cap);
  for (size_t i = 0; i < ne; ++i) h[i] = value(salt, mypes, i);
  to_device(bsrc, std::vector<long>(h.begin(), h.begin() + ne));
  to_device(csrc, std::vector<long>(h.begin(), h.begin() + ne));
  to_device(rsrc, std::vector<long>(h.begin(), h.begin() + ne));
  // Block j of asrc goes to team member j: value(salt ^ j, me, i).
  for (int j = 0; j < n; ++j) {
    for (size_t i = 0; i < ne; ++i) h[j * ne + i] = value(salt ^ (j + 1), mypes, i);
  }
  to_device(asrc, std::vector<long>(h.begin(), h.begin() + all));
  poison(bdst, ne * sizeof(long));
  poison(cdst, cap * sizeof(long));
  poison(adst, cap * sizeof(long));
  poison(rdst, ne * sizeof(long));
  CUDA_OK(cudaDeviceSynchronize());
  shmem_barrier_all();
  const int root = n - 1;
  collectives_kernel<<<1, 256>>>(team, bsrc, bdst, csrc, cdst, asrc, adst, rsrc, rdst, ne, root);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  auto b = to_host(bdst, ne), c = to_host(cdst, all), a = to_host(adst, all), r = to_host(rdst, ne);
  const int root_world = world_of(team, root);
  for (size_t i = 0; i < ne; ++i) {
    EXPECT(b[i] == value(salt, root_world, i), "%s: broadcast element %zu", name, i);
    long sum = 0;
    for (int j = 0; j < n; ++j) sum += value(salt, world_of(team, j), i);
    EXPECT(r[i] == sum, "%s: sum_reduce element %zu: %ld, want %ld", name, i, r[i], sum);
  }
  for (int j = 0; j < n; ++j) {
    for (size_t i = 0; i < ne; ++i) {
      EXPECT(c[j * ne + i] == value(salt, world_of(team, j), i), "%s: fcollect block %d elem %zu",
             name, j, i);
      EXPECT(a[j * ne + i] == value(salt ^ (me + 1), world_of(team, j), i),
             "%s: alltoall block %d elem %zu", name, j, i);
    }
  }
  // The same reduction on a stream.
  poison(rdst, ne * sizeof(long));
  CUDA_OK(cudaDeviceSynchronize());
  shmem_barrier_all();
  cudaStream_t st;
  CUDA_OK(cudaStreamCreate(&st));
  EXPECT(shmemx_long_sum_reduce_on_stream(team, rdst, rsrc, ne, st) == 0, "%s: reduce_on_stream",
         name);
  EXPECT(shmemx_team_sync_on_stream(team, st) == 0, "%s: team_sync_on_stream", name);
  poison(bdst, ne * sizeof(long));
  poison(cdst, cap * sizeof(long));
  EXPECT(shmemx_broadcastmem_on_stream(team, bdst, bsrc, ne * sizeof(long), 0, st) == 0,
         "%s: broadcastmem_on_stream", name);
  EXPECT(shmemx_fcollectmem_on_stream(team, cdst, csrc, ne * sizeof(long), st) == 0,
         "%s: fcollectmem_on_stream", name);
  CUDA_OK(cudaStreamSynchronize(st));
  CUDA_OK(cudaStreamDestroy(st));
  b = to_host(bdst, ne);
  c = to_host(cdst, all);
  for (size_t i = 0; i < ne; ++i) {
    EXPECT(b[i] == value(salt, world_of(team, 0), i), "%s: broadcast on stream element %zu", name,
           i);
    for (int j = 0; j < n; ++j) {
      EXPECT(c[j * ne + i] == value(salt, world_of(team, j), i),
             "%s: fcollect on stream block %d elem %zu", name, j, i);
    }
  }
  r = to_host(rdst, ne);
  for (size_t i = 0; i < ne; ++i) {
    long sum = 0;
    for (int j = 0; j < n; ++j) sum += value(salt, world_of(team, j), i);
    EXPECT(r[i] == sum, "%s: sum_reduce_on_stream element %zu", name, i);
  }
  shmem_barrier_all();
  for (void* p : {static_cast<void*>(bsrc), static_cast<void*>(bdst), static_cast<void*>(csrc),
                  static_cast<void*>(cdst), static_cast<void*>(asrc), static_cast<void*>(adst),
                  static_cast<void*>(rsrc), static_cast<void*>(rdst)}) {
    shmem_free(p);
  }
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_team");
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int rounds = shmemx_gpu_shared_without_mps() ? kRoundsTimeSliced : kRounds;
  const uint64_t salt = common_salt();
  TeamFacts* facts = nullptr;
  int* errors = nullptr;
  CUDA_OK(cudaMalloc(&facts, sizeof(TeamFacts)));
  CUDA_OK(cudaMalloc(&errors, sizeof(int)));
  auto* probe = static_cast<long*>(shmem_malloc(sizeof(long)));

  phase("even/odd teams");
  shmem_team_t even = SHMEM_TEAM_INVALID, odd = SHMEM_TEAM_INVALID;
  EXPECT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &even) == 0,
         "split even");
  EXPECT(n < 2 || shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &odd) == 0,
         "split odd");
  shmem_team_t mine = me % 2 == 0 ? even : odd;
  check_facts(mine, "even/odd", probe, facts);
  barrier_rings(mine, "even/odd", rounds, errors);
  collectives(mine, "even/odd", salt);

  phase("2-D teams");
  shmem_team_t row = SHMEM_TEAM_INVALID, column = SHMEM_TEAM_INVALID;
  EXPECT(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, nullptr, 0, &row, nullptr, 0, &column) == 0,
         "split_2d");
  check_facts(row, "row", probe, facts);
  check_facts(column, "column", probe, facts);
  barrier_rings(row, "row", rounds, errors);
  barrier_rings(column, "column", rounds, errors);
  collectives(column, "column", salt * 3);
  {
    phase("in-place reductions on two teams at once");
    auto* abuf = static_cast<long*>(shmem_malloc(kElems * sizeof(long)));
    auto* bbuf = static_cast<long*>(shmem_malloc(kElems * sizeof(long)));
    std::vector<long> h(kElems);
    for (size_t i = 0; i < kElems; ++i) h[i] = value(salt * 5, me, i);
    to_device(abuf, h);
    for (size_t i = 0; i < kElems; ++i) h[i] = value(salt * 11, me, i);
    to_device(bbuf, h);
    CUDA_OK(cudaDeviceSynchronize());
    shmem_barrier_all();
    two_teams_kernel<<<2, 256>>>(row, abuf, column, bbuf, kElems);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    auto ra = to_host(abuf, kElems), rb = to_host(bbuf, kElems);
    for (size_t i = 0; i < kElems; ++i) {
      long sa = 0, sb = 0;
      for (int j = 0; j < shmem_team_n_pes(row); ++j) sa += value(salt * 5, world_of(row, j), i);
      for (int j = 0; j < shmem_team_n_pes(column); ++j) {
        sb += value(salt * 11, world_of(column, j), i);
      }
      EXPECT(ra[i] == sa && rb[i] == sb, "in-place row/column sums at %zu: %ld %ld, want %ld %ld",
             i, ra[i], rb[i], sa, sb);
    }
    shmem_barrier_all();
    shmem_free(abuf);
    shmem_free(bbuf);
  }

  phase("SHMEM_TEAM_SHARED");
  check_facts(SHMEM_TEAM_SHARED, "shared", probe, facts);
  barrier_rings(SHMEM_TEAM_SHARED, "shared", rounds, errors);

  phase("slots reused by other members");
  shmem_team_destroy(row);
  shmem_team_destroy(column);
  if (even != SHMEM_TEAM_INVALID) shmem_team_destroy(even);
  if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
  shmem_barrier_all();
  shmem_team_t low = SHMEM_TEAM_INVALID, high = SHMEM_TEAM_INVALID;
  const int half = (n + 1) / 2;
  EXPECT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, half, nullptr, 0, &low) == 0,
         "split low");
  EXPECT(n < 2 ||
             shmem_team_split_strided(SHMEM_TEAM_WORLD, half, 1, n - half, nullptr, 0, &high) == 0,
         "split high");
  shmem_team_t halfteam = me < half ? low : high;
  check_facts(halfteam, "halves", probe, facts);
  barrier_rings(halfteam, "halves", rounds, errors);
  collectives(halfteam, "halves", salt * 7);

  phase("finalize");
  shmem_free(probe);
  cudaFree(facts);
  cudaFree(errors);
  shmem_finalize();
  if (me == 0) std::printf("device_team: OK\n");
  return 0;
}
