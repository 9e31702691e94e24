// autograd/inspect.cpp — collecting the graph behind a tensor from its nodes and printing it as a
// table, Graphviz DOT or JSON (nlohmann-json, private to this file).
#include "autograd/inspect.hpp"
#include "autograd/tape.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace tg {

InspectGuard::InspectGuard(bool on) : prev_((detail::g_trace.modes & kTraceInspect) != 0) {
  if (on)
    detail::g_trace.modes |= kTraceInspect;
  else
    detail::g_trace.modes &= ~kTraceInspect;
}
InspectGuard::~InspectGuard() {
  if (prev_)
    detail::g_trace.modes |= kTraceInspect;
  else
    detail::g_trace.modes &= ~kTraceInspect;
}

std::string bytes_str(int64_t b) {
  if (b < 0) return "?";
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < int64_t(1) << 30) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
}

namespace {
double leaf_grad_norm(const TensorImpl& leaf) {
  if (!leaf.grad) return -1;
  Tensor g(leaf.grad);
  double s = 0;
  for (double v : g.to_vector<double>()) s += v * v;
  return std::sqrt(s);
}

// Every node reachable from the roots, in execution (seq) order.
std::vector<Node*> reachable(const std::vector<Tensor>& roots) {
  std::vector<Node*> out, stack;
  std::unordered_map<const Node*, bool> seen;
  for (const Tensor& r : roots)
    if (r.defined() && r.grad_fn() && !seen[r.grad_fn()]) {
      seen[r.grad_fn()] = true;
      stack.push_back(r.grad_fn());
    }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    out.push_back(n);
    for (const Edge& e : n->next)
      if (e.node && !seen[e.node.get()]) {
        seen[e.node.get()] = true;
        stack.push_back(e.node.get());
      }
  }
  std::sort(out.begin(), out.end(), [](const Node* a, const Node* b) { return a->seq < b->seq; });
  return out;
}

GraphNode describe(const Node& n, int index, const std::unordered_map<const Node*, int>& ids,
                   std::unordered_map<const TensorImpl*, int>& leaf_ids, Graph& g) {
  GraphNode gn;
  gn.index = index;
  gn.seq = n.seq;
  gn.op = n.op;
  gn.out_shape = n.out_shape;
  gn.dtype = n.out_dtype;
  gn.saved_bytes = n.saved_bytes;
  gn.site = n.site;
  const NodeExtra* x = n.extra.get();
  if (x) {
    gn.grad_norm = x->grad_norm;
    if (!x->in_shapes.empty() || !x->in_grad_norms.empty() || x->fwd_ns >= 0 || x->fwd_flops > 0) {
      gn.fwd_flops = x->fwd_flops;
      gn.bwd_flops = x->bwd_flops;
    }
  }
  for (size_t i = 0; i < n.next.size(); ++i) {
    const Edge& e = n.next[i];
    GraphInput in;
    if (e.node) {
      in.kind = GraphInput::Kind::Node;
      in.index = ids.at(e.node.get());
      in.shape = e.node->out_shape;
      in.shape_known = true;
    } else if (e.leaf) {
      auto [it, fresh] = leaf_ids.emplace(e.leaf.get(), static_cast<int>(g.leaves.size()));
      if (fresh) {
        GraphLeaf l;
        l.index = it->second;
        l.shape = e.leaf->shape;
        l.dtype = e.leaf->dtype;
        l.grad_norm = leaf_grad_norm(*e.leaf);
        g.leaves.push_back(l);
      }
      in.kind = GraphInput::Kind::Leaf;
      in.index = it->second;
      in.shape = e.leaf->shape;
      in.shape_known = true;
    }
    if (x && i < x->in_shapes.size()) {
      in.undefined = x->in_shapes[i] == Shape{-1};
      in.shape = in.undefined ? Shape{} : x->in_shapes[i];
      in.shape_known = !in.undefined;
    }
    if (x && i < x->in_grad_norms.size()) in.grad_norm = x->in_grad_norms[i];
    gn.inputs.push_back(in);
  }
  return gn;
}

std::string inputs_str(const GraphNode& n) {
  std::string s;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    s += (i ? ", " : "") + (n.inputs[i].undefined     ? std::string("-")
                            : n.inputs[i].shape_known ? shape_str(n.inputs[i].shape)
                                                      : std::string("?"));
  return s;
}
std::string norm_str(double v) { return v < 0 ? "-" : fmt::format("{:.4g}", v); }

nlohmann::json shape_json(const Shape& s) { return nlohmann::json(s); }
}  // namespace

Graph inspect(const Tensor& root) { return inspect(std::vector<Tensor>{root}); }

Graph inspect(const std::vector<Tensor>& roots) {
  Graph g;
  const std::vector<Node*> nodes = reachable(roots);
  std::unordered_map<const Node*, int> ids;
  for (size_t i = 0; i < nodes.size(); ++i) ids[nodes[i]] = static_cast<int>(i);
  std::unordered_map<const TensorImpl*, int> leaf_ids;
  for (size_t i = 0; i < nodes.size(); ++i)
    g.nodes.push_back(describe(*nodes[i], static_cast<int>(i), ids, leaf_ids, g));
  return g;
}

int64_t Graph::saved_bytes() const {
  int64_t s = 0;
  for (const GraphNode& n : nodes) s += std::max<int64_t>(0, n.saved_bytes);
  return s;
}

