// ops/reduce/scan.cpp — running sums, products and extremes along one dim, and the product
// reduction, forward and backward side by side; the kernels are the table's scan_forward /
// scan_backward (ops/reduce/cpu/scan.cpp, cuda/scan.cu):
//   prod(x) / prod(x, dim, keepdim)   dx = g · Π of the others (prefix · suffix: exact with zeros)
//   cumsum(x, dim)                    running sum (int64 for int64 and bool, as PyTorch); dx = the
//                                     running sum of dout from the end
//   cumprod(x, dim)                   dx_k = Σ_{i>=k} g_i Π_{j<=i, j!=k} x_j
//   cummax / cummin(x, dim)           values and int64 indices (NaN stays; ties: later index);
//                                     dx = g summed into the indices
//   logcumsumexp(x, dim)              stable running log-sum-exp; dx_k = Σ_{i>=k} g_i e^{x_k - y_i}
// Floating inputs; prod and cumprod also take int64 and bool (int64 results that wrap modulo 2^64,
// no gradient, as PyTorch; on CUDA through CPU copies). 0-dim inputs act as 1-D of one element.
// Every op: check → allocate → kernel → record.
#include "ops/autocast/autocast.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <limits>
#include <type_traits>

namespace tg {
using namespace detail;

namespace {
struct Line {
  int64_t outer = 1, n = 1, inner = 1;
};

// create_graph: the backward in recorded ops on x (outer, n, inner), y and g, so it differentiates
// again (masks of x's values are constants):
//   cummax / cummin  g sent to the indices;
//   prod             g · the product of the others: exclusive prefix · exclusive suffix products
//                    (exact with zeros);
//   cumprod          cumprod_grad below (exact with zeros, and so is its own derivative);
//   logcumsumexp     Σ_{i>=k} g_i e^{x_k − y_i}, g's positive and negative parts summed in log
//                    space from the end (PyTorch's logcumsumexp_backward), so nothing overflows.
Tensor revcumsum(const Tensor& t) { return flip(cumsum(flip(t, {1}), 1), {1}); }
// cumprod's dx on lines (outer, n, inner), y = cumprod(x): before a line's first zero z the sum
// from the end of g·y over x; at z the same sum with x_z read as 1; after it x_z (0, but live:
// its derivative is what the rest depends on) times the gradient of the line with x_z read as 1,
// recursively until no zero is left.
Tensor cumprod_grad(const Tensor& x3, const Tensor& g3, const Tensor& y3) {
  const Tensor xd = x3.detach();
  const Tensor is_zero = eq(xd, 0.0);
  if (!any(is_zero).item<bool>()) return div(revcumsum(mul(g3, y3)), x3);
  const Tensor zero = zeros({}, x3.dtype(), x3.device()), one = ones({}, x3.dtype(), x3.device());
  const Tensor zeros_seen = cumsum(is_zero.to(x3.dtype()), 1);
  const Tensor before = eq(zeros_seen, 0.0);
  const Tensor first = logical_and(eq(zeros_seen, 1.0), is_zero);
  const Tensor lead = div(revcumsum(mul(g3, y3)), where(before, x3, one));
  const Tensor x1 = where(first, one, x3);
  const Tensor y1 = cumprod(x1, 1);
  const Tensor at_zero = revcumsum(mul(g3, y1));
  const Tensor xz = sum(where(first, x3, zero), {1}, true);
  const Tensor after = mul(xz, cumprod_grad(x1, g3, y1));
  return where(before, lead, where(first, at_zero, after));
}
Tensor scan_grad(kern::ScanOp code, const Line& l, const Tensor& x, const Tensor& y,
                 const Tensor& g, const Tensor& indices) {
  const Shape s3{l.outer, l.n, l.inner};
  if (code == kern::ScanOp::Cummax || code == kern::ScanOp::Cummin)
    return reshape(
        scatter_add(zeros(s3, g.dtype(), g.device()), 1, reshape(indices, s3), reshape(g, s3)),
        x.shape());
  if (l.n == 0) return zeros_like(x);
  const Tensor x3 = reshape(x, s3);
  const Tensor zero = zeros({}, x.dtype(), x.device()), one = ones({}, x.dtype(), x.device());
  if (code == kern::ScanOp::Prod) {
    const Tensor g3 = reshape(g, {l.outer, 1, l.inner});
    const Tensor ones3 = ones({l.outer, 1, l.inner}, x.dtype(), x.device());
    auto exclusive = [&](const Tensor& t) {  // (1, t0, t0·t1, ...) along dim 1
      return l.n == 1 ? ones3 : cat({ones3, cumprod(narrow(t, 1, 0, l.n - 1), 1)}, 1);
    };
    const Tensor others = mul(exclusive(x3), flip(exclusive(flip(x3, {1})), {1}));
    return reshape(mul(g3, others), x.shape());
  }
  const Tensor g3 = reshape(g, s3), y3 = reshape(y, s3), xd = x3.detach();
  if (code == kern::ScanOp::Cumprod) return reshape(cumprod_grad(x3, g3, y3), x.shape());
  // logcumsumexp
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor ninf = full({}, -inf, x.dtype(), x.device());
  auto part = [&](const Tensor& sel, const Tensor& mag) {  // e^{x_k} Σ_{i>=k} mag_i e^{−y_i}
    const Tensor lg = where(sel, log(where(sel, mag, one)), ninf);
    const Tensor r = flip(logcumsumexp(flip(sub(lg, y3), {1}), 1), {1});
    return exp(add(x3, r));
  };
  const Tensor gd = g3.detach();
  return reshape(sub(part(gt(gd, 0.0), g3), part(lt(gd, 0.0), neg(g3))), x.shape());
}
// x (0-dim: one element) seen as (outer, n, inner) around its dim `dim`, checked (floating, or
// int64 where ints_ok).
Line line_of(const Tensor& x, int64_t& dim, const char* op, bool ints_ok = false) {
  check_defined(x, op, "x");
  if (!ints_ok || x.dtype() != kInt64) check_float(x, op, "x", true);
  const Shape s = x.dim() == 0 ? Shape{1} : x.shape();
  dim = norm_dim(dim, static_cast<int64_t>(s.size()), op, x.shape());
  Line l;
  for (int64_t k = 0; k < dim; ++k) l.outer *= s[k];
  l.n = s[dim];
  for (size_t k = dim + 1; k < s.size(); ++k) l.inner *= s[k];
  return l;
}

// One scan: y of `shape` (and int64 indices for cummax / cummin), recorded with its backward.
// Returns {y, indices}.
ValuesIndices scan(const char* op, kern::ScanOp code, const Tensor& x, const Line& l,
                   const Shape& shape) {
  const bool ext = code == kern::ScanOp::Cummax || code == kern::ScanOp::Cummin;
  ValuesIndices r{Tensor::empty(shape, x.dtype(), x.device()),
                  ext ? Tensor::empty(shape, kInt64, x.device()) : Tensor()};
  if (x.numel() > 0 || code == kern::ScanOp::Prod)
    kernels(op, x).scan_forward(code, cdt(x.dtype()), r.values.data_ptr(),
                                ext ? static_cast<int64_t*>(r.indices.data_ptr()) : nullptr,
                                x.data_ptr(), l.outer, l.n, l.inner);
  if (!needs_record({&x})) return r;
  const bool keeps_y = code == kern::ScanOp::Cumprod || code == kern::ScanOp::Logcumsumexp;
  const double n = static_cast<double>(x.numel());
  RecordInfo info = RecordInfo().flops(n, 3.0 * n);
  Saved sx = info.save(x), sy = keeps_y ? info.save_output(r.values) : Saved();
  Saved si = ext ? info.save(r.indices) : Saved();
  record(op, r.values, {x}, info.differentiable(),
         [op, code, l, sx, sy, si](const Tensor& g_in) -> std::vector<Tensor> {
           const Tensor xd = sx.get(), yd = sy.get(), id = si.get();
           if (creating_graph()) return {scan_grad(code, l, xd, yd, g_in, id)};
           const Tensor g = g_in.contiguous();
           Tensor dx = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
           if (xd.numel() > 0)
             kernels(op, xd).scan_backward(
                 code, cdt(xd.dtype()), dx.data_ptr(), g.data_ptr(), xd.data_ptr(),
                 yd.defined() ? yd.data_ptr() : nullptr,
                 id.defined() ? static_cast<const int64_t*>(id.data_ptr()) : nullptr, l.outer, l.n,
                 l.inner);
           return {dx};
         });
  return r;
}
}  // namespace

// ---- cumsum: out_j = Σ_{j' <= j} x_j' along dim; dx_j = Σ_{j' >= j} dout_j' ----
Tensor cumsum(const Tensor& x_in, int64_t dim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  constexpr const char* op = "cumsum";
  check_defined(x, op, "x");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::cumsum, x, dim, site);
  const Shape xs = x.shape(), wx = xs.empty() ? Shape{1} : xs;
  const int64_t d = norm_dim(dim, static_cast<int64_t>(wx.size()), op, xs);
  Line a;  // x seen as (outer, n, inner) around d
  for (int64_t k = 0; k < d; ++k) a.outer *= wx[k];
  a.n = wx[d];
  for (size_t k = d + 1; k < wx.size(); ++k) a.inner *= wx[k];
  Tensor out = Tensor::empty(xs, is_floating(x.dtype()) ? x.dtype() : kInt64);  // like PyTorch
  if (is_reduced(x.dtype())) {  // the float32 scan on a float32 copy, rounded once
    NoGradGuard ng;
    out = narrow(cumsum(widen(x), dim), x.dtype());
  } else {
    dispatch_all(x.dtype(), "cumsum", [&](auto tag) {
      using T = decltype(tag);
      using O = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
      cpu::cumsum<T, O>(out.data<O>(), x.data<T>(), a.outer, a.n, a.inner, false);
    });
  }
  if (needs_record({&x})) {
    record(op, out, {x},
           RecordInfo()
               .flops(static_cast<double>(x.numel()), static_cast<double>(x.numel()))
               .saves_nothing()
               .differentiable(),
           [xs, a, dim](const Tensor& g) -> std::vector<Tensor> {
             if (creating_graph())  // the sum from the end: flip, cumsum, flip
               return {flip(cumsum(flip(g, {dim}), dim), {dim})};
             if (is_reduced(g.dtype())) {  // the sum from the end in float32, rounded once
               NoGradGuard ng;
               return {narrow(flip(cumsum(flip(widen(g), {dim}), dim), {dim}), g.dtype())};
             }
             Tensor dx = Tensor::empty(xs, g.dtype());
             dispatch_float(g.dtype(), "cumsum backward", [&](auto tag) {
               using T = decltype(tag);
               cpu::cumsum<T, T>(dx.data<T>(), g.data<T>(), a.outer, a.n, a.inner, true);
             });
             return {dx};
           });
  }
  return out;
}

