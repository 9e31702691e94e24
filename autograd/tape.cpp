// autograd/tape.cpp — recording nodes, grad mode, and the reverse walk (backward and tg::grad).
#include "autograd/tape.hpp"

#include "autograd/copy_detail.hpp"
#include "autograd/device_detail.hpp"
#include "autograd/grad_detail.hpp"
#include "autograd/trace_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <queue>
#include <unordered_map>

namespace tg {

namespace {
thread_local bool g_grad_enabled = true;
thread_local uint64_t g_next_seq = 0;
std::atomic<int64_t> g_live_nodes{0};

// Weak references to recorded nodes, in order; pruned when it doubles, so it stays bounded by
// twice the number of live nodes.
struct TapeList {
  std::vector<std::weak_ptr<Node>> nodes;
  size_t prune_at = 1024;
  void push(const std::shared_ptr<Node>& n) {
    if (nodes.size() >= prune_at) {
      nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                                 [](const std::weak_ptr<Node>& w) { return w.expired(); }),
                  nodes.end());
      prune_at = std::max<size_t>(1024, 2 * nodes.size());
    }
    nodes.push_back(n);
  }
};
thread_local TapeList g_tape;

// dst += src, same shape and dtype (checked by the caller).
void add_into(const Tensor& dst, const Tensor& src_in) {
  const Tensor src = detail::dense(src_in);
  const int64_t n = dst.numel();
  if (dst.device() != src.device())
    throw Error(fmt::format("backward: cannot accumulate a gradient {} on {} into one on {}",
                            shape_str(src.shape()), src.device().str(), dst.device().str()));
  if (dst.device().type == DeviceType::CUDA) {
    detail::cuda_add_into(dst, src, "backward (accumulate)");
    return;
  }
  if (dst.dtype() == kFloat32) {
    float* d = dst.data<float>();
    const float* s = src.data<float>();
    for (int64_t i = 0; i < n; ++i) d[i] += s[i];
  } else if (dst.dtype() == kFloat64) {
    double* d = dst.data<double>();
    const double* s = src.data<double>();
    for (int64_t i = 0; i < n; ++i) d[i] += s[i];
  } else {
    throw Error(
        fmt::format("backward: cannot accumulate gradients of dtype {}", dtype_name(dst.dtype())));
  }
}

detail::RecordedAdd g_recorded_add = nullptr;  // tg::add, registered by ops/binary/elementwise.cpp

// a + b into a new tensor; under create_graph a recorded add, so the sum keeps both histories.
Tensor summed(const Tensor& a, const Tensor& b, bool create_graph = false) {
  if (create_graph) {
    if (!g_recorded_add)
      throw Error("backward: create_graph needs tapegrad's ops (link tapegrad::ops)");
    return g_recorded_add(a, b);
  }
  Tensor out = a.detach().clone();
  add_into(out, b);
  return out;
}

// ---- higher order: the node whose backward the engine is recording ----
// Non-null only under create_graph; the walk keeps its nodes' owners (saved_output's history).
thread_local Node* g_recording_node = nullptr;
thread_local const std::shared_ptr<Node>* g_recording_owner = nullptr;
struct RecordingScope {
  Node* prev;
  const std::shared_ptr<Node>* prev_owner;
  explicit RecordingScope(const std::shared_ptr<Node>* owner)
      : prev(g_recording_node), prev_owner(g_recording_owner) {
    g_recording_node = owner ? owner->get() : nullptr;
    g_recording_owner = owner;
  }
  ~RecordingScope() {
    g_recording_node = prev;
    g_recording_owner = prev_owner;
  }
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;
};
// A handle on `saved`'s memory whose history is node: a fresh TensorImpl (detach's), so the
// closure's own copy stays detached.
Tensor reattach(const Tensor& saved, const std::shared_ptr<Node>& node) {
  Tensor t = saved.detach();
  t.impl()->requires_grad = true;
  t.impl()->grad_fn = node;
  return t;
}
[[noreturn]] void throw_saved_mismatch(const Node& n, const char* what, const Tensor& saved,
                                       const Shape& shape, DType dtype) {
  throw Error(fmt::format("backward of {} (node #{}): saved {} {} {} does not match {} {}", n.op,
                          n.seq, what, shape_str(saved.shape()), dtype_name(saved.dtype()),
                          shape_str(shape), dtype_name(dtype)));
}

