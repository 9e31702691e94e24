// autograd/grad.cpp — tg::grad (PyTorch's torch.autograd.grad) and the partial derivatives that
// tg::checkpoint and the attention second order take (detail::grad_to_edges): the engine's walk
// (autograd/engine.cpp) with a capture of the gradients reaching given edges, so no leaf's
// .grad() is touched.
#include "autograd/engine_detail.hpp"
#include "autograd/grad_detail.hpp"

#include <fmt/format.h>

namespace tg {

using detail::Capture;

// ---- tg::grad: the gradients reaching given edges, captured ----
namespace {
std::vector<Tensor> grad_impl(const std::vector<Tensor>& outputs, const std::vector<Edge>& inputs,
                              const std::vector<Tensor>& grad_outputs, const GradOptions& opts,
                              bool stop_at_inputs) {
  Capture cap;
  cap.active = true;
  cap.stop_at_inputs = stop_at_inputs;
  for (const Edge& e : inputs) {
    if (e.node)
      cap.nodes.emplace(e.node.get(), Tensor());
    else
      cap.leaves.emplace(e.leaf.get(), Tensor());
  }
  std::vector<Tensor> g = grad_outputs;
  if (g.empty()) g.resize(outputs.size());
  if (g.size() != outputs.size())
    throw Error(fmt::format("grad: {} outputs but {} gradients", outputs.size(), g.size()));
  detail::run_backward(outputs.data(), g.data(), outputs.size(),
                       opts.retain_graph.value_or(opts.create_graph), opts.create_graph, cap);
  std::vector<Tensor> result;
  for (const Edge& e : inputs)
    result.push_back(e.node ? cap.nodes[e.node.get()] : cap.leaves[e.leaf.get()]);
  return result;
}
// An input tensor as the edge its gradient is captured at.
std::vector<Edge> edges_of(const std::vector<Tensor>& inputs) {
  std::vector<Edge> edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad())
      throw Error(fmt::format("grad: input {} does not require grad", i));
    Edge e;
    if (in.grad_fn())
      e.node = in.impl()->grad_fn;
    else
      e.leaf = in.impl_ptr();
    edges.push_back(std::move(e));
  }
  return edges;
}
}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, GradOptions opts) {
  for (size_t i = 0; i < outputs.size(); ++i) {  // before the walk, whose errors say "backward"
    if (!outputs[i].defined())
      throw Error(
          fmt::format("tg::grad: output {} (of {}) is an undefined tensor", i, outputs.size()));
    if (!outputs[i].requires_grad())
      throw Error(fmt::format(
          "tg::grad: output {} {} (of {}) does not require grad (no input requires grad, or it "
          "was computed under NoGradGuard)",
          i, shape_str(outputs[i].shape()), outputs.size()));
  }
  std::vector<Tensor> result = grad_impl(outputs, edges_of(inputs), grad_outputs, opts, false);
  if (!opts.allow_unused)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!result[i].defined())
        throw Error(
            fmt::format("grad: input {} {} was not used to compute the outputs (pass "
                        "allow_unused=true to get an undefined gradient)",
                        i, shape_str(inputs[i].shape())));
  return result;
}
std::vector<Tensor> detail::grad_stop_at_inputs(const std::vector<Tensor>& outputs,
                                                const std::vector<Tensor>& inputs,
                                                const std::vector<Tensor>& grad_outputs,
                                                bool create_graph) {
  return grad_to_edges(outputs, edges_of(inputs), grad_outputs, create_graph);
}
std::vector<Tensor> detail::grad_to_edges(const std::vector<Tensor>& outputs,
                                          const std::vector<Edge>& inputs,
                                          const std::vector<Tensor>& grad_outputs,
                                          bool create_graph) {
  GradOptions o;
  o.create_graph = create_graph;
  // Under create_graph the gradients' graph reads the walked nodes again (saved outputs); else
  // each node's saved tensors go as soon as it has run (tg::checkpoint's recomputed layer).
  o.retain_graph = create_graph;
  return grad_impl(outputs, inputs, grad_outputs, o, true);
}

}  // namespace tg