std::string Graph::table(const InspectOptions& o) const {
  size_t w_op = 2, w_in = 6, w_out = 6;
  for (const GraphNode& n : nodes) {
    w_op = std::max(w_op, n.op.size());
    w_in = std::max(w_in, inputs_str(n).size());
    w_out = std::max(w_out, shape_str(n.out_shape).size());
  }
  std::string s = fmt::format("{:>4} ", "#");
  if (o.seq) s += fmt::format("{:>6} ", "seq");
  s += fmt::format("{:<{}} {:<{}} {:<{}} {:<8} {:>10}", "op", w_op, "inputs", w_in, "output", w_out,
                   "dtype", "saved");
  if (o.grads) s += fmt::format(" {:>10}", "|dout|");
  if (o.sites) s += "  site";
  s += "\n";
  for (const GraphNode& n : nodes) {
    std::string line = fmt::format("{:>4} ", n.index);
    if (o.seq) line += fmt::format("{:>6} ", n.seq);
    line +=
        fmt::format("{:<{}} {:<{}} {:<{}} {:<8} {:>10}", n.op, w_op, inputs_str(n), w_in,
                    shape_str(n.out_shape), w_out, dtype_name(n.dtype), bytes_str(n.saved_bytes));
    if (o.grads) line += fmt::format(" {:>10}", norm_str(n.grad_norm));
    if (o.sites) line += "  " + n.site.str();
    s += line + "\n";
  }
  s += fmt::format("{} nodes, {} leaves, {} saved for backward\n", nodes.size(), leaves.size(),
                   bytes_str(saved_bytes()));
  return s;
}

std::string Graph::dot(const InspectOptions& o) const {
  std::string s =
      "digraph tape {\n  rankdir=BT;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  for (const GraphLeaf& l : leaves) {
    std::string label =
        fmt::format("leaf {}\\n{} {}", l.index, shape_str(l.shape), dtype_name(l.dtype));
    if (o.grads && l.grad_norm >= 0) label += fmt::format("\\n|grad| {}", norm_str(l.grad_norm));
    s += fmt::format("  leaf{} [shape=ellipse, label=\"{}\"];\n", l.index, label);
  }
  for (const GraphNode& n : nodes) {
    std::string label = o.seq ? fmt::format("#{} {} (seq {})", n.index, n.op, n.seq)
                              : fmt::format("#{} {}", n.index, n.op);
    label +=
        fmt::format("\\n{} -> {} {}", inputs_str(n), shape_str(n.out_shape), dtype_name(n.dtype));
    label += fmt::format("\\nsaved {}", bytes_str(n.saved_bytes));
    if (o.grads && n.grad_norm >= 0) label += fmt::format("\\n|dout| {}", norm_str(n.grad_norm));
    if (o.sites) label += "\\n" + n.site.str();
    s += fmt::format("  n{} [label=\"{}\"];\n", n.index, label);
  }
  for (const GraphNode& n : nodes)
    for (const GraphInput& in : n.inputs) {
      if (in.kind == GraphInput::Kind::None) continue;
      const std::string from =
          fmt::format("{}{}", in.kind == GraphInput::Kind::Node ? "n" : "leaf", in.index);
      const std::string attr = o.grads && in.grad_norm >= 0
                                   ? fmt::format(" [label=\"{}\"]", norm_str(in.grad_norm))
                                   : "";
      s += fmt::format("  {} -> n{}{};\n", from, n.index, attr);
    }
  return s + "}\n";
}

std::string Graph::json(const InspectOptions& o) const {
  nlohmann::json j;
  j["nodes"] = nlohmann::json::array();
  for (const GraphNode& n : nodes) {
    nlohmann::json jn;
    jn["index"] = n.index;
    if (o.seq) jn["seq"] = n.seq;
    jn["op"] = n.op;
    nlohmann::json ins = nlohmann::json::array();
    for (const GraphInput& in : n.inputs) {
      nlohmann::json ji;
      ji["kind"] = in.kind == GraphInput::Kind::Node   ? "node"
                   : in.kind == GraphInput::Kind::Leaf ? "leaf"
                   : in.undefined                      ? "undefined"
                                                       : "none";
      if (in.index >= 0) ji["index"] = in.index;
      ji["shape"] = in.shape_known ? shape_json(in.shape) : nlohmann::json();
      if (o.grads && in.grad_norm >= 0) ji["grad_norm"] = in.grad_norm;
      ins.push_back(ji);
    }
    jn["inputs"] = ins;
    jn["output_shape"] = shape_json(n.out_shape);
    jn["dtype"] = dtype_name(n.dtype);
    jn["saved_bytes"] = n.saved_bytes >= 0 ? nlohmann::json(n.saved_bytes) : nlohmann::json();
    if (o.grads && n.grad_norm >= 0) jn["grad_norm"] = n.grad_norm;
    if (n.fwd_flops >= 0) jn["flops"] = {{"forward", n.fwd_flops}, {"backward", n.bwd_flops}};
    if (o.sites) jn["site"] = n.site.str();
    j["nodes"].push_back(jn);
  }
  j["leaves"] = nlohmann::json::array();
  for (const GraphLeaf& l : leaves) {
    nlohmann::json jl{
        {"index", l.index}, {"shape", shape_json(l.shape)}, {"dtype", dtype_name(l.dtype)}};
    if (o.grads && l.grad_norm >= 0) jl["grad_norm"] = l.grad_norm;
    j["leaves"].push_back(jl);
  }
  return j.dump(2) + "\n";
}

}  // namespace tg
