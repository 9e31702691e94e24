// ops/unary/unary_op.hpp — the one shape of every unary op (check → allocate + kernel → record), shared
// by the op files that define unary ops (ops/binary/elementwise.cpp, which holds it, and
// ops/unary/unary.cpp, which defines the list's plain ops): the kernel code with its scalar
// parameters, the forward and backward kernels of either backend, and unary_op itself.
// Internal to ops/.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/kern/kernel_codes.hpp"
#include "ops/kern/unary_formulas.hpp"

#include <optional>

namespace tg::detail {

// The kernel code of a unary op (the same table on both backends: ops/kern/kernel_codes.hpp) and its
// scalar parameters.
struct UnCode {
  kern::UnOp op;
  double p0 = 0, p1 = 0;
};

// out = f(x) elementwise, same dtype and device: cpu::unary or cuda::unary.
Tensor unary_forward(const char* op, UnCode code, const Tensor& x);
// dx = g · f'(x) elementwise, where y = f(x) is the forward output (x, y undefined when the
// derivative does not read them).
Tensor unary_backward(UnCode code, const Tensor& g, const Tensor& x, const Tensor& y);
// The same dx in recorded ops (ops/unary/grad.cpp), for create_graph: x and y carry their
// histories (Saved handles: the input's own, the output reattached), so dx differentiates again.
Tensor unary_grad(UnCode code, const Tensor& g, const Tensor& x, const Tensor& y);
// A unary op on a floating x: check → allocate + kernel → record, saving what the backward
// reads (x and/or y = f(x): the list's `reads`, ops/kern/unary_list.inc); a zero-gradient op
// saves nothing. The backward is code's, or bwd's where the forward is computed by another
// kernel (clamp's corner cases).
Tensor unary_op(const char* op, UnCode code, const Tensor& x,
                std::optional<UnCode> bwd = std::nullopt);

}  // namespace tg::detail
