// ops/unary/cpu/unary.cpp — CPU kernels of the unary ops and their derivatives (cpu::unary,
// cpu::unary_backward), one switch generated from the unary list (ops/kern/unary_list.inc). Each
// op is its Formula (ops/kern/unary_formulas.hpp): the arithmetic ops and tanh, sigmoid, relu, the
// tanh GELU on xsimd batches over xtensor's partition of a row (rows(): an unaligned head and
// the tail in scalars, so every element keeps the path, and the bits, the xtensor expressions it
// replaced gave it), the math and activation ops in unary_math.cpp. The float32 kernels of
// unary_rows.hpp run first where the instruction-set table has them (ops/core/cpu/isa.hpp: the
// AVX-512 table holds exp, log, tanh, sigmoid and both GELUs). Named overrides replace the
// formula's forward where it would be slower or less exact: exp and log run xsimd with the lanes
// where it is not std::'s answer (zeros, subnormals, infinities, NaN, the edges of the range)
// recomputed by std:: (simd.hpp's patched_map), so a value never depends on the tensor's length or
// the element's position; pow with a scalar exponent follows PyTorch's special exponents; the exact
// GELU in float32 is unary_rows.hpp's batch loop (PyTorch's erf approximation, one exp shared by
// value and derivative), in float64 a scalar std::erfc loop (xsimd's double erf/erfc are not exact
// enough for gradcheck; docs/cpu-kernels.md has both measurements). Tested at every special value:
// tests/ops/test_special_values.cpp. Long tensors are split into one chunk per thread on 64-byte
// boundaries, so results do not depend on the thread count.
// Deliberately not here: broadcasting binary ops (binary.cpp), the op bodies and records
// (ops/binary/elementwise.cpp, ops/unary/unary.cpp).
#include "ops/core/cpu/isa.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/cpu/simd.hpp"
#include "ops/unary/cpu/math.hpp"
#include "ops/unary/cpu/rows.hpp"
#include "ops/core/cpu/xt.hpp"

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

// xtensor's partition of a row (an unaligned head up to out's batch alignment, aligned batches,
// a scalar tail): f(i) on the batch at i, s(i) on element i. Formula ops run here, so each
// element takes the path the xtensor expressions it replaced gave it.
template <typename T, typename FV, typename FS>
void rows(T* out, int64_t n, FV&& fv, FS&& fs) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  const int64_t head = std::min<int64_t>(
      n, static_cast<int64_t>(xsimd::get_alignment_offset(out, static_cast<size_t>(n), W)));
  const int64_t end = head + ((n - head) & ~(W - 1));
  int64_t i = 0;
  for (; i < head; ++i) out[i] = fs(i);
  for (; i < end; i += W) fv(i).store_aligned(out + i);
  for (; i < n; ++i) out[i] = fs(i);
}

// How the CPU runs an op's forward (the formula on batches, on scalars, or a named override in
// unary() below) and the lanes of the math ops' vector forms (unary_math.cpp).
template <UnOp OP>
constexpr bool kVectorFwd =
    OP == UnOp::Neg || OP == UnOp::Sqrt || OP == UnOp::Rsqrt || OP == UnOp::Abs ||
    OP == UnOp::Tanh || OP == UnOp::Sigmoid || OP == UnOp::Relu || OP == UnOp::GeluTanh ||
    OP == UnOp::AddS || OP == UnOp::MulS || OP == UnOp::RSubS || OP == UnOp::RDivS ||
    OP == UnOp::Clamp;
template <UnOp OP>
constexpr bool kOverride =
    OP == UnOp::Exp || OP == UnOp::Log || OP == UnOp::PowS || OP == UnOp::GeluErf;

// out = f(x) on one chunk, by OP's formula: on batches where kVectorFwd, else unary_math's forms.
template <UnOp OP, typename T>
void unary_formula(T* out, const T* x, int64_t n, T a, T b) {
  using F = kern::uf::Formula<OP>;
  if constexpr (kVectorFwd<OP>) {
    using B = xsimd::batch<T>;
    const B ab(a), bb(b);
    rows(
        out, n, [&](int64_t i) { return F::fwd(B::load_unaligned(x + i), ab, bb); },
        [&](int64_t i) { return F::fwd(x[i], a, b); });
  } else {
    unary_math<T>(OP, out, x, n, a, b);
  }
}
// dx = g·f'(x) on one chunk by OP's formula, on batches for the ops vectorised forward (their
// backward is arithmetic or the forward's own math), else unary_math's.
template <UnOp OP, typename T>
void unary_backward_formula(T* dx, const T* g, const T* x, const T* y, int64_t n, T a, T b) {
  using F = kern::uf::Formula<OP>;
  if constexpr (kVectorFwd<OP>) {
    using B = xsimd::batch<T>;
    const B ab(a), bb(b);
    // An operand the op does not read may be null: it is then read over g, and never used.
    const T* xs = x ? x : g;
    const T* ys = y ? y : g;
    rows(
        dx, n,
        [&](int64_t i) {
          return F::bwd(B::load_unaligned(g + i), B::load_unaligned(xs + i),
                        B::load_unaligned(ys + i), ab, bb);
        },
        [&](int64_t i) { return F::bwd(g[i], xs[i], ys[i], a, b); });
  } else {
    unary_math_backward<T>(OP, dx, g, x, y, n, a, b);
  }
}

