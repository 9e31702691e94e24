// ops/optim/cpu/optim.cpp — the CPU twins of the optimizer and clipping kernels of
// ops/kern/kernel_list.inc: the fused Adam / AdamW step (cpu::adam_step, the spec cuda/optim.cu
// follows) and the sum of squares a gradient-norm clip accumulates (cpu::sum_squares), which the
// tensor-level entries of ops/optim/optim.cpp call. Plain loops: one pass over memory each, with no
// broadcasting for xtensor to help with; the Adam step's is vectorised by gcc (its options compiled
// in, -fno-math-errno: ops/CMakeLists.txt), each element's bits as the scalar loop's. The sum of
// squares stays one scalar chain: its order is the result's bits. Deliberately not here: the
// optimizers' state and options (nn/optim.cpp), SGD (nn/optim.cpp: CPU only).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/detail.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace tg::cpu {

namespace {
// The step's constants in T.
template <typename T>
struct AdamConst {
  T b1, b2, eps, wd, decay, bc2_sqrt, step, one_b1, one_b2;
};

// PyTorch 1.13's _single_tensor_adam, in T: maximize negates g; AdamW decays p, Adam adds wd·p to
// g; m, v updated; vmax (amsgrad) keeps the running max of v and is read instead of v. The options
// are template parameters and the pointers restrict, so that gcc vectorises the loop (with the
// options as runtime branches it stays scalar); each element's arithmetic is the same either way.
template <typename T, bool kMaximize, bool kDecoupled, bool kWd, bool kAms>
void adam_loop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
               T* __restrict vmax, int64_t n, const AdamConst<T> c) {
  // AdamW's decay in a pass of its own: p·decay is rounded before the update adds to it, as in
  // PyTorch's p.mul_(1 - lr·wd) (in one loop gcc would fuse the two into an FMA).
  if constexpr (kDecoupled)
    for (int64_t i = 0; i < n; ++i) p[i] = p[i] * c.decay;
  for (int64_t i = 0; i < n; ++i) {
    T gi = kMaximize ? -g[i] : g[i];
    if constexpr (!kDecoupled && kWd) gi = gi + c.wd * p[i];
    m[i] = m[i] * c.b1 + c.one_b1 * gi;
    v[i] = v[i] * c.b2 + c.one_b2 * gi * gi;
    T vi = v[i];
    if constexpr (kAms) vi = vmax[i] = std::max(vmax[i], v[i]);
    const T denom = std::sqrt(vi) / c.bc2_sqrt + c.eps;
    p[i] = p[i] + c.step * m[i] / denom;  // addcdiv: p + value·m / denom
  }
}

template <typename T>
void adam_t(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, double lr, double beta1, double beta2,
            double eps_, double wd_, bool decoupled, bool maximize, double bc1, double bc2) {
  const AdamConst<T> c{
      static_cast<T>(beta1),       static_cast<T>(beta2),        static_cast<T>(eps_),
      static_cast<T>(wd_),         static_cast<T>(1 - lr * wd_), static_cast<T>(std::sqrt(bc2)),
      static_cast<T>(-(lr / bc1)), static_cast<T>(1 - beta1),    static_cast<T>(1 - beta2)};
  const bool wd = c.wd != 0, ams = vmax != nullptr;
  // The 16 option combinations, each its own loop.
  auto run = [&](auto mx, auto dec, auto w, auto am) {
    adam_loop<T, decltype(mx)::value, decltype(dec)::value, decltype(w)::value,
              decltype(am)::value>(p, g, m, v, vmax, n, c);
  };
  auto pick = [&](bool b, auto&& next) {
    if (b)
      next(std::true_type{});
    else
      next(std::false_type{});
  };
  pick(maximize, [&](auto mx) {
    pick(decoupled, [&](auto dec) {
      pick(wd, [&](auto w) { pick(ams, [&](auto am) { run(mx, dec, w, am); }); });
    });
  });
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
