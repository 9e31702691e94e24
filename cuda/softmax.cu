// cuda/softmax.cu — softmax and log_softmax over the middle dim of (outer, r, inner), forward and
// backward side by side (ops/softmax/softmax.cpp is the spec). Element (o, j, i) sits at
// o·r·inner + j·inner + i. Launch shapes:
//   inner == 1, r <= 1024: one warp per row (8 rows per 256-thread block);
//   inner == 1, r >  1024: one 512-thread block per row;
//   inner >  1:            one thread per (o, i) column, looping over r (coalesced across i).
// Max and sums run in scalar_t (float32 for F32, float64 for F64), warp shuffles then shared
// memory; the CPU accumulates in double, so F32 agrees to float32 rounding. log_softmax forms
// lse = max + log(sum) and x - lse in double (one FP64 op per element, free next to the loads).
// Special rows, exactly as the CPU: the max skips NaN (fmax, like std::max(acc, x)); a row whose
// max is -inf (all -inf, or -inf and NaN) gives NaN everywhere if it holds a NaN, else softmax 0
// and log_softmax -inf (NOT NaN as kernels.cuh's comment says: the CPU is the spec). Any other
// row with a NaN or +inf becomes all NaN through its sum. Backward: softmax
// dx = y ⊙ (g − Σ g⊙y); log_softmax dx = g − exp(y)·Σg, and 0 where Σexp(y) == 0 (the fully
// masked log_softmax row). Deliberately not here: masking, cross entropy's fused log_softmax
// (loss.cu).
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"
#include "cuda/rowwise.cuh"

namespace tg::cuda {

namespace {

using rowwise::BlockRow;
using rowwise::kBlockRowThreads;
using rowwise::kWarpRowMax;
using rowwise::kWarpRowsPerBlock;
using rowwise::kWarpRowThreads;
using rowwise::ThreadRow;
using rowwise::WarpRow;

// One row of r elements at stride st: y = softmax(x) (log_softmax when is_log).
template <typename scalar_t, typename Row>
__device__ void softmax_row(const Row& g, scalar_t* y, const scalar_t* x, int64_t r, int64_t st,
                            bool is_log) {
  const scalar_t ninf = scalar_t(-INFINITY);
  scalar_t mx = ninf;
  for (int64_t j = g.first; j < r; j += g.step) mx = fmax(mx, x[j * st]);
  mx = g.max(mx);
  if (mx == ninf) {  // all -inf (NaNs aside): 0 / -inf, or NaN when the row holds a NaN
    bool nan = false;
    for (int64_t j = g.first; j < r; j += g.step) nan = nan || isnan(x[j * st]);
    const scalar_t v = g.any(nan) ? scalar_t(NAN) : (is_log ? ninf : scalar_t(0));
    for (int64_t j = g.first; j < r; j += g.step) y[j * st] = v;
    return;
  }
  scalar_t s = 0;
  for (int64_t j = g.first; j < r; j += g.step) s += exp(x[j * st] - mx);
  s = g.sum(s);
  if (is_log) {  // lse and x - lse in double (as the CPU): F32 outputs near 0 keep their digits
    const double lse = static_cast<double>(mx) + log(static_cast<double>(s));
    for (int64_t j = g.first; j < r; j += g.step)
      y[j * st] = static_cast<scalar_t>(static_cast<double>(x[j * st]) - lse);
  } else {
    const scalar_t inv = scalar_t(1) / s;
    for (int64_t j = g.first; j < r; j += g.step) y[j * st] = exp(x[j * st] - mx) * inv;
  }
}

// One row: dx from the upstream gradient dy and the saved output y.
template <typename scalar_t, typename Row>
__device__ void softmax_backward_row(const Row& g, scalar_t* dx, const scalar_t* dy,
                                     const scalar_t* y, int64_t r, int64_t st, bool is_log) {
  if (is_log) {
    scalar_t sg = 0, sp = 0;
    for (int64_t j = g.first; j < r; j += g.step) {
      sg += dy[j * st];
      sp += exp(y[j * st]);
    }
    sg = g.sum(sg);
    sp = g.sum(sp);
    for (int64_t j = g.first; j < r; j += g.step) {
      const int64_t k = j * st;
      dx[k] = sp == scalar_t(0) ? scalar_t(0) : dy[k] - exp(y[k]) * sg;
    }
  } else {
    scalar_t dot = 0;
    for (int64_t j = g.first; j < r; j += g.step) dot += dy[j * st] * y[j * st];
    dot = g.sum(dot);
    for (int64_t j = g.first; j < r; j += g.step) {
      const int64_t k = j * st;
      dx[k] = y[k] * (dy[k] - dot);
    }
  }
}

// ---- forward kernels: x, y (outer, r, inner) ----

// inner == 1, one warp per row; rows = outer.
template <typename scalar_t>
__global__ void softmax_warp_kernel(scalar_t* y, const scalar_t* x, int64_t rows, int64_t r,
                                    bool is_log) {
  const WarpRow g{static_cast<int>(threadIdx.x & 31)};
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpRowsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
       row < rows; row += step)
    softmax_row(g, y + row * r, x + row * r, r, 1, is_log);
}

// inner == 1, one block per row.
template <typename scalar_t>
__global__ void softmax_block_kernel(scalar_t* y, const scalar_t* x, int64_t rows, int64_t r,
                                     bool is_log) {
  __shared__ double shm[32];
  const BlockRow g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), shm};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    softmax_row(g, y + row * r, x + row * r, r, 1, is_log);
}

