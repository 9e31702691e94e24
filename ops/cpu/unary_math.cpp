// ops/cpu/unary_math.cpp — CPU kernels of the math and activation unary ops (UnOp::Sin …
// UnOp::Softsign), forward and backward, for cpu::unary / cpu::unary_backward (unary.cpp hands
// them every op past Clamp, one thread's chunk at a time). Each op's scalar formula is
// ops/unary_formulas.hpp's, shared with CUDA; the ops with a vector form here (trigonometric,
// hyperbolic, exp2/expm1/log2/log10/log1p, rounding, SiLU) run xsimd's math on the lanes where it
// is within a few ulps of std::'s (ordinary magnitudes) and the scalar formula on every other lane
// (simd.hpp's patched_map: ±0, subnormals, ±inf, NaN and the edges of each range), so an element's
// value never depends on the tensor's length or its position. erf, erfc and the other activations
// run the scalar formula (the loop the compiler makes of it).
// Deliberately not here: the ops and their records (ops/unary_math.cpp).
#include "ops/cpu/unary_math.hpp"

#include "ops/cpu/simd.hpp"
#include "ops/unary_formulas.hpp"

#include <xsimd/xsimd.hpp>

#include <cmath>
#include <type_traits>

namespace tg::cpu {
namespace {
using kern::un_math_bwd;
using kern::un_math_fwd;

template <UnOp OP, typename T>
void scalar_fwd(T* out, const T* x, int64_t n, T p0, T p1) {
  for (int64_t i = 0; i < n; ++i) out[i] = un_math_fwd<OP, T>(x[i], p0, p1);
}
template <UnOp OP, typename T>
void scalar_bwd(T* dx, const T* g, const T* x, const T* y, int64_t n, T p0, T p1) {
  for (int64_t i = 0; i < n; ++i)
    dx[i] = un_math_bwd<OP, T>(g[i], x[i], kern::kMathReadsY<OP> ? y[i] : T(0), p0, p1);
}

// The vector form of OP's forward and the lanes it serves; false: OP has none.
template <UnOp OP, typename T>
bool vector_fwd(T* out, const T* x, int64_t n) {
  using B = xsimd::batch<T>;
  constexpr bool f32 = std::is_same_v<T, float>;
  // Below these, exp-like results stay normal and finite; trigonometric reduction stays exact.
  const B exp_hi(f32 ? T(80) : T(700)), trig_hi(T(8192)), one(T(1));
  auto run = [&](auto vf, auto ok) {
    xtd::patched_map(
        out, x, 1, x, 0, n, [&](const B& v, const B&) { return vf(v); },
        [](T v, T) { return un_math_fwd<OP, T>(v, T(0), T(0)); },
        [&](const B& v, const B&, const B&) { return ok(v); });
    return true;
  };
  auto normal = [](const B& v) { return xtd::normal(v); };
  // The lanes: normal and below a bound in magnitude (trig_hi, exp_hi, one), or positive.
  auto below = [&](const B& hi) {
    return [hi](const B& v) { return xtd::normal(v) & (xsimd::abs(v) < hi); };
  };
  auto positive = [](const B& v) { return xtd::normal(v) & (v > B(T(0))); };
  if constexpr (OP == UnOp::Sin)
    return run([](const B& v) { return xsimd::sin(v); }, below(trig_hi));
  if constexpr (OP == UnOp::Cos)
    return run([](const B& v) { return xsimd::cos(v); }, below(trig_hi));
  if constexpr (OP == UnOp::Tan)
    return run([](const B& v) { return xsimd::tan(v); }, below(trig_hi));
  if constexpr (OP == UnOp::Asin) return run([](const B& v) { return xsimd::asin(v); }, below(one));
  if constexpr (OP == UnOp::Acos) return run([](const B& v) { return xsimd::acos(v); }, below(one));
  if constexpr (OP == UnOp::Atan) return run([](const B& v) { return xsimd::atan(v); }, normal);
  if constexpr (OP == UnOp::Sinh)
    return run([](const B& v) { return xsimd::sinh(v); }, below(exp_hi));
  if constexpr (OP == UnOp::Cosh)
    return run([](const B& v) { return xsimd::cosh(v); }, below(exp_hi));
  if constexpr (OP == UnOp::Asinh) return run([](const B& v) { return xsimd::asinh(v); }, normal);
  if constexpr (OP == UnOp::Acosh)
    return run([](const B& v) { return xsimd::acosh(v); },
               [&](const B& v) { return normal(v) & (v > one); });
  if constexpr (OP == UnOp::Atanh)
    return run([](const B& v) { return xsimd::atanh(v); }, below(one));
  if constexpr (OP == UnOp::Exp2)
    return run([](const B& v) { return xsimd::exp2(v); },
               [&](const B& v) { return xsimd::abs(v) < exp_hi; });
  if constexpr (OP == UnOp::Expm1)
    return run([](const B& v) { return xsimd::expm1(v); }, below(exp_hi));
  if constexpr (OP == UnOp::Log2) return run([](const B& v) { return xsimd::log2(v); }, positive);
  if constexpr (OP == UnOp::Log10) return run([](const B& v) { return xsimd::log10(v); }, positive);
  if constexpr (OP == UnOp::Log1p)
    return run([](const B& v) { return xsimd::log1p(v); },
               [&](const B& v) { return normal(v) & (v > B(T(-0.5))); });
  if constexpr (OP == UnOp::Floor) return run([](const B& v) { return xsimd::floor(v); }, normal);
  if constexpr (OP == UnOp::Ceil) return run([](const B& v) { return xsimd::ceil(v); }, normal);
  if constexpr (OP == UnOp::Round)
    return run([](const B& v) { return xsimd::nearbyint(v); }, normal);
  if constexpr (OP == UnOp::Trunc) return run([](const B& v) { return xsimd::trunc(v); }, normal);
  if constexpr (OP == UnOp::Silu)
    return run([&](const B& v) { return v / (one + xsimd::exp(-v)); },
               [&](const B& v) { return xsimd::abs(v) < exp_hi; });
  (void)run;
  (void)normal;
  (void)below;
  (void)positive;
  return false;
}

// SiLU's backward on vectors, g·s·(1 + x(1 − s)) with s = σ(x), as the scalar formula.
template <typename T>
void silu_backward(T* dx, const T* g, const T* x, int64_t n) {
  using B = xsimd::batch<T>;
  const B one(T(1)), hi(std::is_same_v<T, float> ? T(80) : T(700));
  xtd::patched_map(
      dx, x, 1, g, 1, n,
      [&](const B& v, const B& gv) {
        const B s = one / (one + xsimd::exp(-v));
        return gv * s * (one + v * (one - s));
      },
      [](T v, T gv) { return un_math_bwd<UnOp::Silu, T>(gv, v, T(0), T(0), T(0)); },
      [&](const B& v, const B& gv, const B&) {
        return (xsimd::abs(v) < hi) & (xsimd::abs(gv) <= B(std::numeric_limits<T>::max()));
      });
}
}  // namespace

template <typename T>
bool unary_math(UnOp op, T* out, const T* x, int64_t n, T p0, T p1) {
  switch (op) {
#define TG_CASE(name)                                                                        \
  case UnOp::name:                                                                           \
    if (!vector_fwd<UnOp::name, T>(out, x, n)) scalar_fwd<UnOp::name, T>(out, x, n, p0, p1); \
    return true;
    TG_UNMATH_OPS(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

template <typename T>
bool unary_math_backward(UnOp op, T* dx, const T* g, const T* x, const T* y, int64_t n, T p0,
                         T p1) {
  if (op == UnOp::Silu) {
    silu_backward(dx, g, x, n);
    return true;
  }
  switch (op) {
#define TG_CASE(name)                                  \
  case UnOp::name:                                     \
    scalar_bwd<UnOp::name, T>(dx, g, x, y, n, p0, p1); \
    return true;
    TG_UNMATH_OPS(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

template bool unary_math<float>(UnOp, float*, const float*, int64_t, float, float);
template bool unary_math<double>(UnOp, double*, const double*, int64_t, double, double);
template bool unary_math_backward<float>(UnOp, float*, const float*, const float*, const float*,
                                         int64_t, float, float);
template bool unary_math_backward<double>(UnOp, double*, const double*, const double*,
                                          const double*, int64_t, double, double);

}  // namespace tg::cpu
