// ops/kern/unary_formulas.hpp — every unary op's forward and derivative, written once, side by
// side: uf::Formula<UnOp::X> for each line of ops/kern/unary_list.inc, with
//   fwd(x, p0, p1)        y = f(x) (p0, p1: the op's parameters, ops/kern/unary_list.inc)
//   bwd(g, x, y, p0, p1)  dx = g · f'(x), from x and/or y = f(x) as the list's `reads` says
// generic over the value type V and its parameter type P, and instantiated for
//   float / double (P = V): the CPU's scalar lanes and tails (ops/unary/cpu/unary.cpp), CUDA in double
//     (cuda/elementwise.cu);
//   xsimd::batch (P = the batch): the CPU's vector body (ops/unary/cpu/rows.hpp);
//   tg::Tensor (P = double): the create_graph backward in recorded ops (ops/unary/grad.cpp).
// One formula text compiles for all four because it calls math by its unqualified name (std:: or
// CUDA's for a scalar, below; xsimd's and tg's are found by argument-dependent lookup) and spells
// constants P(c) and branches select / both / sgn / zero_like, the hooks each value type
// specialises in UnaryOps (scalars here; batches in ops/unary/cpu/rows.hpp, tensors in
// ops/unary/grad.cpp). A new value type (a storage dtype computed in float32) needs no formula:
// the kernels convert at load and store.
// Each backward is PyTorch 1.13's (derivatives.yaml, or the activation's _backward kernel) in
// PyTorch's order of operations, but 1 − x² as (1 − x)(1 + x), which does not cancel with or
// without FMA contraction; special values come out as PyTorch's (tests/ops/test_special_values.cpp
// checks them against tools/make_special_values.py's table).
// Named overrides, not formulas, run exp, log and pow's patched lanes and the exact GELU's fast
// loops on the CPU (ops/unary/cpu/unary.cpp). Neutral: no library header, host and device.
#pragma once

#include "ops/kern/kernel_codes.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tg::kern {

