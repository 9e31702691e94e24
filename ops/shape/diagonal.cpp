// ops/shape/diagonal.cpp — ops that pick elements by computed positions: diagonal and unfold (strided
// views of x, as PyTorch's: writes into them reach x; their gradients scatter back, unfold's
// overlapping windows adding up), diag (1-D: built by scatter_add; 2-D: a copy of diagonal), and
// nonzero (int64 positions, no gradient; on CUDA counted and written by the device's kernels,
// cuda/nonzero.cu, with one read-back of the count). PyTorch's semantics and argument order.
// Deliberately not here: the index kernels (shape.cpp, indexing.cpp).
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

namespace tg {
using namespace detail;

namespace {
Tensor index_vector(const std::vector<int64_t>& v, Device dev) {
  return tensor(v, {static_cast<int64_t>(v.size())}).to(dev);
}
}  // namespace

// Elements (i, i + offset) of dims dim1, dim2, as a last dim of length L; the other dims keep
// their order (PyTorch's diagonal): a view, so writes into it reach x (x.diagonal().fill_(0)), its
// last stride the sum of the two dims' strides; dx scatters dout onto the diagonal (the elements
// are distinct: view_scatter).
Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "diagonal";
  check_defined(x, op, "x");
  if (x.dim() < 2)
    throw Error(fmt::format("{}: x {} needs at least 2 dims", op, shape_str(x.shape())));
  const int64_t a = norm_dim(dim1, x.dim(), op, x.shape()),
                b = norm_dim(dim2, x.dim(), op, x.shape());
  if (a == b)
    throw Error(fmt::format("{}: dim1 {} and dim2 {} are the same dim of x {}", op, dim1, dim2,
                            shape_str(x.shape())));
  const int64_t n1 = x.size(a), n2 = x.size(b);
  const int64_t L =
      std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  // The view's strides over st (x's, or row-major ones for the gradient), and its first element.
  auto layout = [&](const Shape& st, int64_t& start) {
    Shape vs;
    for (int64_t k = 0; k < x.dim(); ++k)
      if (k != a && k != b) vs.push_back(st[k]);
    vs.push_back(st[a] + st[b]);
    start = L == 0 ? 0 : offset >= 0 ? offset * st[b] : -offset * st[a];
    return vs;
  };
  Shape os;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (k != a && k != b) os.push_back(x.size(k));
  os.push_back(L);
  int64_t start = 0;
  const Shape st = layout(x.strides(), start);
  Tensor out = make_view(x, os, st, x.impl()->offset + start);
  if (needs_record({&x})) {
    const Shape xs = x.shape();
    int64_t goff = 0;
    const Shape gst = layout(contiguous_strides(xs), goff);
    // data movement only
    record(op, out, {x}, RecordInfo().flops(0, 0).saves_nothing().watch(x).differentiable(),
           [xs, gst, goff](const Tensor& g) -> std::vector<Tensor> {
             return {view_scatter(g, xs, gst, goff)};
           });
  }
  return out;
}

// 1-D x (n): the (n + |k|, n + |k|) matrix with x on diagonal k; 2-D x: its diagonal k (1-D).
Tensor diag(const Tensor& x, int64_t k, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "diag";
  check_defined(x, op, "x");
  if (x.dim() == 2) return diagonal(x, k, 0, 1, site).clone();  // torch.diag copies
  if (x.dim() != 1)
    throw Error(fmt::format("{}: x {} must be 1-D (makes a matrix) or 2-D (takes its diagonal)", op,
                            shape_str(x.shape())));
  const int64_t n = x.size(0);
  int64_t m = 0, mm = 0;  // the matrix (m, m), checked before it is allocated
  if (k == std::numeric_limits<int64_t>::min() || __builtin_add_overflow(n, k >= 0 ? k : -k, &m) ||
      __builtin_mul_overflow(m, m, &mm))
    throw Error(fmt::format("{}: diagonal {} of x {} makes a matrix with more than 2^63 elements",
                            op, k, shape_str(x.shape())));
  std::vector<int64_t> flat;
  for (int64_t i = 0; i < n; ++i) flat.push_back(k >= 0 ? i * m + i + k : (i - k) * m + i);
  Tensor out =
      scatter_add(zeros({m * m}, x.dtype(), x.device()), 0, index_vector(flat, x.device()), x);
  return reshape(out, {m, m});
}

