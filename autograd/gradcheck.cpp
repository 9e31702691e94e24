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

// The addresses of x's elements in row-major order, honouring its strides (an input may be a
// leaf view such as x.t().detach()). Inputs whose elements overlap (an expand) are refused: one
// perturbation would move several entries at once.
std::vector<double*> element_ptrs(const Tensor& x, size_t i) {
  const Shape& shape = x.shape();
  const Shape strides = x.strides();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1 && strides[d] == 0)
      throw Error(
          fmt::format("gradcheck: input {} {} has overlapping elements (stride 0 in dim "
                      "{}); pass a contiguous copy",
                      i, shape_str(shape), d));
  double* base = static_cast<double*>(x.data_ptr());
  std::vector<double*> out(static_cast<size_t>(x.numel()));
  std::vector<int64_t> idx(shape.size(), 0);
  for (double*& p : out) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    p = base + off;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
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
  if (std::isfinite(abs_err)) {
    rep.max_abs_err = std::max(rep.max_abs_err, abs_err);
    rep.max_rel_err = std::max(rep.max_rel_err, abs_err / std::max(std::fabs(n), o.atol));
  } else {
    rep.max_abs_err = rep.max_rel_err = INFINITY;
  }
  if (!std::isfinite(n)) rep.nonfinite_numerical++;
  if (!std::isfinite(a)) rep.nonfinite_analytical++;
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

// f at x - 2h, x - h, x, x + h, x + 2h along one direction (one output element, or a projection).
struct Stencil {
  double m2, m1, c, p1, p2;
};

// Do the one-sided slopes disagree by more than the tolerance? (Smooth f: R - L = f''·h.)
bool kink_candidate(const GradcheckOptions& o, double m1, double c, double p1) {
  const double L = (c - m1) / o.eps, R = (p1 - c) / o.eps;
  return std::isfinite(L) && std::isfinite(R) &&
         std::fabs(R - L) > o.atol + o.rtol * std::max(std::fabs(L), std::fabs(R));
}

// Locally piecewise linear with the break inside the central stencil: the second difference on one
// side vanishes while the central one does not. A smooth f has all three ≈ f''·h².
bool is_kink(const Stencil& f) {
  const double d2c = f.p1 - 2 * f.c + f.m1;
  const double d2l = f.c - 2 * f.m1 + f.m2, d2r = f.p2 - 2 * f.p1 + f.c;
  return std::min(std::fabs(d2l), std::fabs(d2r)) <= 0.1 * std::fabs(d2c);
}

// A kink the analytical value is consistent with (between the one-sided slopes, within the
// tolerance): recorded and not compared. Returns false when the entry must still be compared.
bool accept_kink(GradcheckReport& rep, GradcheckInput& r, const GradcheckOptions& o,
                 const Stencil& f, double a, std::vector<int64_t> index, int64_t out_index) {
  const double L = (f.c - f.m1) / o.eps, R = (f.p1 - f.c) / o.eps;
  const double tol = o.atol + o.rtol * std::max(std::fabs(L), std::fabs(R));
  if (!(a >= std::min(L, R) - tol && a <= std::max(L, R) + tol)) return false;
  r.kinks++;
  if (rep.kinks.size() < GradcheckReport::kMaxKinks)
    rep.kinks.push_back({r.input, std::move(index), out_index, L, R, a});
  return true;
}

// The inputs that require grad (float64 leaves), with their positions and element count.
struct Differentiable {
  std::vector<Tensor> x;
  std::vector<int> at;  // x[i] is inputs[at[i]]
  int64_t numel = 0;
};

Differentiable differentiable(const std::vector<Tensor>& inputs) {
  Differentiable d;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    if (t.dtype() != kFloat64)
      throw Error(fmt::format("gradcheck: input {} {} is {}; gradcheck needs float64 inputs", i,
                              shape_str(t.shape()), dtype_name(t.dtype())));
    if (!t.is_leaf())
      throw Error(fmt::format("gradcheck: input {} {} is not a leaf", i, shape_str(t.shape())));
    d.x.push_back(t);
    d.at.push_back(static_cast<int>(i));
    d.numel += t.numel();
  }
  if (d.x.empty()) throw Error("gradcheck: no input requires grad");
  return d;
}

// fn at the inputs, recorded: a float64 output (detached when it depends on no input, so its
// analytical Jacobian is zero).
Tensor recorded_output(const GradcheckFn& fn, const std::vector<Tensor>& inputs) {
  Tensor out = fn(inputs);
  if (!out.defined() || !is_floating(out.dtype()))
    throw Error("gradcheck: the function must return a floating-point tensor");
  if (out.dtype() != kFloat64)
    throw Error(fmt::format("gradcheck: output {} is {}; compute in float64",
                            shape_str(out.shape()), dtype_name(out.dtype())));
  return out.requires_grad() ? out : out.detach();
}

