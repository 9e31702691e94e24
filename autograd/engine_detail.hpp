// autograd/engine_detail.hpp — internal (not installed): what the tape's rooms share among
// themselves. record.cpp (recording, Saved), engine.cpp (the walk), grad.cpp (tg::grad's
// captures), hooks.cpp (gradient hooks, post-accumulate hooks, backward callbacks) and
// grad_sum.cpp (gradient sums). Not for ops/.
#pragma once

#include "autograd/tape.hpp"

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace tg::detail {

// ---- the walk (engine.cpp) ----
// With a capture active, gradients of the requested tensors are stored here and no leaf .grad()
// is touched (tg::grad, grad.cpp).
struct Capture {
  std::unordered_map<const TensorImpl*, Tensor> leaves;  // leaf inputs
  std::unordered_map<const Node*, Tensor> nodes;         // non-leaf inputs, by producer
  bool active = false;
  bool stop_at_inputs = false;  // a captured node is not run (detail::grad_stop_at_inputs)
};
// One backward: the walk over roots[0..n) with grads[0..n) (undefined: ones, for a one-element
// root), then the post-accumulate hooks it still owes, then the callbacks queued meanwhile.
void run_backward(const Tensor* roots, const Tensor* grads, size_t n_roots, bool retain_graph,
                  bool create_graph, Capture& cap);

// ---- the node whose backward the engine is recording (record.cpp) ----
// Set by the walk around each closure under create_graph (null otherwise): Saved::get reattaches
// a saved output to it. The walk keeps the node's owner alive while the closure runs.
class RecordingScope {
 public:
  explicit RecordingScope(const std::shared_ptr<Node>* owner);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  const std::shared_ptr<Node>* prev_;
};
NodeExtra& extra_of(Node& n);  // allocated on first use

// ---- gradient sums (grad_sum.cpp) ----
// dst += src, same shape and floating dtype (checked by the caller), in place: a plain backward.
void add_into(const Tensor& dst, const Tensor& src);
// a + b into a new tensor; under create_graph a recorded "add" node, so the sum keeps both
// histories.
Tensor summed(const Tensor& a, const Tensor& b, bool create_graph = false);

// ---- hooks and callbacks (hooks.cpp) ----
// Runs the gradient hooks in order; each may replace g (same shape and dtype).
Tensor apply_hooks(const std::vector<GradHook>& hooks, Tensor g);

// Leaves with post-accumulate hooks that one backward reaches, in the order first found, with
// how many gradients that backward still owes each (one per edge into the leaf).
struct PostHooks {
  struct Entry {
    std::shared_ptr<TensorImpl> leaf;
    int remaining = 0;
    bool received = false;
  };
  std::vector<Entry> entries;
  std::unordered_map<const TensorImpl*, size_t> index;
  bool active = false;
  // Counts, before the walk, the edges from the reachable graph into leaves that have hooks (what
  // PyTorch's engine computes as dependencies); only once some hook was ever registered.
  void count(const Tensor* roots, size_t n_roots);
  // One gradient for leaf arrived (received) or was skipped (an undefined gradient).
  void done(const TensorImpl* leaf, bool received) {
    if (active) done_slow(leaf, received);
  }
  // After the walk: leaves whose remaining uses never sent a gradient but that got one earlier.
  void finish();

 private:
  void add(const std::shared_ptr<TensorImpl>& leaf);
  void done_slow(const TensorImpl* leaf, bool received);
};
bool any_post_hooks();  // some post-accumulate hook was ever registered

// One backward's callbacks (queue_backward_callback): the scope marks a backward as running;
// drain runs what was queued during it, fn(ok), in order.
class CallbackScope {
 public:
  CallbackScope();
  ~CallbackScope();
  void drain(bool ok);
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  size_t base_;
};

}  // namespace tg::detail
