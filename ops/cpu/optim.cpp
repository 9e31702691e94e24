// ops/cpu/optim.cpp — the CPU twins of the optimizer and clipping kernels of cuda/kernel_list.inc:
// the fused Adam / AdamW step (cpu::adam_step, the spec cuda/optim.cu follows) and the sum of
// squares a gradient-norm clip accumulates (cpu::sum_squares). Plain loops: one pass over memory
// each, with no broadcasting for xtensor to help with. Deliberately not here: the optimizers'
// state and options (nn/optim.cpp), SGD (nn/optim.cpp: CPU only).
#include "ops/cpu/kernels.hpp"
#include "ops/detail.hpp"

#include <algorithm>
#include <cmath>

namespace tg::cpu {

namespace {
// PyTorch 1.13's _single_tensor_adam, in T: maximize negates g; AdamW decays p, Adam adds wd·p to
// g; m, v updated; vmax (amsgrad, or null) keeps the running max of v and is read instead of v.
template <typename T>
void adam_t(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, double lr, double beta1, double beta2,
            double eps_, double wd_, bool decoupled, bool maximize, double bc1, double bc2) {
  const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2), eps = static_cast<T>(eps_);
  const T wd = static_cast<T>(wd_), decay = static_cast<T>(1 - lr * wd_);
  const T bc2_sqrt = static_cast<T>(std::sqrt(bc2)), step = static_cast<T>(-(lr / bc1));
  const T one_b1 = static_cast<T>(1 - beta1), one_b2 = static_cast<T>(1 - beta2);
  for (int64_t i = 0; i < n; ++i) {
    T gi = maximize ? -g[i] : g[i];
    if (decoupled)
      p[i] = p[i] * decay;
    else if (wd != 0)
      gi = gi + wd * p[i];
    m[i] = m[i] * b1 + one_b1 * gi;
    v[i] = v[i] * b2 + one_b2 * gi * gi;
    T vi = v[i];
    if (vmax) vi = vmax[i] = std::max(vmax[i], v[i]);
    const T denom = std::sqrt(vi) / bc2_sqrt + eps;
    p[i] = p[i] + step * m[i] / denom;  // addcdiv: p + value·m / denom
  }
}
}  // namespace

void adam_step(DT dt, void* p, const void* g, void* m, void* v, void* vmax, int64_t n, double lr,
               double b1, double b2, double eps, double weight_decay, bool decoupled, bool maximize,
               double bc1, double bc2) {
  detail::dispatch_float(static_cast<DType>(dt), "adam_step", [&](auto tag) {
    using T = decltype(tag);
    adam_t(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m), static_cast<T*>(v),
           static_cast<T*>(vmax), n, lr, b1, b2, eps, weight_decay, decoupled, maximize, bc1, bc2);
  });
}

void sum_squares(DT dt, double* acc, const void* x, int64_t n) {
  detail::dispatch_float(static_cast<DType>(dt), "sum_squares", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(px[i]) * static_cast<double>(px[i]);
    *acc += s;
  });
}

}  // namespace tg::cpu
