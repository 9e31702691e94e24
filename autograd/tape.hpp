// autograd/tape.hpp — the tape: nodes recorded in execution order, and the engine that walks them
// backwards.
//
// Every differentiable op, after computing its output, calls record() with its name, its inputs
// and a closure that maps the output gradient to one gradient per input. The closure captures
// exactly what its backward reads (detached, so no node keeps its own output alive). Each node
// carries a sequence number: its position on the tape. backward() processes the nodes reachable
// from the root in decreasing sequence number — the tape in reverse — so a node runs only after
// every consumer of its output has sent its gradient. No recursion, no topological sort.
//
// Ownership: tensors own the node that produced them; nodes own their input edges. A forward pass
// whose outputs are dropped frees its nodes, so forward passes without backward do not leak.
// tg::Tape keeps weak references in order, for inspection only.
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tg {

// Where the gradient for one input goes: the node that produced it, or the leaf itself.
// The expected gradient shape and dtype are the producer's out_shape/out_dtype or the leaf's own.
struct Edge {
  std::shared_ptr<Node> node;        // non-leaf input
  std::shared_ptr<TensorImpl> leaf;  // leaf input that requires grad
  bool active() const { return node || leaf; }
};

// Maps dout (shape of the output) to one gradient per input; an undefined tensor means "none".
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& dout)>;

// What the study tools keep per node; allocated only while one of them is on (inspect mode,
// profiler) or when a backward in inspect mode writes gradient norms.
struct NodeExtra {
  std::vector<Shape> in_shapes;  // every input, also those without grad ({-1}: undefined)
  std::vector<DType> in_dtypes;
  double fwd_flops = 0, bwd_flops = 0;  // cost model (note_flops), or an estimate
  bool flops_estimated = true;
  double grad_norm = -1;              // L2 norm of dout, the gradient reaching the output
  std::vector<double> in_grad_norms;  // L2 norm of the gradient sent to each input; -1: none
  int64_t fwd_ns = -1;                // time from op entry to record (profiler)
  int64_t prof_event = -1;            // index into the recording profiler's events
  uint64_t prof_id = 0;               // which profiler
};

struct Node {
  const char* op = "";
  uint64_t seq = 0;          // position on the tape (execution order)
  Site site;                 // the user code that called the op (unknown: Site())
  int64_t saved_bytes = -1;  // bytes the backward closure holds (note_saved); -1: not reported
  int row_dim = -1;          // for anomaly reports: the dim a "row" runs along (note_rows)
  const char* row_labels = nullptr;
  std::unique_ptr<NodeExtra> extra;
  std::vector<Edge> next;  // one per input, in the op's argument order
  BackwardFn backward;     // empty once the graph was freed
  Shape out_shape;
  DType out_dtype = kFloat32;
  std::vector<GradHook> hooks;  // hooks registered on the output tensor
  bool released = false;
  // Its closure honours create_graph (RecordInfo::differentiable): under create_graph it computes
  // the gradients in recorded ops, reading saved tensors through saved_input / saved_output. A
  // backward under create_graph that reaches a node without it throws, naming the op.
  bool differentiable = false;
  // The tensors the closure saved (RecordInfo::saved) and their storage versions then: backward
  // throws when an in-place write changed one since (at most kMaxSaved are checked).
  static constexpr int kMaxSaved = 6;
  struct SavedVersion {
    const Storage* storage;  // alive while the closure is: it holds a tensor on this storage
    uint32_t version;
    DType dtype;
    uint8_t ndim;
    int64_t dims[4];  // the first four dims, for the error message
  };
  int n_saved = 0;
  SavedVersion saved[kMaxSaved];
  // A view op's node: its output's storage history count when made (RecordInfo::watch). An op
  // recorded later on that output after a recorded in-place write (the count moved on) throws.
  bool watches = false;
  uint32_t watched_history = 0;
  // Walk state, used only while a backward runs: the gradient summed so far for the output.
  Tensor pending;
  bool queued = false;
  Node();
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
};

// ---- grad mode ----
bool grad_enabled();
// Disables recording in its scope (PyTorch's torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();

 private:
  bool prev_;
};

// True when grad mode is on and any input requires grad: the op must call record().
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
inline bool needs_record(std::initializer_list<const Tensor*> inputs) {
  return grad_enabled() && any_requires_grad(inputs);
}
bool needs_record(const std::vector<Tensor>& inputs);

