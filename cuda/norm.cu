// cuda/norm.cu — layer norm over the last D elements of x (N, D), forward and backward side by
// side (ops/norm/norm.cpp is the spec, llm.c's layernorm kernels the model). Everything is computed
// in double, whatever the storage type, with the CPU's formulas:
//   mean = Σx/D, var = Σ(x-mean)²/D (two passes), rstd = 1/sqrt(var + eps)
//   y = ((x - mean)·rstd)·w + b                      (w, b optional)
//   dnorm = dy·w,  dx = rstd·(dnorm - mean_D(dnorm) - norm·mean_D(dnorm·norm))
//   dw = Σ_N dy·norm,  db = Σ_N dy
// Launch shapes: rows of D <= 1024 go one warp per row (8 rows per block), longer rows one
// 512-thread block per row (forward and dx). dw/db are deterministic without atomics: a first
// kernel sums fixed chunks of rows per column d into a (chunks, D) float64 buffer, a second adds
// the chunks per column in order; the chunking depends only on N. RMSNorm runs the same kernels
// with mean null: the statistics about 0 (rstd = 1/sqrt(mean(x²) + eps)), no bias, no mean term in
// dx. Deliberately not here: batch/group norm, statistics in float32.
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"
#include "cuda/rowwise.cuh"

#include <algorithm>

namespace tg::cuda {

namespace {

using rowwise::BlockRow;
using rowwise::kBlockRowThreads;
using rowwise::kWarpRowMax;
using rowwise::kWarpRowsPerBlock;
using rowwise::kWarpRowThreads;
using rowwise::WarpRow;

// One row: x, y (D), w, b (D) or null; writes *mean and *rstd.
template <typename scalar_t, typename Row>
__device__ void layer_norm_row(const Row& g, scalar_t* y, double* mean, double* rstd,
                               const scalar_t* x, const scalar_t* w, const scalar_t* b, int64_t D,
                               double eps) {
  double m = 0;  // RMSNorm (mean null): the mean stays 0
  if (mean) {
    for (int64_t j = g.first; j < D; j += g.step) m += static_cast<double>(x[j]);
    m = g.sum(m) / static_cast<double>(D);
  }
  double v = 0;
  for (int64_t j = g.first; j < D; j += g.step) {
    const double d = static_cast<double>(x[j]) - m;
    v += d * d;
  }
  v = g.sum(v) / static_cast<double>(D);
  const double rs = 1.0 / sqrt(v + eps);
  for (int64_t j = g.first; j < D; j += g.step) {
    double n = (static_cast<double>(x[j]) - m) * rs;
    if (w) n *= static_cast<double>(w[j]);
    if (b) n += static_cast<double>(b[j]);
    y[j] = static_cast<scalar_t>(n);
  }
  if (g.leader()) {
    if (mean) *mean = m;
    *rstd = rs;
  }
}

// One row: dx (D) from dy, x (D), w (D) or null and the row's saved mean and rstd.
template <typename scalar_t, typename Row>
__device__ void layer_norm_backward_row(const Row& g, scalar_t* dx, const scalar_t* dy,
                                        const scalar_t* x, const scalar_t* w, double m, double rs,
                                        int64_t D, bool centred) {
  double dnorm_mean = 0, dnorm_norm_mean = 0;
  for (int64_t j = g.first; j < D; j += g.step) {
    const double norm = (static_cast<double>(x[j]) - m) * rs;
    const double dnorm = w ? static_cast<double>(w[j]) * dy[j] : static_cast<double>(dy[j]);
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean = centred ? g.sum(dnorm_mean) / static_cast<double>(D) : 0.0;  // RMSNorm: no term
  dnorm_norm_mean = g.sum(dnorm_norm_mean) / static_cast<double>(D);
  for (int64_t j = g.first; j < D; j += g.step) {
    const double norm = (static_cast<double>(x[j]) - m) * rs;
    const double dnorm = w ? static_cast<double>(w[j]) * dy[j] : static_cast<double>(dy[j]);
    dx[j] = static_cast<scalar_t>(rs * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
  }
}

// ---- forward: x, y (N, D); mean, rstd (N) ----

template <typename scalar_t>
__global__ void layer_norm_warp_kernel(scalar_t* y, double* mean, double* rstd, const scalar_t* x,
                                       const scalar_t* w, const scalar_t* b, int64_t N, int64_t D,
                                       double eps) {
  const WarpRow g{static_cast<int>(threadIdx.x & 31)};
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpRowsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32; r < N;
       r += step)
    layer_norm_row(g, y + r * D, mean ? mean + r : nullptr, rstd + r, x + r * D, w, b, D, eps);
}

template <typename scalar_t>
__global__ void layer_norm_block_kernel(scalar_t* y, double* mean, double* rstd, const scalar_t* x,
                                        const scalar_t* w, const scalar_t* b, int64_t N, int64_t D,
                                        double eps) {
  __shared__ double shm[32];
  const BlockRow g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), shm};
  for (int64_t r = blockIdx.x; r < N; r += gridDim.x)
    layer_norm_row(g, y + r * D, mean ? mean + r : nullptr, rstd + r, x + r * D, w, b, D, eps);
}

// ---- backward dx: dx, dy, x (N, D) ----

template <typename scalar_t>
__global__ void layer_norm_dx_warp_kernel(scalar_t* dx, const scalar_t* dy, const scalar_t* x,
                                          const scalar_t* w, const double* mean, const double* rstd,
                                          int64_t N, int64_t D) {
  const WarpRow g{static_cast<int>(threadIdx.x & 31)};
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpRowsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32; r < N;
       r += step)
    layer_norm_backward_row(g, dx + r * D, dy + r * D, x + r * D, w, mean ? mean[r] : 0.0, rstd[r],
                            D, mean != nullptr);
}

