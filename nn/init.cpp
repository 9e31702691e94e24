// nn/init.cpp — initialisers (see init.hpp).
#include "nn/init.hpp"

#include "autograd/tape.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tg::nn::init {
namespace {
thread_local bool skip_init = false;
// Draws value() for every element in row-major order of t's shape, so a strided view (a
// transposed or narrowed parameter) gets the values a contiguous tensor of its shape gets. The
// draws go into t directly when it is contiguous host memory, else into a host buffer copied
// through t's strides (and to its device).
template <typename F>
void fill(Tensor& t, const char* op, F value) {
  if (!t.defined() || !is_floating(t.dtype()))
    throw Error(fmt::format("{}: tensor must be a defined floating tensor, got {}", op,
                            t.defined() ? dtype_name(t.dtype()) : "undefined"));
  if (skip_init) return;
  const bool direct = t.is_contiguous() && !t.is_cuda();
  Tensor buf = direct ? t : Tensor::empty(t.shape(), t.dtype());
  if (t.dtype() == kFloat32) {
    float* p = buf.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(value());
  } else {
    double* p = buf.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = value();
  }
  NoGradGuard ng;  // an initialiser is not part of the graph (PyTorch runs it under no_grad)
  if (direct)
    note_inplace_write(t, op);
  else
    t.detach().copy_(buf);
}
}  // namespace

SkipInitGuard::SkipInitGuard() : prev_(skip_init) { skip_init = true; }
SkipInitGuard::~SkipInitGuard() { skip_init = prev_; }
bool is_init_skipped() { return skip_init; }

std::pair<int64_t, int64_t> fan_in_and_out(const Tensor& w) {
  if (w.dim() < 2)
    throw Error(
        fmt::format("init: fan in and fan out need at least 2 dims, got {}", shape_str(w.shape())));
  int64_t receptive = 1;
  for (int64_t d = 2; d < w.dim(); ++d) receptive *= w.size(d);
  return {w.size(1) * receptive, w.size(0) * receptive};
}
void uniform_(Tensor& t, double lo, double hi) {
  Generator& g = default_generator();
  fill(t, "init.uniform_", [&] { return lo + (hi - lo) * g.uniform(); });
}
void normal_(Tensor& t, double mean, double std) {
  Generator& g = default_generator();
  fill(t, "init.normal_", [&] { return mean + std * g.normal(); });
}
void constant_(Tensor& t, double v) {
  fill(t, "init.constant_", [v] { return v; });
}
void zeros_(Tensor& t) { constant_(t, 0); }
void ones_(Tensor& t) { constant_(t, 1); }
void xavier_uniform_(Tensor& t, double gain) {
  auto [fi, fo] = fan_in_and_out(t);
  double b = gain * std::sqrt(6.0 / static_cast<double>(fi + fo));
  uniform_(t, -b, b);
}
void kaiming_uniform_(Tensor& t, double a) {
  auto [fi, fo] = fan_in_and_out(t);
  (void)fo;
  double gain = std::sqrt(2.0 / (1 + a * a));
  double b = gain * std::sqrt(3.0 / static_cast<double>(fi));
  uniform_(t, -b, b);
}

}  // namespace tg::nn::init
