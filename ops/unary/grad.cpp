// ops/unary/grad.cpp — the unary ops' backward in recorded ops, for create_graph: each op's
// Formula<UnOp::X>::bwd (ops/kern/unary_formulas.hpp, the kernels' own formula) instantiated on
// tg::Tensor, so dx = g · f'(x) is built from tg ops on the live x (or y = f(x)) and
// differentiates again to any order. Here live the tensor hooks the formulas need (select is
// where, both logical_and, sgn sign, zero_like zeros_like). Masks (relu, clamp, the hard
// activations) are constants: their second derivative is 0 almost everywhere, as in PyTorch.
// Deliberately not here: the unary ops themselves (ops/binary/elementwise.cpp, ops/unary/unary.cpp) and
// the first-order path (the raw kernels, unary_backward).
#include "ops/kern/unary_formulas.hpp"
#include "ops/ops.hpp"
#include "ops/unary/unary_op.hpp"

namespace tg::kern::uf {
template <>
struct UnaryOps<Tensor> {
  static Tensor select(const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a, b); }
  static Tensor both(const Tensor& c, const Tensor& d) { return logical_and(c, d); }
  static Tensor sgn(const Tensor& v) { return sign(v); }
  static Tensor zero_like(const Tensor& v) { return zeros_like(v); }
};
}  // namespace tg::kern::uf

namespace tg::detail {
using kern::UnOp;

Tensor unary_grad(UnCode c, const Tensor& g, const Tensor& x, const Tensor& y) {
  switch (c.op) {
#define X(Code, ...) \
  case UnOp::Code:   \
    return kern::uf::Formula<UnOp::Code>::bwd(g, x, y, c.p0, c.p1);
#include "ops/kern/unary_list.inc"
#undef X
  }
  throw Error(
      fmt::format("unary_grad: op code {} has no recorded backward", static_cast<int>(c.op)));
}

}  // namespace tg::detail