// What a node keeps besides its closure, passed to record() by the op: the bytes of the tensors
// the backward closure holds (what the inspect table and profiler show as "saved"; tensors shared
// with live inputs count too), the cost model (floating-point operations of forward and
// backward; unset: one per output element and per input gradient) and, for anomaly reports, the
// dim a "row" runs along (softmax: the reduced dim; attention output (B, NH, T, hs): dim 3) with
// optional labels, '|'-separated for the output and then each input gradient, e.g.
// "b,h,t|b,h,t|b,h,s|b,h,s" (null: "row (i, j, ...)"). Built fluently at the record site:
//   record("mul", out, {a, b}, RecordInfo().saved(sa, sb).flops(n, 2 * n), backward_fn);
inline int64_t tensor_bytes(const Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(dtype_size(t.dtype())) : 0;
}
struct RecordInfo {
  int64_t saved_bytes = -1;  // -1: not reported
  double fwd_flops = -1, bwd_flops = -1;
  int row_dim = -1;
  const char* row_labels = nullptr;
  // The saved tensors (named variables the closure captures, so they outlive the node's
  // backward) and their storage versions now.
  int n_saved = 0;
  Node::SavedVersion saved_versions[Node::kMaxSaved];
  // saved(sx, sy): the sum of their bytes (undefined tensors count 0; no arguments: 0 bytes),
  // and their versions for the in-place check. Variadic, not an initializer_list: copying Tensor
  // handles would cost atomic reference counts.
  template <typename... Ts>
  RecordInfo& saved(const Ts&... t) {
    saved_bytes = (int64_t(0) + ... + tensor_bytes(t));
    (note_version(t), ...);
    return *this;
  }
  // A view op's note: after a recorded in-place write to its storage (the written tensor took a
  // new history) the view's values are the new ones while its history is the old one, so an op
  // that consumes it afterwards would get a wrong gradient; record() refuses that instead.
  bool watches = false;
  uint32_t watched_history = 0;
  RecordInfo& watch(const Tensor& t) {
    watches = true;
    watched_history = t.impl()->storage->history;
    return *this;
  }
  void note_version(const Tensor& t) {
    if (!t.defined() || n_saved == Node::kMaxSaved) return;
    const TensorImpl& i = *t.impl();
    Node::SavedVersion& v = saved_versions[n_saved++];
    v.storage = i.storage.get();
    v.version = i.storage->version;
    v.dtype = i.dtype;
    v.ndim = static_cast<uint8_t>(i.shape.size());
    for (size_t d = 0; d < 4 && d < i.shape.size(); ++d) v.dims[d] = i.shape[d];
  }
  RecordInfo& saved_plus(int64_t extra_bytes) {  // host-side buffers the closure also holds
    saved_bytes = (saved_bytes < 0 ? 0 : saved_bytes) + extra_bytes;
    return *this;
  }
  RecordInfo& flops(double fwd, double bwd) {
    fwd_flops = fwd;
    bwd_flops = bwd;
    return *this;
  }
  // The closure is differentiable: with creating_graph() on it computes in recorded ops (and
  // reattaches what it saved with saved_input / saved_output), so create_graph works through it.
  bool differentiable_bwd = false;
  RecordInfo& differentiable() {
    differentiable_bwd = true;
    return *this;
  }
  RecordInfo& rows(int dim, const char* labels = nullptr) {
    row_dim = dim;
    row_labels = labels;
    return *this;
  }
};

// Records `out` as produced by op from `inputs`, with `info` for the study tools. No-op unless
// needs_record(inputs). Inputs that do not require grad get an inactive edge and their gradient
// from fn is ignored.
void record(const char* op, Tensor& out, std::initializer_list<Tensor> inputs,
            const RecordInfo& info, BackwardFn fn);
void record(const char* op, Tensor& out, const std::vector<Tensor>& inputs, const RecordInfo& info,
            BackwardFn fn);
// The same without notes (a user-defined op: saved bytes unreported, cost estimated).
inline void record(const char* op, Tensor& out, std::initializer_list<Tensor> inputs,
                   BackwardFn fn) {
  record(op, out, inputs, RecordInfo(), std::move(fn));
}
inline void record(const char* op, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn fn) {
  record(op, out, inputs, RecordInfo(), std::move(fn));
}

// ---- higher order: what a backward closure calls to be differentiable ----
// True inside a backward closure that the engine is recording (create_graph): the closure must
// compute its gradients in recorded ops.
bool creating_graph();
// A tensor the closure saved (detached) from input i of its op, given back with that input's
// history while creating_graph() (PyTorch's SavedVariable): a formula that reads it is then
// differentiated through the input. Otherwise, or when input i needs no grad, `saved` itself.
// `saved` must have input i's shape and dtype.
Tensor saved_input(const Tensor& saved, size_t i);
// The same for the op's output (saved detached, since the output owns the node): while
// creating_graph() its history is the node now running.
Tensor saved_output(const Tensor& saved);

// ---- the engine ----
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
