// autograd/profiler.hpp — cost accounting per tape node (like torch.profiler): while a
// tg::Profiler is alive on this thread, every recorded node gets an event with its forward FLOPs
// and backward FLOPs (each op's cost model, see docs/tape.md), the bytes its backward keeps, the
// forward wall time (op entry to record) and the backward wall time (its closure in the engine).
//   tg::Profiler prof;
//   Tensor loss = model(x); loss.backward();
//   fmt::print("{}", prof.table());   // per op kind, sorted by total time
// Only recorded nodes are counted (forwards under NoGradGuard are not); nested ops count once,
// in the node that was recorded. Profilers nest: the innermost one records.
#pragma once

#include "autograd/site.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tg {

struct Node;

struct ProfileEvent {
  std::string op;
  uint64_t seq = 0;
  Site site;
  int64_t fwd_ns = 0, bwd_ns = 0;       // bwd_ns stays 0 until a backward runs the node
  double fwd_flops = 0, bwd_flops = 0;  // bwd_flops: per backward run
  bool flops_estimated = false;         // the op reported no cost model: one FLOP per element
  int64_t saved_bytes = 0;              // 0 when the op did not report it
  int64_t bwd_calls = 0;
};

// One op kind summed (key_averages).
struct ProfileRow {
  std::string op;
  int64_t calls = 0;
  double fwd_ms = 0, bwd_ms = 0;
  double fwd_gflop = 0, bwd_gflop = 0;
  double saved_mib = 0;
  double pct = 0;  // share of the total (fwd + bwd) time of every event, in percent
};

class Profiler {
 public:
  Profiler();   // starts recording on this thread
  ~Profiler();  // stops
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  void stop();  // stops early; events stay readable

  const std::vector<ProfileEvent>& events() const { return events_; }
  // Per op kind, sorted by total (fwd + bwd) time, largest first.
  std::vector<ProfileRow> key_averages() const;
  // key_averages as a text table (max_rows 0: all) with a total line.
  std::string table(size_t max_rows = 0) const;
  double total_fwd_flops() const;
  double total_bwd_flops() const;

  // Called by the tape (internal).
  void on_record(Node& n);
  void on_backward(Node& n, int64_t ns);

 private:
  std::vector<ProfileEvent> events_;
  uint64_t id_;
  Profiler* prev_ = nullptr;
  bool prev_on_ = false;
  bool active_ = false;
};

}  // namespace tg
