// ops/unary_formulas.hpp — the scalar forward and backward of the math and activation unary ops
// (UnOp::Sin … UnOp::Softsign, ops/kernel_codes.hpp), written once for both backends: the CPU
// runs them in T (float32 in float32, as PyTorch does) where it has no vector form and on the lanes
// its vector forms leave (ops/cpu/unary_math.cpp); CUDA runs them in double (cuda/elementwise.cu).
// Each backward is PyTorch 1.13's formula (derivatives.yaml, or the activation's _backward
// kernel) in PyTorch's order of operations, but 1 − x² as (1 − x)(1 + x), which does not cancel
// with or without FMA contraction; so special values come out as PyTorch's: checked by
// tests/ops/test_special_values.cpp against tools/make_special_values.py's table.
// Neutral: no library header, host and device.
#pragma once

#include "ops/kern/kernel_codes.hpp"

#include <cmath>

namespace tg::kern {
namespace umath {
// The math functions: std:: on the host (float overloads for float), CUDA's on the device.
#if defined(__CUDA_ARCH__)
#define TG_UMATH(f)            \
  template <typename T>        \
  __device__ inline T f(T x) { \
    return ::f(x);             \
  }
#else
#define TG_UMATH(f)     \
  template <typename T> \
  inline T f(T x) {     \
    return std::f(x);   \
  }
#endif
TG_UMATH(sin)
TG_UMATH(cos)
TG_UMATH(tan)
TG_UMATH(asin)
TG_UMATH(acos)
TG_UMATH(atan)
TG_UMATH(sinh)
TG_UMATH(cosh)
TG_UMATH(tanh)
TG_UMATH(asinh)
TG_UMATH(acosh)
TG_UMATH(atanh)
TG_UMATH(erf)
TG_UMATH(erfc)
TG_UMATH(exp)
TG_UMATH(exp2)
TG_UMATH(expm1)
TG_UMATH(log2)
TG_UMATH(log10)
TG_UMATH(log1p)
TG_UMATH(floor)
TG_UMATH(ceil)
TG_UMATH(nearbyint)  // round half to even in the default rounding mode, as torch.round
TG_UMATH(trunc)
TG_UMATH(sqrt)
TG_UMATH(fabs)
#undef TG_UMATH

// std::min / std::max as PyTorch's scalar activation kernels call them ((a < b) ? b : a).
template <typename T>
TG_HOST_DEVICE inline T smax(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
TG_HOST_DEVICE inline T smin(T a, T b) {
  return b < a ? b : a;
}
}  // namespace umath

// Every op of this header, for the backends' switches.
// clang-format off
#define TG_UNMATH_OPS(X) \
  X(Sin) X(Cos) X(Tan) X(Asin) X(Acos) X(Atan) X(Sinh) X(Cosh) X(Asinh) X(Acosh) X(Atanh) \
  X(Erf) X(Erfc) X(Exp2) X(Expm1) X(Log2) X(Log10) X(Log1p) X(Floor) X(Ceil) X(Round) X(Trunc) \
  X(Sign) X(Silu) X(Softplus) X(LeakyRelu) X(Elu) X(Celu) X(Mish) X(Hardswish) X(Hardsigmoid) \
  X(Hardtanh) X(LogSigmoid) X(Softsign)
// clang-format on

// The backward reads y = f(x) (else x alone).
template <UnOp OP>
constexpr bool kMathReadsY = OP == UnOp::Tan || OP == UnOp::Exp2 || OP == UnOp::Expm1;

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

// y = f(x) with the op's parameters p0, p1 (ops/kernel_codes.hpp).
template <UnOp OP, typename T>
TG_HOST_DEVICE inline T un_math_fwd(T x, T p0, T p1) {
  using namespace umath;
  const T one(1), zero(0), three(3), six(6);
  if constexpr (OP == UnOp::Sin) return sin(x);
  if constexpr (OP == UnOp::Cos) return cos(x);
  if constexpr (OP == UnOp::Tan) return tan(x);
  if constexpr (OP == UnOp::Asin) return asin(x);
  if constexpr (OP == UnOp::Acos) return acos(x);
  if constexpr (OP == UnOp::Atan) return atan(x);
  if constexpr (OP == UnOp::Sinh) return sinh(x);
  if constexpr (OP == UnOp::Cosh) return cosh(x);
  if constexpr (OP == UnOp::Asinh) return asinh(x);
  if constexpr (OP == UnOp::Acosh) return acosh(x);
  if constexpr (OP == UnOp::Atanh) return atanh(x);
  if constexpr (OP == UnOp::Erf) return erf(x);
  if constexpr (OP == UnOp::Erfc) return erfc(x);
  if constexpr (OP == UnOp::Exp2) return exp2(x);
  if constexpr (OP == UnOp::Expm1) return expm1(x);
  if constexpr (OP == UnOp::Log2) return log2(x);
  if constexpr (OP == UnOp::Log10) return log10(x);
  if constexpr (OP == UnOp::Log1p) return log1p(x);
  if constexpr (OP == UnOp::Floor) return floor(x);
  if constexpr (OP == UnOp::Ceil) return ceil(x);
  if constexpr (OP == UnOp::Round) return nearbyint(x);
  if constexpr (OP == UnOp::Trunc) return trunc(x);
  // (0 < x) − (x < 0): ±0 and NaN give +0, as torch.sign.
  if constexpr (OP == UnOp::Sign) return T((zero < x) - (x < zero));
  if constexpr (OP == UnOp::Silu) return x / (one + exp(-x));
  if constexpr (OP == UnOp::Softplus) return x * p0 > p1 ? x : log1p(exp(x * p0)) / p0;
  if constexpr (OP == UnOp::LeakyRelu) return x > zero ? x : x * p0;
  // e^x − 1 rather than expm1, as PyTorch computes it (so −0 and tiny negatives give +0)
  if constexpr (OP == UnOp::Elu) return x <= zero ? (exp(x) - one) * (p0 * p1) : x * p1;
  if constexpr (OP == UnOp::Celu) return x <= zero ? (exp(x * p1) - one) * p0 : x;  // p1 = 1/α
  if constexpr (OP == UnOp::Mish) return x * tanh(log1p(exp(x)));
  if constexpr (OP == UnOp::Hardswish) return x * smin(smax(x + three, zero), six) / six;
  if constexpr (OP == UnOp::Hardsigmoid) return smin(smax(x + three, zero), six) / six;
  if constexpr (OP == UnOp::Hardtanh) return x < p0 ? p0 : (x > p1 ? p1 : x);  // NaN stays NaN
  if constexpr (OP == UnOp::LogSigmoid) return smin(x, zero) - log1p(exp(-fabs(x)));
  if constexpr (OP == UnOp::Softsign) return x / (fabs(x) + one);
  return zero;
}

// dx = g · f'(x), from x and y = f(x) (y only where kMathReadsY), as PyTorch writes it.
template <UnOp OP, typename T>
TG_HOST_DEVICE inline T un_math_bwd(T g, T x, T y, T p0, T p1) {
  using namespace umath;
  const T one(1), zero(0), three(3), half(0.5);
  if constexpr (OP == UnOp::Sin) return g * cos(x);
  if constexpr (OP == UnOp::Cos) return g * -sin(x);
  if constexpr (OP == UnOp::Tan) return g * (one + y * y);
  if constexpr (OP == UnOp::Asin) return g * (one / sqrt((one - x) * (one + x)));
  if constexpr (OP == UnOp::Acos) return g * -(one / sqrt((one - x) * (one + x)));
  if constexpr (OP == UnOp::Atan) return g / (x * x + one);
  if constexpr (OP == UnOp::Sinh) return g * cosh(x);
  if constexpr (OP == UnOp::Cosh) return g * sinh(x);
  if constexpr (OP == UnOp::Asinh) return g * (one / sqrt(x * x + one));
  // + 0 turns −0 into +0, so x = −1 gives +inf as PyTorch's x² − 1 does
  if constexpr (OP == UnOp::Acosh) return g * (one / sqrt((x - one) * (x + one) + zero));
  if constexpr (OP == UnOp::Atanh) return g * (one / ((one - x) * (one + x)));
  if constexpr (OP == UnOp::Erf) return T(kTwoOverSqrtPi) * exp(-(x * x)) * g;
  if constexpr (OP == UnOp::Erfc) return T(-kTwoOverSqrtPi) * exp(-(x * x)) * g;
  if constexpr (OP == UnOp::Exp2) return g * y * T(kLn2);
  if constexpr (OP == UnOp::Expm1) return g * (y + one);
  if constexpr (OP == UnOp::Log2) return g / (x * T(kLn2));
  if constexpr (OP == UnOp::Log10) return g / (x * T(kLn10));
  if constexpr (OP == UnOp::Log1p) return g / (x + one);
  if constexpr (OP == UnOp::Floor || OP == UnOp::Ceil || OP == UnOp::Round || OP == UnOp::Trunc ||
                OP == UnOp::Sign)
    return zero;
  if constexpr (OP == UnOp::Silu) {
    const T s = one / (one + exp(-x));
    return g * s * (one + x * (one - s));
  }
  if constexpr (OP == UnOp::Softplus) {
    const T z = exp(x * p0);
    return x * p0 > p1 ? g : g * z / (z + one);
  }
  if constexpr (OP == UnOp::LeakyRelu) return x > zero ? g : g * p0;
  // x > 0 picks the linear side, so NaN takes the exponential one (NaN), as in PyTorch
  if constexpr (OP == UnOp::Elu) return x > zero ? g * p1 : g * (p0 * p1) * exp(x);
  if constexpr (OP == UnOp::Celu) return x > zero ? g : g * p1 * p0 * exp(x * p1);
  if constexpr (OP == UnOp::Mish) {
    const T s = one / (one + exp(-x)), t = tanh(log1p(exp(x)));
    return g * (t + x * s * (one - t * t));
  }
  // NaN falls through both tests to the middle formula (NaN), as in PyTorch's vector kernel
  if constexpr (OP == UnOp::Hardswish)
    return x < -three ? zero : (x >= three ? g : g * (x / three + half));
  if constexpr (OP == UnOp::Hardsigmoid) return x > -three && x < three ? g * T(1.0 / 6.0) : zero;
  if constexpr (OP == UnOp::Hardtanh) return x > p0 && x < p1 ? g : zero;  // NaN: 0
  if constexpr (OP == UnOp::LogSigmoid) {
    const bool neg = x < zero;
    const T z = exp(-fabs(x));
    return g * ((neg ? one : zero) - (neg ? one : -one) * (z / (one + z)));
  }
  // softsign is x / (|x| + 1) composed (torch.nn.functional.softsign), so its gradient is
  // autograd's: g/d from the numerator, −g·x/d² through |x| from the denominator.
  if constexpr (OP == UnOp::Softsign) {
    const T d = fabs(x) + one;
    const T sg = T((zero < x) - (x < zero));
    return g / d + (-g * ((x / d) / d)) * sg;
  }
  return zero;
}

}  // namespace tg::kern