// Windows of `size` along dim every `step`: dim becomes the window count (size(dim) - size) /
// step + 1 and a last dim of length size holds each window (PyTorch's Tensor.unfold): a view
// (window w's element j is x's element w·step + j along dim), so writes reach x. dx sums each
// window's gradient back: a strided scatter when windows do not overlap (step >= size), else
// scatter_add along dim (overlapping windows add up).
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "unfold";
  check_defined(x, op, "x");
  const Shape xs = x.dim() == 0 ? Shape{1} : x.shape();
  const int64_t d = norm_dim(dim, static_cast<int64_t>(xs.size()), op, x.shape());
  if (size < 0 || size > xs[d] || step < 1)
    throw Error(fmt::format("{}: size {} must be in [0, {}] (dim {} of x {}) and step {} >= 1", op,
                            size, xs[d], d, shape_str(x.shape()), step));
  const int64_t n = (xs[d] - size) / step + 1;
  const Tensor xx = x.dim() == 0 ? reshape(x, {1}) : x;
  Shape os = xs, st = xx.strides();
  os[d] = n;
  os.push_back(size);
  st.push_back(st[d]);
  st[d] *= step;
  Tensor out = make_view(xx, os, st, xx.impl()->offset);
  if (needs_record({&xx})) {
    const Shape gs = xs;
    Shape gst = contiguous_strides(gs);
    gst.push_back(gst[d]);
    gst[d] *= step;
    record(op, out, {xx}, RecordInfo().flops(0, 0).saves_nothing().watch(xx).differentiable(),
           [gs, gst, d, n, size, step](const Tensor& g) -> std::vector<Tensor> {
             if (step >= size || n <= 1 || size == 0) return {view_scatter(g, gs, gst, 0)};
             // (..., n, ..., size) -> (..., n·size, ...): window elements along dim, then added
             // into x's positions w·step + j
             std::vector<int64_t> p;
             const int64_t nd = static_cast<int64_t>(gs.size());
             for (int64_t k = 0; k < nd; ++k) {
               p.push_back(k);
               if (k == d) p.push_back(nd);
             }
             Shape ws = gs;
             ws[d] = n * size;
             const Tensor w = reshape(permute(g, p), ws);
             std::vector<int64_t> pos;
             for (int64_t i = 0; i < n; ++i)
               for (int64_t j = 0; j < size; ++j) pos.push_back(i * step + j);
             Shape is(static_cast<size_t>(nd), 1);
             is[d] = n * size;
             const Tensor idx = expand(reshape(index_vector(pos, g.device()), is), ws);
             return {scatter_add(zeros(gs, g.dtype(), g.device()), d, idx.contiguous(), w)};
           });
  }
  return x.dim() == 0 ? reshape(out, {size}) : out;
}

Tensor nonzero(const Tensor& x_in, Site site) {
  SiteScope scope(site);
  check_defined(x_in, "nonzero", "x");
  if (on_cuda(x_in) && x_in.dim() >= 1 && x_in.dim() <= kern::kMaxDims) {
    // counted and written on the device (cuda/nonzero.cu); only the count comes back
    const Tensor nz = ne(x_in, 0.0).contiguous();  // bool, also true for NaN
    const Device dev = x_in.device();
    const int64_t n = nz.numel();
    Tensor offsets = Tensor::empty({kern::nonzero_chunks(n) + 1}, kInt64, dev);
    const auto* mask = static_cast<const bool*>(nz.data_ptr());
    const int64_t count =
        kernels("nonzero", dev).nonzero_count(mask, n, static_cast<int64_t*>(offsets.data_ptr()));
    Tensor out = Tensor::empty({count, x_in.dim()}, kInt64, dev);
    kern::Strided st;
    st.ndim = static_cast<int>(x_in.dim());
    for (int k = 0; k < st.ndim; ++k) st.shape[k] = x_in.size(k);
    if (count > 0)
      kernels("nonzero", dev)
          .nonzero_write(static_cast<int64_t*>(out.data_ptr()), mask, n,
                         static_cast<const int64_t*>(offsets.data_ptr()), st);
    return out;
  }
  const Tensor x = x_in.to(kCPU).contiguous();
  const Tensor nz = ne(x, 0.0);  // bool, also true for NaN
  const bool* p = nz.data<bool>();
  const Shape s = x.shape();
  const int64_t nd = x.dim();
  std::vector<int64_t> out;
  for (int64_t e = 0; e < x.numel(); ++e) {
    if (!p[e]) continue;
    int64_t r = e;
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(nd));
    for (int64_t k = nd; k-- > 0;) {
      out[at + static_cast<size_t>(k)] = r % s[k];
      r /= s[k];
    }
  }
  const int64_t count =
      nd == 0 ? (x.numel() == 1 && p[0] ? 1 : 0) : static_cast<int64_t>(out.size()) / nd;
  return tensor(out, {count, nd}).to(x_in.device());
}

}  // namespace tg
