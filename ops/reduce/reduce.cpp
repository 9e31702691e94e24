// ops/reduce/reduce.cpp — reductions over one or several dims (sum, mean, max with amax semantics,
// var, argmax), forward and backward side by side, and the Tensor methods that call them.
//
// Each op: check → plan → allocate → kernel → record. The plan views the input as (outer,
// reduced, inner) when the reduced dims are adjacent (size-1 dims in between do not count); the
// CPU kernels (ops/reduce/cpu/reduce.cpp: float32 accumulates in double) read that view. Reduced
// dims that are not adjacent are first gathered by a permuted copy, kept dims first, reduced dims
// last: (out_numel, count, 1); each backward writes dx in that layout and permutes it back. One
// path for both backends: kernels(op, x) runs the CPU twin or cuda/reduce.cu. Deliberately not
// here: softmax/log_softmax (softmax.cpp), layer_norm's statistics (norm.cpp), sum_to's unbroadcast
// (elementwise.cpp).
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

#include <fmt/ranges.h>

namespace tg {
using namespace detail;

namespace {

std::string dims_str(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

// Which dims a reduction removes and how the kernels see the input.
struct ReducePlan {
  Shape in_shape;
  Shape out_shape;  // as returned (reduced dims dropped unless keepdim)
  int64_t out_numel = 1;
  int64_t count = 1;  // input elements per output element
  // The kernels' (outer, red, inner) view. perm is empty when the reduced dims are adjacent (the
  // input is read as it is); otherwise the input is permuted by perm (kept dims, then reduced
  // dims) into (out_numel, count, 1), and inv permutes a gradient in that layout back.
  int64_t outer = 1, red = 1, inner = 1;
  std::vector<int64_t> perm, inv;
  Shape kernel_shape;             // the input's shape in the kernels' layout
  Shape keep_shape;               // the output with the reduced dims kept as 1 (for create_graph)
  std::vector<int64_t> red_dims;  // the reduced dims, normalised
};

// Normalises dims (negative allowed, duplicates rejected, empty = all) against shape.
std::vector<bool> reduced_dims(const char* op, const Shape& shape,
                               const std::vector<int64_t>& dims) {
  const int64_t n = static_cast<int64_t>(shape.size());
  std::vector<bool> red(n, dims.empty());
  std::vector<bool> seen(std::max<int64_t>(n, 1), false);
  for (int64_t d : dims) {
    // A 0-dim tensor accepts dim 0 or -1 and reduces over nothing, like PyTorch.
    int64_t r = norm_dim(d, std::max<int64_t>(n, 1), op, shape);
    if (seen[r])
      throw Error(fmt::format("{}: dim {} appears more than once in dims {} for input {}", op, r,
                              dims_str(dims), shape_str(shape)));
    seen[r] = true;
    if (n > 0) red[r] = true;
  }
  return red;
}

ReducePlan make_plan(const char* op, const Shape& shape, const std::vector<int64_t>& dims,
                     bool keepdim) {
  ReducePlan p;
  p.in_shape = p.kernel_shape = shape;
  const std::vector<bool> reduced = reduced_dims(op, shape, dims);  // per input dim
  const int64_t n = static_cast<int64_t>(shape.size());
  int64_t lo = n, hi = -1;
  for (int64_t d = 0; d < n; ++d) {
    p.keep_shape.push_back(reduced[d] ? 1 : shape[d]);
    if (reduced[d]) p.red_dims.push_back(d);
    if (reduced[d]) {
      if (keepdim) p.out_shape.push_back(1);
      p.count *= shape[d];
      lo = std::min(lo, d);
      hi = d;
    } else {
      p.out_shape.push_back(shape[d]);
      p.out_numel *= shape[d];
    }
  }
  if (hi < 0) lo = hi = n;  // nothing reduced: (numel, 1, 1)
  bool adjacent = true;
  for (int64_t d = lo; d <= hi && d < n; ++d)
    if (!reduced[d] && shape[d] != 1) adjacent = false;
  if (adjacent) {
    for (int64_t d = 0; d < n; ++d) (d < lo ? p.outer : d <= hi ? p.red : p.inner) *= shape[d];
    return p;
  }
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t d = 0; d < n; ++d)
      if (reduced[d] == (pass == 1)) p.perm.push_back(d);
  p.inv.resize(n);
  p.kernel_shape.clear();
  for (int64_t k = 0; k < n; ++k) {
    p.inv[p.perm[k]] = k;
    p.kernel_shape.push_back(shape[p.perm[k]]);
  }
  p.outer = p.out_numel;
  p.red = p.count;
  p.inner = 1;
  return p;
}

// x as the kernels read it: itself, or the permuted copy (one gather) when the reduced dims are
// not adjacent. Detached either way (the op records its own node).
Tensor kernel_input(const Tensor& x, const ReducePlan& p) {
  return p.perm.empty() ? x.detach() : dense_copy(permute(x.detach(), p.perm));
}
// A gradient the kernels wrote in their layout (kernel_shape), back in the input's layout.
Tensor input_layout(const Tensor& d, const ReducePlan& p) {
  return p.perm.empty() ? d : permute(d, p.inv);
}

void check_input(const Tensor& x, const char* op) { check_defined(x, op, "input"); }

// dout (out_shape) spread over the input's shape, in recorded ops (create_graph).
Tensor spread(const Tensor& g, const ReducePlan& p) {
  return expand(reshape(g, p.keep_shape), p.in_shape);
}

// dx (input shape) = dout (out_shape)·scale over the reduced dims (sum: 1, mean: 1/count).
Tensor spread_sum(const char* op, const Tensor& g, const ReducePlan& p, double scale) {
  if (creating_graph()) {
    const Tensor d = spread(g, p);
    return scale == 1.0 ? d.contiguous() : mul(d, scale);
  }
  Tensor d = Tensor::empty(p.kernel_shape, g.dtype(), g.device());
  kernels(op, g).reduce_sum_backward(cdt(g.dtype()), d.data_ptr(), g.data_ptr(), p.outer, p.red,
                                     p.inner, scale);
  return input_layout(d, p);
}

// The sum of x's kernel view xk over the plan, divided by divisor (mean), recorded as op.
Tensor sum_op(const char* op, const Tensor& x, const ReducePlan& p, double divisor) {
  Tensor xk = kernel_input(x, p);
  if (!is_floating(x.dtype())) {  // int64 and bool sum to int64, without a gradient
    if (xk.dtype() != kInt64) xk = xk.to(kInt64);
    Tensor out = Tensor::empty(p.out_shape, kInt64, x.device());
    kernels(op, x).reduce_sum(kern::DT::I64, out.data_ptr(), xk.data_ptr(), p.outer, p.red, p.inner,
                              1.0);
    return out;
  }
  Tensor out = Tensor::empty(p.out_shape, x.dtype(), x.device());
  kernels(op, x).reduce_sum(cdt(x.dtype()), out.data_ptr(), xk.data_ptr(), p.outer, p.red, p.inner,
                            divisor);
  if (needs_record({&x})) {
    // adds; backward broadcasts
    record(op, out, {x},
           RecordInfo()
               .flops(static_cast<double>(x.numel()), static_cast<double>(x.numel()))
               .saves_nothing()
               .differentiable(),
           [op, p, divisor](const Tensor& g) -> std::vector<Tensor> {
             return {spread_sum(op, g, p, 1.0 / divisor)};
           });
  }
  return out;
}

void check_nonempty(const ReducePlan& p, const char* op, const std::vector<int64_t>& dims) {
  if (p.count == 0 && p.out_numel > 0)
    throw Error(fmt::format("{}: cannot reduce input {} over dims {}: the reduced size is 0", op,
                            shape_str(p.in_shape), dims_str(dims)));
}
}  // namespace

// ---- sum, mean ----
// x (D...) -> out (D... without dims). int64 and bool inputs sum to int64 (no gradient).
Tensor sum(const Tensor& x_in, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  check_input(x, "sum");
  return sum_op("sum", x, make_plan("sum", x.shape(), dims, keepdim), 1.0);
}

Tensor mean(const Tensor& x_in, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  check_float(x, "mean", "input", true);
  ReducePlan p = make_plan("mean", x.shape(), dims, keepdim);
  return sum_op("mean", x, p, static_cast<double>(p.count));
}

// ---- max (amax) ----
// The gradient is shared evenly among the elements equal to the maximum. NaN propagates.
namespace {
// max or min (amax / amin): the kernels' extreme over the dims, its gradient shared evenly among
// ties (reduce_extreme_backward reads x == the extreme).
Tensor extreme(const char* op, kern::RedOp code, const Tensor& x_in, std::vector<int64_t> dims,
               bool keepdim) {
  const Tensor x = contig(x_in);
  check_input(x, op);
  if (x.dtype() == kBool)  // any / all, as PyTorch
    return extreme(op, code, x.to(kInt64), dims, keepdim).to(kBool);
  ReducePlan p = make_plan(op, x.shape(), dims, keepdim);
  check_nonempty(p, op, dims);
  Tensor xk = kernel_input(x, p);
  Tensor out = Tensor::empty(p.out_shape, x.dtype(), x.device());
  kernels(op, x).reduce_extreme(code, cdt(x.dtype()), out.data_ptr(), xk.data_ptr(), p.outer, p.red,
                                p.inner);
  if (needs_record({&x})) {
    RecordInfo info =
        RecordInfo().flops(static_cast<double>(x.numel()), 2 * static_cast<double>(x.numel()));
    // x, and the kernels' layout of it (xk) when that is a copy; the extreme, also in that layout
    Saved hx = info.save(x), hk = p.perm.empty() ? hx : info.save(xk);
    Saved hm = info.save_output(out);
    record(op, out, {x}, info.differentiable(),
           [op, p, hx, hk, hm](const Tensor& g) -> std::vector<Tensor> {
             const Tensor xd = hx.get(), xk = hk.get(), sm = hm.get();
             if (creating_graph()) {  // g shared among the ties: a constant weight, linear in g
               const Tensor hit = eq(xd, reshape(sm, p.keep_shape)).to(g.dtype());
               const Tensor n = sum(hit, p.red_dims, true);
               return {mul(spread(g, p), div(hit, n))};
             }
             Tensor d = Tensor::empty(p.kernel_shape, g.dtype(), g.device());
             kernels(op, g).reduce_extreme_backward(cdt(g.dtype()), d.data_ptr(), g.data_ptr(),
                                                    xk.data_ptr(), sm.data_ptr(), p.outer, p.red,
                                                    p.inner);
             return {input_layout(d, p)};
           });
  }
  return out;
}
}  // namespace

Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  return extreme("max", kern::RedOp::Max, x, std::move(dims), keepdim);
}
Tensor min(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  return extreme("min", kern::RedOp::Min, x, std::move(dims), keepdim);
}