Tensor apply_hooks(const std::vector<GradHook>& hooks, Tensor g) {
  for (const auto& h : hooks) {
    Tensor r = h(g);
    if (r.defined()) {
      if (r.shape() != g.shape() || r.dtype() != g.dtype())
        throw Error(fmt::format("hook: returned gradient {} {} but the tensor's gradient is {} {}",
                                shape_str(r.shape()), dtype_name(r.dtype()), shape_str(g.shape()),
                                dtype_name(g.dtype())));
      g = r;
    }
  }
  return g;
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
  for (int i = 0; i < n.n_saved; ++i) {
    const Node::SavedVersion& v = n.saved[i];
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

struct SeqLess {
  bool operator()(const Node* a, const Node* b) const { return a->seq < b->seq; }
};

// The walk shared by backward() and grad(). With a capture map, gradients of the requested
// tensors are stored there and no leaf .grad() is touched.
struct Capture {
  std::unordered_map<const TensorImpl*, Tensor> leaves;  // leaf inputs
  std::unordered_map<const Node*, Tensor> nodes;         // non-leaf inputs, by producer
  bool active = false;
  bool stop_at_inputs = false;  // a captured node is not run (detail::grad_stop_at_inputs)
};

void accumulate_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor g, Capture& cap,
                     bool create_graph) {
  if (cap.active) {
    auto it = cap.leaves.find(leaf.get());
    if (it == cap.leaves.end()) return;
    it->second = it->second.defined() ? summed(it->second, g, create_graph) : g;
    return;
  }
  if (!leaf->leaf_hooks.empty()) g = apply_hooks(leaf->leaf_hooks, std::move(g));
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
    add_into(Tensor(leaf->grad), g);
  }
}

// Clears the walk state of every node it queued, also when a backward throws.
// The walk's buffers are reused across backward calls (a nested backward, e.g. from a hook, gets
// its own).
struct WalkBuffers {
  std::vector<Node*> heap;    // max-heap on the tape position: the tape in reverse
  std::vector<Node*> queued;  // every node that received a gradient
};
thread_local WalkBuffers g_walk_buf;
thread_local bool g_walk_busy = false;

struct WalkState {
  WalkBuffers own;
  WalkBuffers& buf;
  bool reused;
  WalkState() : buf(g_walk_busy ? own : g_walk_buf), reused(!g_walk_busy) {
    g_walk_busy = true;
    buf.heap.clear();
    buf.queued.clear();
  }
  ~WalkState() {
    for (Node* n : buf.queued) {
      n->pending = Tensor();
      n->queued = false;
    }
    buf.heap.clear();
    buf.queued.clear();
    if (reused) g_walk_busy = false;
  }
  WalkState(const WalkState&) = delete;
  WalkState& operator=(const WalkState&) = delete;
};

NodeExtra& extra_of(Node& n) {
  if (!n.extra) n.extra = std::make_unique<NodeExtra>();
  return *n.extra;
}

// Study tools after a node's backward: anomaly checks and gradient norms per input.
void after_backward(Node& n, const std::vector<Tensor>& in_grads, uint8_t modes) {
  if (modes & kTraceAnomaly) detail::anomaly_check_backward(n, in_grads);
  if (modes & kTraceInspect) {
    std::vector<double>& norms = extra_of(n).in_grad_norms;
    norms.assign(in_grads.size(), -1.0);
    for (size_t i = 0; i < in_grads.size(); ++i)
      if (n.next[i].active()) norms[i] = detail::l2_norm(in_grads[i]);
  }
}

// ---- post-accumulate-grad hooks and backward callbacks ----
std::atomic<bool> g_any_post_hooks{false};  // set by the first registration; never cleared
thread_local std::vector<std::function<void(bool)>> g_callbacks;
thread_local int g_backward_depth = 0;

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
  void add(const std::shared_ptr<TensorImpl>& leaf) {
    auto [it, fresh] = index.emplace(leaf.get(), entries.size());
    if (fresh) entries.push_back({leaf, 0, false});
    ++entries[it->second].remaining;
  }
  static void fire(Entry& e) {
    Tensor t(e.leaf);
    for (const PostAccumulateGradHook& h : e.leaf->post_acc_hooks) h(t);
  }
  // One gradient for leaf arrived (received) or was skipped (an undefined gradient).
  void done(const TensorImpl* leaf, bool received) {
    if (!active) return;
    auto it = index.find(leaf);
    if (it == index.end()) return;
    Entry& e = entries[it->second];
    e.received |= received;
    if (--e.remaining == 0 && e.received) fire(e);
  }
  // After the walk: leaves whose remaining uses never sent a gradient but that got one earlier.
  void finish() {
    for (Entry& e : entries)
      if (e.remaining > 0 && e.received) {
        e.remaining = 0;
        fire(e);
      }
  }
};

