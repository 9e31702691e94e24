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

// The inputs' storage versions (0 for an undefined one).
std::vector<uint32_t> versions_of(const std::vector<Tensor>& inputs) {
  std::vector<uint32_t> v;
  for (const Tensor& t : inputs) v.push_back(t.defined() ? t.version() : 0);
  return v;
}

// Throws when an input's version moved since `before`: fn ran again in backward reads its inputs
// as they were, so a write into one (by fn, which would write it again, or after the forward)
// would silently change the recomputed piece and its gradient (PyTorch 1.13 gets 2x for
// a.mul_(2) inside fn: it recomputes from the written value too).
void check_unwritten(const std::vector<Tensor>& inputs, const std::vector<uint32_t>& before,
                     const char* when) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || t.version() == before[i]) continue;
    throw Error(fmt::format(
        "tg::checkpoint: input {} {} {} was written in place {} (its version went from {} to "
        "{}; last writer {}): backward runs fn again on the inputs as they were; write into a "
        "copy inside fn (in[{}].clone()) or outside the checkpoint",
        i, shape_str(t.shape()), dtype_name(t.dtype()), when, before[i], t.version(),
        t.impl()->storage->last_write ? t.impl()->storage->last_write : "unknown", i));
  }
}
}  // namespace

Tensor checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs, Site site) {
  SiteScope scope(site);
  if (!fn) throw Error("checkpoint: fn is empty");
  if (!grad_enabled()) return fn(inputs);  // no tape: nothing to keep or recompute
  const std::string rng = default_generator().get_state();
  const uint64_t start = detail::tape_position();
  const std::vector<uint32_t> before = versions_of(inputs);
  Tensor y = fn(inputs);
  if (!y.defined()) throw Error("checkpoint: fn returned an undefined tensor");
  if (!y.requires_grad()) return y;  // nothing recomputed: a write into an input is harmless
  check_unwritten(inputs, before, "by fn");
  std::vector<Edge> edges = outside_edges(y, start);
  const Shape shape = y.shape();
  const DType dtype = y.dtype();
  Tensor out = y.detach();  // the piece's graph, and the activations it saved, go with y
  y = Tensor();
  RecordInfo info;
  info.saves_nothing();
  std::vector<Saved> saved;  // fn reads them again
  for (const Tensor& t : inputs) saved.push_back(info.save(t));
  info.differentiable();  // the recomputed piece's gradients are recorded under create_graph
  std::vector<Edge> targets = edges;
  detail::record_edges(
      kOp, out, std::move(edges), info,
      [fn, saved, rng, targets, shape, dtype, before](const Tensor& g) -> std::vector<Tensor> {
        std::vector<Tensor> inputs;
        for (const Saved& s : saved) inputs.push_back(s.get());
        check_unwritten(inputs, before, "between the forward and backward");
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
        check_unwritten(inputs, before, "by fn when run again in backward");
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
