// autograd/record.cpp — the record room: grad mode, nodes (their making, their stack-safe
// deletion), record() with its study-tool notes, the Saved handles (and the positional shim
// kept until attention/unary move to them), and the tape's weak list for inspection. The walk
// is autograd/engine.cpp; nothing here runs a closure.
#include "autograd/engine_detail.hpp"
#include "autograd/grad_detail.hpp"
#include "autograd/trace_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace tg {

namespace {
thread_local bool g_grad_enabled = true;
thread_local uint64_t g_next_seq = 0;
std::atomic<int64_t> g_live_nodes{0};
// Under create_graph, the owner of the node whose closure runs (detail::RecordingScope).
thread_local const std::shared_ptr<Node>* g_recording_owner = nullptr;

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

// Destroying a long chain of nodes would recurse once per node; instead the outermost destructor
// drains a queue, so a graph of any depth is freed in constant stack.
struct DeleteQueue {
  bool draining = false;
  std::vector<std::shared_ptr<Node>> nodes;
};
thread_local DeleteQueue g_delete;
}  // namespace

Node::Node() { ++g_live_nodes; }
Node::~Node() {
  --g_live_nodes;
  for (Edge& e : next)
    if (e.node) g_delete.nodes.push_back(std::move(e.node));
  if (g_delete.draining) return;
  g_delete.draining = true;
  while (!g_delete.nodes.empty()) {
    std::shared_ptr<Node> n = std::move(g_delete.nodes.back());
    g_delete.nodes.pop_back();
    n.reset();
  }
  g_delete.draining = false;
}

// ---- grad mode ----
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

NodeExtra& detail::extra_of(Node& n) {
  if (!n.extra) n.extra = std::make_unique<NodeExtra>();
  return *n.extra;
}

// ---- saved tensors ----
void RecordInfo::note(const Tensor& t, bool output) {
  saved_bytes = (saved_bytes < 0 ? 0 : saved_bytes) + tensor_bytes(t);
  if (!t.defined()) return;
  const TensorImpl& i = *t.impl();
  Entry e;
  e.version.storage = i.storage.get();
  e.version.version = i.storage->version;
  e.version.dtype = i.dtype;
  e.version.ndim = static_cast<uint8_t>(i.shape.size());
  for (size_t d = 0; d < 4 && d < i.shape.size(); ++d) e.version.dims[d] = i.shape[d];
  e.impl = &i;
  e.output = output;
  entries.push_back(e);
}

namespace {
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
}  // namespace

bool creating_graph() { return g_recording_owner != nullptr; }
detail::RecordingScope::RecordingScope(const std::shared_ptr<Node>* owner)
    : prev_(g_recording_owner) {
  g_recording_owner = owner;
}
detail::RecordingScope::~RecordingScope() { g_recording_owner = prev_; }

Tensor Saved::reattached_output() const {
  const Node& n = **g_recording_owner;
  if (t_.shape() != n.out_shape || t_.dtype() != n.out_dtype)
    throw_saved_mismatch(n, "output", t_, n.out_shape, n.out_dtype);
  return reattach(t_, *g_recording_owner);
}

// ---- record ----
namespace {
// The study tools at record time (only when one is on): input shapes (inspect), flops and
// forward time (inspect, profiler), the profiler event, the anomaly check of the output.
void trace_record(Node& node, const Tensor& out, const Tensor* inputs, size_t n,
                  const RecordInfo& p, uint8_t modes) {
  if (modes & (kTraceInspect | kTraceProfile)) {
    NodeExtra& x = detail::extra_of(node);
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

// The saved tensors' slots, by identity: a save_output handle must hold the output; a save
// handle must not (it keeps its tensor, which would then own the node that holds the handle).
void check_saved_slots(const char* op, const Tensor& out, const RecordInfo& p) {
  for (size_t k = 0; k < p.entries.size(); ++k) {
    const RecordInfo::Entry& e = p.entries[k];
    if (e.output == (e.impl == out.impl())) continue;
    throw Error(fmt::format(
        e.output ? "{}: a tensor saved with save_output ({}) is not the op's output {}"
                 : "{}: a tensor saved with save ({}) is the op's output {}: use save_output",
        op, k, shape_str(out.shape())));
  }
}

// A node for out with p's notes and fn; its edges are the caller's.
std::shared_ptr<Node> new_node(const char* op, const Tensor& out, const RecordInfo& p,
                               BackwardFn& fn) {
  if (!is_floating(out.dtype()))
    throw Error(
        fmt::format("{}: output of dtype {} cannot require grad", op, dtype_name(out.dtype())));
  check_saved_slots(op, out, p);
  auto node = std::make_shared<Node>();
  node->op = op;
  node->seq = g_next_seq++;
  node->site = detail::g_trace.site;
  node->saved_bytes = p.saved_bytes;
  node->row_dim = p.row_dim;
  node->row_labels = p.row_labels;
  node->watches = p.watches;
  node->watched_history = p.watched_history;
  for (size_t k = 0; k < p.entries.size(); ++k) node->saved.push_back(p.entries[k].version);
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

void record(const char* op, Tensor& out, std::initializer_list<Tensor> inputs,
            const RecordInfo& info, BackwardFn fn) {
  record_impl(op, out, inputs.begin(), inputs.size(), info, fn);
}
void record(const char* op, Tensor& out, const std::vector<Tensor>& inputs, const RecordInfo& info,
            BackwardFn fn) {
  record_impl(op, out, inputs.data(), inputs.size(), info, fn);
}

void detail::release_if_stale(Node& n, const Tensor& x) {
  const Storage* s = x.impl()->storage.get();
  for (size_t k = 0; k < n.saved.size(); ++k) {
    if (n.saved[k].storage != s || n.saved[k].version == s->version) continue;
    n.backward = [keep = x.impl()->storage](const Tensor&) -> std::vector<Tensor> {
      throw Error("backward: a node whose saved tensor was written in place ran");  // unreachable
    };
    return;
  }
}

// ---- inspection ----
uint64_t detail::tape_position() { return g_next_seq; }
std::vector<std::shared_ptr<Node>> Tape::live_nodes() {
  std::vector<std::shared_ptr<Node>> out;
  for (const auto& w : g_tape.nodes)
    if (auto n = w.lock()) out.push_back(std::move(n));
  return out;
}
size_t Tape::size() { return g_tape.nodes.size(); }
int64_t Tape::live_count() { return g_live_nodes.load(); }

}  // namespace tg