// Counts, before the walk, the edges from the reachable graph into leaves that have hooks (what
// PyTorch's engine computes as dependencies); only once some hook was ever registered.
void count_post_hooks(const Tensor* roots, size_t n_roots, PostHooks& post) {
  post.active = true;
  std::vector<Node*> stack;
  std::unordered_map<const Node*, bool> seen;
  for (size_t r = 0; r < n_roots; ++r) {
    const Tensor& root = roots[r];
    if (!root.defined()) continue;
    if (Node* n = root.grad_fn()) {
      if (seen.emplace(n, true).second) stack.push_back(n);
    } else if (!root.impl()->post_acc_hooks.empty()) {
      post.add(root.impl_ptr());
    }
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (e.leaf && !e.leaf->post_acc_hooks.empty()) post.add(e.leaf);
      if (e.node && seen.emplace(e.node.get(), true).second) stack.push_back(e.node.get());
    }
  }
}

// roots[0..n) with grads[0..n) (an undefined grad means ones for a one-element root).
void walk(const Tensor* roots, const Tensor* grads, size_t n_roots, bool retain_graph,
          bool create_graph, Capture& cap, PostHooks& post) {
  // Under create_graph the closures run with grad mode on, so what they compute is recorded.
  std::optional<NoGradGuard> no_grad;
  std::optional<EnableGradGuard> with_grad;
  if (create_graph)
    with_grad.emplace();
  else
    no_grad.emplace();
  WalkState walk;
  const uint8_t modes = detail::g_trace.modes;  // the study tools on for this backward
  std::vector<Node*>& buf = walk.buf.heap;
  auto heap_push = [&](Node* n) {
    buf.push_back(n);
    std::push_heap(buf.begin(), buf.end(), SeqLess());
  };
  auto heap_pop = [&] {
    std::pop_heap(buf.begin(), buf.end(), SeqLess());
    Node* n = buf.back();
    buf.pop_back();
    return n;
  };

  // Under create_graph, each queued node's owner: saved_output gives an output this history.
  std::unordered_map<const Node*, std::shared_ptr<Node>> owners;
  // Sums g into the node's pending gradient; queues the node the first time. A node where the
  // walk stops (stop_at_inputs) takes g straight into the capture: it may be queued in an
  // enclosing walk (tg::checkpoint's recomputation), whose state this walk must not touch.
  auto send_to_node = [&](const std::shared_ptr<Node>& sp, Tensor g) {
    Node* n = sp.get();
    if (cap.stop_at_inputs) {
      auto it = cap.nodes.find(n);
      if (it != cap.nodes.end()) {
        it->second = it->second.defined() ? summed(it->second, g, create_graph) : std::move(g);
        return;
      }
    }
    if (!n->queued) {
      if (create_graph) owners.emplace(n, sp);
      n->queued = true;
      n->pending = std::move(g);
      walk.buf.queued.push_back(n);
      heap_push(n);
    } else {
      n->pending = summed(n->pending, g, create_graph);
    }
  };

  for (size_t r = 0; r < n_roots; ++r) {
    const Tensor& root = roots[r];
    Tensor g = grads[r];
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
    if (root.grad_fn()) {
      send_to_node(root.impl()->grad_fn, std::move(g));
    } else {
      accumulate_leaf(root.impl_ptr(), std::move(g), cap, create_graph);
      post.done(root.impl(), true);
    }
  }

  while (!buf.empty()) {
    Node* n = heap_pop();
    Tensor g = std::move(n->pending);
    n->pending = Tensor();
    if (n->released || !n->backward)
      throw Error(
          fmt::format("backward: node #{} ({}) was already freed by an earlier backward; pass "
                      "retain_graph=true to the first backward to backward through the "
                      "graph a second time",
                      n->seq, n->op));
    if (!n->hooks.empty()) g = apply_hooks(n->hooks, std::move(g));
    if (cap.active) {
      auto it = cap.nodes.find(n);
      if (it != cap.nodes.end())
        it->second = it->second.defined() ? summed(it->second, g, create_graph) : g;
    }
    if (modes & kTraceInspect) extra_of(*n).grad_norm = detail::l2_norm(g);
    if (n->n_saved) check_saved_versions(*n);
    if (!g.is_contiguous()) g = g.contiguous();  // a view's backward may send a strided view
    const int64_t t0 = (modes & kTraceProfile) ? detail::now_ns() : 0;
    if (create_graph && !n->differentiable)
      throw Error(fmt::format(
          "backward of {} (node #{}) is not differentiable yet: create_graph=true cannot record "
          "it, so no second derivative flows through {} (docs/tape.md, \"Higher order\", lists "
          "the ops that support it)",
          n->op, n->seq, n->op));
    std::vector<Tensor> in_grads;
    if (create_graph) {
      RecordingScope recording(&owners[n]);
      in_grads = n->backward(g);
    } else {
      in_grads = n->backward(g);
    }
    if (modes & kTraceProfile) detail::profiler_on_backward(*n, detail::now_ns() - t0);
    g = Tensor();
    if (in_grads.size() != n->next.size())
      throw Error(fmt::format("backward of {}: returned {} gradients for {} inputs", n->op,
                              in_grads.size(), n->next.size()));
    if (modes) after_backward(*n, in_grads, modes);
    for (size_t i = 0; i < in_grads.size(); ++i) {
      const Edge& e = n->next[i];
      if (!e.active()) continue;
      if (!in_grads[i].defined()) {
        if (e.leaf) post.done(e.leaf.get(), false);
        continue;
      }
      check_grad(*n, i, in_grads[i]);
      if (e.node) {
        send_to_node(e.node, std::move(in_grads[i]));
      } else {
        accumulate_leaf(e.leaf, std::move(in_grads[i]), cap, create_graph);
        post.done(e.leaf.get(), true);
      }
    }
    if (!retain_graph) {
      n->backward = nullptr;  // frees the saved values
      n->released = true;
    }
  }
}

