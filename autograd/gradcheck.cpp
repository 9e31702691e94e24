// autograd/gradcheck.cpp — full-Jacobian and random-projection gradient checks in float64.
#include "autograd/gradcheck.hpp"

#include "autograd/tape.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tg {
namespace {

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

// The output as float64 values, evaluated without recording.
std::vector<double> eval(const GradcheckFn& fn, const std::vector<Tensor>& inputs) {
  NoGradGuard ng;
  return fn(inputs).to_vector<double>();
}

void consider(GradcheckInput& rep, const GradcheckOptions& o, double a, double n,
              std::vector<int64_t> index, int64_t out_index) {
  double abs_err = std::fabs(a - n);
  double rel_err = abs_err / std::max(std::fabs(n), 1e-300);
  bool ok = abs_err <= o.atol + o.rtol * std::fabs(n) && std::isfinite(a) == std::isfinite(n);
  if (!ok) {
    rep.failures++;
    rep.passed = false;
  }
  // "Worst" is measured against the tolerance, so the reported element is the one that fails most.
  double score = abs_err / (o.atol + o.rtol * std::fabs(n));
  double worst = rep.worst.abs_err / (o.atol + o.rtol * std::fabs(rep.worst.numerical));
  if (!std::isfinite(a) || score > worst || rep.worst.output_index == -2) {
    rep.worst = {std::move(index), out_index, a, n, abs_err, rel_err};
  }
}

}  // namespace