// The report before any comparison: the output's shape and non-finite elements, the mode, one
// row per input.
GradcheckReport start_report(const Tensor& out, const std::vector<Tensor>& inputs,
                             const Differentiable& d, const GradcheckOptions& o) {
  GradcheckReport rep;
  rep.output_shape = out.shape();
  const std::vector<double> f = out.to_vector<double>();
  for (size_t k = 0; k < f.size(); ++k) {
    if (std::isfinite(f[k])) continue;
    if (rep.output_nonfinite++ == 0) {
      rep.first_nonfinite_output = static_cast<int64_t>(k);
      rep.first_nonfinite_value = f[k];
    }
  }
  rep.fast_mode =
      o.mode == GradcheckMode::Fast ||
      (o.mode == GradcheckMode::Auto && (d.numel > o.full_limit || out.numel() > o.full_limit));
  for (size_t i = 0; i < inputs.size(); ++i) {
    GradcheckInput r;
    r.input = static_cast<int>(i);
    r.shape = inputs[i].defined() ? inputs[i].shape() : Shape{};
    r.worst.output_index = -2;  // "none yet"
    rep.inputs.push_back(r);
  }
  return rep;
}

// d out / d x[i] along the output direction u, per differentiable input (empty when out depends
// on none of them; an entry undefined where the gradient is zero).
std::vector<Tensor> vjp(const Tensor& out, const Differentiable& d, const Tensor& u) {
  if (!out.requires_grad()) return {};
  return grad({out}, d.x, {u}, {/*retain_graph=*/true, true});
}

// The analytical Jacobian, row by row: ja[k][i][j] = d out[k] / d x[i][j].
using Jacobian = std::vector<std::vector<std::vector<double>>>;
Jacobian analytical_jacobian(const Tensor& out, const Differentiable& d) {
  Jacobian ja(out.numel());
  for (int64_t k = 0; k < out.numel(); ++k) {
    Tensor u = zeros(out.shape(), kFloat64);
    u.data<double>()[k] = 1;
    const std::vector<Tensor> g = vjp(out, d, u);
    ja[k].resize(d.x.size());
    for (size_t i = 0; i < d.x.size(); ++i)
      ja[k][i] = g.size() && g[i].defined() ? g[i].to_vector<double>()
                                            : std::vector<double>(d.x[i].numel(), 0.0);
  }
  return ja;
}

// Full mode, one input: every element perturbed by ±eps, its Jacobian column against ja; f0 is f
// at the inputs (kink detection only).
void check_full_input(GradcheckReport& rep, const GradcheckFn& fn,
                      const std::vector<Tensor>& inputs, const Differentiable& d, size_t i,
                      const Jacobian& ja, const std::vector<double>& f0,
                      const GradcheckOptions& o) {
  GradcheckInput& r = rep.inputs[d.at[i]];
  r.checked = true;
  const std::vector<double*> x = element_ptrs(d.x[i], d.at[i]);
  const int64_t n_out = static_cast<int64_t>(ja.size());
  for (int64_t j = 0; j < d.x[i].numel(); ++j) {
    const double orig = *x[j];
    auto at = [&](double step) {
      *x[j] = orig + step;
      std::vector<double> f = eval(fn, inputs);
      *x[j] = orig;
      return f;
    };
    const std::vector<double> fp = at(o.eps), fm = at(-o.eps);
    std::vector<double> fp2, fm2;  // x ± 2h, evaluated only for a kink candidate
    for (int64_t k = 0; k < n_out; ++k) {
      const double a = ja[k][i][j];
      if (o.detect_kinks && kink_candidate(o, fm[k], f0[k], fp[k])) {
        if (fp2.empty()) fp2 = at(2 * o.eps), fm2 = at(-2 * o.eps);
        const Stencil f{fm2[k], fm[k], f0[k], fp[k], fp2[k]};
        if (is_kink(f) && accept_kink(rep, r, o, f, a, unravel(j, d.x[i].shape()), k)) continue;
      }
      consider(r, o, a, (fp[k] - fm[k]) / (2 * o.eps), unravel(j, d.x[i].shape()), k);
    }
  }
}

