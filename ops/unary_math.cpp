// ops/unary_math.cpp — the math and activation unary ops (sin … softsign), each check → allocate +
// kernel → record through unary_op (ops/unary_op.hpp); the forward and backward formulas of each
// sit side by side in ops/unary_formulas.hpp, shared by both backends, and the CPU's vector forms
// in ops/cpu/unary_math.cpp. PyTorch's names, defaults and special values; the rounding ops and
// sign have a zero gradient, as in PyTorch, and the rounding ops take int64 too (an integer is its
// own rounding), as does sign (int64 -1, 0, 1; bool itself).
// Deliberately not here: exp, log, tanh, sigmoid, relu, gelu, clamp and the scalar arithmetic
// (ops/elementwise.cpp).
#include "ops/detail.hpp"
#include "ops/ops.hpp"
#include "ops/unary_op.hpp"

#include <cmath>

namespace tg {
using namespace detail;
using kern::UnOp;

namespace {
// A unary op whose backward reads x (and y = f(x) where with_y).
Tensor math_op(const char* op, UnCode code, const Tensor& x, Site site, bool with_y = false) {
  SiteScope scope(site);
  return unary_op(op, code, x, true, with_y);
}
// A piecewise-constant op: its gradient is zero (PyTorch's zeros_like(grad)).
Tensor flat_op(const char* op, UnOp code, const Tensor& x, Site site) {
  SiteScope scope(site);
  check_float(x, op, "input", true);
  Tensor out = unary_forward(op, {code}, x);
  if (needs_record({&x}))
    record(op, out, {x}, RecordInfo().differentiable(),  // a constant: differentiable as is
           [](const Tensor& g) -> std::vector<Tensor> { return {zeros_like(g)}; });
  return out;
}
// floor, ceil, round, trunc: an int64 input is returned as a copy of itself, int64 (PyTorch's).
Tensor rounding_op(const char* op, UnOp code, const Tensor& x, Site site) {
  if (x.defined() && x.dtype() == kInt64) {
    SiteScope scope(site);
    return x.clone();
  }
  return flat_op(op, code, x, site);
}
}  // namespace

// ---- math ----
Tensor sin(const Tensor& a, Site site) { return math_op("sin", {UnOp::Sin}, a, site); }
Tensor cos(const Tensor& a, Site site) { return math_op("cos", {UnOp::Cos}, a, site); }
Tensor tan(const Tensor& a, Site site) { return math_op("tan", {UnOp::Tan}, a, site, true); }
Tensor asin(const Tensor& a, Site site) { return math_op("asin", {UnOp::Asin}, a, site); }
Tensor acos(const Tensor& a, Site site) { return math_op("acos", {UnOp::Acos}, a, site); }
Tensor atan(const Tensor& a, Site site) { return math_op("atan", {UnOp::Atan}, a, site); }
Tensor sinh(const Tensor& a, Site site) { return math_op("sinh", {UnOp::Sinh}, a, site); }
Tensor cosh(const Tensor& a, Site site) { return math_op("cosh", {UnOp::Cosh}, a, site); }
Tensor asinh(const Tensor& a, Site site) { return math_op("asinh", {UnOp::Asinh}, a, site); }
Tensor acosh(const Tensor& a, Site site) { return math_op("acosh", {UnOp::Acosh}, a, site); }
Tensor atanh(const Tensor& a, Site site) { return math_op("atanh", {UnOp::Atanh}, a, site); }
Tensor erf(const Tensor& a, Site site) { return math_op("erf", {UnOp::Erf}, a, site); }
Tensor erfc(const Tensor& a, Site site) { return math_op("erfc", {UnOp::Erfc}, a, site); }
Tensor exp2(const Tensor& a, Site site) { return math_op("exp2", {UnOp::Exp2}, a, site, true); }
Tensor expm1(const Tensor& a, Site site) { return math_op("expm1", {UnOp::Expm1}, a, site, true); }
Tensor log2(const Tensor& a, Site site) { return math_op("log2", {UnOp::Log2}, a, site); }
Tensor log10(const Tensor& a, Site site) { return math_op("log10", {UnOp::Log10}, a, site); }
Tensor log1p(const Tensor& a, Site site) { return math_op("log1p", {UnOp::Log1p}, a, site); }
Tensor floor(const Tensor& a, Site site) { return rounding_op("floor", UnOp::Floor, a, site); }
Tensor ceil(const Tensor& a, Site site) { return rounding_op("ceil", UnOp::Ceil, a, site); }
Tensor round(const Tensor& a, Site site) { return rounding_op("round", UnOp::Round, a, site); }
Tensor trunc(const Tensor& a, Site site) { return rounding_op("trunc", UnOp::Trunc, a, site); }
// int64: -1, 0 or 1, int64; bool: the bool itself (PyTorch's sign of a bool).
Tensor sign(const Tensor& a, Site site) {
  if (a.defined() && (a.dtype() == kInt64 || a.dtype() == kBool)) {
    SiteScope scope(site);
    if (a.dtype() == kBool) return a.clone();
    return sub(gt(a, 0.0).to(kInt64), lt(a, 0.0).to(kInt64));
  }
  return flat_op("sign", UnOp::Sign, a, site);
}

// ---- activations ----
Tensor silu(const Tensor& a, Site site) { return math_op("silu", {UnOp::Silu}, a, site); }
Tensor softplus(const Tensor& a, double beta, double threshold, Site site) {
  return math_op("softplus", {UnOp::Softplus, beta, threshold}, a, site);
}
Tensor leaky_relu(const Tensor& a, double negative_slope, Site site) {
  return math_op("leaky_relu", {UnOp::LeakyRelu, negative_slope}, a, site);
}
Tensor elu(const Tensor& a, double alpha, Site site) {
  return math_op("elu", {UnOp::Elu, alpha, 1.0}, a, site);
}
Tensor selu(const Tensor& a, Site site) {
  // torch.nn.SELU's constants (Klambauer et al. 2017)
  return math_op("selu",
                 {UnOp::Elu, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946},
                 a, site);
}
Tensor celu(const Tensor& a, double alpha, Site site) {
  if (alpha == 0)
    throw Error(fmt::format("celu: input {}: alpha cannot be 0", shape_str(a.shape())));
  return math_op("celu", {UnOp::Celu, alpha, 1.0 / alpha}, a, site);
}
Tensor mish(const Tensor& a, Site site) { return math_op("mish", {UnOp::Mish}, a, site); }
Tensor hardswish(const Tensor& a, Site site) {
  return math_op("hardswish", {UnOp::Hardswish}, a, site);
}
Tensor hardsigmoid(const Tensor& a, Site site) {
  return math_op("hardsigmoid", {UnOp::Hardsigmoid}, a, site);
}
// min_val > max_val is refused, as PyTorch does since its issue 83153 (1.13 gave max_val
// everywhere). A NaN bound gives NaN everywhere, and no gradient: PyTorch 1.13's values (its
// vectorised backward passes the gradient where min_val < x < max_val, false at a NaN bound).
Tensor hardtanh(const Tensor& a, double min_val, double max_val, Site site) {
  SiteScope scope(site);
  check_float(a, "hardtanh", "input", true);
  if (min_val > max_val)
    throw Error(fmt::format("hardtanh: min_val {} cannot be greater than max_val {} (input {})",
                            min_val, max_val, shape_str(a.shape())));
  const UnCode code{UnOp::Hardtanh, min_val, max_val};
  if (std::isnan(min_val) || std::isnan(max_val))
    return unary_op("hardtanh", {UnOp::MulS, NAN}, a, true, false, code);
  return unary_op("hardtanh", code, a, true, false);
}
Tensor relu6(const Tensor& a, Site site) {
  return math_op("relu6", {UnOp::Hardtanh, 0.0, 6.0}, a, site);
}
Tensor logsigmoid(const Tensor& a, Site site) {
  return math_op("logsigmoid", {UnOp::LogSigmoid}, a, site);
}
Tensor softsign(const Tensor& a, Site site) {
  return math_op("softsign", {UnOp::Softsign}, a, site);
}

// glu: the first half of x along dim gated by the sigmoid of the second (torch.nn.functional.glu),
// composed from recorded ops.
Tensor glu(const Tensor& a, int64_t dim, Site site) {
  SiteScope scope(site);
  check_float(a, "glu", "input", true);
  const int64_t nd = a.dim(), d = dim < 0 ? dim + nd : dim;
  if (nd == 0)
    throw Error(
        fmt::format("glu: input () is 0-dim (dim {}): glu does not support scalars "
                    "because halving size must be even",
                    dim));
  if (d < 0 || d >= nd)
    throw Error(fmt::format("glu: dim {} out of range for input {}: expected [{}, {}]", dim,
                            shape_str(a.shape()), -nd, nd - 1));
  const int64_t n = a.size(d);
  if (n % 2 != 0)
    throw Error(
        fmt::format("glu: halving dimension must be even, but dim {} of input {} has size {}", dim,
                    shape_str(a.shape()), n));
  return mul(narrow(a, d, 0, n / 2), sigmoid(narrow(a, d, n / 2, n / 2)));
}

}  // namespace tg
