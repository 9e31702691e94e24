// autograd/print.cpp — PyTorch-style repr of a tensor: nested brackets, a common number format,
// elision ("...") of the middle of long dimensions when the tensor has more than 1000 elements.
#include "autograd/tape.hpp"
#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ostream>

namespace tg {
namespace {
constexpr int64_t kThreshold = 1000;  // PyTorch's print threshold
constexpr int64_t kEdge = 3;          // items shown at each end of an elided dimension

struct Printer {
  const Tensor& t;
  Shape strides;
  bool elide;
  bool ints;  // every float value is integral: print "1." like PyTorch
  bool sci;   // scientific notation
  std::string out;

  double at(int64_t i) const {
    switch (t.dtype()) {
      case kFloat32:
        return t.data<float>()[i];
      case kFloat64:
        return t.data<double>()[i];
      case kInt64:
        return static_cast<double>(t.data<int64_t>()[i]);
      case kBool:
        return t.data<bool>()[i];
      case kBFloat16:
        return static_cast<float>(t.data<bfloat16>()[i]);
      case kFloat16:
        return static_cast<float>(t.data<float16>()[i]);
    }
    return 0;
  }
  std::string fmt_value(int64_t i) const {
    if (t.dtype() == kBool) return t.data<bool>()[i] ? "True" : "False";
    if (t.dtype() == kInt64) return std::to_string(t.data<int64_t>()[i]);
    double v = at(i);
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci) return fmt::format("{:.4e}", v);
    if (ints) return fmt::format("{:.0f}.", v);
    return fmt::format("{:.4f}", v);
  }
  void rec(size_t d, int64_t base, int indent) {
    if (d == t.shape().size()) {
      out += fmt_value(base);
      return;
    }
    int64_t n = t.shape()[d];
    out += "[";
    for (int64_t i = 0; i < n; ++i) {
      if (elide && n > 2 * kEdge && i == kEdge) {
        out += "...";
        out += d + 1 == t.shape().size() ? ", " : ",\n" + std::string(indent + 1, ' ');
        i = n - kEdge - 1;
        continue;
      }
      rec(d + 1, base + i * strides[d], indent + 1);
      if (i + 1 < n) out += d + 1 == t.shape().size() ? ", " : ",\n" + std::string(indent + 1, ' ');
    }
    out += "]";
  }
};
}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  if (device().type != DeviceType::CPU) {  // values from a host copy, then the device
    std::string s = detach().to(kCPU).str();
    s.insert(s.rfind(", dtype="), ", device=" + device().str());
    if (grad_fn())
      s.insert(s.size() - 1, fmt::format(", grad_fn=<{}>", grad_fn()->op));
    else if (requires_grad())
      s.insert(s.size() - 1, ", requires_grad=True");
    return s;
  }
  const Tensor values = detail::dense(*this);  // a view prints its elements in order
  Printer p{values, values.strides(), numel() > kThreshold, false, false, {}};
  if (is_floating(dtype()) && numel() > 0) {
    double mx = 0, mn = INFINITY;
    bool all_int = true;
    for (int64_t i = 0; i < numel(); ++i) {
      double v = p.at(i);
      if (!std::isfinite(v)) continue;
      mx = std::max(mx, std::fabs(v));
      if (v != 0) mn = std::min(mn, std::fabs(v));
      if (v != std::floor(v)) all_int = false;
    }
    p.ints = all_int && mx < 1e8;
    p.sci = !p.ints && (mx >= 1e8 || (mn < 1e-4 && mn != INFINITY));
  }
  p.out = "tensor(";
  p.rec(0, 0, 7);
  std::string extra = fmt::format(", shape={}, dtype={}", shape_str(shape()), dtype_name(dtype()));
  if (grad_fn())
    extra += fmt::format(", grad_fn=<{}>", grad_fn()->op);
  else if (requires_grad())
    extra += ", requires_grad=True";
  return p.out + extra + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace tg