// One backward: the walk, then the post hooks it still owes, then the callbacks queued meanwhile.
void run(const Tensor* roots, const Tensor* grads, size_t n_roots, bool retain_graph,
         bool create_graph, Capture& cap) {
  const size_t cb_base = g_callbacks.size();
  struct Depth {
    Depth() { ++g_backward_depth; }
    ~Depth() { --g_backward_depth; }
  } depth;
  auto drain = [&](bool ok) {
    while (g_callbacks.size() > cb_base) {
      std::vector<std::function<void(bool)>> fns(g_callbacks.begin() + cb_base, g_callbacks.end());
      g_callbacks.resize(cb_base);
      for (auto& fn : fns) fn(ok);
    }
  };
  try {
    PostHooks post;
    if (!cap.active && g_any_post_hooks.load(std::memory_order_relaxed))
      count_post_hooks(roots, n_roots, post);
    walk(roots, grads, n_roots, retain_graph, create_graph, cap, post);
    NoGradGuard no_grad;
    post.finish();
  } catch (...) {
    try {
      drain(false);
    } catch (...) {  // the first error is the one to report
    }
    throw;
  }
  NoGradGuard no_grad;
  drain(true);
}
}  // namespace

namespace detail {
void note_post_accumulate_hook() { g_any_post_hooks.store(true); }
void set_recorded_add(RecordedAdd f) { g_recorded_add = f; }
}  // namespace detail

void queue_backward_callback(std::function<void(bool ok)> fn) {
  if (g_backward_depth == 0)
    throw Error("queue_backward_callback: no backward is running (call it from a hook)");
  g_callbacks.push_back(std::move(fn));
}

Node::Node() { ++g_live_nodes; }