GradcheckReport gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& o) {
  std::vector<Tensor> diff;  // inputs that require grad
  std::vector<int> diff_idx;
  int64_t total_in = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    if (t.dtype() != kFloat64)
      throw Error(fmt::format("gradcheck: input {} {} is {}; gradcheck needs float64 inputs", i,
                              shape_str(t.shape()), dtype_name(t.dtype())));
    if (!t.is_leaf())
      throw Error(fmt::format("gradcheck: input {} {} is not a leaf", i, shape_str(t.shape())));
    diff.push_back(t);
    diff_idx.push_back(static_cast<int>(i));
    total_in += t.numel();
  }
  if (diff.empty()) throw Error("gradcheck: no input requires grad");

  Tensor out = fn(inputs);
  if (!out.defined() || !is_floating(out.dtype()))
    throw Error("gradcheck: the function must return a floating-point tensor");
  if (out.dtype() != kFloat64)
    throw Error(fmt::format("gradcheck: output {} is {}; compute in float64",
                            shape_str(out.shape()), dtype_name(out.dtype())));
  const int64_t n_out = out.numel();

  GradcheckReport rep;
  rep.output_shape = out.shape();
  rep.fast_mode =
      o.mode == GradcheckMode::Fast ||
      (o.mode == GradcheckMode::Auto && (total_in > o.full_limit || n_out > o.full_limit));
  for (size_t i = 0; i < inputs.size(); ++i) {
    GradcheckInput r;
    r.input = static_cast<int>(i);
    r.shape = inputs[i].defined() ? inputs[i].shape() : Shape{};
    r.worst.output_index = -2;  // "none yet"
    rep.inputs.push_back(r);
  }
  if (!out.requires_grad()) {
    // Output independent of every input: the analytical Jacobian is zero.
    out = out.detach();
  }

  if (!rep.fast_mode) {
    // Analytical Jacobian, row by row: ja[k][input][j] = d out[k] / d in[j].
    std::vector<std::vector<std::vector<double>>> ja(n_out);
    for (int64_t k = 0; k < n_out; ++k) {
      Tensor u = zeros(out.shape(), kFloat64);
      u.data<double>()[k] = 1;
      std::vector<Tensor> g;
      if (out.requires_grad()) g = grad({out}, diff, {u}, {/*retain_graph=*/true, true});
      ja[k].resize(diff.size());
      for (size_t i = 0; i < diff.size(); ++i)
        ja[k][i] = g.size() && g[i].defined() ? g[i].to_vector<double>()
                                              : std::vector<double>(diff[i].numel(), 0.0);
    }
    for (size_t i = 0; i < diff.size(); ++i) {
      GradcheckInput& r = rep.inputs[diff_idx[i]];
      r.checked = true;
      double* x = diff[i].data<double>();
      for (int64_t j = 0; j < diff[i].numel(); ++j) {
        double orig = x[j];
        x[j] = orig + o.eps;
        std::vector<double> fp = eval(fn, inputs);
        x[j] = orig - o.eps;
        std::vector<double> fm = eval(fn, inputs);
        x[j] = orig;
        for (int64_t k = 0; k < n_out; ++k)
          consider(r, o, ja[k][i][j], (fp[k] - fm[k]) / (2 * o.eps), unravel(j, diff[i].shape()),
                   k);
      }
    }
  } else {
    Generator gen;
    gen.set_seed(o.seed);
    for (int p = 0; p < o.fast_projections; ++p) {
      Tensor u = Tensor::empty(out.shape(), kFloat64);
      for (int64_t k = 0; k < n_out; ++k) u.data<double>()[k] = gen.normal();
      std::vector<Tensor> g;
      if (out.requires_grad()) g = grad({out}, diff, {u}, {/*retain_graph=*/true, true});
      for (size_t i = 0; i < diff.size(); ++i) {
        GradcheckInput& r = rep.inputs[diff_idx[i]];
        r.checked = true;
        std::vector<double> v(diff[i].numel());
        for (double& e : v) e = gen.normal();
        double analytical = 0;
        if (g.size() && g[i].defined()) {
          const double* gi = g[i].data<double>();
          for (size_t j = 0; j < v.size(); ++j) analytical += gi[j] * v[j];
        }
        double* x = diff[i].data<double>();
        std::vector<double> orig(x, x + v.size());
        for (size_t j = 0; j < v.size(); ++j) x[j] = orig[j] + o.eps * v[j];
        std::vector<double> fp = eval(fn, inputs);
        for (size_t j = 0; j < v.size(); ++j) x[j] = orig[j] - o.eps * v[j];
        std::vector<double> fm = eval(fn, inputs);
        for (size_t j = 0; j < v.size(); ++j) x[j] = orig[j];
        double numerical = 0;
        const double* up = u.data<double>();
        for (int64_t k = 0; k < n_out; ++k) numerical += up[k] * (fp[k] - fm[k]) / (2 * o.eps);
        consider(r, o, analytical, numerical, {}, -1);
      }
    }
  }
  for (auto& r : rep.inputs) {
    if (r.worst.output_index == -2) r.worst.output_index = -1;
    if (r.checked && !r.passed) rep.passed = false;
  }
  return rep;
}

std::string GradcheckReport::str() const {
  std::string s = fmt::format("gradcheck ({} mode, output {}): {}\n", fast_mode ? "fast" : "full",
                              shape_str(output_shape), passed ? "PASSED" : "FAILED");
  s += fmt::format("  {:<6} {:<14} {:<8} {:>10} {:>12} {:>12} {:>11} {:>11}  {}\n", "input",
                   "shape", "result", "failures", "analytical", "numerical", "abs err", "rel err",
                   "worst element");
  for (const auto& r : inputs) {
    if (!r.checked) {
      s += fmt::format("  {:<6} {:<14} {:<8}\n", r.input, shape_str(r.shape), "skipped");
      continue;
    }
    std::string where =
        fast_mode ? std::string("projection")
                  : fmt::format("in{} out[{}]", shape_str(r.worst.index), r.worst.output_index);
    s +=
        fmt::format("  {:<6} {:<14} {:<8} {:>10} {:>12.6g} {:>12.6g} {:>11.3e} {:>11.3e}  {}\n",
                    r.input, shape_str(r.shape), r.passed ? "ok" : "FAIL", r.failures,
                    r.worst.analytical, r.worst.numerical, r.worst.abs_err, r.worst.rel_err, where);
  }
  return s;
}

}  // namespace tg
