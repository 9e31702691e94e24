// autograd/node.hpp — what the tape is made of: a Node (one recorded op: its closure, its edges to
// the producers of its inputs, what the study tools keep) and an Edge. How nodes are made is
// autograd/record.hpp; how they are walked, autograd/engine.hpp. Users rarely need this header.
#pragma once

#include "autograd/tensor.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
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
  double fwd_flops = 0, bwd_flops = 0;  // cost model (RecordInfo::flops), or an estimate
  bool flops_estimated = true;
  double grad_norm = -1;              // L2 norm of dout, the gradient reaching the output
  std::vector<double> in_grad_norms;  // L2 norm of the gradient sent to each input; -1: none
  int64_t fwd_ns = -1;                // time from op entry to record (profiler)
  int64_t prof_event = -1;            // index into the recording profiler's events
  uint64_t prof_id = 0;               // which profiler
};

// A saved tensor's storage version when saved: backward throws when an in-place write moved it.
struct SavedVersion {
  const Storage* storage;  // alive while the closure is: it holds a tensor on this storage
  uint32_t version;
  DType dtype;
  uint8_t ndim;
  int64_t dims[4];  // the first four dims, for the error message
};

// A few items inline, the rest on the heap: most nodes save at most a handful of tensors, and a
// node (or a RecordInfo) must not allocate for them.
template <typename T, size_t N>
class SmallVec {
 public:
  void push_back(const T& v) {
    if (n_ < N)
      inline_[n_] = v;
    else
      more_.push_back(v);
    ++n_;
  }
  size_t size() const { return n_; }
  const T& operator[](size_t i) const { return i < N ? inline_[i] : more_[i - N]; }
  T& operator[](size_t i) { return i < N ? inline_[i] : more_[i - N]; }

 private:
  size_t n_ = 0;
  std::array<T, N> inline_;
  std::vector<T> more_;
};
using SavedVersions = SmallVec<SavedVersion, 6>;

struct Node {
  const char* op = "";
  uint64_t seq = 0;          // position on the tape (execution order)
  Site site;                 // the user code that called the op (unknown: Site())
  int64_t saved_bytes = -1;  // bytes the backward closure holds (RecordInfo); -1: not reported
  int row_dim = -1;          // for anomaly reports: the dim a "row" runs along (RecordInfo::rows)
  const char* row_labels = nullptr;
  std::unique_ptr<NodeExtra> extra;
  std::vector<Edge> next;  // one per input, in the op's argument order
  BackwardFn backward;     // empty once the graph was freed
  Shape out_shape;
  DType out_dtype = kFloat32;
  std::vector<GradHook> hooks;  // hooks registered on the output tensor
  bool released = false;
  // Its closure honours create_graph (RecordInfo::differentiable): under create_graph it computes
  // the gradients in recorded ops, reading saved tensors through Saved::get. A backward under
  // create_graph that reaches a node without it throws, naming the op.
  bool differentiable = false;
  // The versions of every tensor its closure saved (RecordInfo::save): backward throws when an
  // in-place write changed one since.
  SavedVersions saved;
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

}  // namespace tg
