// ops/unary/cpu/rows.hpp — the unary formulas (ops/kern/unary_formulas.hpp) on xsimd batches: the
// batch hooks they need (UnaryOps: select, both, sgn, zero_like) and the float32 kernels whose cost
// is their math (exp, log, tanh, sigmoid, both GELUs; forward and backward) on batches of
// architecture A: every element, the tail's included (a padded batch), goes through the same
// vector code, so a value never depends on the tensor's length or the element's position. tanh,
// sigmoid and the tanh GELU are their Formula; the exact GELU's erf approximation is its own
// (a named override, below). Included by
// ops/unary/cpu/unary.cpp (the build's architecture: the exact GELU) and ops/unary/cpu/unary_avx512.cpp (the
// AVX-512 table's unary slots, ops/core/cpu/isa.hpp). Internal linkage and no inline std:: algorithm,
// for the reason in softmax_rows.hpp. exp and log keep simd.hpp's patched lanes (std:: where
// xsimd is not std::'s answer). Internal to the CPU kernels (ops/<family>/cpu/).
#pragma once

#include "ops/core/cpu/simd.hpp"
#include "ops/kern/unary_formulas.hpp"

#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

// The formulas' hooks on batches: a batch's comparisons give a batch_bool.
namespace tg::kern::uf {
template <typename T, typename A>
struct UnaryOps<xsimd::batch<T, A>> {
  using B = xsimd::batch<T, A>;
  static B sgn(const B& v) {
    return xsimd::select(B(T(0)) < v, B(T(1)), B(T(0))) -
           xsimd::select(v < B(T(0)), B(T(1)), B(T(0)));
  }
  static B zero_like(const B&) { return B(T(0)); }
};
template <typename T, typename A>
struct UnaryOps<xsimd::batch_bool<T, A>> {
  using C = xsimd::batch_bool<T, A>;
  static xsimd::batch<T, A> select(const C& c, const xsimd::batch<T, A>& a,
                                   const xsimd::batch<T, A>& b) {
    return xsimd::select(c, a, b);
  }
  static C both(const C& c, const C& d) { return c & d; }
};
}  // namespace tg::kern::uf

