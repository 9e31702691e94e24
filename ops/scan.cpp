// ops/scan.cpp — running products and extremes along one dim, and the product reduction,
// forward and backward side by side (kernels: ops/cpu/scan.cpp):
//   prod(x) / prod(x, dim, keepdim)   dx = g · Π of the others (prefix · suffix: exact with zeros)
//   cumprod(x, dim)                   dx_k = Σ_{i>=k} g_i Π_{j<=i, j!=k} x_j
//   cummax / cummin(x, dim)           values and int64 indices (NaN stays; ties: later index);
//                                     dx = g summed into the indices
//   logcumsumexp(x, dim)              stable running log-sum-exp; dx_k = Σ_{i>=k} g_i e^{x_k - y_i}
//   std_mean(x, dims, ...)            (std, mean) in one call, PyTorch's order
// Floating inputs (an int64 prod / cumprod is PyTorch's too, but not here); 0-dim inputs act as
// 1-D of one element. CUDA inputs run on CPU copies (via_cpu, as ops/indexing.cpp's family).
#include "ops/cpu/kernels.hpp"
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

namespace tg {
using namespace detail;

namespace {
struct Line {
  int64_t outer = 1, n = 1, inner = 1;
};
// x (0-dim: one element) seen as (outer, n, inner) around its dim `dim`, checked.
Line line_of(const Tensor& x, int64_t& dim, const char* op) {
  check_defined(x, op, "x");
  check_float(x, op, "x", true);
  const Shape s = x.dim() == 0 ? Shape{1} : x.shape();
  dim = norm_dim(dim, static_cast<int64_t>(s.size()), op, x.shape());
  Line l;
  for (int64_t k = 0; k < dim; ++k) l.outer *= s[k];
  l.n = s[dim];
  for (size_t k = dim + 1; k < s.size(); ++k) l.inner *= s[k];
  return l;
}
}  // namespace

// ---- prod ----
Tensor prod(const Tensor& x_in, int64_t dim, bool keepdim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  constexpr const char* op = "prod";
  const Line l = line_of(x, dim, op);
  if (on_cuda(x))
    return via_cpu(x.device(), static_cast<Tensor (*)(const Tensor&, int64_t, bool, Site)>(&prod),
                   x, dim, keepdim, site);
  Shape os = x.shape();
  if (!os.empty()) {
    if (keepdim)
      os[dim] = 1;
    else
      os.erase(os.begin() + dim);
  }
  Tensor out = Tensor::empty(os, x.dtype());
  dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::prod_forward<T>(out.data<T>(), x.data<T>(), l.outer, l.n, l.inner);
  });
  if (needs_record({&x}))
    record(op, out, {x},
           RecordInfo()
               .flops(static_cast<double>(x.numel()), 3.0 * static_cast<double>(x.numel()))
               .saved(x),
           [xd = x.detach(), l](const Tensor& g_in) -> std::vector<Tensor> {
             const Tensor g = g_in.contiguous();
             Tensor dx = Tensor::empty(xd.shape(), xd.dtype());
             dispatch_float(xd.dtype(), "prod backward", [&](auto tag) {
               using T = decltype(tag);
               cpu::prod_backward<T>(dx.data<T>(), g.data<T>(), xd.data<T>(), l.outer, l.n,
                                     l.inner);
             });
             return {dx};
           });
  return out;
}

Tensor prod(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "prod", "x");
  return prod(reshape(x, {-1}), 0, false, site);
}

