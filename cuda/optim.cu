// cuda/optim.cu — the fused Adam / AdamW step, one thread per element, in place
// (ops/optim/cpu/optim.cpp's adam_step is the spec, itself PyTorch 1.13's _single_tensor_adam order
// of operations):
//   maximize: g = -g
//   AdamW (decoupled):  p = p·(1 - lr·wd)        Adam (wd != 0):  g = g + wd·p
//   m = m·b1 + (1-b1)·g;   v = v·b2 + (1-b2)·g·g;   amsgrad: vmax = max(vmax, v), read instead of v
//   p = p + (-lr/bc1)·m / (sqrt(v)/sqrt(bc2) + eps)
// Arithmetic is double per element (loads widened, results rounded to scalar_t when stored: p,
// m and v, all of p's dtype as on the CPU). The CPU computes in scalar_t itself, so F32 agrees to
// float32 rounding, F64 to an ulp or so (nvcc may fuse multiply-adds). Deliberately not here: SGD.
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"

#include <cmath>
#include <initializer_list>
#include <utility>

namespace tg::cuda {

namespace {

constexpr int kThreads = 256;

// The per-step scalars, derived on the host exactly as ops/optim/cpu/optim.cpp does.
struct AdamScalars {
  double b1, b2, one_b1, one_b2, eps, wd, decay, step, bc2_sqrt;
  bool decoupled, maximize;
};

// p, g, m, v, vmax (n; vmax may be null).
template <typename scalar_t>
__global__ void adam_kernel(scalar_t* p, const scalar_t* g, scalar_t* m, scalar_t* v,
                            scalar_t* vmax, int64_t n, AdamScalars s) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    double pi = static_cast<double>(p[i]), gi = static_cast<double>(g[i]);
    if (s.maximize) gi = -gi;
    if (s.decoupled)
      pi = pi * s.decay;
    else if (s.wd != 0)
      gi = gi + s.wd * pi;
    const double mi = static_cast<double>(m[i]) * s.b1 + s.one_b1 * gi;
    const double vi = static_cast<double>(v[i]) * s.b2 + s.one_b2 * gi * gi;
    double vhat = vi;
    if (vmax) {  // the max of the stored (rounded) moments, as the CPU compares them
      const scalar_t vr = static_cast<scalar_t>(vi);
      const scalar_t mx = vmax[i] < vr ? vr : vmax[i];  // std::max(vmax, v)
      vmax[i] = mx;
      vhat = static_cast<double>(mx);
    }
    const double denom = sqrt(vhat) / s.bc2_sqrt + s.eps;
    p[i] = static_cast<scalar_t>(pi + s.step * mi / denom);
    m[i] = static_cast<scalar_t>(mi);
    v[i] = static_cast<scalar_t>(vi);
  }
}

}  // namespace

void adam_step(DT dt, void* p, const void* g, void* m, void* v, void* vmax, int64_t n, double lr,
               double b1, double b2, double eps, double weight_decay, bool decoupled, bool maximize,
               double bc1, double bc2) {
  if (n <= 0) return;
  if (detail::is_reduced(dt)) {  // all reduced: the float32 step on widened copies, each state
    using detail::F32Scratch;  // stored rounded once (cuda/reduced.cuh), as the CPU's adam_reduced
    F32Scratch pf(dt, p, n), gf(dt, g, n), mf(dt, m, n), vf(dt, v, n), xf(dt, vmax, n);
    adam_step(DT::F32, pf.get(), gf.get(), mf.get(), vf.get(), xf.get(), n, lr, b1, b2, eps,
              weight_decay, decoupled, maximize, bc1, bc2);
    for (auto [f, q] :
         {std::pair<const F32Scratch*, void*>{&pf, p}, {&mf, m}, {&vf, v}, {&xf, vmax}})
      f->store(dt, q);
    return;
  }
  AdamScalars s{};
  s.b1 = b1;
  s.b2 = b2;
  s.one_b1 = 1 - b1;
  s.one_b2 = 1 - b2;
  s.eps = eps;
  s.wd = weight_decay;
  s.decay = 1 - lr * weight_decay;
  s.step =
      -(lr /
        bc1);  // ops/optim/cpu/optim.cpp: step_size = lr / bc1, applied as p + (-step_size)·m/denom
  s.bc2_sqrt = std::sqrt(bc2);
  s.decoupled = decoupled;
  s.maximize = maximize;
  TG_DISPATCH_FLOAT(dt, "adam_step", [&] {
    adam_kernel<<<detail::grid_for(n, kThreads), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(p), static_cast<const scalar_t*>(g), static_cast<scalar_t*>(m),
        static_cast<scalar_t*>(v), static_cast<scalar_t*>(vmax), n, s);
    TG_CUDA_LAUNCH_CHECK("adam_kernel");
  });
}

}  // namespace tg::cuda
