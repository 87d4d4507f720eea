// Large on-stream collectives (the "wide" form of device/on_stream.cu: a grid between barrier
// kernels) and the small ones next to them: reductions in place and not, bf16 and 64-bit,
// element counts that are not multiples of 16 bytes, sources whose offset within 16 bytes
// differs from dest's, reduce-scatter, broadcast, fcollect and alltoall of odd sizes, on the
// world and on a strided team, and calls chained on the stream without a host sync in between
// (the next call reads what the previous one wrote). Every value is checked.
#include <cuda_bf16.h>

#include "device_test_util.cuh"

using namespace device_test;

namespace {

// Small integers, exact in bf16 and in their float sums, so that the expected result is exact.
float small_value(uint64_t salt, int pe, size_t i) {
  return static_cast<float>(static_cast<int>(pattern(salt, pe, i) % 17) - 8);
}

struct Team {
  shmem_team_t handle;
  std::vector<int> members;  // world PE of each team index
};

// Every PE of the world, or the even ones (a strided team; a PE outside it gets no handle).
Team make_team(bool even) {
  const int n = shmem_n_pes(), me = shmem_my_pe();
  Team t{SHMEM_TEAM_WORLD, {}};
  if (!even) {
    for (int pe = 0; pe < n; ++pe) t.members.push_back(pe);
    return t;
  }
  const int size = (n + 1) / 2;
  shmem_team_t team = SHMEM_TEAM_INVALID;
  EXPECT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, size, nullptr, 0, &team) == 0,
         "split_strided");
  t.handle = (me % 2 == 0) ? team : SHMEM_TEAM_INVALID;
  for (int q = 0; q < size; ++q) t.members.push_back(2 * q);
  return t;
}