// ---- cumprod ----
Tensor cumprod(const Tensor& x_in, int64_t dim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  constexpr const char* op = "cumprod";
  const Line l = line_of(x, dim, op);
  if (on_cuda(x)) return via_cpu(x.device(), &tg::cumprod, x, dim, site);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::cumprod_forward<T>(out.data<T>(), x.data<T>(), l.outer, l.n, l.inner);
  });
  if (needs_record({&x}))
    record(op, out, {x},
           RecordInfo()
               .flops(static_cast<double>(x.numel()), 3.0 * static_cast<double>(x.numel()))
               .saved(x, out),
           [xd = x.detach(), yd = out.detach(), l](const Tensor& g_in) -> std::vector<Tensor> {
             const Tensor g = g_in.contiguous();
             Tensor dx = Tensor::empty(xd.shape(), xd.dtype());
             dispatch_float(xd.dtype(), "cumprod backward", [&](auto tag) {
               using T = decltype(tag);
               cpu::cumprod_backward<T>(dx.data<T>(), g.data<T>(), xd.data<T>(), yd.data<T>(),
                                        l.outer, l.n, l.inner);
             });
             return {dx};
           });
  return out;
}

// ---- cummax / cummin ----
namespace {
ValuesIndices cumext(const char* op, const Tensor& x_in, int64_t dim, bool max) {
  const Tensor x = contig(x_in);
  const Line l = line_of(x, dim, op);
  ValuesIndices r{Tensor::empty(x.shape(), x.dtype()), Tensor::empty(x.shape(), kInt64)};
  dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::cumext_forward<T>(r.values.data<T>(), r.indices.data<int64_t>(), x.data<T>(), l.outer, l.n,
                           l.inner, max);
  });
  if (needs_record({&x}))
    record(op, r.values, {x}, RecordInfo().flops(0, static_cast<double>(x.numel())).saved(),
           [idx = r.indices, l, xs = x.shape(),
            dt = x.dtype()](const Tensor& g_in) -> std::vector<Tensor> {
             const Tensor g = g_in.contiguous();
             Tensor dx = Tensor::empty(xs, dt);
             dispatch_float(dt, "cummax backward", [&](auto tag) {
               using T = decltype(tag);
               cpu::cumext_backward<T>(dx.data<T>(), g.data<T>(), idx.data<int64_t>(), l.outer, l.n,
                                       l.inner);
             });
             return {dx};
           });
  return r;
}
}  // namespace

ValuesIndices cummax(const Tensor& x, int64_t dim, Site site) {
  SiteScope scope(site);
  check_defined(x, "cummax", "x");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::cummax, x, dim, site);
  return cumext("cummax", x, dim, true);
}
ValuesIndices cummin(const Tensor& x, int64_t dim, Site site) {
  SiteScope scope(site);
  check_defined(x, "cummin", "x");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::cummin, x, dim, site);
  return cumext("cummin", x, dim, false);
}

// ---- logcumsumexp ----
Tensor logcumsumexp(const Tensor& x_in, int64_t dim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  constexpr const char* op = "logcumsumexp";
  const Line l = line_of(x, dim, op);
  if (on_cuda(x)) return via_cpu(x.device(), &tg::logcumsumexp, x, dim, site);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::logcumsumexp_forward<T>(out.data<T>(), x.data<T>(), l.outer, l.n, l.inner);
  });
  if (needs_record({&x}))
    record(op, out, {x},
           RecordInfo()
               .flops(3.0 * static_cast<double>(x.numel()), 4.0 * static_cast<double>(x.numel()))
               .saved(x, out),
           [xd = x.detach(), yd = out.detach(), l](const Tensor& g_in) -> std::vector<Tensor> {
             const Tensor g = g_in.contiguous();
             Tensor dx = Tensor::empty(xd.shape(), xd.dtype());
             dispatch_float(xd.dtype(), "logcumsumexp backward", [&](auto tag) {
               using T = decltype(tag);
               cpu::logcumsumexp_backward<T>(dx.data<T>(), g.data<T>(), xd.data<T>(), yd.data<T>(),
                                             l.outer, l.n, l.inner);
             });
             return {dx};
           });
  return out;
}

std::pair<Tensor, Tensor> std_mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
                                   int64_t correction, Site site) {
  SiteScope scope(site);
  return {tg::std(x, dims, keepdim, correction, site), mean(x, dims, keepdim, site)};
}

}  // namespace tg