// Destroying a long chain of nodes would recurse once per node; instead the outermost destructor
// drains a queue, so a graph of any depth is freed in constant stack.
namespace {
thread_local bool g_in_delete = false;
thread_local std::vector<std::shared_ptr<Node>> g_delete_queue;
}  // namespace
Node::~Node() {
  --g_live_nodes;
  for (Edge& e : next)
    if (e.node) g_delete_queue.push_back(std::move(e.node));
  if (g_in_delete) return;
  g_in_delete = true;
  while (!g_delete_queue.empty()) {
    std::shared_ptr<Node> n = std::move(g_delete_queue.back());
    g_delete_queue.pop_back();
    n.reset();
  }
  g_in_delete = false;
}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }
EnableGradGuard::EnableGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { g_grad_enabled = prev_; }

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}
bool needs_record(const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

std::string Site::str() const {
  if (!file) return "?";
  const char* base = std::strrchr(file, '/');
  return fmt::format("{}:{}", base ? base + 1 : file, line);
}

namespace {
// The study tools at record time (only when one is on): input shapes (inspect), flops and
// forward time (inspect, profiler), the profiler event, the anomaly check of the output.
void trace_record(Node& node, const Tensor& out, const Tensor* inputs, size_t n,
                  const RecordInfo& p, uint8_t modes) {
  if (modes & (kTraceInspect | kTraceProfile)) {
    NodeExtra& x = extra_of(node);
    if (modes & kTraceInspect) {
      for (size_t i = 0; i < n; ++i) {
        x.in_shapes.push_back(inputs[i].defined() ? inputs[i].shape() : Shape{-1});
        x.in_dtypes.push_back(inputs[i].defined() ? inputs[i].dtype() : out.dtype());
      }
    }
    if (p.fwd_flops >= 0) {
      x.fwd_flops = p.fwd_flops;
      x.bwd_flops = p.bwd_flops;
      x.flops_estimated = false;
    } else {  // one operation per output element, and per element for each input gradient
      int64_t active = 0;
      for (const Edge& e : node.next) active += e.active();
      x.fwd_flops = static_cast<double>(out.numel());
      x.bwd_flops = static_cast<double>(out.numel()) * static_cast<double>(active);
    }
    const int64_t t0 = detail::g_trace.t0_ns;
    if (t0 != 0) x.fwd_ns = detail::now_ns() - t0;
    if (modes & kTraceProfile) detail::profiler_on_record(node);
  }
  if (modes & kTraceAnomaly) detail::anomaly_check_forward(node, out);
}

[[noreturn]] void throw_stale_view(const char* op, const Node& view, const Tensor& in) {
  const Storage& s = *in.impl()->storage;
  throw Error(fmt::format(
      "{}: input {} {} is a view ({}, node #{}) made before its storage was overwritten in place "
      "by {}, recorded by autograd: its values are the new ones but its history is the old one. "
      "Make the view again after the in-place op",
      op, shape_str(in.shape()), dtype_name(in.dtype()), view.op, view.seq,
      s.last_write ? s.last_write : "a write"));
}

// A node for out with p's notes and fn; its edges are the caller's.
std::shared_ptr<Node> new_node(const char* op, const Tensor& out, const RecordInfo& p,
                               BackwardFn& fn) {
  if (!is_floating(out.dtype()))
    throw Error(
        fmt::format("{}: output of dtype {} cannot require grad", op, dtype_name(out.dtype())));
  auto node = std::make_shared<Node>();
  node->op = op;
  node->seq = g_next_seq++;
  node->site = detail::g_trace.site;
  node->saved_bytes = p.saved_bytes;
  node->row_dim = p.row_dim;
  node->row_labels = p.row_labels;
  node->watches = p.watches;
  node->watched_history = p.watched_history;
  node->n_saved = p.n_saved;
  for (int i = 0; i < p.n_saved; ++i) node->saved[i] = p.saved_versions[i];
  node->backward = std::move(fn);
  node->differentiable = p.differentiable_bwd;
  node->out_shape = out.shape();
  node->out_dtype = out.dtype();
  return node;
}
// out takes node as its history; the tape and the study tools note it.
void attach(const std::shared_ptr<Node>& node, Tensor& out, const Tensor* inputs, size_t n,
            const RecordInfo& p) {
  out.impl()->grad_fn = node;
  out.impl()->requires_grad = true;
  g_tape.push(node);
  if (const uint8_t modes = detail::g_trace.modes) trace_record(*node, out, inputs, n, p, modes);
}

void record_impl(const char* op, Tensor& out, const Tensor* inputs, size_t n, const RecordInfo& p,
                 BackwardFn& fn) {
  if (!grad_enabled()) return;
  bool any = false;
  for (size_t i = 0; i < n; ++i) any = any || (inputs[i].defined() && inputs[i].requires_grad());
  if (!any) return;
  std::shared_ptr<Node> node = new_node(op, out, p, fn);
  node->next.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) continue;
    Edge& e = node->next[i];
    const Node* from = in.impl()->grad_fn.get();
    if (from && from->watches && from->watched_history != in.impl()->storage->history)
      throw_stale_view(op, *from, in);
    if (in.impl()->grad_fn)
      e.node = in.impl()->grad_fn;
    else
      e.leaf = in.impl_ptr();
  }
  attach(node, out, inputs, n, p);
}
}  // namespace