namespace tg::cpu {
namespace {
namespace urows {
using kern::UnOp;

// Rounded from double, as unary.cpp's float64 constants are (the same floats in both files).
constexpr float kSqrt1_2 = static_cast<float>(0.70710678118654752440);
constexpr float kInvSqrt2Pi = static_cast<float>(0.39894228040143267794);

template <typename A>
using FB = xsimd::batch<float, A>;

// ---- the exact GELU ----
// erf as PyTorch's vectorised float kernels compute it (Abramowitz & Stegun 7.1.26, absolute
// error <= 1.5e-7): with z = x/√2, t = 1/(1 + p|z|) and e = exp(-z²), 1 + erf(z) is q = t·poly(t)·e
// for x < 0 and 2 - q otherwise: one exp and one division, against xsimd's two-branch erf
// (docs/cpu-kernels.md). The backward shares e with the density φ(x) = e/√(2π).
template <typename A>
FB<A> gelu_cdf2(FB<A> x, FB<A> e) {  // 2Φ(x) = 1 + erf(x/√2), given e = exp(-x²/2)
  using B = FB<A>;
  const B az = xsimd::abs(x) * B(kSqrt1_2);
  const B t = B(1.f) / xsimd::fma(B(0.3275911f), az, B(1.f));
  B poly = xsimd::fma(B(1.061405429f), t, B(-1.453152027f));
  poly = xsimd::fma(poly, t, B(1.421413741f));
  poly = xsimd::fma(poly, t, B(-0.284496736f));
  poly = xsimd::fma(poly, t, B(0.254829592f));
  const B q = t * poly * e;
  return xsimd::select(x < B(0.f), q, B(2.f) - q);
}
template <typename A>
FB<A> gelu_fwd(FB<A> x) {
  const FB<A> e = xsimd::exp(FB<A>(-0.5f) * x * x);
  return FB<A>(0.5f) * x * gelu_cdf2<A>(x, e);
}
template <typename A>
FB<A> gelu_bwd(FB<A> x, FB<A> g) {  // g · (Φ(x) + x φ(x))
  const FB<A> e = xsimd::exp(FB<A>(-0.5f) * x * x);
  return g * xsimd::fma(x * FB<A>(kInvSqrt2Pi), e, FB<A>(0.5f) * gelu_cdf2<A>(x, e));
}

// An op's formula on batches (parameters 0): its forward of x, its backward of (g, x, y).
template <UnOp OP, typename B>
B fwd(B x) {
  return kern::uf::Formula<OP>::fwd(x, B(0), B(0));
}
template <UnOp OP, typename B>
B bwd(B g, B x, B y) {
  return kern::uf::Formula<OP>::bwd(g, x, y, B(0), B(0));
}

// out[i] = f(a[i], b[i], c[i]) for i < n, on batches; a null operand reads as 0. The tail goes
// through a padded batch.
template <typename A, typename F>
void map(float* out, const float* a, const float* b, const float* c, int64_t n, F f) {
  using B = FB<A>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  auto ld = [](const float* p, int64_t i) { return p ? B::load_unaligned(p + i) : B(0.f); };
  int64_t i = 0;
  for (; i + W <= n; i += W) f(ld(a, i), ld(b, i), ld(c, i)).store_unaligned(out + i);
  if (i < n) {
    alignas(64) float ta[W], tb[W], tc[W], to[W];
    for (int64_t k = 0; k < W; ++k) {
      const bool in = i + k < n;
      ta[k] = in && a ? a[i + k] : 0.f;
      tb[k] = in && b ? b[i + k] : 0.f;
      tc[k] = in && c ? c[i + k] : 0.f;
    }
    f(B::load_aligned(ta), B::load_aligned(tb), B::load_aligned(tc)).store_aligned(to);
    for (int64_t k = 0; i + k < n; ++k) out[i + k] = to[k];
  }
}

// ---- xsimd's exp and log with their special lanes patched (simd.hpp's patched_map) ----
// log: the vector log is exact for normal positive finite x.
template <typename A, typename T>
void log_into(T* out, const T* x, int64_t n) {
  using B = xsimd::batch<T, A>;
  xtd::patched_map<A>(
      out, x, 1, x, 0, n, [](const B& v, const B&) { return xsimd::log(v); },
      [](T v, T) { return std::log(v); },
      [](const B& v, const B&, const B&) { return (v > B(T(0))) & xtd::normal(v); });
}
// exp: away from overflow and from results that are subnormal or 0 (e^±87 and e^±708 are normal
// floats and doubles).
template <typename A, typename T>
void exp_into(T* out, const T* x, int64_t n) {
  using B = xsimd::batch<T, A>;
  constexpr T hi = std::is_same_v<T, float> ? T(88) : T(709), lo = -hi;
  xtd::patched_map<A>(
      out, x, 1, x, 0, n, [](const B& v, const B&) { return xsimd::exp(v); },
      [](T v, T) { return std::exp(v); },
      [](const B& v, const B&, const B&) { return (v > B(lo)) & (v < B(hi)); });
}

// cpu::unary on one contiguous range for the ops above; false for any other op.
template <typename A>
bool unary_f32(UnOp op, float* out, const float* x, int64_t n, float, float) {
  using B = FB<A>;
  switch (op) {
    case UnOp::Exp:
      exp_into<A>(out, x, n);
      return true;
    case UnOp::Log:
      log_into<A>(out, x, n);
      return true;
    case UnOp::Tanh:
      map<A>(out, x, nullptr, nullptr, n, [](B v, B, B) { return fwd<UnOp::Tanh>(v); });
      return true;
    case UnOp::Sigmoid:
      map<A>(out, x, nullptr, nullptr, n, [](B v, B, B) { return fwd<UnOp::Sigmoid>(v); });
      return true;
    case UnOp::GeluErf:
      map<A>(out, x, nullptr, nullptr, n, [](B v, B, B) { return gelu_fwd<A>(v); });
      return true;
    case UnOp::GeluTanh:
      map<A>(out, x, nullptr, nullptr, n, [](B v, B, B) { return fwd<UnOp::GeluTanh>(v); });
      return true;
    default:
      return false;
  }
}

// cpu::unary_backward on one contiguous range for the ops above (x or y may be null where the
// op does not read it); false for any other op.
template <typename A>
bool unary_backward_f32(UnOp op, float* dx, const float* g, const float* x, const float* y,
                        int64_t n, float, float) {
  using B = FB<A>;
  switch (op) {
    case UnOp::Exp:
      map<A>(dx, g, y, nullptr, n, [](B gv, B yv, B) { return bwd<UnOp::Exp>(gv, yv, yv); });
      return true;
    case UnOp::Log:
      map<A>(dx, g, x, nullptr, n, [](B gv, B xv, B) { return bwd<UnOp::Log>(gv, xv, xv); });
      return true;
    case UnOp::Tanh:
      map<A>(dx, g, y, nullptr, n, [](B gv, B yv, B) { return bwd<UnOp::Tanh>(gv, yv, yv); });
      return true;
    case UnOp::Sigmoid:
      map<A>(dx, g, y, nullptr, n, [](B gv, B yv, B) { return bwd<UnOp::Sigmoid>(gv, yv, yv); });
      return true;
    case UnOp::GeluErf:
      map<A>(dx, g, x, nullptr, n, [](B gv, B xv, B) { return gelu_bwd<A>(xv, gv); });
      return true;
    case UnOp::GeluTanh:
      map<A>(dx, g, x, nullptr, n, [](B gv, B xv, B) { return bwd<UnOp::GeluTanh>(gv, xv, xv); });
      return true;
    default:
      return false;
  }
}

}  // namespace urows
}  // namespace
}  // namespace tg::cpu