template <typename scalar_t>
__global__ void layer_norm_dx_block_kernel(scalar_t* dx, const scalar_t* dy, const scalar_t* x,
                                           const scalar_t* w, const double* mean,
                                           const double* rstd, int64_t N, int64_t D) {
  __shared__ double shm[32];
  const BlockRow g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), shm};
  for (int64_t r = blockIdx.x; r < N; r += gridDim.x)
    layer_norm_backward_row(g, dx + r * D, dy + r * D, x + r * D, w, mean ? mean[r] : 0.0, rstd[r],
                            D, mean != nullptr);
}

// ---- backward dw, db: two deterministic stages ----

constexpr int kColumnThreads = 256;
constexpr int64_t kMinRowsPerChunk = 16;
constexpr int64_t kMaxChunks = 1024;

// Stage 1, grid (columns / 256, chunks), grid-stride over columns: pw, pb (chunks, D) = Σ over the
// chunk's rows, in row order, of dy·norm and dy (either may be null).
template <typename scalar_t>
__global__ void layer_norm_dwdb_partial_kernel(double* pw, double* pb, const scalar_t* dy,
                                               const scalar_t* x, const double* mean,
                                               const double* rstd, int64_t N, int64_t D,
                                               int64_t rows_per_chunk) {
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rows_per_chunk, r1 = min(N, r0 + rows_per_chunk);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; d < D; d += step) {
    double sw = 0, sb = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const double gr = static_cast<double>(dy[r * D + d]);
      if (pw) sw += gr * ((static_cast<double>(x[r * D + d]) - (mean ? mean[r] : 0.0)) * rstd[r]);
      sb += gr;
    }
    if (pw) pw[chunk * D + d] = sw;
    if (pb) pb[chunk * D + d] = sb;
  }
}

// Stage 2, one thread per column (grid-stride): dw, db (D) = Σ over chunks, in chunk order.
template <typename scalar_t>
__global__ void layer_norm_dwdb_final_kernel(scalar_t* dw, scalar_t* db, const double* pw,
                                             const double* pb, int64_t chunks, int64_t D) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; d < D; d += step) {
    double sw = 0, sb = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      if (pw) sw += pw[c * D + d];
      if (pb) sb += pb[c * D + d];
    }
    if (dw) dw[d] = static_cast<scalar_t>(sw);
    if (db) db[d] = static_cast<scalar_t>(sb);
  }
}

// dw, db (D) or null from dy, x (N, D), mean, rstd (N).
template <typename scalar_t>
void launch_dwdb(scalar_t* dw, scalar_t* db, const scalar_t* dy, const scalar_t* x,
                 const double* mean, const double* rstd, int64_t N, int64_t D) {
  const int64_t rows_per_chunk = std::max(kMinRowsPerChunk, (N + kMaxChunks - 1) / kMaxChunks);
  const int64_t chunks = std::max<int64_t>(1, (N + rows_per_chunk - 1) / rows_per_chunk);
  const int dev = current_device();
  const size_t plane = static_cast<size_t>(chunks * D) * sizeof(double);
  double* buf = static_cast<double*>(alloc(plane * ((dw ? 1 : 0) + (db ? 1 : 0)), dev));
  double* pw = dw ? buf : nullptr;
  double* pb = db ? buf + (dw ? chunks * D : 0) : nullptr;
  cudaStream_t s = detail::cur_stream();
  const dim3 grid(detail::grid_for(D, kColumnThreads), static_cast<unsigned>(chunks));
  layer_norm_dwdb_partial_kernel<<<grid, kColumnThreads, 0, s>>>(pw, pb, dy, x, mean, rstd, N, D,
                                                                 rows_per_chunk);
  TG_CUDA_LAUNCH_CHECK("layer_norm_dwdb_partial_kernel");
  layer_norm_dwdb_final_kernel<<<detail::grid_for(D, kColumnThreads), kColumnThreads, 0, s>>>(
      dw, db, pw, pb, chunks, D);
  TG_CUDA_LAUNCH_CHECK("layer_norm_dwdb_final_kernel");
  free(buf, dev);  // stream-ordered: later launches only
}

}  // namespace

