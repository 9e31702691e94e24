// ops/cpu/unary.cpp — CPU kernels of the unary ops and their derivatives (cpu::unary,
// cpu::unary_backward): one xtensor expression per op over 1-D adaptors of the buffers, float32
// math in float32 through xsimd's vectorised exp/log/tanh/sqrt, float64 in float64. The float32
// kernels of unary_rows.hpp run first where the instruction-set table has them (ops/cpu/isa.hpp:
// the AVX-512 table holds exp, log, tanh, sigmoid and both GELUs). Two exceptions in the build's
// own kernels: the exact GELU in float32 is unary_rows.hpp's batch loop (PyTorch's erf
// approximation, one exp shared by value and derivative), and the float64 GELU is a scalar
// std::erfc loop (xsimd's double erf/erfc are not exact enough for gradcheck; docs/cpu-kernels.md
// has both measurements). exp, log and pow run xsimd with the lanes where it is not std::'s answer
// (zeros, subnormals, infinities, NaN, the edges of the range) recomputed by std:: (simd.hpp's
// patched_map), so a value never depends on the tensor's length or the element's position; pow
// with a scalar exponent and relu follow PyTorch's special cases (tested at every special value:
// tests/ops/test_special_values.cpp). Long tensors are split into one chunk per thread on 64-byte
// boundaries, so results do not depend on the thread count.
// The math and activation ops past Clamp are unary_math.cpp's.
// Deliberately not here: broadcasting binary ops (binary.cpp), the op bodies and records
// (ops/elementwise.cpp, ops/unary_math.cpp).
#include "ops/cpu/isa.hpp"
#include "ops/cpu/kernels.hpp"
#include "ops/detail.hpp"
#include "ops/cpu/simd.hpp"
#include "ops/cpu/unary_math.hpp"
#include "ops/cpu/unary_rows.hpp"
#include "ops/cpu/xt.hpp"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace tg::cpu {
using xtd::chunks;
using xtd::vec;

namespace {
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kBeta = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kKappa = 0.044715;

// The exact GELU in float32: urows::gelu_fwd / gelu_bwd (unary_rows.hpp), on the build's batches;
// float64 in scalar std::erfc (gradcheck's dtype, where exactness beats speed).
using Native = xsimd::default_arch;
using FB = urows::FB<Native>;
inline double gelu_f64(double x) { return 0.5 * x * std::erfc(-x * kSqrt1_2); }
inline double gelu_grad_f64(double x) {
  return 0.5 * std::erfc(-x * kSqrt1_2) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
}
// exp and log with their special lanes patched: unary_rows.hpp, on the build's batches.
template <typename T>
void log_into(T* out, const T* x, int64_t n) {
  urows::log_into<Native>(out, x, n);
}
template <typename T>
void exp_into(T* out, const T* x, int64_t n) {
  urows::exp_into<Native>(out, x, n);
}
// x^e for a scalar exponent, PyTorch's way: e = 0 gives 1 (even at NaN), 1 gives x, ±0.5 sqrt and
// 1/sqrt of x + 0 (so pow(-inf, 0.5) = NaN, as sqrt), -1 the reciprocal, 2, 3, -2 multiplied out;
// any other e std::pow's values (simd.hpp's pow_map: xsimd where it is exact to a few ulps).
// x + 0 turns -0 into +0: pow(-0, 0.5) = +0 and pow(-0, -0.5) = +inf, IEEE's values and
// PyTorch's tensor-tensor pow's; PyTorch 1.13's scalar form gives -0 and -inf there, a bug
// (pytorch/pytorch issue 127163).
template <typename T>
void pow_into(T* out, const T* x, int64_t n, double e) {
  auto X = vec(x, n);
  auto O = vec(out, n);
  const T one(1), zero(0);
  if (e == 0)
    std::fill(out, out + n, one);
  else if (e == 1)
    std::copy(x, x + n, out);
  else if (e == 0.5)
    xt::noalias(O) = xt::sqrt(X + zero);
  else if (e == -0.5)
    xt::noalias(O) = one / xt::sqrt(X + zero);
  else if (e == -1)
    xt::noalias(O) = one / X;
  else if (e == 2)
    xt::noalias(O) = X * X;
  else if (e == 3)
    xt::noalias(O) = X * X * X;
  else if (e == -2)
    xt::noalias(O) = one / (X * X);
  else {
    const T et = static_cast<T>(e);
    xtd::pow_map(out, x, 1, &et, 0, n);
  }
}
}  // namespace

