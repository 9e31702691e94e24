// cuda/loss.cu — cross entropy fused with log_softmax, forward and backward side by side
// (ops/loss/cross_entropy.cpp is the spec: ce_forward, ce_backward). logits (N, C, inner), target
// (N, inner); row r = n·inner + i holds the C logits at n·C·inner + c·inner + i. Per row, with ε
// the label smoothing, t the target and lse = logsumexp_c(x):
//   loss = (1-ε)·(lse - x_t) + ε/C·(C·lse - Σ_c x_c)   (exactly nll when ε == 0)
//   dx_c = grow·(exp(x_c - lse) - (1-ε)·[c == t] - ε/C)
// and rows whose target is ignore_index get loss 0, lse 0 and dx 0.
// Launch shapes (forward and backward alike): inner == 1 rows are contiguous, one warp per row
// for C <= 1024 (8 rows per block), one 512-thread block per row above; inner > 1, one thread per
// row (neighbouring threads read neighbouring i, so loads coalesce).
// Numerics: the max and exp run in scalar_t (expf for F32); Σexp and Σx accumulate in double
// (a few FP64 adds per logit cost nothing next to the memory traffic; kernels.cuh's default is
// float32, this is more accurate); lse, loss and the gradient's final product are double.
// The max skips NaN like the CPU's std::max; a NaN or an all -inf row gives NaN loss as there.
// The count of non-ignored rows: per-warp sums, one atomicAdd per warp into a device uint64.
// Deliberately not here: the reduction over rows (ops/), class weights, probability targets.
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

constexpr int kThreadRowThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // grid-stride beyond: bounds the counter's atomics

// The shape every kernel needs.
struct CeShape {
  int64_t rows, C, inner, ignore_index;
  double eps;
  // Offset of row r's class 0; its classes follow at stride inner.
  __device__ int64_t base(int64_t r) const {
    const int64_t n = r / inner;
    return n * C * inner + (r - n * inner);
  }
};

// One row: writes *loss and *lse (group leader); returns 1 for a counted (non-ignored) row.
template <typename scalar_t, typename Row>
__device__ int ce_forward_row(const Row& g, double* loss, double* lse, const scalar_t* x, int64_t t,
                              const CeShape& sh) {
  const int64_t C = sh.C, st = sh.inner;
  if (t == sh.ignore_index) {
    if (g.leader()) *loss = *lse = 0;
    return 0;
  }
  scalar_t mx = scalar_t(-INFINITY);
  for (int64_t c = g.first; c < C; c += g.step) mx = fmax(mx, x[c * st]);
  mx = g.max(mx);
  double s = 0, sx = 0;
  for (int64_t c = g.first; c < C; c += g.step) {
    const scalar_t v = x[c * st];
    s += static_cast<double>(exp(v - mx));
    sx += static_cast<double>(v);
  }
  s = g.sum(s);
  if (sh.eps != 0) sx = g.sum(sx);
  if (g.leader()) {
    const double z = static_cast<double>(mx) + log(s);
    const double nll = z - static_cast<double>(x[t * st]);
    const double Cd = static_cast<double>(C);
    *loss = sh.eps == 0 ? nll : (1 - sh.eps) * nll + sh.eps / Cd * (Cd * z - sx);
    *lse = z;
  }
  return g.leader() ? 1 : 0;
}

// One row: dx (C at stride inner) from the row's upstream gradient gr and saved lse z.
template <typename scalar_t, typename Row>
__device__ void ce_backward_row(const Row& g, scalar_t* dx, const scalar_t* x, int64_t t, double gr,
                                double z, const CeShape& sh) {
  const int64_t C = sh.C, st = sh.inner;
  if (t == sh.ignore_index) {
    for (int64_t c = g.first; c < C; c += g.step) dx[c * st] = scalar_t(0);
    return;
  }
  const double smooth = sh.eps / static_cast<double>(C);
  for (int64_t c = g.first; c < C; c += g.step) {
    const double target = (c == t ? 1 - sh.eps : 0) + smooth;
    const scalar_t p = exp(static_cast<scalar_t>(static_cast<double>(x[c * st]) - z));
    dx[c * st] = static_cast<scalar_t>(gr * (static_cast<double>(p) - target));
  }
}

