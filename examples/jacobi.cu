// 2-D Jacobi solver, rows split over PEs; after each sweep a PE sends its first and last rows
// to its neighbours' halo rows with put_signal (block form) and waits for theirs. The result is
// checked against the same sweeps done by one process on the whole grid.
//   vshmemrun -n 4 ./jacobi [iterations]
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kNx = 256;  // columns (the first and last are fixed boundary values)
constexpr int kNy = 840;  // interior rows of the whole grid: divisible by 1..8 PEs

__host__ __device__ double boundary(int global_row, int col) {
  // Hot top edge, a warm left column, cold elsewhere.
  if (global_row < 0) return 1.0;
  if (col == 0) return 0.5;
  return 0.0;
}

// Local array: rows 0 and rows+1 are halos, 1..rows are ours; each row has kNx columns.
__global__ void sweep(const double* in, double* out, int rows) {
  for (int r = blockIdx.y * blockDim.y + threadIdx.y + 1; r <= rows; r += gridDim.y * blockDim.y) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x + 1; c < kNx - 1;
         c += gridDim.x * blockDim.x) {
      out[r * kNx + c] = 0.25 * (in[(r - 1) * kNx + c] + in[(r + 1) * kNx + c] +
                                 in[r * kNx + c - 1] + in[r * kNx + c + 1]);
    }
  }
}

// Sends our first row to prev's bottom halo and our last row to next's top halo (each signal
// carries the iteration), then waits for the neighbours' rows of this iteration.
__global__ void exchange(double* a, int rows, uint64_t* sig_top, uint64_t* sig_bottom,
                         uint64_t iter) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (me > 0) {
    shmemx_double_put_signal_block(a + (rows + 1) * kNx, a + 1 * kNx, kNx, sig_bottom, iter,
                                   SHMEM_SIGNAL_SET, me - 1);
  }
  if (me < n - 1) {
    shmemx_double_put_signal_block(a, a + rows * kNx, kNx, sig_top, iter, SHMEM_SIGNAL_SET, me + 1);
  }
  if (threadIdx.x == 0) {
    if (me > 0) shmem_signal_wait_until(sig_top, SHMEM_CMP_GE, iter);
    if (me < n - 1) shmem_signal_wait_until(sig_bottom, SHMEM_CMP_GE, iter);
  }
  __syncthreads();
}

void init_rows(std::vector<double>& g, int first_global_row, int rows) {
  // g has rows + 2 rows; row i is global row first_global_row + i - 1 (-1 = top boundary).
  for (int i = 0; i < rows + 2; ++i) {
    const int gr = first_global_row + i - 1;
    for (int c = 0; c < kNx; ++c) {
      const bool edge = gr < 0 || gr >= kNy || c == 0 || c == kNx - 1;
      g[i * kNx + c] = edge ? boundary(gr, c) : 0.0;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("jacobi: no CUDA device, skipped\n");
    return 77;
  }
  const int iters = argc > 1 ? std::atoi(argv[1]) : 200;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (kNy % n != 0) {
    if (me == 0) std::fprintf(stderr, "jacobi: %d rows do not split over %d PEs\n", kNy, n);
    shmem_finalize();
    return 1;
  }
  const int rows = kNy / n, first = me * rows;
  const size_t bytes = static_cast<size_t>(rows + 2) * kNx * sizeof(double);
  double* a = static_cast<double*>(shmem_malloc(bytes));
  double* b = static_cast<double*>(shmem_malloc(bytes));
  auto* sigs = static_cast<uint64_t*>(shmem_calloc(4, sizeof(uint64_t)));
  std::vector<double> h((rows + 2) * kNx);
  init_rows(h, first, rows);
  cudaMemcpy(a, h.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(b, h.data(), bytes, cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
  shmem_barrier_all();

  // Iteration k reads `in`, writes `out`, and sends out's edge rows; the two buffers have their
  // own signal pairs, so a fast neighbour's rows for k + 1 never land in a buffer we still read.
  for (int k = 1; k <= iters; ++k) {
    double* in = k % 2 ? a : b;
    double* out = k % 2 ? b : a;
    uint64_t* s = sigs + (k % 2) * 2;
    sweep<<<dim3(8, 16), dim3(32, 8)>>>(in, out, rows);
    exchange<<<1, 256>>>(out, rows, s, s + 1, static_cast<uint64_t>(k));
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "PE %d: jacobi: %s\n", me, cudaGetErrorString(e));
    shmem_global_exit(1);
  }
  double* result = iters % 2 ? b : a;
  cudaMemcpy(h.data(), result, bytes, cudaMemcpyDeviceToHost);

  // Single-process reference over the whole grid.
  std::vector<double> ra((kNy + 2) * kNx), rb;
  init_rows(ra, 0, kNy);
  rb = ra;
  for (int k = 1; k <= iters; ++k) {
    std::vector<double>& in = k % 2 ? ra : rb;
    std::vector<double>& out = k % 2 ? rb : ra;
    for (int r = 1; r <= kNy; ++r) {
      for (int c = 1; c < kNx - 1; ++c) {
        out[r * kNx + c] = 0.25 * (in[(r - 1) * kNx + c] + in[(r + 1) * kNx + c] +
                                   in[r * kNx + c - 1] + in[r * kNx + c + 1]);
      }
    }
  }
  const std::vector<double>& ref = iters % 2 ? rb : ra;
  double max_err = 0;
  for (int r = 1; r <= rows; ++r) {
    for (int c = 0; c < kNx; ++c) {
      max_err = std::fmax(max_err, std::fabs(h[r * kNx + c] - ref[(first + r) * kNx + c]));
    }
  }
  const int ok = max_err <= 1e-12;
  std::printf("jacobi: PE %d of %d, rows %d..%d, %d iterations: max |error| %.3g vs single PE\n",
              me, n, first, first + rows - 1, iters, max_err);
  shmem_barrier_all();
  shmem_free(a);
  shmem_free(b);
  shmem_free(sigs);
  shmem_finalize();
  return ok ? 0 : 1;
}
