// ops/diagonal.cpp — ops that pick elements by computed positions, built on index_select and
// scatter_add (so their gradients are those ops', scattered back exactly): diagonal, diag,
// unfold, and nonzero (int64 positions, no gradient; on CUDA counted and written by the device's
// kernels, cuda/nonzero.cu, with one read-back of the count). PyTorch's semantics and argument
// order; where PyTorch returns a view (diagonal, unfold), these return a copy: writing into the
// result does not reach the input. Deliberately not here: the index kernels (shape.cpp,
// indexing.cpp).
#include "ops/detail.hpp"
#include "ops/kernels.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace tg {
using namespace detail;

namespace {
Tensor index_vector(const std::vector<int64_t>& v, Device dev) {
  return tensor(v, {static_cast<int64_t>(v.size())}).to(dev);
}
// The permutation moving dims a and b (distinct, normalised) to the end, in that order.
std::vector<int64_t> to_end(int64_t n, int64_t a, int64_t b) {
  std::vector<int64_t> p;
  for (int64_t k = 0; k < n; ++k)
    if (k != a && k != b) p.push_back(k);
  p.push_back(a);
  p.push_back(b);
  return p;
}
}  // namespace

// Elements (i, i + offset) of dims dim1, dim2, as a last dim of length L; the other dims keep
// their order (PyTorch's diagonal).
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
  std::vector<int64_t> flat;  // positions in the (n1·n2) plane
  for (int64_t i = 0; i < L; ++i)
    flat.push_back(offset >= 0 ? i * n2 + i + offset : (i - offset) * n2 + i);
  Tensor moved = permute(x, to_end(x.dim(), a, b));
  Shape s = moved.shape();
  s.pop_back();
  s.back() = n1 * n2;
  Tensor plane = reshape(moved, s);
  return index_select(plane, -1, index_vector(flat, x.device()));
}

// 1-D x (n): the (n + |k|, n + |k|) matrix with x on diagonal k; 2-D x: its diagonal k (1-D).
Tensor diag(const Tensor& x, int64_t k, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "diag";
  check_defined(x, op, "x");
  if (x.dim() == 2) return diagonal(x, k, 0, 1, site);
  if (x.dim() != 1)
    throw Error(fmt::format("{}: x {} must be 1-D (makes a matrix) or 2-D (takes its diagonal)", op,
                            shape_str(x.shape())));
  const int64_t n = x.size(0), m = n + (k >= 0 ? k : -k);
  std::vector<int64_t> flat;
  for (int64_t i = 0; i < n; ++i) flat.push_back(k >= 0 ? i * m + i + k : (i - k) * m + i);
  Tensor out =
      scatter_add(zeros({m * m}, x.dtype(), x.device()), 0, index_vector(flat, x.device()), x);
  return reshape(out, {m, m});
}

// Windows of `size` along dim every `step`: dim becomes the window count (size(dim) - size) /
// step + 1 and a last dim of length size holds each window (PyTorch's Tensor.unfold).
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
  std::vector<int64_t> idx;
  for (int64_t w = 0; w < n; ++w)
    for (int64_t j = 0; j < size; ++j) idx.push_back(w * step + j);
  const Tensor xx = x.dim() == 0 ? reshape(x, {1}) : x;
  Tensor picked = index_select(xx, d, index_vector(idx, x.device()));  // dim d: n·size
  Shape s = xs;
  s[d] = n;
  s.insert(s.begin() + d + 1, size);
  Tensor windows = reshape(picked, s);  // (..., n, size, ...)
  std::vector<int64_t> p;
  for (int64_t k = 0; k < static_cast<int64_t>(s.size()); ++k)
    if (k != d + 1) p.push_back(k);
  p.push_back(d + 1);
  return permute(windows, p).contiguous();
}

// (count, ndim) int64: the multi-index of every element that is not 0, in row-major order.
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
