// ops/unary/cpu/math.cpp — CPU kernels of the unary ops that unary.cpp does not run on batches
// (the math and activation ops), forward and backward, one thread's chunk at a time. Each op is
// its Formula (ops/kern/unary_formulas.hpp), shared with CUDA; the ops with a vector form here
// (trigonometric, hyperbolic, exp2/expm1/log2/log10/log1p, rounding, SiLU) run xsimd's math on the
// lanes where it is within a few ulps of std::'s (ordinary magnitudes) and the scalar formula on
// every other lane (simd.hpp's patched_map: ±0, subnormals, ±inf, NaN and the edges of each range),
// so an element's value never depends on the tensor's length or its position. erf, erfc and the
// other activations run the scalar formula (the loop the compiler makes of it). Deliberately not
// here: the ops and their records (ops/unary/unary.cpp).
#include "ops/unary/cpu/math.hpp"

#include "ops/core/cpu/simd.hpp"
#include "ops/unary/cpu/rows.hpp"

#include <xsimd/xsimd.hpp>

#include <cmath>
#include <type_traits>

namespace tg::cpu {
namespace {
template <UnOp OP>
using F = kern::uf::Formula<OP>;

template <UnOp OP, typename T>
void scalar_fwd(T* out, const T* x, int64_t n, T p0, T p1) {
  for (int64_t i = 0; i < n; ++i) out[i] = F<OP>::fwd(x[i], p0, p1);
}
// x and y are read as the list says (ops/kern/unary_list.inc); the other may be null.
template <UnOp OP, typename T>
void scalar_bwd(T* dx, const T* g, const T* x, const T* y, int64_t n, T p0, T p1) {
  constexpr bool rx = kern::unary_reads_x(OP), ry = kern::unary_reads_y(OP);
  for (int64_t i = 0; i < n; ++i)
    dx[i] = F<OP>::bwd(g[i], rx ? x[i] : T(0), ry ? y[i] : T(0), p0, p1);
}

// The lanes where OP's formula on batches (xsimd's math) is within a few ulps of std::'s; the
// others are recomputed by the scalar formula. Ops without lanes here run scalar.
enum class Lanes { kNone, kNormal, kTrig, kExp, kUnit, kPositive, kAboveOne, kExpAny, kLog1p };
template <UnOp OP>
constexpr Lanes kLanes = OP == UnOp::Sin || OP == UnOp::Cos || OP == UnOp::Tan       ? Lanes::kTrig
                         : OP == UnOp::Asin || OP == UnOp::Acos || OP == UnOp::Atanh ? Lanes::kUnit
                         : OP == UnOp::Atan || OP == UnOp::Asinh || OP == UnOp::Floor ||
                                 OP == UnOp::Ceil || OP == UnOp::Round || OP == UnOp::Trunc
                             ? Lanes::kNormal
                         : OP == UnOp::Sinh || OP == UnOp::Cosh || OP == UnOp::Expm1 ? Lanes::kExp
                         : OP == UnOp::Acosh                     ? Lanes::kAboveOne
                         : OP == UnOp::Exp2 || OP == UnOp::Silu  ? Lanes::kExpAny
                         : OP == UnOp::Log2 || OP == UnOp::Log10 ? Lanes::kPositive
                         : OP == UnOp::Log1p                     ? Lanes::kLog1p
                                                                 : Lanes::kNone;

template <Lanes L, typename B>
auto lanes_ok(const B& v) {
  using T = typename B::value_type;
  constexpr bool f32 = std::is_same_v<T, float>;
  // Below these, exp-like results stay normal and finite; trigonometric reduction stays exact.
  const B exp_hi(f32 ? T(80) : T(700)), trig_hi(T(8192)), one(T(1));
  if constexpr (L == Lanes::kNormal) return xtd::normal(v);
  if constexpr (L == Lanes::kTrig) return xtd::normal(v) & (xsimd::abs(v) < trig_hi);
  if constexpr (L == Lanes::kExp) return xtd::normal(v) & (xsimd::abs(v) < exp_hi);
  if constexpr (L == Lanes::kUnit) return xtd::normal(v) & (xsimd::abs(v) < one);
  if constexpr (L == Lanes::kPositive) return xtd::normal(v) & (v > B(T(0)));
  if constexpr (L == Lanes::kAboveOne) return xtd::normal(v) & (v > one);
  if constexpr (L == Lanes::kExpAny) return xsimd::abs(v) < exp_hi;
  if constexpr (L == Lanes::kLog1p) return xtd::normal(v) & (v > B(T(-0.5)));
}

// OP's forward: its formula on batches with the lanes outside kLanes patched, or on scalars.
template <UnOp OP, typename T>
void math_fwd(T* out, const T* x, int64_t n, T p0, T p1) {
  using B = xsimd::batch<T>;
  if constexpr (kLanes<OP> == Lanes::kNone) {
    scalar_fwd<OP, T>(out, x, n, p0, p1);
  } else {
    const B b0(p0), b1(p1);
    xtd::patched_map(
        out, x, 1, x, 0, n, [&](const B& v, const B&) { return F<OP>::fwd(v, b0, b1); },
        [&](T v, T) { return F<OP>::fwd(v, p0, p1); },
        [](const B& v, const B&, const B&) { return lanes_ok<kLanes<OP>>(v); });
  }
}

// SiLU's backward on vectors (a named override: the one math backward on batches), its formula
// with the lanes near exp's overflow and at a non-finite g patched.
template <typename T>
void silu_backward(T* dx, const T* g, const T* x, int64_t n) {
  using B = xsimd::batch<T>;
  const B zero(T(0)), hi(std::is_same_v<T, float> ? T(80) : T(700));
  xtd::patched_map(
      dx, x, 1, g, 1, n,
      [&](const B& v, const B& gv) { return F<UnOp::Silu>::bwd(gv, v, v, zero, zero); },
      [](T v, T gv) { return F<UnOp::Silu>::bwd(gv, v, v, T(0), T(0)); },
      [&](const B& v, const B& gv, const B&) {
        return (xsimd::abs(v) < hi) & (xsimd::abs(gv) <= B(std::numeric_limits<T>::max()));
      });
}
}  // namespace

template <typename T>
bool unary_math(UnOp op, T* out, const T* x, int64_t n, T p0, T p1) {
  switch (op) {
#define X(Code, ...)                            \
  case UnOp::Code:                              \
    math_fwd<UnOp::Code, T>(out, x, n, p0, p1); \
    return true;
#include "ops/kern/unary_list.inc"
#undef X
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
#define X(Code, ...)                                   \
  case UnOp::Code:                                     \
    scalar_bwd<UnOp::Code, T>(dx, g, x, y, n, p0, p1); \
    return true;
#include "ops/kern/unary_list.inc"
#undef X
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