// Adds this warp's counted rows to *counter (every lane of every warp must get here).
__device__ void add_count(unsigned long long* counter, unsigned long long mine) {
  mine = rowwise::warp_sum(mine);
  if (counter && (threadIdx.x & 31) == 0 && mine != 0) atomicAdd(counter, mine);
}

// ---- forward: loss, lse (rows) float64 from logits (N, C, inner), target (rows) ----

template <typename scalar_t>
__global__ void ce_forward_warp_kernel(double* loss, double* lse, unsigned long long* counter,
                                       const scalar_t* x, const int64_t* target, CeShape sh) {
  const WarpRow g{static_cast<int>(threadIdx.x & 31)};
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpRowsPerBlock;
  unsigned long long n = 0;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
       r < sh.rows; r += step)
    n += ce_forward_row(g, loss + r, lse + r, x + sh.base(r), target[r], sh);
  add_count(counter, n);
}

template <typename scalar_t>
__global__ void ce_forward_block_kernel(double* loss, double* lse, unsigned long long* counter,
                                        const scalar_t* x, const int64_t* target, CeShape sh) {
  __shared__ double shm[32];
  const BlockRow g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), shm};
  unsigned long long n = 0;
  for (int64_t r = blockIdx.x; r < sh.rows; r += gridDim.x)
    n += ce_forward_row(g, loss + r, lse + r, x + sh.base(r), target[r], sh);
  add_count(counter, n);
}

template <typename scalar_t>
__global__ void ce_forward_thread_kernel(double* loss, double* lse, unsigned long long* counter,
                                         const scalar_t* x, const int64_t* target, CeShape sh) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  unsigned long long n = 0;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < sh.rows;
       r += step)
    n += ce_forward_row(ThreadRow{}, loss + r, lse + r, x + sh.base(r), target[r], sh);
  add_count(counter, n);
}

// ---- backward: dlogits (N, C, inner) from grow (rows) or grow_scalar, logits, target, lse ----

template <typename scalar_t>
__global__ void ce_backward_warp_kernel(scalar_t* dx, const double* grow, double grow_scalar,
                                        const scalar_t* x, const int64_t* target, const double* lse,
                                        CeShape sh) {
  const WarpRow g{static_cast<int>(threadIdx.x & 31)};
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpRowsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
       r < sh.rows; r += step) {
    const int64_t b = sh.base(r);
    ce_backward_row(g, dx + b, x + b, target[r], grow ? grow[r] : grow_scalar, lse[r], sh);
  }
}

template <typename scalar_t>
__global__ void ce_backward_block_kernel(scalar_t* dx, const double* grow, double grow_scalar,
                                         const scalar_t* x, const int64_t* target,
                                         const double* lse, CeShape sh) {
  const BlockRow g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), nullptr};
  for (int64_t r = blockIdx.x; r < sh.rows; r += gridDim.x) {
    const int64_t b = sh.base(r);
    ce_backward_row(g, dx + b, x + b, target[r], grow ? grow[r] : grow_scalar, lse[r], sh);
  }
}

template <typename scalar_t>
__global__ void ce_backward_thread_kernel(scalar_t* dx, const double* grow, double grow_scalar,
                                          const scalar_t* x, const int64_t* target,
                                          const double* lse, CeShape sh) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < sh.rows;
       r += step) {
    const int64_t b = sh.base(r);
    ce_backward_row(ThreadRow{}, dx + b, x + b, target[r], grow ? grow[r] : grow_scalar, lse[r],
                    sh);
  }
}

}  // namespace

using detail::F32Scratch;
using detail::is_reduced;

