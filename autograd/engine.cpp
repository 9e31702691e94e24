// autograd/engine.cpp — the engine room: the reverse walk shared by backward() and tg::grad()
// (seed the roots, then per node: take its summed gradient, run its closure, pass the results
// on), leaf accumulation, and backward(). tg::grad's captures are autograd/grad.cpp; recording,
// autograd/record.cpp; hooks and callbacks, autograd/hooks.cpp; gradient sums,
// autograd/grad_sum.cpp. No op of ops/ is called here.
#include "autograd/engine_detail.hpp"
#include "autograd/grad_detail.hpp"
#include "autograd/trace_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace tg {

namespace {
using detail::Capture;
using detail::PostHooks;
using detail::summed;

void capture_into(Tensor& slot, const Tensor& g, bool create_graph) {
  slot = slot.defined() ? summed(slot, g, create_graph) : g;
}

void accumulate_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor g, Capture& cap,
                     bool create_graph) {
  if (cap.active) {
    auto it = cap.leaves.find(leaf.get());
    if (it != cap.leaves.end()) capture_into(it->second, g, create_graph);
    return;
  }
  if (!leaf->leaf_hooks.empty()) g = detail::apply_hooks(leaf->leaf_hooks, std::move(g));
  // Under create_graph .grad keeps its history (PyTorch's); a grad with a history is never
  // written in place, by either kind of backward: the sum is a new tensor.
  if (create_graph) {
    if (!g.is_contiguous()) g = g.contiguous();  // .grad is flat memory (optimizers, clipping)
    leaf->grad = leaf->grad ? summed(Tensor(leaf->grad), g, true).impl_ptr() : g.impl_ptr();
    return;
  }
  if (leaf->grad && leaf->grad->grad_fn) {
    leaf->grad = summed(Tensor(leaf->grad).detach(), g).impl_ptr();
    return;
  }
  if (!leaf->grad) {
    // Adopt the gradient when nothing else references it (its storage included); else copy, so
    // later accumulation cannot write into a tensor someone else holds.
    const bool unique = g.impl_ptr().use_count() == 1 && g.impl()->storage.use_count() == 1 &&
                        !g.impl()->grad_fn && !g.impl()->requires_grad;
    leaf->grad = unique && g.is_contiguous() ? g.impl_ptr() : g.detach().clone().impl_ptr();
  } else {
    detail::add_into(Tensor(leaf->grad), g);
  }
}

void check_grad(const Node& n, size_t i, const Tensor& g) {
  const Edge& e = n.next[i];
  const Shape& shape = e.node ? e.node->out_shape : e.leaf->shape;
  const DType dtype = e.node ? e.node->out_dtype : e.leaf->dtype;
  if (g.shape() != shape || g.dtype() != dtype)
    throw Error(fmt::format(
        "backward of {} (node #{}): gradient for input {} is {} {}, expected {} {}", n.op, n.seq, i,
        shape_str(g.shape()), dtype_name(g.dtype()), shape_str(shape), dtype_name(dtype)));
}

// Throws when an in-place write changed a tensor n saved (PyTorch's "modified by an inplace
// operation"), naming the node, the tensor and the write.
void check_saved_versions(const Node& n) {
  for (size_t i = 0; i < n.saved.size(); ++i) {
    const SavedVersion& v = n.saved[i];
    const Storage& s = *v.storage;
    if (s.version == v.version) continue;
    std::string shape = "(";
    for (int d = 0; d < v.ndim && d < 4; ++d) shape += (d ? "," : "") + std::to_string(v.dims[d]);
    shape += v.ndim > 4 ? ",...)" : ")";
    throw Error(fmt::format(
        "backward of {} (node #{}): a tensor it saved, {} {}, was modified in place by {} after "
        "the forward (version {} now, {} when saved); compute on a copy (clone()) or run the "
        "in-place op after backward",
        n.op, n.seq, shape, dtype_name(v.dtype), s.last_write ? s.last_write : "an in-place write",
        s.version, v.version));
  }
}

// The walk's buffers, reused across backward calls (a nested backward, e.g. from a hook, gets its
// own). Cleared of every node's walk state on exit, also when a backward throws.
struct WalkBuffers {
  std::vector<Node*> heap;    // max-heap on the tape position: the tape in reverse
  std::vector<Node*> queued;  // every node that received a gradient
  bool busy = false;
};
thread_local WalkBuffers g_walk_buf;

struct SeqLess {
  bool operator()(const Node* a, const Node* b) const { return a->seq < b->seq; }
};

