// ops/scan.cpp — running products and extremes along one dim, and the product reduction,
// forward and backward side by side; the kernels are the table's scan_forward / scan_backward
// (ops/cpu/scan.cpp, cuda/scan.cu):
//   prod(x) / prod(x, dim, keepdim)   dx = g · Π of the others (prefix · suffix: exact with zeros)
//   cumprod(x, dim)                   dx_k = Σ_{i>=k} g_i Π_{j<=i, j!=k} x_j
//   cummax / cummin(x, dim)           values and int64 indices (NaN stays; ties: later index);
//                                     dx = g summed into the indices
//   logcumsumexp(x, dim)              stable running log-sum-exp; dx_k = Σ_{i>=k} g_i e^{x_k - y_i}
//   std_mean(x, dims, ...)            (std, mean) in one call, PyTorch's order
// Floating inputs (an int64 prod / cumprod is PyTorch's too, but not here); 0-dim inputs act as
// 1-D of one element. Every op: check → allocate → kernel → record.
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/kernels.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

namespace tg {
using namespace detail;

namespace {
struct Line {
  int64_t outer = 1, n = 1, inner = 1;
};

// create_graph: the backward in recorded ops on x (outer, n, inner) and g. cummax / cummin send
// g to their indices; prod multiplies it by the product of the others, the exclusive prefix
// product times the exclusive suffix product (exact with zeros). cumprod and logcumsumexp have
// no recorded backward yet: their nodes are not marked differentiable, so the engine refuses.
Tensor scan_grad(kern::ScanOp code, const Line& l, const Tensor& x, const Tensor& g,
                 const Tensor& indices) {
  const Shape s3{l.outer, l.n, l.inner};
  if (code == kern::ScanOp::Cummax || code == kern::ScanOp::Cummin)
    return reshape(
        scatter_add(zeros(s3, g.dtype(), g.device()), 1, reshape(indices, s3), reshape(g, s3)),
        x.shape());
  if (l.n == 0) return zeros_like(x);
  const Tensor x3 = reshape(x, s3), g3 = reshape(g, {l.outer, 1, l.inner});
  const Tensor one = ones({l.outer, 1, l.inner}, x.dtype(), x.device());
  auto exclusive = [&](const Tensor& t) {  // (1, t0, t0·t1, ...) along dim 1
    return l.n == 1 ? one : cat({one, cumprod(narrow(t, 1, 0, l.n - 1), 1)}, 1);
  };
  const Tensor others = mul(exclusive(x3), flip(exclusive(flip(x3, {1})), {1}));
  return reshape(mul(g3, others), x.shape());
}
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
  RecordInfo info = RecordInfo().flops(n, 3.0 * n).saved(x);
  if (code == kern::ScanOp::Prod || ext) info.differentiable();
  record(op, r.values, {x}, info,
         [op, code, l, xd = x.detach(), yd = keeps_y ? r.values.detach() : Tensor(),
          id = r.indices](const Tensor& g_in) -> std::vector<Tensor> {
           if (creating_graph()) return {scan_grad(code, l, saved_input(xd, 0), g_in, id)};
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

// ---- prod ----
Tensor prod(const Tensor& x_in, int64_t dim, bool keepdim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Line l = line_of(x, dim, "prod");
  Shape os = x.shape();
  if (!os.empty()) {
    if (keepdim)
      os[dim] = 1;
    else
      os.erase(os.begin() + dim);
  }
  return scan("prod", kern::ScanOp::Prod, x, l, os).values;
}

Tensor prod(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "prod", "x");
  return prod(reshape(x, {-1}), 0, false, site);
}

Tensor cumprod(const Tensor& x_in, int64_t dim, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Line l = line_of(x, dim, "cumprod");
  return scan("cumprod", kern::ScanOp::Cumprod, x, l, x.shape()).values;
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

std::pair<Tensor, Tensor> std_mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim,
                                   int64_t correction, Site site) {
  SiteScope scope(site);
  return {tg::std(x, dims, keepdim, correction, site), mean(x, dims, keepdim, site)};
}

}  // namespace tg