// ---- the list's columns (ops/kern/unary_list.inc) ----
enum class UnReads : uint8_t { kNone, kX, kY, kXY };  // what the backward reads
enum class UnGrad : uint8_t { kGrad, kZero };         // kZero: a zero gradient
enum class UnFn : uint8_t { Plain, Round, Own };      // how the public function is made
enum class UnDomain : uint8_t { kAny, kPositive, kUnit, kAboveOne };  // the tests' inputs
struct UnInfo {
  UnOp op;
  const char* name;
  const char* torch;
  UnReads reads;
  UnGrad grad;
  UnFn fn;
  UnDomain domain;
  double p0, p1;  // the sample call's parameters
};
constexpr UnInfo kUnaryInfo[] = {
#define X(Code, name, torch, reads, grad, fn, domain, call, p0, p1) \
  {UnOp::Code, #name, torch, UnReads::reads, UnGrad::grad, UnFn::fn, UnDomain::domain, p0, p1},
#include "ops/kern/unary_list.inc"
#undef X
};
constexpr int kUnaryCount = static_cast<int>(sizeof(kUnaryInfo) / sizeof(kUnaryInfo[0]));
constexpr const UnInfo& unary_info(UnOp op) { return kUnaryInfo[static_cast<int>(op)]; }
constexpr bool unary_reads_x(UnOp op) {
  return unary_info(op).reads == UnReads::kX || unary_info(op).reads == UnReads::kXY;
}
constexpr bool unary_reads_y(UnOp op) {
  return unary_info(op).reads == UnReads::kY || unary_info(op).reads == UnReads::kXY;
}

namespace uf {
// The math functions on a scalar: std:: on the host (float overloads for float), CUDA's on the
// device. Batches and tensors take xsimd's and tg's through argument-dependent lookup.
template <typename T>
using if_scalar = std::enable_if_t<std::is_floating_point_v<T>, T>;
#if defined(__CUDA_ARCH__)
#define TG_UMATH(f, impl)                 \
  template <typename T>                   \
  __device__ inline if_scalar<T> f(T x) { \
    return ::impl(x);                     \
  }
#else
#define TG_UMATH(f, impl)      \
  template <typename T>        \
  inline if_scalar<T> f(T x) { \
    return std::impl(x);       \
  }
#endif
TG_UMATH(sin, sin)
TG_UMATH(cos, cos)
TG_UMATH(tan, tan)
TG_UMATH(asin, asin)
TG_UMATH(acos, acos)
TG_UMATH(atan, atan)
TG_UMATH(sinh, sinh)
TG_UMATH(cosh, cosh)
TG_UMATH(tanh, tanh)
TG_UMATH(asinh, asinh)
TG_UMATH(acosh, acosh)
TG_UMATH(atanh, atanh)
TG_UMATH(erf, erf)
TG_UMATH(erfc, erfc)
TG_UMATH(exp, exp)
TG_UMATH(exp2, exp2)
TG_UMATH(expm1, expm1)
TG_UMATH(log, log)
TG_UMATH(log2, log2)
TG_UMATH(log10, log10)
TG_UMATH(log1p, log1p)
TG_UMATH(floor, floor)
TG_UMATH(ceil, ceil)
TG_UMATH(nearbyint, nearbyint)  // round half to even in the default rounding mode (torch.round)
TG_UMATH(trunc, trunc)
TG_UMATH(sqrt, sqrt)
TG_UMATH(abs, fabs)
#undef TG_UMATH
template <typename T>
TG_HOST_DEVICE inline if_scalar<T> pow(T x, T e) {
#if defined(__CUDA_ARCH__)
  return ::pow(x, e);
#else
  return std::pow(x, e);
#endif
}

// The hooks of a value type (V) or of its comparisons' type (C): select(c, a, b) is c ? a : b
// elementwise, both(c, d) c && d, sgn(v) (0 < v) − (v < 0), zero_like(v) zeros shaped as v.
template <typename K, typename = void>
struct UnaryOps;
template <>
struct UnaryOps<bool> {
  template <typename T>
  TG_HOST_DEVICE static T select(bool c, T a, T b) {
    return c ? a : b;
  }
  TG_HOST_DEVICE static bool both(bool c, bool d) { return c && d; }
};
template <typename T>
struct UnaryOps<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  TG_HOST_DEVICE static T sgn(T v) { return T((T(0) < v) - (v < T(0))); }  // ±0 and NaN: +0
  TG_HOST_DEVICE static T zero_like(T) { return T(0); }
};
template <typename C, typename A, typename B>
TG_HOST_DEVICE inline auto select(const C& c, const A& a, const B& b) {
  return UnaryOps<C>::select(c, a, b);
}
template <typename C>
TG_HOST_DEVICE inline auto both(const C& c, const C& d) {
  return UnaryOps<C>::both(c, d);
}
template <typename V>
TG_HOST_DEVICE inline V sgn(const V& v) {
  return UnaryOps<V>::sgn(v);
}
template <typename V>
TG_HOST_DEVICE inline V zero_like(const V& v) {
  return UnaryOps<V>::zero_like(v);
}
// std::min / std::max as PyTorch's scalar activation kernels call them ((a < b) ? b : a).
template <typename V, typename P>
TG_HOST_DEVICE inline V smax(const V& a, const P& b) {
  return select(a < b, V(b), a);
}
template <typename V, typename P>
TG_HOST_DEVICE inline V smin(const V& a, const P& b) {
  return select(b < a, V(b), a);
}
// x^e for a scalar e, PyTorch's special exponents: 0 gives 1 (even at NaN), 1 gives x, ±0.5 sqrt
// and 1/sqrt of x + 0 (so -0 gives IEEE's +0 and +inf), -1, 2, 3, -2 multiplied out.
template <typename V, typename P>
TG_HOST_DEVICE inline V pow_scalar(const V& x, const P& e) {
  if (e == P(0)) return zero_like(x) + P(1);
  if (e == P(1)) return x;
  if (e == P(0.5)) return sqrt(x + P(0));
  if (e == P(-0.5)) return P(1) / sqrt(x + P(0));
  if (e == P(-1)) return P(1) / x;
  if (e == P(2)) return x * x;
  if (e == P(3)) return x * x * x;
  if (e == P(-2)) return P(1) / (x * x);
  return pow(x, e);
}

constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrt1_2 = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kBeta = 0.79788456080286535588, kKappa = 0.044715;  // gelu_tanh: √(2/π), κ

template <UnOp OP>
struct Formula;  // one specialisation per line of ops/kern/unary_list.inc
// The two members' heads: V the value type, P its parameter and constant type.
#define TG_UF_FWD                   \
  template <typename V, typename P> \
  TG_HOST_DEVICE static V fwd(const V& x, const P& p0, const P& p1)
#define TG_UF_BWD                   \
  template <typename V, typename P> \
  TG_HOST_DEVICE static V bwd(const V& g, const V& x, const V& y, const P& p0, const P& p1)
#define TG_UF(Code) \
  template <>       \
  struct Formula<UnOp::Code>
// clang-format off
// ---- arithmetic with a scalar, powers, roots ----
TG_UF(Neg) { TG_UF_FWD { return -x; }
             TG_UF_BWD { return -g; } };
TG_UF(AddS) { TG_UF_FWD { return x + p0; }
              TG_UF_BWD { return g; } };
TG_UF(MulS) { TG_UF_FWD { return x * p0; }
              TG_UF_BWD { return g * p0; } };
TG_UF(RSubS) { TG_UF_FWD { return p0 - x; }
               TG_UF_BWD { return -g; } };
TG_UF(RDivS) { TG_UF_FWD { return p0 / x; }
               TG_UF_BWD { return -g * y / x; } };  // d(a/x)/dx = -a/x² = -y/x
// PyTorch's pow_backward: 0 where e == 0, else g·(e·x^(e-1)) with x^(e-1) its pow.
TG_UF(PowS) { TG_UF_FWD { return pow_scalar(x, p0); }
              TG_UF_BWD { return p0 == P(0) ? zero_like(g) : g * (p0 * pow_scalar(x, p0 - P(1))); } };
TG_UF(Sqrt) { TG_UF_FWD { return sqrt(x); }
              TG_UF_BWD { return P(0.5) * g / y; } };
TG_UF(Rsqrt) { TG_UF_FWD { return P(1) / sqrt(x); }
               TG_UF_BWD { return P(-0.5) * g * y * y * y; } };
TG_UF(Abs) { TG_UF_FWD { return abs(x); }  // sign(x), 0 at 0 and NaN
             TG_UF_BWD { return select(x > P(0), g, select(x < P(0), -g, zero_like(g))); } };
// NaN stays NaN: both comparisons are false for it. The gradient passes where p0 <= x <= p1.
TG_UF(Clamp) { TG_UF_FWD { return select(x < p0, V(p0), select(x > p1, V(p1), x)); }
               TG_UF_BWD { return select(both(x >= p0, x <= p1), g, zero_like(g)); } };
// ---- exponentials and logarithms ----
TG_UF(Exp) { TG_UF_FWD { return exp(x); }
             TG_UF_BWD { return g * y; } };
TG_UF(Log) { TG_UF_FWD { return log(x); }
             TG_UF_BWD { return g / x; } };
TG_UF(Exp2) { TG_UF_FWD { return exp2(x); }
              TG_UF_BWD { return g * y * P(kLn2); } };
TG_UF(Expm1) { TG_UF_FWD { return expm1(x); }
               TG_UF_BWD { return g * (y + P(1)); } };
TG_UF(Log2) { TG_UF_FWD { return log2(x); }
              TG_UF_BWD { return g / (x * P(kLn2)); } };
TG_UF(Log10) { TG_UF_FWD { return log10(x); }
               TG_UF_BWD { return g / (x * P(kLn10)); } };
TG_UF(Log1p) { TG_UF_FWD { return log1p(x); }
               TG_UF_BWD { return g / (x + P(1)); } };
// ---- trigonometric and hyperbolic ----
TG_UF(Sin) { TG_UF_FWD { return sin(x); }
             TG_UF_BWD { return g * cos(x); } };
TG_UF(Cos) { TG_UF_FWD { return cos(x); }
             TG_UF_BWD { return g * -sin(x); } };
TG_UF(Tan) { TG_UF_FWD { return tan(x); }
             TG_UF_BWD { return g * (P(1) + y * y); } };
TG_UF(Asin) { TG_UF_FWD { return asin(x); }
              TG_UF_BWD { return g * (P(1) / sqrt((P(1) - x) * (P(1) + x))); } };
TG_UF(Acos) { TG_UF_FWD { return acos(x); }
              TG_UF_BWD { return g * -(P(1) / sqrt((P(1) - x) * (P(1) + x))); } };
TG_UF(Atan) { TG_UF_FWD { return atan(x); }
              TG_UF_BWD { return g / (x * x + P(1)); } };
TG_UF(Sinh) { TG_UF_FWD { return sinh(x); }
              TG_UF_BWD { return g * cosh(x); } };
TG_UF(Cosh) { TG_UF_FWD { return cosh(x); }
              TG_UF_BWD { return g * sinh(x); } };
TG_UF(Tanh) { TG_UF_FWD { return tanh(x); }
              TG_UF_BWD { return g * (P(1) - y * y); } };
TG_UF(Asinh) { TG_UF_FWD { return asinh(x); }
               TG_UF_BWD { return g * (P(1) / sqrt(x * x + P(1))); } };
// + 0 turns −0 into +0, so x = −1 gives +inf as PyTorch's x² − 1 does
TG_UF(Acosh) { TG_UF_FWD { return acosh(x); }
               TG_UF_BWD { return g * (P(1) / sqrt((x - P(1)) * (x + P(1)) + P(0))); } };
TG_UF(Atanh) { TG_UF_FWD { return atanh(x); }
               TG_UF_BWD { return g * (P(1) / ((P(1) - x) * (P(1) + x))); } };
TG_UF(Erf) { TG_UF_FWD { return erf(x); }
             TG_UF_BWD { return P(kTwoOverSqrtPi) * exp(-(x * x)) * g; } };
TG_UF(Erfc) { TG_UF_FWD { return erfc(x); }
              TG_UF_BWD { return P(-kTwoOverSqrtPi) * exp(-(x * x)) * g; } };
// ---- piecewise constant: a zero gradient ----
TG_UF(Floor) { TG_UF_FWD { return floor(x); }
               TG_UF_BWD { return zero_like(g); } };
TG_UF(Ceil) { TG_UF_FWD { return ceil(x); }
              TG_UF_BWD { return zero_like(g); } };
TG_UF(Round) { TG_UF_FWD { return nearbyint(x); }
               TG_UF_BWD { return zero_like(g); } };
TG_UF(Trunc) { TG_UF_FWD { return trunc(x); }
               TG_UF_BWD { return zero_like(g); } };
TG_UF(Sign) { TG_UF_FWD { return sgn(x); }  // ±0 and NaN give +0, as torch.sign
              TG_UF_BWD { return zero_like(g); } };
// ---- activations ----
TG_UF(Sigmoid) { TG_UF_FWD { return P(1) / (P(1) + exp(-x)); }
                 TG_UF_BWD { return g * y * (P(1) - y); } };
// PyTorch's clamp_min(x, 0): NaN stays NaN, -0 stays -0; its threshold_backward passes the
// gradient where x <= 0 is false, NaN included.
TG_UF(Relu) { TG_UF_FWD { return select(x < P(0), V(P(0)), x); }
              TG_UF_BWD { return select(x <= P(0), zero_like(g), g); } };
// x·Φ(x); the CPU runs its own loops (ops/unary/cpu/unary.cpp), CUDA and create_graph these
TG_UF(GeluErf) {
  TG_UF_FWD { return P(0.5) * x * (P(1) + erf(x * P(kSqrt1_2))); }
  TG_UF_BWD {
    return g * (P(0.5) * (P(1) + erf(x * P(kSqrt1_2))) + x * P(kInvSqrt2Pi) * exp(P(-0.5) * x * x));
  }
};
// ½x(1 + tanh(β(x + κx³)))
TG_UF(GeluTanh) {
  TG_UF_FWD { return P(0.5) * x * (P(1) + tanh(P(kBeta) * (x + P(kKappa) * x * x * x))); }
  TG_UF_BWD {
    // the second term first: g++ then fuses its product into the sum on scalars as on batches
    const V t = tanh(P(kBeta) * (x + P(kKappa) * x * x * x));
    const V d = P(0.5) * x * (P(1) - t * t) * P(kBeta) * (P(1) + P(3 * kKappa) * x * x);
    return g * (P(0.5) * (P(1) + t) + d);
  }
};
TG_UF(Silu) {  // x·σ(x)
  TG_UF_FWD { return x / (P(1) + exp(-x)); }
  TG_UF_BWD {
    const V s = P(1) / (P(1) + exp(-x));
    return g * s * (P(1) + x * (P(1) - s));
  }
};
// log(1 + e^(p0·x))/p0, x where p0·x > p1 (beta p0, threshold p1)
TG_UF(Softplus) {
  TG_UF_FWD { return select(x * p0 > p1, x, log1p(exp(x * p0)) / p0); }
  TG_UF_BWD {
    const V z = exp(x * p0);
    return select(x * p0 > p1, g, g * z / (z + P(1)));
  }
};
TG_UF(LeakyRelu) { TG_UF_FWD { return select(x > P(0), x, x * p0); }
                   TG_UF_BWD { return select(x > P(0), g, g * p0); } };
// p1·(x > 0 ? x : p0·(e^x − 1)) (alpha p0, scale p1): elu and selu. e^x − 1 rather than expm1,
// as PyTorch computes it (so −0 and tiny negatives give +0); x > 0 picks the linear side of the
// gradient, so NaN takes the exponential one (NaN), as in PyTorch.
TG_UF(Elu) { TG_UF_FWD { return select(x <= P(0), (exp(x) - P(1)) * (p0 * p1), x * p1); }
             TG_UF_BWD { return select(x > P(0), g * p1, g * (p0 * p1) * exp(x)); } };
// max(0, x) + min(0, p0·(e^(x/p0) − 1)), p1 = 1/p0
TG_UF(Celu) { TG_UF_FWD { return select(x <= P(0), (exp(x * p1) - P(1)) * p0, x); }
              TG_UF_BWD { return select(x > P(0), g, g * p1 * p0 * exp(x * p1)); } };
TG_UF(Mish) {  // x·tanh(softplus(x))
  TG_UF_FWD { return x * tanh(log1p(exp(x))); }
  TG_UF_BWD {
    const V s = P(1) / (P(1) + exp(-x)), t = tanh(log1p(exp(x)));
    return g * (t + x * s * (P(1) - t * t));
  }
};
// x·min(max(x + 3, 0), 6)/6; NaN falls through both tests of the gradient to the middle formula
// (NaN), as in PyTorch's vector kernel
TG_UF(Hardswish) {
  TG_UF_FWD { return x * smin(smax(x + P(3), P(0)), P(6)) / P(6); }
  TG_UF_BWD {
    return select(x < -P(3), zero_like(g), select(x >= P(3), g, g * (x / P(3) + P(0.5))));
  }
};
TG_UF(Hardsigmoid) {  // min(max(x + 3, 0), 6)/6
  TG_UF_FWD { return smin(smax(x + P(3), P(0)), P(6)) / P(6); }
  TG_UF_BWD { return select(both(x > -P(3), x < P(3)), g * P(1.0 / 6.0), zero_like(g)); }
};
// Clamp(p0, p1) forward; the gradient passes only strictly inside (p0, p1) (NaN: 0)
TG_UF(Hardtanh) {
  TG_UF_FWD { return select(x < p0, V(p0), select(x > p1, V(p1), x)); }
  TG_UF_BWD { return select(both(x > p0, x < p1), g, zero_like(g)); }
};
TG_UF(LogSigmoid) {  // log σ(x) = min(x, 0) − log1p(e^−|x|)
  TG_UF_FWD { return smin(x, P(0)) - log1p(exp(-abs(x))); }
  TG_UF_BWD {
    // PyTorch's (neg ? 1 : 0) − (neg ? 1 : −1)·q, which is 1 − q or q exactly
    const V z = exp(-abs(x)), q = z / (P(1) + z);
    return g * select(x < P(0), P(1) - q, q);
  }
};
// x/(1 + |x|), composed in PyTorch (torch.nn.functional.softsign), so its gradient is
// autograd's: g/d from the numerator, −g·x/d² through |x| from the denominator.
TG_UF(Softsign) {
  TG_UF_FWD { return x / (abs(x) + P(1)); }
  TG_UF_BWD {
    const V d = abs(x) + P(1);
    return g / d + (-g * ((x / d) / d)) * sgn(x);
  }
};
// sin(πx)/(πx), 1 at 0; PyTorch's sinc_backward: (πx·cos(πx) − sin(πx))/(πx²), 0 where πx² is
// 0 (|x| <= 0 and πx² <= 0 are x == 0 for every value type, NaN false)
TG_UF(Sinc) {
  static constexpr double kPi = 3.14159265358979323846;
  TG_UF_FWD {
    const V px = P(kPi) * x;
    return select(abs(x) <= P(0), V(P(1)), sin(px) / px);
  }
  TG_UF_BWD {
    const V px = x * P(kPi), sq = x * x * P(kPi);
    return select(sq <= P(0), zero_like(g), g * (px * cos(px) - sin(px)) / sq);
  }
};
// clang-format on
#undef TG_UF
#undef TG_UF_FWD
#undef TG_UF_BWD
}  // namespace uf

// Every code has its formulas: a line of the list without a Formula fails to compile here.
#define X(Code, ...) static_assert(sizeof(uf::Formula<UnOp::Code>) > 0, #Code " has no Formula");
#include "ops/kern/unary_list.inc"
#undef X

}  // namespace tg::kern