// ---- prod, cumprod ----
namespace {
// prod (reduce: dim dropped or kept as 1) or cumprod of x along dim; bool counts as int64.
Tensor product(const char* op, kern::ScanOp code, const Tensor& x_in, int64_t dim, bool keepdim) {
  check_defined(x_in, op, "x");
  if (x_in.dtype() == kBool) return product(op, code, x_in.to(kInt64), dim, keepdim);
  if (x_in.dtype() == kInt64 && on_cuda(x_in)) {  // cuda/scan.cu has no int64 lines
    NoGradGuard ng;
    return product(op, code, x_in.to(kCPU), dim, keepdim).to(x_in.device());
  }
  const Tensor x = contig(x_in);
  const Line l = line_of(x, dim, op, true);
  Shape os = x.shape();
  if (code == kern::ScanOp::Prod && !os.empty()) {
    if (keepdim)
      os[dim] = 1;
    else
      os.erase(os.begin() + dim);
  }
  return scan(op, code, x, l, os).values;
}
}  // namespace

Tensor prod(const Tensor& x, int64_t dim, bool keepdim, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("prod", {&x})) return prod((*c)[0], dim, keepdim, site);
  return product("prod", kern::ScanOp::Prod, x, dim, keepdim);
}

Tensor prod(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "prod", "x");
  return prod(reshape(x, {-1}), 0, false, site);
}

Tensor cumprod(const Tensor& x, int64_t dim, Site site) {
  SiteScope scope(site);
  return product("cumprod", kern::ScanOp::Cumprod, x, dim, false);
}

ValuesIndices cummax(const Tensor& x_in, int64_t dim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Line l = line_of(x, dim, "cummax");
  return scan("cummax", kern::ScanOp::Cummax, x, l, x.shape());
}

ValuesIndices cummin(const Tensor& x_in, int64_t dim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Line l = line_of(x, dim, "cummin");
  return scan("cummin", kern::ScanOp::Cummin, x, l, x.shape());
}

Tensor logcumsumexp(const Tensor& x_in, int64_t dim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Line l = line_of(x, dim, "logcumsumexp");
  return scan("logcumsumexp", kern::ScanOp::Logcumsumexp, x, l, x.shape()).values;
}

}  // namespace tg