void cross_entropy_forward(DT dt, double* loss, double* lse, const void* logits,
                           const int64_t* target, int64_t N, int64_t C, int64_t inner,
                           int64_t ignore_index, double label_smoothing, int64_t* count_host) {
  if (is_reduced(dt)) {  // cuda/reduced.cuh: the float32 kernel on widened logits
    F32Scratch xf(dt, logits, N * C * inner);
    return cross_entropy_forward(DT::F32, loss, lse, xf.get(), target, N, C, inner, ignore_index,
                                 label_smoothing, count_host);
  }
  const CeShape sh{N * inner, C, inner, ignore_index, label_smoothing};
  if (sh.rows <= 0) {
    if (count_host) *count_host = 0;
    return;
  }
  TG_DISPATCH_FLOAT(dt, "cross_entropy_forward", [&] {
    const auto* xp = static_cast<const scalar_t*>(logits);
    const int dev = current_device();
    cudaStream_t s = detail::cur_stream();
    unsigned long long* counter = nullptr;
    if (count_host) {
      counter = static_cast<unsigned long long*>(alloc(sizeof(unsigned long long), dev));
      TG_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), s));
    }
    if (inner > 1) {
      ce_forward_thread_kernel<<<detail::blocks_for(sh.rows, kThreadRowThreads, kMaxBlocks),
                                 kThreadRowThreads, 0, s>>>(loss, lse, counter, xp, target, sh);
      TG_CUDA_LAUNCH_CHECK("ce_forward_thread_kernel");
    } else if (C <= kWarpRowMax) {
      ce_forward_warp_kernel<<<detail::blocks_for(sh.rows, kWarpRowsPerBlock, kMaxBlocks),
                               kWarpRowThreads, 0, s>>>(loss, lse, counter, xp, target, sh);
      TG_CUDA_LAUNCH_CHECK("ce_forward_warp_kernel");
    } else {
      ce_forward_block_kernel<<<detail::blocks_for(sh.rows, 1, kMaxBlocks), kBlockRowThreads, 0,
                                s>>>(loss, lse, counter, xp, target, sh);
      TG_CUDA_LAUNCH_CHECK("ce_forward_block_kernel");
    }
    if (counter) {
      unsigned long long n = 0;
      copy_to_host(&n, counter, sizeof n, dev);  // waits for the kernel
      free(counter, dev);
      *count_host = static_cast<int64_t>(n);
    }
  });
}

void cross_entropy_backward(DT dt, void* dlogits, const double* grow, double grow_scalar,
                            const void* logits, const int64_t* target, const double* lse, int64_t N,
                            int64_t C, int64_t inner, int64_t ignore_index,
                            double label_smoothing) {
  if (is_reduced(dt)) {
    F32Scratch xf(dt, logits, N * C * inner), d(N * C * inner);
    cross_entropy_backward(DT::F32, d.get(), grow, grow_scalar, xf.get(), target, lse, N, C, inner,
                           ignore_index, label_smoothing);
    return d.store(dt, dlogits);
  }
  const CeShape sh{N * inner, C, inner, ignore_index, label_smoothing};
  if (sh.rows <= 0 || C <= 0) return;
  TG_DISPATCH_FLOAT(dt, "cross_entropy_backward", [&] {
    auto* dxp = static_cast<scalar_t*>(dlogits);
    const auto* xp = static_cast<const scalar_t*>(logits);
    cudaStream_t s = detail::cur_stream();
    if (inner > 1) {
      ce_backward_thread_kernel<<<detail::blocks_for(sh.rows, kThreadRowThreads, kMaxBlocks),
                                  kThreadRowThreads, 0, s>>>(dxp, grow, grow_scalar, xp, target,
                                                             lse, sh);
      TG_CUDA_LAUNCH_CHECK("ce_backward_thread_kernel");
    } else if (C <= kWarpRowMax) {
      ce_backward_warp_kernel<<<detail::blocks_for(sh.rows, kWarpRowsPerBlock, kMaxBlocks),
                                kWarpRowThreads, 0, s>>>(dxp, grow, grow_scalar, xp, target, lse,
                                                         sh);
      TG_CUDA_LAUNCH_CHECK("ce_backward_warp_kernel");
    } else {
      ce_backward_block_kernel<<<detail::blocks_for(sh.rows, 1, kMaxBlocks), kBlockRowThreads, 0,
                                 s>>>(dxp, grow, grow_scalar, xp, target, lse, sh);
      TG_CUDA_LAUNCH_CHECK("ce_backward_block_kernel");
    }
  });
}

}  // namespace tg::cuda