// One reverse walk: roots seed it, then each node in decreasing seq takes its summed gradient,
// runs its closure and passes the results on to its edges.
class Walk {
 public:
  Walk(bool retain_graph, bool create_graph, Capture& cap, PostHooks& post)
      : buf_(g_walk_buf.busy ? own_ : g_walk_buf),
        reused_(!g_walk_buf.busy),
        retain_(retain_graph),
        create_(create_graph),
        modes_(detail::g_trace.modes),
        cap_(cap),
        post_(post) {
    // Under create_graph the closures run with grad mode on, so what they compute is recorded.
    if (create_graph)
      with_grad_.emplace();
    else
      no_grad_.emplace();
    g_walk_buf.busy = true;
    buf_.heap.clear();
    buf_.queued.clear();
  }
  ~Walk() {
    for (Node* n : buf_.queued) {
      n->pending = Tensor();
      n->queued = false;
    }
    buf_.heap.clear();
    buf_.queued.clear();
    if (reused_) g_walk_buf.busy = false;
  }
  Walk(const Walk&) = delete;
  Walk& operator=(const Walk&) = delete;

  void seed(const Tensor& root, Tensor g, size_t r);
  void run() {
    while (!buf_.heap.empty()) step(pop());
  }

 private:
  void push(Node* n) {
    buf_.heap.push_back(n);
    std::push_heap(buf_.heap.begin(), buf_.heap.end(), SeqLess());
  }
  Node* pop() {
    std::pop_heap(buf_.heap.begin(), buf_.heap.end(), SeqLess());
    Node* n = buf_.heap.back();
    buf_.heap.pop_back();
    return n;
  }
  void send_to_node(const std::shared_ptr<Node>& sp, Tensor g);
  void send_to_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor g) {
    accumulate_leaf(leaf, std::move(g), cap_, create_);
    post_.done(leaf.get(), true);
  }
  Tensor take_gradient(Node* n);
  std::vector<Tensor> run_closure(Node* n, const Tensor& g);
  void pass_on(Node* n, std::vector<Tensor>& in_grads);
  void step(Node* n) {
    std::vector<Tensor> in_grads = run_closure(n, take_gradient(n));
    pass_on(n, in_grads);
    if (!retain_) {
      n->backward = nullptr;  // frees the saved values
      n->released = true;
    }
  }

  WalkBuffers own_;
  WalkBuffers& buf_;
  bool reused_;
  std::optional<NoGradGuard> no_grad_;
  std::optional<EnableGradGuard> with_grad_;
  const bool retain_, create_;
  const uint8_t modes_;  // the study tools on for this backward
  Capture& cap_;
  PostHooks& post_;
  // Under create_graph, each queued node's owner: a saved output takes it as its history.
  std::unordered_map<const Node*, std::shared_ptr<Node>> owners_;
};

// Sums g into the node's pending gradient; queues the node the first time. A node where the
// walk stops (stop_at_inputs) takes g straight into the capture: it may be queued in an
// enclosing walk (tg::checkpoint's recomputation), whose state this walk must not touch.
void Walk::send_to_node(const std::shared_ptr<Node>& sp, Tensor g) {
  Node* n = sp.get();
  if (cap_.stop_at_inputs) {
    auto it = cap_.nodes.find(n);
    if (it != cap_.nodes.end()) return capture_into(it->second, g, create_);
  }
  if (n->queued) {
    n->pending = summed(n->pending, g, create_);
    return;
  }
  if (create_) owners_.emplace(n, sp);
  n->queued = true;
  n->pending = std::move(g);
  buf_.queued.push_back(n);
  push(n);
}

// Root r with its gradient g (undefined: ones, for a one-element root).
void Walk::seed(const Tensor& root, Tensor g, size_t r) {
  if (!root.defined()) throw Error(fmt::format("backward: output {} is an undefined tensor", r));
  if (!root.requires_grad())
    throw Error(
        fmt::format("backward: output {} {} does not require grad (no input requires grad, "
                    "or it was computed under NoGradGuard)",
                    r, shape_str(root.shape())));
  if (!g.defined()) {
    if (root.numel() != 1)
      throw Error(
          fmt::format("backward: grad can be implicitly created only for scalar outputs; "
                      "output {} is {}: pass an explicit gradient",
                      r, shape_str(root.shape())));
    g = ones(root.shape(), root.dtype(), root.device());
  }
  if (g.shape() != root.shape() || g.dtype() != root.dtype())
    throw Error(fmt::format("backward: gradient {} {} does not match output {} {}",
                            shape_str(g.shape()), dtype_name(g.dtype()), shape_str(root.shape()),
                            dtype_name(root.dtype())));
  if (root.grad_fn())
    send_to_node(root.impl()->grad_fn, std::move(g));
  else
    send_to_leaf(root.impl_ptr(), std::move(g));
}

