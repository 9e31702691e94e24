// autograd/engine.hpp — the engine: backward() and tg::grad() walk the tape from the roots in
// decreasing sequence number (the tape in reverse), so a node runs only after every consumer of
// its output has sent its gradient. No recursion, no topological sort. Recording is
// autograd/record.hpp; the hooks the walk calls live in autograd/hooks.cpp.
//
// Ownership: tensors own the node that produced them; nodes own their input edges. A forward pass
// whose outputs are dropped frees its nodes, so forward passes without backward do not leak.
// tg::Tape keeps weak references in order, for inspection only.
#pragma once

#include "autograd/node.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace tg {

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
              bool retain_graph = false, bool create_graph = false);
void backward_one(const Tensor& root, const Tensor& grad, bool retain_graph,
                  bool create_graph = false);  // Tensor::backward

// PyTorch's torch.autograd.grad options: create_graph records the backward, so the gradients
// returned have a history and can be differentiated again (to any order); retain_graph, when
// unset, follows create_graph.
struct GradOptions {
  std::optional<bool> retain_graph;
  bool allow_unused = true;  // unused inputs get an undefined tensor; false: throw
  bool create_graph = false;
};
// Queues fn to run once the backward now running has walked its whole graph (PyTorch's
// Engine.queue_callback): fn(true) after a walk that finished, fn(false) when it threw. Only
// valid inside a backward (from a hook); throws otherwise. Callbacks run in the order queued.
void queue_backward_callback(std::function<void(bool ok)> fn);

// Gradients of outputs with respect to inputs, without touching any .grad().
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, GradOptions opts = {});

// ---- inspection ----
struct Tape {
  // Live nodes in execution order (expired ones are skipped).
  static std::vector<std::shared_ptr<Node>> live_nodes();
  static size_t size();         // entries currently held (live or not yet pruned)
  static int64_t live_count();  // Node objects alive in the process
};

}  // namespace tg
