// ops/functional/functional.hpp — tg::func, torch.autograd.functional in C++: vjp, jvp, vhp, hvp, jacobian,
// hessian, with PyTorch's names, argument order and return conventions, built on tg::grad with
// create_graph (docs/tape.md, "Higher order").
//
// fn maps the inputs to one tensor (a scalar for vhp, hvp and hessian). Inputs are used as they
// are: each is detached and made to require grad (PyTorch's grad_preprocess), except, with
// create_graph, an input that already requires grad, whose history is kept so the results can be
// differentiated again. Without create_graph every result is detached. An input fn does not use
// gets zeros (PyTorch's strict=False). jvp is the double-vjp trick (two reverse passes: the
// gradient of uᵀJ with respect to u), so it needs fn's ops to support create_graph. hvp is
// computed as vhp (the Hessian is symmetric): the same numbers as PyTorch's, one pass fewer.
// Deliberately not here: forward-mode AD, vectorize / vmap, several outputs.
#pragma once

#include "autograd/tensor.hpp"

#include <functional>
#include <utility>
#include <vector>

namespace tg::func {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// (fn(inputs), vᵀ·J per input); v has fn's output shape, undefined for a one-element output.
std::pair<Tensor, std::vector<Tensor>> vjp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const Tensor& v = Tensor(), bool create_graph = false);
// (fn(inputs), J·v), v one tensor per input (inputs' shapes); the result has the output's shape.
std::pair<Tensor, Tensor> jvp(const Fn& fn, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& v, bool create_graph = false);
// Scalar fn: (fn(inputs), vᵀ·H per input) and (fn(inputs), H·v per input); v per input.
std::pair<Tensor, std::vector<Tensor>> vhp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v, bool create_graph = false);
std::pair<Tensor, std::vector<Tensor>> hvp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v, bool create_graph = false);
// J per input, of shape output.shape + input.shape (one reverse pass per output element).
std::vector<Tensor> jacobian(const Fn& fn, const std::vector<Tensor>& inputs,
                             bool create_graph = false);
// Scalar fn: H[i][j] of shape inputs[i].shape + inputs[j].shape.
std::vector<std::vector<Tensor>> hessian(const Fn& fn, const std::vector<Tensor>& inputs,
                                         bool create_graph = false);

}  // namespace tg::func
