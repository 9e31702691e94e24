// ops/unary/unary.cpp — the unary ops of the list (ops/kern/unary_list.inc): every line whose fn
// is Plain or Round is defined here by the list itself (check → allocate + kernel → record
// through unary_op, ops/unary/unary_op.hpp; the rounding ops take int64 too, an integer being its own
// rounding), and the activations with parameters by hand below. Forward and backward formulas
// sit side by side in ops/kern/unary_formulas.hpp, shared by both backends and create_graph.
// PyTorch's names, defaults and special values; the rounding ops and sign have a zero gradient.
// Deliberately not here: neg, abs, gelu, clamp and the scalar arithmetic (ops/binary/elementwise.cpp).
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"
#include "ops/unary/unary_op.hpp"

#include <cmath>

namespace tg {
using namespace detail;
using kern::UnOp;

namespace {
Tensor list_op(const char* op, UnCode code, const Tensor& x, Site site) {
  SiteScope scope(site);
  return unary_op(op, code, x);
}
// floor, ceil, round, trunc: an int64 input is returned as a copy of itself, int64 (PyTorch's).
Tensor rounding_op(const char* op, UnOp code, const Tensor& x, Site site) {
  if (x.defined() && x.dtype() == kInt64) {
    SiteScope scope(site);
    return x.clone();
  }
  return list_op(op, {code}, x, site);
}
}  // namespace

// ---- the list's plain and rounding ops ----
#define TG_UNARY_FN_Own(Code, name)
#define TG_UNARY_FN_Plain(Code, name) \
  Tensor name(const Tensor& a, Site site) { return list_op(#name, {UnOp::Code}, a, site); }
#define TG_UNARY_FN_Round(Code, name) \
  Tensor name(const Tensor& a, Site site) { return rounding_op(#name, UnOp::Code, a, site); }
#define X(Code, name, torch, reads, grad, fn, ...) TG_UNARY_FN_##fn(Code, name)
#include "ops/kern/unary_list.inc"
#undef X
#undef TG_UNARY_FN_Own
#undef TG_UNARY_FN_Plain
#undef TG_UNARY_FN_Round

// int64: -1, 0 or 1, int64; bool: the bool itself (PyTorch's sign of a bool).
Tensor sign(const Tensor& a, Site site) {
  if (a.defined() && (a.dtype() == kInt64 || a.dtype() == kBool)) {
    SiteScope scope(site);
    if (a.dtype() == kBool) return a.clone();
    return sub(gt(a, 0.0).to(kInt64), lt(a, 0.0).to(kInt64));
  }
  return list_op("sign", {UnOp::Sign}, a, site);
}

// ---- activations ----
Tensor softplus(const Tensor& a, double beta, double threshold, Site site) {
  return list_op("softplus", {UnOp::Softplus, beta, threshold}, a, site);
}
Tensor leaky_relu(const Tensor& a, double negative_slope, Site site) {
  return list_op("leaky_relu", {UnOp::LeakyRelu, negative_slope}, a, site);
}
Tensor elu(const Tensor& a, double alpha, Site site) {
  return list_op("elu", {UnOp::Elu, alpha, 1.0}, a, site);
}
Tensor selu(const Tensor& a, Site site) {
  // torch.nn.SELU's constants (Klambauer et al. 2017)
  return list_op("selu",
                 {UnOp::Elu, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946},
                 a, site);
}
Tensor celu(const Tensor& a, double alpha, Site site) {
  if (alpha == 0)
    throw Error(fmt::format("celu: input {}: alpha cannot be 0", shape_str(a.shape())));
  return list_op("celu", {UnOp::Celu, alpha, 1.0 / alpha}, a, site);
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
    return unary_op("hardtanh", {UnOp::MulS, NAN}, a, code);
  return unary_op("hardtanh", code, a);
}
Tensor relu6(const Tensor& a, Site site) {
  return list_op("relu6", {UnOp::Hardtanh, 0.0, 6.0}, a, site);
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
