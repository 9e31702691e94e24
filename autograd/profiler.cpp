// autograd/profiler.cpp — the profiler's events (filled by the tape and the engine through
// trace_detail.hpp) and the key_averages table.
#include "autograd/profiler.hpp"
#include "autograd/tape.hpp"
#include "autograd/trace_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>

namespace tg {

namespace {
thread_local Profiler* g_profiler = nullptr;
std::atomic<uint64_t> g_next_profiler_id{1};  // tells profilers on any thread apart
}  // namespace

Profiler::Profiler() : id_(g_next_profiler_id++) {
  prev_ = g_profiler;
  prev_on_ = (detail::g_trace.modes & kTraceProfile) != 0;
  g_profiler = this;
  detail::g_trace.modes |= kTraceProfile;
  active_ = true;
}
Profiler::~Profiler() { stop(); }
void Profiler::stop() {
  if (!active_) return;
  active_ = false;
  if (g_profiler == this) {
    g_profiler = prev_;
    if (!prev_on_) detail::g_trace.modes &= ~kTraceProfile;
  }
}

void Profiler::on_record(Node& n) {
  NodeExtra& x = *n.extra;
  ProfileEvent e;
  e.op = n.op;
  e.seq = n.seq;
  e.site = n.site;
  e.fwd_ns = std::max<int64_t>(0, x.fwd_ns);
  e.fwd_flops = x.fwd_flops;
  e.bwd_flops = x.bwd_flops;
  e.flops_estimated = x.flops_estimated;
  e.saved_bytes = std::max<int64_t>(0, n.saved_bytes);
  x.prof_event = static_cast<int64_t>(events_.size());
  x.prof_id = id_;
  events_.push_back(std::move(e));
}

void Profiler::on_backward(Node& n, int64_t ns) {
  if (n.extra && n.extra->prof_id == id_ && n.extra->prof_event >= 0) {
    ProfileEvent& e = events_[n.extra->prof_event];
    e.bwd_ns += ns;
    ++e.bwd_calls;
    return;
  }
  // A node recorded before this profiler started: its backward time still counts.
  ProfileEvent e;
  e.op = n.op;
  e.seq = n.seq;
  e.site = n.site;
  e.bwd_ns = ns;
  e.bwd_calls = 1;
  if (n.extra) e.bwd_flops = n.extra->bwd_flops;
  events_.push_back(std::move(e));
}

std::vector<ProfileRow> Profiler::key_averages() const {
  std::map<std::string, ProfileRow> by_op;
  double total_ns = 0;
  for (const ProfileEvent& e : events_) {
    ProfileRow& r = by_op[e.op];
    r.op = e.op;
    ++r.calls;
    r.fwd_ms += e.fwd_ns * 1e-6;
    r.bwd_ms += e.bwd_ns * 1e-6;
    r.fwd_gflop += e.fwd_flops * 1e-9;
    r.bwd_gflop += e.bwd_flops * 1e-9 * static_cast<double>(e.bwd_calls);
    r.saved_mib += static_cast<double>(e.saved_bytes) / (1024.0 * 1024.0);
    total_ns += static_cast<double>(e.fwd_ns + e.bwd_ns);
  }
  std::vector<ProfileRow> rows;
  for (auto& [op, r] : by_op) {
    r.pct = total_ns > 0 ? 100.0 * (r.fwd_ms + r.bwd_ms) * 1e6 / total_ns : 0;
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) {
    return a.fwd_ms + a.bwd_ms > b.fwd_ms + b.bwd_ms;
  });
  return rows;
}

std::string Profiler::table(size_t max_rows) const {
  const std::vector<ProfileRow> rows = key_averages();
  std::string s =
      fmt::format("{:<30} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}\n", "op", "calls",
                  "fwd ms", "bwd ms", "fwd GFLOP", "bwd GFLOP", "saved MiB", "% time");
  ProfileRow tot;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ProfileRow& r = rows[i];
    if (max_rows == 0 || i < max_rows)
      s += fmt::format("{:<30} {:>6} {:>10.3f} {:>10.3f} {:>10.4f} {:>10.4f} {:>10.3f} {:>6.1f}%\n",
                       r.op.substr(0, 30), r.calls, r.fwd_ms, r.bwd_ms, r.fwd_gflop, r.bwd_gflop,
                       r.saved_mib, r.pct);
    tot.calls += r.calls;
    tot.fwd_ms += r.fwd_ms;
    tot.bwd_ms += r.bwd_ms;
    tot.fwd_gflop += r.fwd_gflop;
    tot.bwd_gflop += r.bwd_gflop;
    tot.saved_mib += r.saved_mib;
  }
  s += fmt::format("{:<30} {:>6} {:>10.3f} {:>10.3f} {:>10.4f} {:>10.4f} {:>10.3f} {:>6.1f}%\n",
                   "total", tot.calls, tot.fwd_ms, tot.bwd_ms, tot.fwd_gflop, tot.bwd_gflop,
                   tot.saved_mib, rows.empty() ? 0.0 : 100.0);
  return s;
}

double Profiler::total_fwd_flops() const {
  double s = 0;
  for (const ProfileEvent& e : events_) s += e.fwd_flops;
  return s;
}
double Profiler::total_bwd_flops() const {
  double s = 0;
  for (const ProfileEvent& e : events_) s += e.bwd_flops * static_cast<double>(e.bwd_calls);
  return s;
}

namespace detail {
void profiler_on_record(Node& n) {
  if (g_profiler) g_profiler->on_record(n);
}
void profiler_on_backward(Node& n, int64_t ns) {
  if (g_profiler) g_profiler->on_backward(n, ns);
}
}  // namespace detail

}  // namespace tg
