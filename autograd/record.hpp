// autograd/record.hpp — recording: grad mode, what an op tells the tape (RecordInfo), the tensors
// its backward reads (Saved), and record() itself. The walk that runs the closures is
// autograd/engine.hpp; the node they make, autograd/node.hpp.
//
// Every differentiable op, after computing its output, calls record() with its name, its inputs
// and a closure that maps the output gradient to one gradient per input. What the closure reads
// is named once, by a Saved handle it captures (PyTorch's SavedVariable):
//   RecordInfo info = RecordInfo().flops(n, 2 * n).differentiable();
//   Saved sa = info.save(a), sb = info.save(b);
//   record("mul", out, {a, b}, info, [sa, sb](const Tensor& g) -> std::vector<Tensor> {
//     return {mul(g, sb.get()), mul(g, sa.get())};
//   });
// The same handles give the node its saved bytes and the storage versions backward checks.
#pragma once

#include "autograd/node.hpp"

#include <initializer_list>
#include <vector>

namespace tg {

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

inline int64_t tensor_bytes(const Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(dtype_size(t.dtype())) : 0;
}

// True inside a backward closure that the engine is recording (create_graph): the closure must
// compute its gradients in recorded ops.
bool creating_graph();

struct RecordInfo;
// A tensor an op's backward reads, made by RecordInfo::save / save_output and captured by the
// closure. get() gives it back: as saved normally; under create_graph with its history, so a
// formula that reads it is differentiated through it. A saved input or intermediate keeps its
// own tensor (an input cannot hold the node that reads it, so no cycle; under create_graph its
// history is the input's); a saved output is kept detached (the output owns the node) and comes
// back under create_graph with the node now running as its history. No index, no position: two
// same-shape inputs can never be read in each other's place.
class Saved {
 public:
  Saved() = default;
  Tensor get() const {
    if (output_ && creating_graph()) return reattached_output();
    return t_;
  }
  bool defined() const { return t_.defined(); }

 private:
  friend struct RecordInfo;
  Saved(Tensor t, bool output) : t_(std::move(t)), output_(output) {}
  Tensor reattached_output() const;
  Tensor t_;
  bool output_ = false;
};

// What a node keeps besides its closure, passed to record() by the op: the tensors the backward
// reads (save / save_output: their bytes are what the inspect table and profiler show as
// "saved", tensors shared with live inputs included, and their storage versions are checked
// before the closure runs), the cost model (floating-point operations of forward and backward;
// unset: one per output element and per input gradient) and, for anomaly reports, the dim a
// "row" runs along (softmax: the reduced dim; attention output (B, NH, T, hs): dim 3) with
// optional labels, '|'-separated for the output and then each input gradient, e.g.
// "b,h,t|b,h,t|b,h,s|b,h,s" (null: "row (i, j, ...)").
struct RecordInfo {
  int64_t saved_bytes = -1;  // -1: not reported (no save, no saves_nothing, no saved_plus)
  double fwd_flops = -1, bwd_flops = -1;
  int row_dim = -1;
  const char* row_labels = nullptr;
  // Every saved tensor: its version (for the in-place check) and its identity, which record()
  // matches against the op's output (save_output's must be it; save's must not be).
  struct Entry {
    SavedVersion version;
    const TensorImpl* impl;
    bool output;
  };
  SmallVec<Entry, 6> entries;

  // t as the backward will read it: an input of the op (its history under create_graph), or an
  // intermediate the op computed. An undefined t gives an undefined handle (0 bytes).
  Saved save(const Tensor& t) {
    note(t, false);
    return Saved(t, false);
  }
  // The op's output (record() checks that it is), kept detached.
  Saved save_output(const Tensor& out) {
    note(out, true);
    return out.defined() ? Saved(out.detach(), true) : Saved();
  }
  // The op's backward reads no tensor: 0 bytes saved (rather than "not reported").
  RecordInfo& saves_nothing() {
    if (saved_bytes < 0) saved_bytes = 0;
    return *this;
  }
  RecordInfo& saved_plus(int64_t extra_bytes) {  // host-side buffers the closure also holds
    saved_bytes = (saved_bytes < 0 ? 0 : saved_bytes) + extra_bytes;
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
  RecordInfo& flops(double fwd, double bwd) {
    fwd_flops = fwd;
    bwd_flops = bwd;
    return *this;
  }
  // The closure is differentiable: with creating_graph() on it computes in recorded ops (and
  // reads what it saved through Saved::get), so create_graph works through it.
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

 private:
  void note(const Tensor& t, bool output);  // its bytes, storage version and identity
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

}  // namespace tg