template <typename T>
void unary(UnOp op, T* out, const T* x, int64_t n, double p0, double p1) {
  const T a = static_cast<T>(p0), b = static_cast<T>(p1);
  const isa::Table& tab = isa::table();
  const T one(1), half(0.5), zero(0);
  chunks(
      n,
      [&](int64_t lo, int64_t hi) {
        if constexpr (std::is_same_v<T, float>)
          if (tab.unary_f32 && tab.unary_f32(op, out + lo, x + lo, hi - lo, a, b)) return;
        auto X = vec(x + lo, hi - lo);
        auto O = vec(out + lo, hi - lo);
        switch (op) {
          case UnOp::Neg:
            xt::noalias(O) = -X;
            break;
          case UnOp::Exp:
            exp_into(out + lo, x + lo, hi - lo);
            break;
          case UnOp::Log:
            log_into(out + lo, x + lo, hi - lo);
            break;
          case UnOp::Sqrt:
            xt::noalias(O) = xt::sqrt(X);
            break;
          case UnOp::Rsqrt:
            xt::noalias(O) = one / xt::sqrt(X);
            break;
          case UnOp::Abs:
            xt::noalias(O) = xt::abs(X);
            break;
          case UnOp::Tanh:
            xt::noalias(O) = xt::tanh(X);
            break;
          case UnOp::Sigmoid:
            xt::noalias(O) = one / (one + xt::exp(-X));
            break;
          // PyTorch's clamp_min(x, 0): NaN stays NaN, -0 stays -0.
          case UnOp::Relu:
            xt::noalias(O) = xt::where(X < zero, zero, X);
            break;
          case UnOp::GeluErf:
            if constexpr (std::is_same_v<T, float>)
              urows::map<Native>(out + lo, x + lo, nullptr, nullptr, hi - lo,
                                 [](FB v, FB, FB) { return urows::gelu_fwd<Native>(v); });
            else
              for (int64_t i = lo; i < hi; ++i) out[i] = gelu_f64(x[i]);
            break;
          case UnOp::GeluTanh:
            xt::noalias(O) =
                half * X *
                (one + xt::tanh(static_cast<T>(kBeta) * (X + static_cast<T>(kKappa) * X * X * X)));
            break;
          case UnOp::AddS:
            xt::noalias(O) = X + a;
            break;
          case UnOp::MulS:
            xt::noalias(O) = X * a;
            break;
          case UnOp::RSubS:
            xt::noalias(O) = a - X;
            break;
          case UnOp::RDivS:
            xt::noalias(O) = a / X;
            break;
          case UnOp::PowS:
            pow_into(out + lo, x + lo, hi - lo, p0);
            break;
          // NaN stays NaN: both comparisons are false for it.
          case UnOp::Clamp:
            xt::noalias(O) = xt::where(X < a, a, xt::where(X > b, b, X));
            break;
          default:  // the math and activation ops
            if (!unary_math<T>(op, out + lo, x + lo, hi - lo, a, b))
              throw Error(fmt::format("unary: unknown op code {}", static_cast<int>(op)));
            break;
        }
      },
      sizeof(T));
}