// ---- var ----
// sum((x - mean)²) / (n - correction); d/dx = 2(x - mean) / (n - correction) · dout.
Tensor var(const Tensor& x_in, std::vector<int64_t> dims, bool keepdim, int64_t correction,
           Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  check_float(x, "var", "input", true);
  if (correction < 0)
    throw Error(fmt::format("var: correction must be >= 0, got {} (input {})", correction,
                            shape_str(x.shape())));
  ReducePlan p = make_plan("var", x.shape(), dims, keepdim);
  // PyTorch divides the value by max(0, n - correction) (0 gives inf or nan, as there) but its
  // backward by n - correction itself, negative when correction > n: both followed here.
  const double denom = std::max<double>(0.0, static_cast<double>(p.count - correction));
  const double gdenom = static_cast<double>(p.count - correction);
  Tensor xk = kernel_input(x, p);
  Tensor out = Tensor::empty(p.out_shape, x.dtype(), x.device());
  Tensor mu = Tensor::empty({p.out_numel}, kFloat64, x.device());  // the means, saved for backward
  kernels("var", x).reduce_var(cdt(x.dtype()), out.data_ptr(), static_cast<double*>(mu.data_ptr()),
                               xk.data_ptr(), p.outer, p.red, p.inner, denom);
  if (needs_record({&x})) {
    RecordInfo info =
        RecordInfo().flops(3 * static_cast<double>(x.numel()), 3 * static_cast<double>(x.numel()));
    // x, and the kernels' layout of it (xk) when that is a copy; the means
    Saved hx = info.save(x), hk = p.perm.empty() ? hx : info.save(xk), hm = info.save(mu);
    record("var", out, {x}, info.differentiable(),
           [p, hx, hk, hm, gdenom](const Tensor& g) -> std::vector<Tensor> {
             const Tensor xk = hk.get(), mu = hm.get();
             if (creating_graph()) {  // 2(x - mean) / (n - correction) · dout
               const Tensor xl = hx.get();
               const Tensor c = sub(xl, mean(xl, p.red_dims, true));
               return {mul(spread(g, p), mul(c, 2.0 / gdenom))};
             }
             Tensor d = Tensor::empty(p.kernel_shape, g.dtype(), g.device());
             kernels("var", g).reduce_var_backward(
                 cdt(g.dtype()), d.data_ptr(), g.data_ptr(), xk.data_ptr(),
                 static_cast<const double*>(mu.data_ptr()), p.outer, p.red, p.inner, gdenom);
             return {input_layout(d, p)};
           });
  }
  return out;
}

