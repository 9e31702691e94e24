// cuda/rotary.cu — rotary position embeddings on the GPU (ops/rotary/rotary.cpp is the spec, the
// CPU's ops/rotary/cpu/rotary.cpp the twin): each row of x (outer, T, inner, D) at position t has
// its first R dims rotated in pairs by the angles whose cosines and sines are cos, sin (T, R/2);
// dims past R pass through. Pairs (i, i + R/2) in the half-split layout, (2i, 2i+1) interleaved;
// inverse rotates by −θ (the backward). One thread per pair or passed-through element, in T's
// precision like the CPU. Deliberately not here: the tables (nn::RotaryEmbedding), gradients of cos
// and sin.
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"

namespace tg::cuda {

namespace {

constexpr int kThreads = 256;

template <typename scalar_t>
__global__ void rotary_kernel(scalar_t* out, const scalar_t* x, const scalar_t* cs,
                              const scalar_t* sn, int64_t rows, int64_t T, int64_t inner, int64_t D,
                              int64_t R, bool interleaved, bool inverse) {
  const int64_t h = R / 2, per_row = h + (D - R);  // pairs, then passed-through elements
  const int64_t n = rows * per_row;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    const int64_t r = k / per_row, j = k % per_row;
    const scalar_t* xr = x + r * D;
    scalar_t* o = out + r * D;
    if (j >= h) {  // past the rotary dims
      const int64_t e = R + (j - h);
      o[e] = xr[e];
      continue;
    }
    const int64_t t = (r / inner) % T;
    const scalar_t c = cs[t * h + j], s = inverse ? -sn[t * h + j] : sn[t * h + j];
    const int64_t ia = interleaved ? 2 * j : j, ib = interleaved ? 2 * j + 1 : j + h;
    const scalar_t a = xr[ia], b = xr[ib];
    o[ia] = a * c - b * s;
    o[ib] = b * c + a * s;
  }
}

}  // namespace

using detail::F32Scratch;
using detail::is_reduced;

void rotary(DT dt, void* out, const void* x, const void* cos, const void* sin, int64_t outer,
            int64_t T, int64_t inner, int64_t D, int64_t R, bool interleaved, bool inverse) {
  if (is_reduced(dt)) {  // reduced x and out, float32 cos and sin (as on the CPU)
    const int64_t m = outer * T * inner * D;
    F32Scratch xf(dt, x, m), o(m);
    rotary(DT::F32, o.get(), xf.get(), cos, sin, outer, T, inner, D, R, interleaved, inverse);
    return o.store(dt, out);
  }
  const int64_t rows = outer * T * inner, n = rows * (R / 2 + D - R);
  if (n <= 0) return;
  TG_DISPATCH_FLOAT(dt, "rotary", [&] {
    rotary_kernel<scalar_t><<<detail::grid_for(n, kThreads), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x),
        static_cast<const scalar_t*>(cos), static_cast<const scalar_t*>(sin), rows, T, inner, D, R,
        interleaved, inverse);
    TG_CUDA_LAUNCH_CHECK("rotary_kernel");
  });
}

}  // namespace tg::cuda
