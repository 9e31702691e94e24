// ops/unary_grad.cpp — the unary ops' backward in recorded ops, for create_graph: dx = g · f'(x)
// built from tg ops on the live x (or y = f(x)), so the gradient differentiates again to any
// order. One line per op, the same formula as the kernels' (ops/cpu/unary.cpp,
// ops/unary_formulas.hpp) and PyTorch's derivatives.yaml; the raw kernels stay the first-order
// path (unary_backward). Masks (relu, clamp, the hard activations) are constants: their second
// derivative is 0 almost everywhere, as in PyTorch.
// Deliberately not here: the unary ops themselves (ops/elementwise.cpp, ops/unary_math.cpp).
#include "ops/ops.hpp"
#include "ops/unary_op.hpp"

#include <cmath>

namespace tg::detail {
using kern::UnOp;

namespace {
constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kInvSqrt2Pi = 0.39894228040143267794, kSqrtHalf = 0.70710678118654752440;
constexpr double kBeta = 0.79788456080286535588, kKappa = 0.044715;  // gelu_tanh: √(2/π), κ

Tensor scalar_like(const Tensor& t, double v) { return full({}, v, t.dtype(), t.device()); }
// g where cond, else 0 (cond a bool mask: a constant of the graph)
Tensor pass(const Tensor& cond, const Tensor& g) { return where(cond, g, scalar_like(g, 0)); }
// 1 / ((1 - x)(1 + x)), which does not cancel (ops/unary_formulas.hpp)
Tensor one_minus_sq(const Tensor& x) { return mul(rsub(1.0, x), add(x, 1.0)); }
}  // namespace

Tensor unary_grad(UnCode c, const Tensor& g, const Tensor& x, const Tensor& y) {
  const double p0 = c.p0, p1 = c.p1;
  switch (c.op) {
    case UnOp::Neg:
      return neg(g);
    case UnOp::Exp:
      return mul(g, y);
    case UnOp::Log:
      return div(g, x);
    case UnOp::Sqrt:
      return div(mul(g, 0.5), y);
    case UnOp::Rsqrt:
      return mul(g, mul(pow(y, 3.0), -0.5));
    case UnOp::Abs:
      return mul(g, sign(x));
    case UnOp::Tanh:
      return mul(g, rsub(1.0, mul(y, y)));
    case UnOp::Sigmoid:
      return mul(g, mul(y, rsub(1.0, y)));
    case UnOp::Relu:
      return pass(gt(x, 0.0), g);
    case UnOp::GeluErf:  // Φ(x) + x·φ(x)
      return mul(g, add(mul(add(erf(mul(x, kSqrtHalf)), 1.0), 0.5),
                        mul(x, mul(exp(mul(mul(x, x), -0.5)), kInvSqrt2Pi))));
    case UnOp::GeluTanh: {
      const Tensor t = tanh(mul(add(x, mul(pow(x, 3.0), kKappa)), kBeta));
      const Tensor inner = mul(add(mul(mul(x, x), 3 * kKappa), 1.0), kBeta);
      return mul(g, add(mul(add(t, 1.0), 0.5), mul(mul(mul(x, 0.5), rsub(1.0, mul(t, t))), inner)));
    }
    case UnOp::AddS:
      return g;
    case UnOp::MulS:
      return mul(g, p0);
    case UnOp::RSubS:
      return neg(g);
    case UnOp::RDivS:
      return neg(mul(g, div(y, x)));
    case UnOp::PowS:
      if (p0 == 0) return zeros_like(g);
      return mul(g, mul(pow(x, p0 - 1), p0));
    case UnOp::Clamp:
      return pass(logical_and(ge(x, p0), le(x, p1)), g);
    case UnOp::Sin:
      return mul(g, cos(x));
    case UnOp::Cos:
      return mul(g, neg(sin(x)));
    case UnOp::Tan:
      return mul(g, add(mul(y, y), 1.0));
    case UnOp::Asin:
      return mul(g, rsqrt(one_minus_sq(x)));
    case UnOp::Acos:
      return mul(g, neg(rsqrt(one_minus_sq(x))));
    case UnOp::Atan:
      return div(g, add(mul(x, x), 1.0));
    case UnOp::Sinh:
      return mul(g, cosh(x));
    case UnOp::Cosh:
      return mul(g, sinh(x));
    case UnOp::Asinh:
      return mul(g, rsqrt(add(mul(x, x), 1.0)));
    case UnOp::Acosh:
      return mul(g, rsqrt(mul(sub(x, 1.0), add(x, 1.0))));
    case UnOp::Atanh:
      return div(g, one_minus_sq(x));
    case UnOp::Erf:
      return mul(g, mul(exp(neg(mul(x, x))), kTwoOverSqrtPi));
    case UnOp::Erfc:
      return mul(g, mul(exp(neg(mul(x, x))), -kTwoOverSqrtPi));
    case UnOp::Exp2:
      return mul(g, mul(y, kLn2));
    case UnOp::Expm1:
      return mul(g, add(y, 1.0));
    case UnOp::Log2:
      return div(g, mul(x, kLn2));
    case UnOp::Log10:
      return div(g, mul(x, kLn10));
    case UnOp::Log1p:
      return div(g, add(x, 1.0));
    case UnOp::Floor:
    case UnOp::Ceil:
    case UnOp::Round:
    case UnOp::Trunc:
    case UnOp::Sign:
      return zeros_like(g);
    case UnOp::Silu: {
      const Tensor s = sigmoid(x);
      return mul(g, mul(s, add(mul(x, rsub(1.0, s)), 1.0)));
    }
    case UnOp::Softplus:  // the linear side past the threshold
      return where(gt(mul(x, p0), p1), g, mul(g, sigmoid(mul(x, p0))));
    case UnOp::LeakyRelu:
      return where(gt(x, 0.0), g, mul(g, p0));
    case UnOp::Elu:
      return where(gt(x, 0.0), mul(g, p1), mul(g, mul(exp(x), p0 * p1)));
    case UnOp::Celu:
      return where(gt(x, 0.0), g, mul(g, exp(mul(x, p1))));
    case UnOp::Mish: {
      const Tensor t = tanh(softplus(x, 1.0, 20.0));
      return mul(g, add(t, mul(mul(x, sigmoid(x)), rsub(1.0, mul(t, t)))));
    }
    case UnOp::Hardswish:
      return where(lt(x, -3.0), scalar_like(g, 0),
                   where(ge(x, 3.0), g, mul(g, add(mul(x, 1.0 / 3.0), 0.5))));
    case UnOp::Hardsigmoid:
      return mul(pass(logical_and(gt(x, -3.0), lt(x, 3.0)), g), 1.0 / 6.0);
    case UnOp::Hardtanh:
      return pass(logical_and(gt(x, p0), lt(x, p1)), g);
    case UnOp::LogSigmoid:
      return mul(g, sigmoid(neg(x)));
    case UnOp::Softsign: {
      const Tensor d = add(abs(x), 1.0);
      return div(g, mul(d, d));
    }
  }
  throw Error(
      fmt::format("unary_grad: op code {} has no recorded backward", static_cast<int>(c.op)));
}

}  // namespace tg::detail