// The named overrides' forward: exp and log with patched lanes, pow's special exponents, the
// exact GELU's loops (float32: PyTorch's erf approximation on batches; float64: std::erfc).
template <UnOp OP, typename T>
void unary_override(T* out, const T* x, int64_t n, double p0) {
  if constexpr (OP == UnOp::Exp) exp_into(out, x, n);
  if constexpr (OP == UnOp::Log) log_into(out, x, n);
  if constexpr (OP == UnOp::PowS) pow_into(out, x, n, p0);
  if constexpr (OP == UnOp::GeluErf) {
    if constexpr (std::is_same_v<T, float>)
      urows::map<Native>(out, x, nullptr, nullptr, n,
                         [](FB v, FB, FB) { return urows::gelu_fwd<Native>(v); });
    else
      for (int64_t i = 0; i < n; ++i) out[i] = gelu_f64(x[i]);
  }
}
template <UnOp OP, typename T>
void unary_backward_override(T* dx, const T* g, const T* x, const T* y, int64_t n, double p0) {
  if constexpr (OP == UnOp::Exp || OP == UnOp::Log) {  // their derivative is the formula's
    unary_backward_formula<OP, T>(dx, g, x, y, n, T(0), T(0));
  } else if constexpr (OP == UnOp::PowS) {  // g·(e·x^(e-1)) with x^(e-1) pow_into's
    const T zero(0), a = static_cast<T>(p0);
    if (p0 == 0) {
      std::fill(dx, dx + n, zero);
    } else {
      pow_into(dx, x, n, p0 - 1);
      for (int64_t i = 0; i < n; ++i) dx[i] = g[i] * (a * dx[i]);
    }
  } else if constexpr (OP == UnOp::GeluErf) {
    if constexpr (std::is_same_v<T, float>)
      urows::map<Native>(dx, x, g, nullptr, n,
                         [](FB v, FB gv, FB) { return urows::gelu_bwd<Native>(v, gv); });
    else
      for (int64_t i = 0; i < n; ++i) dx[i] = g[i] * gelu_grad_f64(x[i]);
  }
}
}  // namespace

template <typename T>
void unary(UnOp op, T* out, const T* x, int64_t n, double p0, double p1) {
  const T a = static_cast<T>(p0), b = static_cast<T>(p1);
  const isa::Table& tab = isa::table();
  chunks(
      n,
      [&](int64_t lo, int64_t hi) {
        if constexpr (std::is_same_v<T, float>)
          if (tab.unary_f32 && tab.unary_f32(op, out + lo, x + lo, hi - lo, a, b)) return;
        switch (op) {
#define X(Code, ...)                                                 \
  case UnOp::Code:                                                   \
    if constexpr (kOverride<UnOp::Code>)                             \
      unary_override<UnOp::Code, T>(out + lo, x + lo, hi - lo, p0);  \
    else                                                             \
      unary_formula<UnOp::Code, T>(out + lo, x + lo, hi - lo, a, b); \
    return;
#include "ops/kern/unary_list.inc"
#undef X
        }
        throw Error(fmt::format("unary: unknown op code {}", static_cast<int>(op)));
      },
      sizeof(T));
}

template <typename T>
void unary_backward(UnOp op, T* dx, const T* g, const T* x, const T* y, int64_t n, double p0,
                    double p1) {
  const T a = static_cast<T>(p0), b = static_cast<T>(p1);
  const isa::Table& tab = isa::table();
  chunks(
      n,
      [&](int64_t lo, int64_t hi) {
        const int64_t m = hi - lo;
        const T* xs = x ? x + lo : nullptr;
        const T* ys = y ? y + lo : nullptr;
        if constexpr (std::is_same_v<T, float>)
          if (tab.unary_backward_f32 &&
              tab.unary_backward_f32(op, dx + lo, g + lo, xs, ys, m, a, b))
            return;
        switch (op) {
#define X(Code, ...)                                                           \
  case UnOp::Code:                                                             \
    if constexpr (kOverride<UnOp::Code>)                                       \
      unary_backward_override<UnOp::Code, T>(dx + lo, g + lo, xs, ys, m, p0);  \
    else                                                                       \
      unary_backward_formula<UnOp::Code, T>(dx + lo, g + lo, xs, ys, m, a, b); \
    return;
#include "ops/kern/unary_list.inc"
#undef X
        }
        throw Error(fmt::format("unary_backward: unknown op code {}", static_cast<int>(op)));
      },
      sizeof(T));
}

void unary(UnOp op, DT dt, void* out, const void* x, int64_t n, double p0, double p1) {
  if (reduced::is(dt))  // bfloat16 / float16: the float32 kernel on each chunk, rounded once
    return reduced::elementwise<1>(dt, n, out, {x},
                                   [&](float* o, const float* const* in, int64_t m) {
                                     unary<float>(op, o, in[0], m, p0, p1);
                                   });
  detail::dispatch_float(static_cast<DType>(dt), "unary", [&](auto tag) {
    using T = decltype(tag);
    unary<T>(op, static_cast<T*>(out), static_cast<const T*>(x), n, p0, p1);
  });
}
void unary_backward(UnOp op, DT dt, void* dx, const void* g, const void* x, const void* y,
                    int64_t n, double p0, double p1) {
  if (reduced::is(dt))
    return reduced::elementwise<3>(dt, n, dx, {g, x, y},
                                   [&](float* o, const float* const* in, int64_t m) {
                                     unary_backward<float>(op, o, in[0], in[1], in[2], m, p0, p1);
                                   });
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