// ---- argmax ----
// int64 index of the first maximum along dim (NaN counts as the maximum); no gradient.
Tensor argmax(const Tensor& x_in, int64_t dim, bool keepdim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  check_input(x, "argmax");
  if (x.dtype() == kBool)
    throw Error(fmt::format("argmax: input {} has dtype bool, expected float32, float64 or int64",
                            shape_str(x.shape())));
  ReducePlan p = make_plan("argmax", x.shape(), {dim}, keepdim);  // one dim: always adjacent
  check_nonempty(p, "argmax", {dim});
  Tensor out = Tensor::empty(p.out_shape, kInt64, x.device());
  kernels("argmax", x)
      .argmax(cdt(x.dtype()), static_cast<int64_t*>(out.data_ptr()), x.data_ptr(), p.outer, p.red,
              p.inner);
  return out;
}

// ---- composed from the reductions above ----
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim, Site site) {
  SiteScope scope(site);
  check_input(x, "argmin");
  if (x.dtype() == kBool)
    throw Error(fmt::format("argmin: input {} has dtype bool, expected float32, float64 or int64",
                            shape_str(x.shape())));
  const ReducePlan p = make_plan("argmin", x.shape(), {dim}, keepdim);  // errors name argmin
  check_nonempty(p, "argmin", {dim});
  // the first index of the minimum (NaN counts as the minimum, as PyTorch): argmax of −x
  NoGradGuard ng;
  const Tensor xf = x.dtype() == kInt64 ? x.to(kFloat64) : x;
  return argmax(neg(xf), dim, keepdim);
}