// The node's summed gradient, through its hooks, captured when asked for, contiguous; throws
// when the node cannot run (freed, or a saved tensor written in place since).
Tensor Walk::take_gradient(Node* n) {
  Tensor g = std::move(n->pending);
  n->pending = Tensor();
  if (n->released || !n->backward)
    throw Error(
        fmt::format("backward: node #{} ({}) was already freed by an earlier backward; pass "
                    "retain_graph=true to the first backward to backward through the "
                    "graph a second time",
                    n->seq, n->op));
  if (!n->hooks.empty()) g = detail::apply_hooks(n->hooks, std::move(g));
  if (cap_.active) {
    auto it = cap_.nodes.find(n);
    if (it != cap_.nodes.end()) capture_into(it->second, g, create_);
  }
  if (modes_ & kTraceInspect) detail::extra_of(*n).grad_norm = detail::l2_norm(g);
  if (n->saved.size()) check_saved_versions(*n);
  if (!g.is_contiguous()) g = g.contiguous();  // a view's backward may send a strided view
  return g;
}

std::vector<Tensor> Walk::run_closure(Node* n, const Tensor& g) {
  const int64_t t0 = (modes_ & kTraceProfile) ? detail::now_ns() : 0;
  if (create_ && !n->differentiable)
    throw Error(fmt::format(
        "backward of {} (node #{}) is not differentiable yet: create_graph=true cannot record "
        "it, so no second derivative flows through {} (docs/tape.md, \"Higher order\", lists "
        "the ops that support it)",
        n->op, n->seq, n->op));
  std::vector<Tensor> in_grads;
  if (create_) {
    detail::RecordingScope recording(&owners_[n]);
    in_grads = n->backward(g);
  } else {
    in_grads = n->backward(g);
  }
  if (modes_ & kTraceProfile) detail::profiler_on_backward(*n, detail::now_ns() - t0);
  if (in_grads.size() != n->next.size())
    throw Error(fmt::format("backward of {}: returned {} gradients for {} inputs", n->op,
                            in_grads.size(), n->next.size()));
  return in_grads;
}

// Study tools after a node's backward (anomaly checks, gradient norms per input), then each
// input's gradient to its edge.
void Walk::pass_on(Node* n, std::vector<Tensor>& in_grads) {
  if (modes_ & kTraceAnomaly) detail::anomaly_check_backward(*n, in_grads);
  if (modes_ & kTraceInspect) {
    std::vector<double>& norms = detail::extra_of(*n).in_grad_norms;
    norms.assign(in_grads.size(), -1.0);
    for (size_t i = 0; i < in_grads.size(); ++i)
      if (n->next[i].active()) norms[i] = detail::l2_norm(in_grads[i]);
  }
  for (size_t i = 0; i < in_grads.size(); ++i) {
    const Edge& e = n->next[i];
    if (!e.active()) continue;
    if (!in_grads[i].defined()) {
      if (e.leaf) post_.done(e.leaf.get(), false);
      continue;
    }
    check_grad(*n, i, in_grads[i]);
    if (e.node)
      send_to_node(e.node, std::move(in_grads[i]));
    else
      send_to_leaf(e.leaf, std::move(in_grads[i]));
  }
}

}  // namespace

void detail::run_backward(const Tensor* roots, const Tensor* grads, size_t n_roots,
                          bool retain_graph, bool create_graph, Capture& cap) {
  detail::CallbackScope callbacks;
  try {
    PostHooks post;
    if (!cap.active && detail::any_post_hooks()) post.count(roots, n_roots);
    {
      Walk walk(retain_graph, create_graph, cap, post);
      for (size_t r = 0; r < n_roots; ++r) walk.seed(roots[r], grads[r], r);
      walk.run();
    }
    NoGradGuard no_grad;
    post.finish();
  } catch (...) {
    try {
      callbacks.drain(false);
    } catch (...) {  // the first error is the one to report
    }
    throw;
  }
  NoGradGuard no_grad;
  callbacks.drain(true);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
              bool create_graph) {
  Capture cap;
  if (grads.empty()) {
    std::vector<Tensor> g(roots.size());
    detail::run_backward(roots.data(), g.data(), roots.size(), retain_graph, create_graph, cap);
    return;
  }
  if (roots.size() != grads.size())
    throw Error(fmt::format("backward: {} outputs but {} gradients", roots.size(), grads.size()));
  detail::run_backward(roots.data(), grads.data(), roots.size(), retain_graph, create_graph, cap);
}
void backward_one(const Tensor& root, const Tensor& grad, bool retain_graph, bool create_graph) {
  Capture cap;
  detail::run_backward(&root, &grad, 1, retain_graph, create_graph, cap);
}

}  // namespace tg