// bf16 sum, in place (dest == source) or not, `skew` elements into the source buffer and
// `dskew` into dest's (when not in place).
void bf16_sum(const Team& t, cudaStream_t stream, size_t ne, bool in_place, size_t skew,
              size_t dskew, uint64_t salt) {
  const int me = shmem_my_pe();
  auto* src = static_cast<__nv_bfloat16*>(shmem_malloc((ne + skew) * 2));
  auto* dst_buf = in_place ? src : static_cast<__nv_bfloat16*>(shmem_malloc((ne + dskew) * 2));
  __nv_bfloat16* dst = in_place ? src + skew : dst_buf + dskew;
  if (t.handle != SHMEM_TEAM_INVALID) {
    std::vector<__nv_bfloat16> h(ne);
    for (size_t i = 0; i < ne; ++i) h[i] = __float2bfloat16(small_value(salt, me, i));
    if (!in_place) poison(dst_buf, (ne + dskew) * 2);
    CUDA_OK(cudaMemcpy(src + skew, h.data(), ne * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT(shmemx_bfloat16_sum_reduce_on_stream(t.handle, dst, src + skew, ne, stream) == 0,
           "bfloat16_sum_reduce_on_stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<__nv_bfloat16> g(ne);
    CUDA_OK(cudaMemcpy(g.data(), dst, ne * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < ne; ++i) {
      float want = 0;
      for (int pe : t.members) want += small_value(salt, pe, i);
      EXPECT(__bfloat162float(g[i]) == want,
             "bf16 sum (%zu elements, in place %d, skew %zu/%zu) [%zu]: %g, want %g", ne,
             static_cast<int>(in_place), skew, dskew, i, __bfloat162float(g[i]), want);
    }
  }
  shmem_barrier_all();
  if (!in_place) shmem_free(dst_buf);
  shmem_free(src);
}

// 64-bit sum then max chained on the stream: the max reads the sum's dest as its source.
void long_chain(const Team& t, cudaStream_t stream, size_t ne, uint64_t salt) {
  const int me = shmem_my_pe();
  auto* a = static_cast<long*>(shmem_malloc(ne * 8));
  auto* b = static_cast<long*>(shmem_malloc(ne * 8));
  auto* c = static_cast<long*>(shmem_malloc(ne * 8));
  if (t.handle != SHMEM_TEAM_INVALID) {
    std::vector<long> h(ne);
    for (size_t i = 0; i < ne; ++i) h[i] = static_cast<long>(pattern(salt, me, i) >> 20);
    to_device(a, h);
    poison(b, ne * 8);
    poison(c, ne * 8);
    CUDA_OK(cudaDeviceSynchronize());
    const int my_index = shmem_team_my_pe(t.handle);
    EXPECT(shmemx_int64_sum_reduce_on_stream(t.handle, reinterpret_cast<int64_t*>(b),
                                             reinterpret_cast<const int64_t*>(a), ne, stream) == 0,
           "int64_sum_reduce_on_stream");
    // Every member adds its index to its copy of the sum (stream order: after the sum), then the
    // max over members picks the last member's copy.
    // Set on the stream (a cudaMemcpy from pageable memory may still be in flight when it
    // returns, and it is not ordered with this stream), after the sum, before the in-place sum.
    std::vector<long> bump(ne, my_index);
    CUDA_OK(cudaMemcpyAsync(c, bump.data(), ne * 8, cudaMemcpyHostToDevice, stream));
    EXPECT(shmemx_int64_sum_reduce_on_stream(t.handle, reinterpret_cast<int64_t*>(c),
                                             reinterpret_cast<const int64_t*>(c), ne, stream) == 0,
           "int64_sum_reduce_on_stream in place");
    EXPECT(shmemx_int64_max_reduce_on_stream(t.handle, reinterpret_cast<int64_t*>(a),
                                             reinterpret_cast<const int64_t*>(b), ne, stream) == 0,
           "int64_max_reduce_on_stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    auto gb = to_host(b, ne), ga = to_host(a, ne), gc = to_host(c, ne);
    const long members = static_cast<long>(t.members.size());
    for (size_t i = 0; i < ne; ++i) {
      long want = 0;
      for (int pe : t.members) want += static_cast<long>(pattern(salt, pe, i) >> 20);
      EXPECT(gb[i] == want, "sum (%zu elements) [%zu]: %ld, want %ld", ne, i, gb[i], want);
      EXPECT(ga[i] == want, "max of the sums (%zu elements) [%zu]: %ld, want %ld", ne, i, ga[i],
             want);
      EXPECT(gc[i] == members * (members - 1) / 2, "in-place index sum [%zu]: %ld", i, gc[i]);
    }
  }
  shmem_barrier_all();
  shmem_free(c);
  shmem_free(b);
  shmem_free(a);
}

void int_reducescatter(const Team& t, cudaStream_t stream, size_t ne, uint64_t salt) {
  const int me = shmem_my_pe();
  const size_t m = t.members.size();
  auto* src = static_cast<int32_t*>(shmem_malloc(ne * m * 4));
  auto* dst = static_cast<int32_t*>(shmem_malloc(ne * 4));
  if (t.handle != SHMEM_TEAM_INVALID) {
    std::vector<int32_t> h(ne * m);
    for (size_t i = 0; i < ne * m; ++i) h[i] = static_cast<int32_t>(pattern(salt, me, i) >> 40);
    to_device(src, h);
    poison(dst, ne * 4);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT(shmemx_int32_sum_reducescatter_on_stream(t.handle, dst, src, ne, stream) == 0,
           "int32_sum_reducescatter_on_stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    auto g = to_host(dst, ne);
    const size_t j = static_cast<size_t>(shmem_team_my_pe(t.handle));
    for (size_t i = 0; i < ne; ++i) {
      int32_t want = 0;
      for (int pe : t.members) want += static_cast<int32_t>(pattern(salt, pe, j * ne + i) >> 40);
      EXPECT(g[i] == want, "reducescatter (%zu elements) [%zu]: %d, want %d", ne, i, g[i], want);
    }
  }
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
}

// Broadcast from the last member, then fcollect and alltoall, of `bytes` per block.
void bytes_colls(const Team& t, cudaStream_t stream, size_t bytes, uint64_t salt) {
  const int me = shmem_my_pe();
  const size_t m = t.members.size();
  auto* src = static_cast<uint8_t*>(shmem_malloc(bytes * m));
  auto* dst = static_cast<uint8_t*>(shmem_malloc(bytes * m));
  if (t.handle != SHMEM_TEAM_INVALID) {
    const int my_index = shmem_team_my_pe(t.handle);
    std::vector<uint8_t> h(bytes * m);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(pattern(salt, me, i));
    to_device(src, h);
    poison(dst, bytes * m);
    CUDA_OK(cudaDeviceSynchronize());
    const int root = static_cast<int>(m) - 1;
    EXPECT(shmemx_broadcastmem_on_stream(t.handle, dst, src, bytes, root, stream) == 0,
           "broadcastmem_on_stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    auto g = to_host(dst, bytes);
    for (size_t i = 0; i < bytes; ++i) {
      EXPECT(g[i] == static_cast<uint8_t>(pattern(salt, t.members[root], i)),
             "broadcast (%zu bytes) [%zu]", bytes, i);
    }
    poison(dst, bytes * m);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT(shmemx_fcollectmem_on_stream(t.handle, dst, src, bytes, stream) == 0,
           "fcollectmem_on_stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    g = to_host(dst, bytes * m);
    for (size_t q = 0; q < m; ++q) {
      for (size_t i = 0; i < bytes; ++i) {
        EXPECT(g[q * bytes + i] == static_cast<uint8_t>(pattern(salt, t.members[q], i)),
               "fcollect (%zu bytes) block %zu [%zu]", bytes, q, i);
      }
    }
    poison(dst, bytes * m);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT(shmemx_alltoallmem_on_stream(t.handle, dst, src, bytes, stream) == 0,
           "alltoallmem_on_stream");
    CUDA_OK(cudaStreamSynchronize(stream));
    g = to_host(dst, bytes * m);
    for (size_t q = 0; q < m; ++q) {
      for (size_t i = 0; i < bytes; ++i) {
        EXPECT(g[q * bytes + i] ==
                   static_cast<uint8_t>(pattern(salt, t.members[q], my_index * bytes + i)),
               "alltoall (%zu bytes) block %zu [%zu]", bytes, q, i);
      }
    }
    (void)my_index;
  }
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
}

}  // namespace

int main() {
  require_gpu();
  shmem_init();
  print_seed("device_stream_wide");
  const uint64_t salt = common_salt();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (bool even : {false, true}) {
    const Team t = make_team(even);
    phase(even ? "even team: bf16 sums" : "world: bf16 sums");
    // Around the wide threshold (128 KiB), odd counts, in place at an offset that is not a
    // multiple of 16 bytes, and a source whose offset within 16 bytes differs from dest's.
    for (size_t ne : {size_t{1000}, size_t{65536}, size_t{65537}, size_t{(1 << 20) + 3}}) {
      bf16_sum(t, stream, ne, false, 0, 0, salt + ne);
      bf16_sum(t, stream, ne, true, 3, 0, salt + ne + 1);
      bf16_sum(t, stream, ne, false, 0, 1, salt + ne + 2);
    }
    phase(even ? "even team: 64-bit chains" : "world: 64-bit chains");
    for (size_t ne : {size_t{777}, size_t{(1 << 15) + 5}, size_t{(1 << 18) + 1}}) {
      long_chain(t, stream, ne, salt + 7 * ne);
    }
    phase(even ? "even team: reduce-scatter" : "world: reduce-scatter");
    for (size_t ne : {size_t{999}, size_t{40001}, size_t{300007}}) {
      int_reducescatter(t, stream, ne, salt + 11 * ne);
    }
    phase(even ? "even team: broadcast, fcollect, alltoall"
               : "world: broadcast, fcollect, alltoall");
    for (size_t bytes : {size_t{4099}, size_t{131072}, size_t{300001}}) {
      bytes_colls(t, stream, bytes, salt + 13 * bytes);
    }
    if (even && t.handle != SHMEM_TEAM_INVALID) shmem_team_destroy(t.handle);
    shmem_barrier_all();
  }
  phase("finalize");
  CUDA_OK(cudaStreamDestroy(stream));
  shmem_finalize();
  if (shmem_my_pe() == 0) std::printf("device_stream_wide: OK\n");
  return 0;
}