using detail::F32Scratch;
using detail::is_reduced;

void layer_norm_forward(DT dt, void* y, double* mean, double* rstd, const void* x, const void* w,
                        const void* b, int64_t N, int64_t D, double eps) {
  if (is_reduced(dt)) {  // reduced x and y, float32 w and b (as on the CPU): cuda/reduced.cuh
    F32Scratch xf(dt, x, N * D), yf(N * D);
    layer_norm_forward(DT::F32, yf.get(), mean, rstd, xf.get(), w, b, N, D, eps);
    return yf.store(dt, y);
  }
  if (N <= 0) return;
  TG_DISPATCH_FLOAT(dt, "layer_norm_forward", [&] {
    auto* yp = static_cast<scalar_t*>(y);
    const auto* xp = static_cast<const scalar_t*>(x);
    const auto* wp = static_cast<const scalar_t*>(w);
    const auto* bp = static_cast<const scalar_t*>(b);
    cudaStream_t s = detail::cur_stream();
    if (D <= kWarpRowMax) {
      layer_norm_warp_kernel<<<detail::grid_for(N, kWarpRowsPerBlock), kWarpRowThreads, 0, s>>>(
          yp, mean, rstd, xp, wp, bp, N, D, eps);
      TG_CUDA_LAUNCH_CHECK("layer_norm_warp_kernel");
    } else {
      layer_norm_block_kernel<<<detail::grid_for(N, 1), kBlockRowThreads, 0, s>>>(
          yp, mean, rstd, xp, wp, bp, N, D, eps);
      TG_CUDA_LAUNCH_CHECK("layer_norm_block_kernel");
    }
  });
}

// dx may be null too (only parameter gradients wanted), like the CPU.
void layer_norm_backward(DT dt, void* dx, void* dw, void* db, const void* dy, const void* x,
                         const void* w, const double* mean, const double* rstd, int64_t N,
                         int64_t D) {
  if (is_reduced(dt)) {  // reduced dx, dy and x; float32 w, dw and db
    F32Scratch dyf(dt, dy, N * D), xf(dt, x, N * D), d(N * D, dx != nullptr);
    layer_norm_backward(DT::F32, d.get(), dw, db, dyf.get(), xf.get(), w, mean, rstd, N, D);
    return d.store(dt, dx);
  }
  if (D <= 0) return;
  TG_DISPATCH_FLOAT(dt, "layer_norm_backward", [&] {
    auto* dxp = static_cast<scalar_t*>(dx);
    const auto* dyp = static_cast<const scalar_t*>(dy);
    const auto* xp = static_cast<const scalar_t*>(x);
    const auto* wp = static_cast<const scalar_t*>(w);
    cudaStream_t s = detail::cur_stream();
    if (dxp && N > 0 && D <= kWarpRowMax) {
      layer_norm_dx_warp_kernel<<<detail::grid_for(N, kWarpRowsPerBlock), kWarpRowThreads, 0, s>>>(
          dxp, dyp, xp, wp, mean, rstd, N, D);
      TG_CUDA_LAUNCH_CHECK("layer_norm_dx_warp_kernel");
    } else if (dxp && N > 0) {
      layer_norm_dx_block_kernel<<<detail::grid_for(N, 1), kBlockRowThreads, 0, s>>>(
          dxp, dyp, xp, wp, mean, rstd, N, D);
      TG_CUDA_LAUNCH_CHECK("layer_norm_dx_block_kernel");
    }
    if (dw || db)
      launch_dwdb(static_cast<scalar_t*>(dw), static_cast<scalar_t*>(db), dyp, xp, mean, rstd, N,
                  D);
  });
}

// RMSNorm: layer norm's kernels with no mean (statistics about 0) and no bias.
void rms_norm_forward(DT dt, void* y, double* rstd, const void* x, const void* w, int64_t N,
                      int64_t D, double eps) {
  layer_norm_forward(dt, y, nullptr, rstd, x, w, nullptr, N, D, eps);
}
void rms_norm_backward(DT dt, void* dx, void* dw, const void* dy, const void* x, const void* w,
                       const double* rstd, int64_t N, int64_t D) {
  layer_norm_backward(dt, dx, dw, nullptr, dy, x, w, nullptr, rstd, N, D);
}

}  // namespace tg::cuda