template <typename T>
void unary_backward(UnOp op, T* dx, const T* g, const T* x, const T* y, int64_t n, double p0,
                    double p1) {
  const T a = static_cast<T>(p0), b = static_cast<T>(p1);
  const isa::Table& tab = isa::table();
  const T one(1), half(0.5), zero(0);
  chunks(
      n,
      [&](int64_t lo, int64_t hi) {
        const int64_t m = hi - lo;
        if constexpr (std::is_same_v<T, float>)
          if (tab.unary_backward_f32 &&
              tab.unary_backward_f32(op, dx + lo, g + lo, x ? x + lo : nullptr,
                                     y ? y + lo : nullptr, m, a, b))
            return;
        auto G = vec(g + lo, m);
        auto D = vec(dx + lo, m);
        // An operand the op does not read may be null: it is then viewed over g, and never read.
        auto X = vec(x ? x + lo : g + lo, m);
        auto Y = vec(y ? y + lo : g + lo, m);
        switch (op) {
          case UnOp::Neg:
            xt::noalias(D) = -G;
            break;
          case UnOp::Exp:
            xt::noalias(D) = G * Y;
            break;
          case UnOp::Log:
            xt::noalias(D) = G / X;
            break;
          case UnOp::Sqrt:
            xt::noalias(D) = half * G / Y;
            break;
          case UnOp::Rsqrt:
            xt::noalias(D) = static_cast<T>(-0.5) * G * Y * Y * Y;
            break;
          // sign(x), 0 at 0 (and at NaN).
          case UnOp::Abs:
            xt::noalias(D) = xt::where(X > zero, G, xt::where(X < zero, -G, zero));
            break;
          case UnOp::Tanh:
            xt::noalias(D) = G * (one - Y * Y);
            break;
          case UnOp::Sigmoid:
            xt::noalias(D) = G * Y * (one - Y);
            break;
          // PyTorch's threshold_backward: 0 where y <= 0, so NaN passes the gradient.
          case UnOp::Relu:
            xt::noalias(D) = xt::where(X <= zero, zero, G);
            break;
          case UnOp::GeluErf:
            if constexpr (std::is_same_v<T, float>)
              urows::map<Native>(dx + lo, x + lo, g + lo, nullptr, hi - lo,
                                 [](FB v, FB gv, FB) { return urows::gelu_bwd<Native>(v, gv); });
            else
              for (int64_t i = lo; i < hi; ++i) dx[i] = g[i] * gelu_grad_f64(x[i]);
            break;
          case UnOp::GeluTanh:
            // t = tanh(β(x + κx³)) first into dx, then the derivative reads it (same index).
            xt::noalias(D) =
                xt::tanh(static_cast<T>(kBeta) * (X + static_cast<T>(kKappa) * X * X * X));
            xt::noalias(D) =
                G * (half * (one + D) + half * X * (one - D * D) * static_cast<T>(kBeta) *
                                            (one + static_cast<T>(3 * kKappa) * X * X));
            break;
          case UnOp::AddS:
            xt::noalias(D) = G;
            break;
          case UnOp::MulS:
            xt::noalias(D) = G * a;
            break;
          case UnOp::RSubS:
            xt::noalias(D) = -G;
            break;
          case UnOp::RDivS:
            xt::noalias(D) = -G * Y / X;
            break;  // d(a/x)/dx = -a/x² = -y/x
          // PyTorch's pow_backward: 0 where e == 0, else g·(e·x^(e-1)) with x^(e-1) its pow.
          case UnOp::PowS:
            if (p0 == 0) {
              std::fill(dx + lo, dx + hi, zero);
            } else {
              pow_into(dx + lo, x + lo, m, p0 - 1);
              xt::noalias(D) = G * (a * D);
            }
            break;
          // The gradient passes where lo <= x <= hi (PyTorch's convention at the boundary).
          case UnOp::Clamp:
            xt::noalias(D) = xt::where(X >= a && X <= b, G, zero);
            break;
          default:  // the math and activation ops
            if (!unary_math_backward<T>(op, dx + lo, g + lo, x ? x + lo : nullptr,
                                        y ? y + lo : nullptr, m, a, b))
              throw Error(fmt::format("unary_backward: unknown op code {}", static_cast<int>(op)));
            break;
        }
      },
      sizeof(T));
}

void unary(UnOp op, DT dt, void* out, const void* x, int64_t n, double p0, double p1) {
  detail::dispatch_float(static_cast<DType>(dt), "unary", [&](auto tag) {
    using T = decltype(tag);
    unary<T>(op, static_cast<T*>(out), static_cast<const T*>(x), n, p0, p1);
  });
}
void unary_backward(UnOp op, DT dt, void* dx, const void* g, const void* x, const void* y,
                    int64_t n, double p0, double p1) {
  detail::dispatch_float(static_cast<DType>(dt), "unary_backward", [&](auto tag) {
    using T = decltype(tag);
    unary_backward<T>(op, static_cast<T*>(dx), static_cast<const T*>(g), static_cast<const T*>(x),
                      static_cast<const T*>(y), n, p0, p1);
  });
}

template void unary<float>(UnOp, float*, const float*, int64_t, double, double);
template void unary<double>(UnOp, double*, const double*, int64_t, double, double);
template void unary_backward<float>(UnOp, float*, const float*, const float*, const float*, int64_t,
                                    double, double);
template void unary_backward<double>(UnOp, double*, const double*, const double*, const double*,
                                     int64_t, double, double);

}  // namespace tg::cpu
