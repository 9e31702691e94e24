// ops/optim/cpu/optim.cpp — the CPU twins of the optimizer and clipping kernels of
// ops/kern/kernel_list.inc: the fused Adam / AdamW step (cpu::adam_step, the spec cuda/optim.cu
// follows) and the sum of squares a gradient-norm clip accumulates (cpu::sum_squares), which the
// tensor-level entries of ops/optim/optim.cpp call. Plain loops: one pass over memory each, with no
// broadcasting for xtensor to help with; the Adam step's is vectorised by gcc (its options compiled
// in, -fno-math-errno: ops/CMakeLists.txt), each element's bits as the scalar loop's. The sum of
// squares stays one scalar chain: its order is the result's bits. bfloat16 / float16 operands
// (a reduced gradient with float32 master weights and state, or all reduced) load float32 chunks
// and run the same float32 step, the state rounded once on the store. Deliberately not here: the
// optimizers' state and options (nn/optim.cpp), SGD (nn/optim.cpp: CPU only).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/core/detail.hpp"
#include "ops/optim/cpu/optim.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>
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

// Adam on bfloat16 / float16 operands, in float32: p, m, v, vmax of dtype pdt and g of dtype gdt
// (each float32 or reduced; float32 master weights with a reduced gradient, or all reduced) taken
// in chunks of convert::kChunk, each reduced operand loaded as float32 and, for the state, stored
// rounded once; float32 operands are used in place. Elementwise, so chunking changes no bits.
void adam_reduced(DT pdt, DT gdt, void* p, const void* g, void* m, void* v, void* vmax, int64_t n,
                  double lr, double b1, double b2, double eps, double wd, bool decoupled,
                  bool maximize, double bc1, double bc2) {
  auto at = [](DT dt, const void* q, int64_t i, float* buf, int64_t k) -> float* {
    if (!q) return nullptr;
    if (dt == DT::F32) return const_cast<float*>(static_cast<const float*>(q)) + i;
    reduced::load(dt, buf, q, i, k);
    return buf;
  };
  xtd::chunks(
      n,
      [&](int64_t lo, int64_t hi) {
        float buf[5][convert::kChunk];
        for (int64_t i = lo; i < hi; i += convert::kChunk) {
          const int64_t k = std::min(convert::kChunk, hi - i);
          float *fp = at(pdt, p, i, buf[0], k), *fg = at(gdt, g, i, buf[1], k),
                *fm = at(pdt, m, i, buf[2], k), *fv = at(pdt, v, i, buf[3], k),
                *fx = at(pdt, vmax, i, buf[4], k);
          adam_t(fp, fg, fm, fv, fx, k, lr, b1, b2, eps, wd, decoupled, maximize, bc1, bc2);
          if (pdt == DT::F32) continue;
          for (auto [q, f] : std::initializer_list<std::pair<void*, float*>>{
                   {p, fp}, {m, fm}, {v, fv}, {vmax, fx}})
            if (q) reduced::store(pdt, q, i, f, k);
        }
      },
      2);
}
}  // namespace

void adam_step_mixed(DT gdt, float* p, const void* g, float* m, float* v, float* vmax, int64_t n,
                     double lr, double b1, double b2, double eps, double weight_decay,
                     bool decoupled, bool maximize, double bc1, double bc2) {
  adam_reduced(DT::F32, gdt, p, g, m, v, vmax, n, lr, b1, b2, eps, weight_decay, decoupled,
               maximize, bc1, bc2);
}

void adam_step(DT dt, void* p, const void* g, void* m, void* v, void* vmax, int64_t n, double lr,
               double b1, double b2, double eps, double weight_decay, bool decoupled, bool maximize,
               double bc1, double bc2) {
  if (reduced::is(dt))
    return adam_reduced(dt, dt, p, g, m, v, vmax, n, lr, b1, b2, eps, weight_decay, decoupled,
                        maximize, bc1, bc2);
  detail::dispatch_float(static_cast<DType>(dt), "adam_step", [&](auto tag) {
    using T = decltype(tag);
    adam_t(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m), static_cast<T*>(v),
           static_cast<T*>(vmax), n, lr, b1, b2, eps, weight_decay, decoupled, maximize, bc1, bc2);
  });
}

namespace {
// Σ x² in double over eight independent partial sums (a vector's worth, and no chain of
// dependent adds), then added pairwise.
template <typename T>
double sum_squares_t(const T* x, int64_t n) {
  constexpr int64_t kLanes = 8;
  double s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) {
      const double a = static_cast<double>(x[i + j]);
      s[j] += a * a;
    }
  for (; i < n; ++i) {
    const double a = static_cast<double>(x[i]);
    s[0] += a * a;
  }
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
}  // namespace

void sum_squares(DT dt, double* acc, const void* x, int64_t n) {
  if (reduced::is(dt)) {  // float32 chunks (exact), each summed as float32's are
    float buf[convert::kChunk] = {};
    double s = 0;
    for (int64_t i = 0; i < n; i += convert::kChunk) {
      const int64_t k = std::min(convert::kChunk, n - i);
      reduced::load(dt, buf, x, i, k);
      s += sum_squares_t(buf, k);
    }
    *acc += s;
    return;
  }
  detail::dispatch_float(static_cast<DType>(dt), "sum_squares", [&](auto tag) {
    using T = decltype(tag);
    *acc += sum_squares_t(static_cast<const T*>(x), n);
  });
}

}  // namespace tg::cpu
