// autograd/inspect.hpp — tape inspection: the graph behind a tensor (every node reachable
// backwards from it) in execution order, as a table, Graphviz DOT or JSON.
//   tg::InspectGuard on;             // optional: also keep every input's shape and, during
//   Tensor loss = ...;               // backward, the gradient norms
//   loss.backward();
//   tg::Graph g = tg::inspect(loss);
//   fmt::print("{}", g.table());     // g.dot() | dot -Tsvg > graph.svg ; g.json()
// Each node shows its index in this graph (execution order), its tape position (seq), the op,
// the input and output shapes, the dtype, the bytes its backward keeps (as the op reported when it
// recorded; "?" when it did not), the creation site (file:line of the user code), and after a
// backward in inspect mode the L2 norm of the gradient reaching its output (|dout|) and of the
// gradient it sent to each input (edge labels in DOT).
// An optional input left out (linear without bias) shows "-".
// Without InspectGuard the graph is still complete, but an input that needs no gradient shows
// its shape as "?" (only inputs with a gradient edge are known) and no norms are kept.
// Deliberately not here: anomaly checks (anomaly.hpp), timing and FLOPs (profiler.hpp).
#pragma once

#include "autograd/tensor.hpp"

#include <string>
#include <vector>

namespace tg {

// Inspect mode on this thread while alive: record() keeps every input's shape and dtype and the
// engine writes gradient norms into the nodes. Off by default (one thread-local check when off).
class InspectGuard {
 public:
  explicit InspectGuard(bool on = true);
  ~InspectGuard();
  InspectGuard(const InspectGuard&) = delete;
  InspectGuard& operator=(const InspectGuard&) = delete;

 private:
  bool prev_;
};

// An input of a graph node: another node, a leaf that requires grad, or neither (no gradient).
struct GraphInput {
  enum class Kind { None, Node, Leaf } kind = Kind::None;
  int index = -1;  // into Graph::nodes or Graph::leaves
  Shape shape;     // known for Node/Leaf inputs, and for every input in inspect mode
  bool shape_known = false;
  bool undefined = false;  // an optional input left out (e.g. linear without bias), inspect mode
  double grad_norm = -1;   // of the gradient this node sent to the input (inspect mode)
};

struct GraphNode {
  int index = 0;  // position in this graph (execution order)
  uint64_t seq = 0;
  std::string op;
  std::vector<GraphInput> inputs;
  Shape out_shape;
  DType dtype = kFloat32;
  int64_t saved_bytes = -1;  // -1: the op did not report it
  Site site;
  double grad_norm = -1;                  // |dout| (inspect mode, after backward); -1: not recorded
  double fwd_flops = -1, bwd_flops = -1;  // when recorded in inspect/profiler mode
};

struct GraphLeaf {
  int index = 0;
  Shape shape;
  DType dtype = kFloat32;
  double grad_norm = -1;  // of its accumulated .grad(); -1 when it has none
};

struct InspectOptions {
  bool sites = true;  // show creation sites (basename:line)
  bool seq = true;    // show tape positions (they depend on everything recorded before)
  bool grads = true;  // show gradient norms where recorded
};

struct Graph {
  std::vector<GraphNode> nodes;   // execution order
  std::vector<GraphLeaf> leaves;  // in order of first use
  int64_t saved_bytes() const;    // sum of the reported saved bytes
  std::string table(const InspectOptions& o = {}) const;
  std::string dot(const InspectOptions& o = {}) const;
  std::string json(const InspectOptions& o = {}) const;
};

// The graph behind root (empty when root has no grad_fn); several roots share one graph.
Graph inspect(const Tensor& root);
Graph inspect(const std::vector<Tensor>& roots);

// "24 B", "1.5 KiB", "3.0 MiB"; "?" for a negative count.
std::string bytes_str(int64_t bytes);

}  // namespace tg
