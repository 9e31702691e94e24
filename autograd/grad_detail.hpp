// autograd/grad_detail.hpp — internal (not installed): tg::grad's variant for partial derivatives,
// used by backward closures that differentiate a recomputed piece of graph under create_graph
// (ops/attention_cuda.cpp).
#pragma once

#include "autograd/tensor.hpp"

#include <vector>

namespace tg::detail {
// tg::grad(outputs, inputs, grad_outputs) that does not walk past the inputs: a non-leaf input's
// node gets its gradient captured and is not run, so the results are the partial derivatives with
// respect to the inputs as independent variables (an input computed from another one does not
// pass its gradient on), and nothing upstream of them runs. Unused inputs: undefined.
std::vector<Tensor> grad_stop_at_inputs(const std::vector<Tensor>& outputs,
                                        const std::vector<Tensor>& inputs,
                                        const std::vector<Tensor>& grad_outputs, bool create_graph);
}  // namespace tg::detail
