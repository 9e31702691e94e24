// autograd/activation_checkpoint.cpp — tg::checkpoint: run fn, keep its output and the edges to
// what it read from outside (found on the tape: leaves, and nodes recorded before it), drop the
// rest; in backward run fn again under the saved generator state and send dout through the
// recomputed piece to those edges (a walk that stops at them: detail::grad_to_edges).
#include "autograd/activation_checkpoint.hpp"

#include "autograd/grad_detail.hpp"
#include "autograd/tape.hpp"

#include <fmt/format.h>

#include <unordered_set>

namespace tg {
namespace {
constexpr const char* kOp = "checkpoint";

// What the piece recorded from tape position `start` on reads from outside it: leaves that
// require grad and nodes recorded before it, each once, in the order met walking down from out.
std::vector<Edge> outside_edges(const Tensor& out, uint64_t start) {
  std::vector<Edge> edges;
  std::unordered_set<const void*> seen;
  std::vector<const Node*> stack;
  auto visit = [&](const Edge& e) {
    if (e.leaf) {
      if (seen.insert(e.leaf.get()).second) edges.push_back(e);
    } else if (e.node && seen.insert(e.node.get()).second) {
      if (e.node->seq < start)
        edges.push_back(e);
      else
        stack.push_back(e.node.get());
    }
  };
  Edge root;
  if (out.grad_fn())
    root.node = out.impl()->grad_fn;
  else
    root.leaf = out.impl_ptr();
  visit(root);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) visit(e);
  }
  return edges;
}
}  // namespace

Tensor checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs, Site site) {
  SiteScope scope(site);
  if (!fn) throw Error("checkpoint: fn is empty");
  if (!grad_enabled()) return fn(inputs);  // no tape: nothing to keep or recompute
  const std::string rng = default_generator().get_state();
  const uint64_t start = detail::tape_position();
  Tensor y = fn(inputs);
  if (!y.defined()) throw Error("checkpoint: fn returned an undefined tensor");
  if (!y.requires_grad()) return y;
  std::vector<Edge> edges = outside_edges(y, start);
  const Shape shape = y.shape();
  const DType dtype = y.dtype();
  Tensor out = y.detach();  // the piece's graph, and the activations it saved, go with y
  y = Tensor();
  RecordInfo info;
  for (const Tensor& t : inputs) info.note_version(t);  // fn reads them again
  info.saved_bytes = 0;
  for (const Tensor& t : inputs) info.saved_bytes += tensor_bytes(t);
  info.differentiable();  // the recomputed piece's gradients are recorded under create_graph
  std::vector<Edge> targets = edges;
  detail::record_edges(
      kOp, out, std::move(edges), info,
      [fn, inputs, rng, targets, shape, dtype](const Tensor& g) -> std::vector<Tensor> {
        Generator& gen = default_generator();
        const std::string now = gen.get_state();
        gen.set_state(rng);  // dropout draws the same masks
        Tensor y2;
        try {
          EnableGradGuard with_grad;
          y2 = fn(inputs);
        } catch (...) {
          gen.set_state(now);
          throw;
        }
        gen.set_state(now);
        if (!y2.defined() || y2.shape() != shape || y2.dtype() != dtype || !y2.requires_grad())
          throw Error(fmt::format(
              "checkpoint: fn gave {} when run again in backward, but {} {} that requires grad "
              "in the forward; fn must compute the same thing from the same tensors",
              y2.defined() ? shape_str(y2.shape()) + " " + dtype_name(y2.dtype())
                           : std::string("an undefined tensor"),
              shape_str(shape), dtype_name(dtype)));
        return detail::grad_to_edges({y2}, targets, {g}, creating_graph());
      });
  return out;
}

}  // namespace tg