// Fast mode, one input and one output direction u: u·J·v for a random v (drawn from gen) against
// the central difference of u·f along v; g is the gradient along u (vjp).
void check_projection(GradcheckReport& rep, const GradcheckFn& fn,
                      const std::vector<Tensor>& inputs, const Differentiable& d, size_t i,
                      const Tensor& u, const std::vector<Tensor>& g, Generator& gen,
                      const GradcheckOptions& o) {
  GradcheckInput& r = rep.inputs[d.at[i]];
  r.checked = true;
  std::vector<double> v(d.x[i].numel());
  for (double& e : v) e = gen.normal();
  double analytical = 0;
  if (g.size() && g[i].defined()) {  // a view's backward may return a strided gradient
    const std::vector<double> gi = g[i].to_vector<double>();
    for (size_t j = 0; j < v.size(); ++j) analytical += gi[j] * v[j];
  }
  const std::vector<double*> x = element_ptrs(d.x[i], d.at[i]);
  std::vector<double> orig(v.size());
  for (size_t j = 0; j < v.size(); ++j) orig[j] = *x[j];
  const double* up = u.data<double>();
  // u·f(x + step·v)
  auto at = [&](double step) {
    for (size_t j = 0; j < v.size(); ++j) *x[j] = orig[j] + step * v[j];
    std::vector<double> f = eval(fn, inputs);
    for (size_t j = 0; j < v.size(); ++j) *x[j] = orig[j];
    double s = 0;
    for (int64_t k = 0; k < u.numel(); ++k) s += up[k] * f[k];
    return s;
  };
  const double fp = at(o.eps), fm = at(-o.eps);
  const double numerical = (fp - fm) / (2 * o.eps);
  if (o.detect_kinks) {
    const double f0 = at(0);
    if (kink_candidate(o, fm, f0, fp)) {
      const Stencil f{at(-2 * o.eps), fm, f0, fp, at(2 * o.eps)};
      if (is_kink(f) && accept_kink(rep, r, o, f, analytical, {}, -1)) return;
    }
  }
  consider(r, o, analytical, numerical, {}, -1);
}

}  // namespace

GradcheckReport gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& o) {
  const Differentiable d = differentiable(inputs);
  const Tensor out = recorded_output(fn, inputs);
  GradcheckReport rep = start_report(out, inputs, d, o);
  if (!rep.fast_mode) {
    const Jacobian ja = analytical_jacobian(out, d);
    const std::vector<double> f0 = o.detect_kinks ? eval(fn, inputs) : std::vector<double>();
    for (size_t i = 0; i < d.x.size(); ++i) check_full_input(rep, fn, inputs, d, i, ja, f0, o);
  } else {
    Generator gen;
    gen.set_seed(o.seed);
    for (int p = 0; p < o.fast_projections; ++p) {
      Tensor u = Tensor::empty(out.shape(), kFloat64);
      for (int64_t k = 0; k < out.numel(); ++k) u.data<double>()[k] = gen.normal();
      const std::vector<Tensor> g = vjp(out, d, u);
      for (size_t i = 0; i < d.x.size(); ++i) check_projection(rep, fn, inputs, d, i, u, g, gen, o);
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
  int64_t total = 0;
  for (const auto& r : inputs) total += r.kinks;
  for (const auto& k : kinks) s += "  WARN " + k.str() + "\n";
  if (total > static_cast<int64_t>(kinks.size()))
    s += fmt::format("  WARN ... and {} more kink entries\n", total - kinks.size());
  for (const std::string& n : notes()) s += "  NOTE " + n + "\n";
  return s;
}

namespace {
std::string value_name(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }
}  // namespace

std::vector<std::string> GradcheckReport::notes() const {
  std::vector<std::string> out;
  if (output_nonfinite > 0) {
    const int64_t n = shape_numel(output_shape);
    out.push_back(fmt::format(
        "the function returned {} at the input: {} of {} output element(s) are not finite "
        "(first: element {}), so the numerical and analytical gradients there are NaN or inf and "
        "cannot be compared; a mean over no elements is 0/0 = nan (e.g. cross_entropy with every "
        "target ignored) — check the inputs, not the backward",
        value_name(first_nonfinite_value), output_nonfinite, n,
        shape_str(unravel(first_nonfinite_output, output_shape))));
    return out;
  }
  for (const auto& r : inputs) {
    if (!r.checked) continue;
    if (r.nonfinite_numerical > 0)
      out.push_back(fmt::format(
          "input {}: {} numerical entr{} not finite: the function is finite at the input but NaN "
          "or inf at x ± eps: the input lies at the edge of its domain (e.g. log or sqrt at 0); "
          "use a smaller eps or move the input",
          r.input, r.nonfinite_numerical, r.nonfinite_numerical == 1 ? "y is" : "ies are"));
    if (r.nonfinite_analytical > 0)
      out.push_back(fmt::format(
          "input {}: {} analytical entr{} not finite although the function is finite at the "
          "input: the backward produced NaN or inf",
          r.input, r.nonfinite_analytical, r.nonfinite_analytical == 1 ? "y is" : "ies are"));
  }
  return out;
}

std::string GradcheckKink::str() const {
  std::string where = index.empty() && output_index < 0
                          ? std::string("along a random direction")
                          : fmt::format("index {} (output {})", shape_str(index), output_index);
  return fmt::format(
      "kink near input {} {} \u2014 numerical gradient unreliable here (one-sided slopes {:.6g} "
      "and {:.6g}, analytical {:.6g})",
      input, where, left, right, analytical);
}

}  // namespace tg