void detail::record_edges(const char* op, Tensor& out, std::vector<Edge> edges, const RecordInfo& p,
                          BackwardFn fn) {
  std::shared_ptr<Node> node = new_node(op, out, p, fn);
  node->next = std::move(edges);
  std::vector<Tensor> shown;  // what the study tools show per input: a leaf, or "not a tensor"
  for (const Edge& e : node->next) shown.push_back(e.leaf ? Tensor(e.leaf) : Tensor());
  attach(node, out, shown.data(), shown.size(), p);
}
namespace {}  // namespace

void record(const char* op, Tensor& out, std::initializer_list<Tensor> inputs,
            const RecordInfo& info, BackwardFn fn) {
  record_impl(op, out, inputs.begin(), inputs.size(), info, fn);
}
void record(const char* op, Tensor& out, const std::vector<Tensor>& inputs, const RecordInfo& info,
            BackwardFn fn) {
  record_impl(op, out, inputs.data(), inputs.size(), info, fn);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
              bool create_graph) {
  Capture cap;
  if (grads.empty()) {
    std::vector<Tensor> g(roots.size());
    run(roots.data(), g.data(), roots.size(), retain_graph, create_graph, cap);
    return;
  }
  if (roots.size() != grads.size())
    throw Error(fmt::format("backward: {} outputs but {} gradients", roots.size(), grads.size()));
  run(roots.data(), grads.data(), roots.size(), retain_graph, create_graph, cap);
}
void backward_one(const Tensor& root, const Tensor& grad, bool retain_graph, bool create_graph) {
  Capture cap;
  run(&root, &grad, 1, retain_graph, create_graph, cap);
}

bool creating_graph() { return g_recording_node != nullptr; }
uint64_t detail::tape_position() { return g_next_seq; }
Tensor saved_input(const Tensor& saved, size_t i) {
  const Node* n = g_recording_node;
  if (!n || !saved.defined()) return saved;
  if (i >= n->next.size())
    throw Error(fmt::format("backward of {} (node #{}): saved_input({}) but the op has {} inputs",
                            n->op, n->seq, i, n->next.size()));
  const Edge& e = n->next[i];
  if (!e.active()) return saved;
  const Shape& shape = e.node ? e.node->out_shape : e.leaf->shape;
  const DType dtype = e.node ? e.node->out_dtype : e.leaf->dtype;
  if (saved.shape() != shape || saved.dtype() != dtype)
    throw_saved_mismatch(*n, "input", saved, shape, dtype);
  if (e.leaf) return Tensor(e.leaf);
  return reattach(saved, e.node);
}
Tensor saved_output(const Tensor& saved) {
  Node* n = g_recording_node;
  if (!n || !saved.defined()) return saved;
  if (saved.shape() != n->out_shape || saved.dtype() != n->out_dtype)
    throw_saved_mismatch(*n, "output", saved, n->out_shape, n->out_dtype);
  return reattach(saved, *g_recording_owner);
}

namespace {
// The gradients reaching each edge's producer (a node's output or a leaf), captured.
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
  run(outputs.data(), g.data(), outputs.size(), opts.retain_graph.value_or(opts.create_graph),
      opts.create_graph, cap);
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
  // Under create_graph the gradients' graph reads the walked nodes again (saved_output); else
  // each node's saved tensors go as soon as it has run (tg::checkpoint's recomputed layer).
  o.retain_graph = create_graph;
  return grad_impl(outputs, inputs, grad_outputs, o, true);
}

std::vector<std::shared_ptr<Node>> Tape::live_nodes() {
  std::vector<std::shared_ptr<Node>> out;
  for (const auto& w : g_tape.nodes)
    if (auto n = w.lock()) out.push_back(std::move(n));
  return out;
}
size_t Tape::size() { return g_tape.nodes.size(); }
int64_t Tape::live_count() { return g_live_nodes.load(); }

}  // namespace tg