// inner > 1, one thread per (o, i) column.
template <typename scalar_t>
__global__ void softmax_column_kernel(scalar_t* y, const scalar_t* x, int64_t outer, int64_t r,
                                      int64_t inner, bool is_log) {
  const int64_t cols = outer * inner, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += step) {
    const int64_t base = (c / inner) * r * inner + c % inner;
    softmax_row(ThreadRow{}, y + base, x + base, r, inner, is_log);
  }
}

// ---- backward kernels: dx, dy, y (outer, r, inner) ----

template <typename scalar_t>
__global__ void softmax_backward_warp_kernel(scalar_t* dx, const scalar_t* dy, const scalar_t* y,
                                             int64_t rows, int64_t r, bool is_log) {
  const WarpRow g{static_cast<int>(threadIdx.x & 31)};
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpRowsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
       row < rows; row += step)
    softmax_backward_row(g, dx + row * r, dy + row * r, y + row * r, r, 1, is_log);
}

template <typename scalar_t>
__global__ void softmax_backward_block_kernel(scalar_t* dx, const scalar_t* dy, const scalar_t* y,
                                              int64_t rows, int64_t r, bool is_log) {
  __shared__ double shm[32];
  const BlockRow g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), shm};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    softmax_backward_row(g, dx + row * r, dy + row * r, y + row * r, r, 1, is_log);
}

template <typename scalar_t>
__global__ void softmax_backward_column_kernel(scalar_t* dx, const scalar_t* dy, const scalar_t* y,
                                               int64_t outer, int64_t r, int64_t inner,
                                               bool is_log) {
  const int64_t cols = outer * inner, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += step) {
    const int64_t base = (c / inner) * r * inner + c % inner;
    softmax_backward_row(ThreadRow{}, dx + base, dy + base, y + base, r, inner, is_log);
  }
}

constexpr int kColumnThreads = 256;

}  // namespace

using detail::F32Scratch;
using detail::is_reduced;

void softmax_forward(DT dt, void* y, const void* x, int64_t outer, int64_t r, int64_t inner,
                     bool is_log) {
  if (is_reduced(dt)) {  // cuda/reduced.cuh: the float32 kernel, rounded once
    const int64_t n = outer * r * inner;
    F32Scratch xf(dt, x, n), yf(n);
    softmax_forward(DT::F32, yf.get(), xf.get(), outer, r, inner, is_log);
    return yf.store(dt, y);
  }
  if (outer <= 0 || r <= 0 || inner <= 0) return;
  TG_DISPATCH_FLOAT(dt, "softmax_forward", [&] {
    auto* yp = static_cast<scalar_t*>(y);
    const auto* xp = static_cast<const scalar_t*>(x);
    cudaStream_t s = detail::cur_stream();
    if (inner > 1) {
      softmax_column_kernel<<<detail::grid_for(outer * inner, kColumnThreads), kColumnThreads, 0,
                              s>>>(yp, xp, outer, r, inner, is_log);
      TG_CUDA_LAUNCH_CHECK("softmax_column_kernel");
    } else if (r <= kWarpRowMax) {
      softmax_warp_kernel<<<detail::grid_for(outer, kWarpRowsPerBlock), kWarpRowThreads, 0, s>>>(
          yp, xp, outer, r, is_log);
      TG_CUDA_LAUNCH_CHECK("softmax_warp_kernel");
    } else {
      softmax_block_kernel<<<detail::grid_for(outer, 1), kBlockRowThreads, 0, s>>>(yp, xp, outer, r,
                                                                                   is_log);
      TG_CUDA_LAUNCH_CHECK("softmax_block_kernel");
    }
  });
}

void softmax_backward(DT dt, void* dx, const void* g, const void* y, int64_t outer, int64_t r,
                      int64_t inner, bool is_log) {
  if (is_reduced(dt)) {
    const int64_t n = outer * r * inner;
    F32Scratch gf(dt, g, n), yf(dt, y, n), d(n);
    softmax_backward(DT::F32, d.get(), gf.get(), yf.get(), outer, r, inner, is_log);
    return d.store(dt, dx);
  }
  if (outer <= 0 || r <= 0 || inner <= 0) return;
  TG_DISPATCH_FLOAT(dt, "softmax_backward", [&] {
    auto* dxp = static_cast<scalar_t*>(dx);
    const auto* gp = static_cast<const scalar_t*>(g);
    const auto* yp = static_cast<const scalar_t*>(y);
    cudaStream_t s = detail::cur_stream();
    if (inner > 1) {
      softmax_backward_column_kernel<<<detail::grid_for(outer * inner, kColumnThreads),
                                       kColumnThreads, 0, s>>>(dxp, gp, yp, outer, r, inner,
                                                               is_log);
      TG_CUDA_LAUNCH_CHECK("softmax_backward_column_kernel");
    } else if (r <= kWarpRowMax) {
      softmax_backward_warp_kernel<<<detail::grid_for(outer, kWarpRowsPerBlock), kWarpRowThreads, 0,
                                     s>>>(dxp, gp, yp, outer, r, is_log);
      TG_CUDA_LAUNCH_CHECK("softmax_backward_warp_kernel");
    } else {
      softmax_backward_block_kernel<<<detail::grid_for(outer, 1), kBlockRowThreads, 0, s>>>(
          dxp, gp, yp, outer, r, is_log);
      TG_CUDA_LAUNCH_CHECK("softmax_backward_block_kernel");
    }
  });
}

}  // namespace tg::cuda