// log Σ exp(x) over dims, shifted by the (detached) maximum; rows of −inf give −inf, a +inf
// gives +inf, as PyTorch. An empty reduction gives −inf (log of an empty sum, as PyTorch): the
// sum over the empty dims (0) minus inf, so the result stays on the tape and x gets its (empty)
// gradient.
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  check_float(x, "logsumexp", "input", true);
  if (is_reduced(x.dtype()))  // composed in float32 on recorded casts: rounded once
    return logsumexp(x.to(kFloat32), std::move(dims), keepdim, site).to(x.dtype());
  const ReducePlan p = make_plan("logsumexp", x.shape(), dims, keepdim);
  if (p.count == 0) return add(sum(x, dims, keepdim), -std::numeric_limits<double>::infinity());
  Tensor m = max(x, dims, true).detach();
  m = where(isinf(m), zeros_like(m), m);
  Tensor out = log(sum(exp(x - m), dims, true)) + m;
  return keepdim ? out : reshape(out, p.out_shape);
}

// sqrt(var) with PyTorch's gradient: 0 where the result is 0 (a constant row, one element with
// correction 0), where sqrt's infinite slope times var's zero gradient would give NaN; elsewhere
// var's backward of g / (2·std). The inner where keeps sqrt's argument off 0 in the branch the
// outer where discards, so no NaN leaks through it; a NaN variance stays NaN with a NaN gradient.
// Composed, so the recorded (create_graph) backward is this same rule and is 0 there too.
Tensor std(const Tensor& x, std::vector<int64_t> dims, bool keepdim, int64_t correction,
           Site site) {
  SiteScope scope(site);
  check_float(x, "std", "input", true);
  if (is_reduced(x.dtype()))  // composed in float32 on recorded casts: rounded once
    return tg::std(x.to(kFloat32), std::move(dims), keepdim, correction, site).to(x.dtype());
  const Tensor v = var(x, std::move(dims), keepdim, correction);
  const Tensor at_zero = eq(v.detach(), 0.0);
  const Tensor zero = zeros({}, v.dtype(), v.device()), one = ones({}, v.dtype(), v.device());
  return where(at_zero, zero, sqrt(where(at_zero, one, v)));
}

