// cuda/dropout.cu — inverted dropout on the GPU (ops/random/dropout.cpp is the spec for the arithmetic):
// keep[i] = (u(i) >= p) ? 1/(1-p) : 0 and out[i] = x[i]·keep[i], with u(i) drawn by Philox-4x32-10
// (cuda/philox.cuh) at counter offset + i, so the mask depends only on (seed, offset, i) and the
// host twin dropout_uniform_host predicts it. p == 1 writes zeros without drawing, like the CPU.
// Deliberately not here: the CPU generator's stream (the GPU mask is not the CPU's mask), dropout
// inside fused attention, the backward (ops/ multiplies dout by keep).
#include "cuda/check.cuh"
#include "cuda/philox.cuh"

namespace tg::cuda {

namespace {

constexpr int kThreads = 256;

// x, out, keep (n); one Philox draw per element, grid-stride.
template <typename scalar_t>
__global__ void dropout_kernel(scalar_t* out, scalar_t* keep, const scalar_t* x, int64_t n,
                               double p, scalar_t scale, uint64_t seed, uint64_t offset) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    scalar_t k = scalar_t(0), o = scalar_t(0);
    if (p < 1.0) {  // p == 1: zeros, not x·0 (which would keep NaN and inf)
      k = philox_uniform(seed, offset + static_cast<uint64_t>(i)) >= p ? scale : scalar_t(0);
      o = x[i] * k;
    }
    if (keep) keep[i] = k;
    out[i] = o;
  }
}

}  // namespace

// x, out, keep (n) of type dt; keep may be null when the caller needs no mask.
void dropout_forward(DT dt, void* out, void* keep, const void* x, int64_t n, double p,
                     uint64_t seed, uint64_t offset) {
  if (n <= 0) return;
  TG_DISPATCH_FLOAT(dt, "dropout_forward", [&] {
    const scalar_t scale = p < 1.0 ? static_cast<scalar_t>(1.0 / (1.0 - p)) : scalar_t(0);
    dropout_kernel<scalar_t><<<detail::grid_for(n, kThreads), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(out), static_cast<scalar_t*>(keep), static_cast<const scalar_t*>(x),
        n, p, scale, seed, offset);
    TG_CUDA_LAUNCH_CHECK("dropout_kernel");
  });
}

double dropout_uniform_host(uint64_t seed, uint64_t offset, int64_t i) {
  return philox_uniform(seed, offset + static_cast<uint64_t>(i));
}

}  // namespace tg::cuda
