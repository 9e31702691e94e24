// autograd/anomaly.cpp — anomaly mode: the guard, the scan for the first non-finite element and
// the error messages that map it to an index, a row or (b, h, t). Called by the tape (record) and
// the engine (after each backward closure) through trace_detail.hpp.
#include "autograd/anomaly.hpp"
#include "autograd/tape.hpp"
#include "autograd/trace_detail.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>

namespace tg {

AnomalyGuard::AnomalyGuard(bool on) : prev_((detail::g_trace.modes & kTraceAnomaly) != 0) {
  if (on)
    detail::g_trace.modes |= kTraceAnomaly;
  else
    detail::g_trace.modes &= ~kTraceAnomaly;
}
AnomalyGuard::~AnomalyGuard() {
  if (prev_)
    detail::g_trace.modes |= kTraceAnomaly;
  else
    detail::g_trace.modes &= ~kTraceAnomaly;
}
bool anomaly_enabled() { return (detail::g_trace.modes & kTraceAnomaly) != 0; }

namespace {
template <typename T>
int64_t scan(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return i;
  return -1;
}

// Flat index -> index tuple in `shape`.
Shape unravel(int64_t flat, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return idx;
}

std::string tuple_str(const Shape& idx) {
  std::string s = "(";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? "," : "") + std::to_string(idx[i]);
  return s + ")";
}

// The k-th '|'-separated part of labels (0: the output, 1 + i: input i's gradient), or "".
std::string label_part(const char* labels, int k) {
  if (!labels) return "";
  std::string all(labels);
  size_t start = 0;
  for (int i = 0; i < k; ++i) {
    start = all.find('|', start);
    if (start == std::string::npos) return "";
    ++start;
  }
  return all.substr(start, all.find('|', start) - start);
}

// ": row (1,2) over dim 2" or ": b=0, h=1, t=3" when the node said what a row is.
std::string row_suffix(const Node& n, const Shape& idx, int part) {
  if (n.row_dim < 0 || n.row_dim >= static_cast<int>(idx.size())) return "";
  Shape row;
  for (size_t d = 0; d < idx.size(); ++d)
    if (static_cast<int>(d) != n.row_dim) row.push_back(idx[d]);
  const std::string labels = label_part(n.row_labels, part);
  if (labels.empty()) return fmt::format(": row {} over dim {}", tuple_str(row), n.row_dim);
  std::string s = ": ";
  size_t start = 0;
  for (size_t d = 0; d < row.size(); ++d) {
    const size_t end = labels.find(',', start);
    s += fmt::format("{}{}={}", d ? ", " : "", labels.substr(start, end - start), row[d]);
    start = end == std::string::npos ? labels.size() : end + 1;
  }
  return s;
}

std::string value_str(const Tensor& t_in, int64_t i) {
  const Tensor t = detail::dense(t_in);
  const double v =
      t.dtype() == kFloat32 ? static_cast<double>(t.data<float>()[i]) : t.data<double>()[i];
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

std::string node_str(const Node& n) {
  return fmt::format("{} (node #{}, created at {})", n.op, n.seq, n.site.str());
}
}  // namespace

int64_t first_nonfinite(const Tensor& t_in) {
  if (!t_in.defined()) return -1;
  const Tensor t = detail::dense(t_in);
  if (t.dtype() == kFloat32) return scan(t.data<float>(), t.numel());
  if (t.dtype() == kFloat64) return scan(t.data<double>(), t.numel());
  return -1;
}

namespace detail {
double l2_norm(const Tensor& t_in) {
  if (!t_in.defined()) return -1;
  const Tensor t = dense(t_in);
  double s = 0;
  const int64_t n = t.numel();
  if (t.dtype() == kFloat32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(p[i]) * p[i];
  } else if (t.dtype() == kFloat64) {
    const double* p = t.data<double>();
    for (int64_t i = 0; i < n; ++i) s += p[i] * p[i];
  }
  return std::sqrt(s);
}

void anomaly_check_forward(const Node& n, const Tensor& out) {
  const int64_t i = first_nonfinite(out);
  if (i < 0) return;
  const Shape idx = unravel(i, out.shape());
  throw Error(fmt::format("anomaly: forward of {} produced {} in output {} at {}{}", node_str(n),
                          value_str(out, i), shape_str(out.shape()), tuple_str(idx),
                          row_suffix(n, idx, 0)));
}

void anomaly_check_backward(const Node& n, const std::vector<Tensor>& in_grads) {
  for (size_t k = 0; k < in_grads.size() && k < n.next.size(); ++k) {
    if (!n.next[k].active()) continue;
    const Tensor& g = in_grads[k];
    const int64_t i = first_nonfinite(g);
    if (i < 0) continue;
    const Shape idx = unravel(i, g.shape());
    const bool rows = n.row_labels || g.shape() == n.out_shape;  // the row layout still applies
    throw Error(
        fmt::format("anomaly: backward of {} produced {} in the gradient for input {} {} at {}{}",
                    node_str(n), value_str(g, i), k, shape_str(g.shape()), tuple_str(idx),
                    rows ? row_suffix(n, idx, 1 + static_cast<int>(k)) : std::string()));
  }
}
}  // namespace detail

}  // namespace tg