// (std, mean) in one call, PyTorch's order.
std::pair<Tensor, Tensor> std_mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
                                   int64_t correction, Site site) {
  SiteScope scope(site);
  return {tg::std(x, dims, keepdim, correction, site), mean(x, dims, keepdim, site)};
}

// Bool results; any dtype in (a number is true where it is not 0, NaN included); empty: all is
// true, any false.
Tensor all(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  check_input(x, "all");
  NoGradGuard ng;
  const Tensor b = x.dtype() == kBool ? x : ne(x, 0.0);
  return eq(sum(logical_not(b).to(kInt64), std::move(dims), keepdim), 0.0);
}
Tensor any(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  check_input(x, "any");
  NoGradGuard ng;
  const Tensor b = x.dtype() == kBool ? x : ne(x, 0.0);
  return gt(sum(b.to(kInt64), std::move(dims), keepdim), 0.0);
}

// ---- tests of values (bool, no gradient) ----
Tensor isnan(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "isnan", "input");
  if (!is_floating(x.dtype())) return zeros(x.shape(), kBool, x.device());
  return ne(x, x);
}
Tensor isinf(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "isinf", "input");
  if (!is_floating(x.dtype())) return zeros(x.shape(), kBool, x.device());
  NoGradGuard ng;
  return eq(abs(x), std::numeric_limits<double>::infinity());
}
Tensor isfinite(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "isfinite", "input");
  if (!is_floating(x.dtype())) return ones(x.shape(), kBool, x.device());
  NoGradGuard ng;
  return lt(abs(x), std::numeric_limits<double>::infinity());  // NaN: false
}

// ---- Tensor methods ----
Tensor Tensor::sum(Site site) const { return tg::sum(*this, {}, false, site); }
Tensor Tensor::sum(std::vector<int64_t> dims, bool keepdim, Site site) const {
  return tg::sum(*this, std::move(dims), keepdim, site);
}
Tensor Tensor::mean(Site site) const { return tg::mean(*this, {}, false, site); }
Tensor Tensor::mean(std::vector<int64_t> dims, bool keepdim, Site site) const {
  return tg::mean(*this, std::move(dims), keepdim, site);
}
Tensor Tensor::max(Site site) const { return tg::max(*this, {}, false, site); }
Tensor Tensor::max(std::vector<int64_t> dims, bool keepdim, Site site) const {
  return tg::max(*this, std::move(dims), keepdim, site);
}
Tensor Tensor::var(std::vector<int64_t> dims, bool keepdim, int64_t correction, Site site) const {
  return tg::var(*this, std::move(dims), keepdim, correction, site);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim, Site site) const {
  return tg::argmax(*this, dim, keepdim, site);
}

}  // namespace tg
