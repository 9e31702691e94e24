// ops/index/gather.cpp — indexing and sampling ops, forward and backward side by side:
//   gather(x, dim, index)               out (index's shape) = x picked along dim by index;
//                                       dx = dout scatter-added into x's shape
//   scatter_add(x, dim, index, src)     out = x with src added at index along dim;
//                                       dx = dout, dsrc = dout gathered at index
//   topk, sort, argsort                 values and int64 indices along dim; dx = dvalues put back
//                                       at the chosen positions, zero elsewhere
//   tril, triu(x, diagonal)             the last two dims (N, C) of (B..., N, C) masked; dx = the
//                                       same mask of dout
//   one_hot, multinomial                int64 results, no gradient
// Every op: check → allocate → kernel (ops/index/cpu/indexing.cpp) → record. Shape vocabulary: a
// tensor seen around one dim is (outer, n, inner); N rows, C categories or columns, B batch.
// Semantics and argument names are PyTorch's; where they differ: scatter_add's dsrc has src's
// shape, zero where index does not reach (PyTorch 1.13 fails when src is larger than index); topk
// breaks ties by the lower index, like a stable sort, and sorted = false returns the chosen k in
// index order. 0-dim inputs act as 1-D of one element (dims 0 and -1), like PyTorch.
// CUDA: no kernels of this family yet. An input on a CUDA device goes through via_cpu
// (ops/core/cuda_dispatch.hpp, the one fallback): the op runs on CPU copies and its outputs return
// to the device, gradients flowing back through both copies; multinomial therefore always draws
// from the CPU generator, so one seed gives the same draws on every device. Deliberately not here:
// index_select (shape.cpp), embedding (embedding.cpp), scatter without add, in-place variants.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/ops.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace tg {
using namespace detail;

namespace {
// A tensor seen as (outer, n, inner) around dim d.
struct Around {
  int64_t outer = 1, n = 1, inner = 1;
};
Around around(const Shape& s, int64_t d) {
  Around a;
  for (int64_t k = 0; k < d; ++k) a.outer *= s[k];
  a.n = s[d];
  for (size_t k = d + 1; k < s.size(); ++k) a.inner *= s[k];
  return a;
}

// The shape the kernels see: a 0-dim tensor is 1-D of one element.
Shape working(const Shape& s) { return s.empty() ? Shape{1} : s; }

// "[i,j,...]": the multi-index of flat position k in shape s, for error messages.
std::string position_str(int64_t k, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = k % s[d];
    k /= s[d];
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

// Every value of index (CPU, int64) lies in [0, size); `what` says what the range is of.
void check_range(const char* op, const Tensor& index, int64_t size, const std::string& what) {
  const int64_t* pi = index.data<int64_t>();
  for (int64_t k = 0; k < index.numel(); ++k)
    if (pi[k] < 0 || pi[k] >= size)
      throw Error(fmt::format("{}: index value {} at {} is out of range [0, {}) for {} (index {})",
                              op, pi[k], position_str(k, index.shape()), size, what,
                              shape_str(index.shape())));
}
}  // namespace

// ---- scatter's shape rules (scatter_add here, scatter and scatter_reduce in scatter.cpp) ----
int64_t detail::scatter_shapes(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                               const Tensor& src) {
  const Shape xs = x.shape(), is = index.shape(), ss = src.shape();
  if (index.dim() != x.dim() || src.dim() != x.dim())
    throw Error(fmt::format("{}: x {}, index {} and src {}: index and src must have x's ndim {}",
                            op, shape_str(xs), shape_str(is), shape_str(ss), x.dim()));
  const Shape wx = working(xs), wi = working(is), ws = working(ss);
  const int64_t d = norm_dim(dim, static_cast<int64_t>(wx.size()), op, xs);
  for (size_t k = 0; k < wx.size(); ++k) {
    if (wi[k] > ws[k])
      throw Error(
          fmt::format("{}: index {} and src {}: index size {} at dim {} exceeds src's size "
                      "{} (x {})",
                      op, shape_str(is), shape_str(ss), wi[k], k, ws[k], shape_str(xs)));
    if (static_cast<int64_t>(k) != d && wi[k] > wx[k])
      throw Error(fmt::format(
          "{}: x {} and index {}: index size {} at dim {} exceeds x's size {} (only dim {} may "
          "be larger; src {})",
          op, shape_str(xs), shape_str(is), wi[k], k, wx[k], d, shape_str(ss)));
  }
  check_range(op, index.device().is_cuda() ? index.to(kCPU) : index, wx[d],
              fmt::format("dim {} of x {}", d, shape_str(xs)));
  return d;
}

// ---- gather: out[i][j][k] = x[i][index[i][j][k]][k] (dim 1) ----
Tensor gather(const Tensor& x_in, int64_t dim, const Tensor& index_in, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Tensor index = contig(index_in);
  constexpr const char* op = "gather";
  check_defined(x, op, "x");
  check_dtype(index, kInt64, op, "index", true);
  check_same_device(x, index, op, "x", "index");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::gather, x, dim, index, site);
  const Shape xs = x.shape(), is = index.shape();
  if (index.dim() != x.dim())
    throw Error(fmt::format("{}: x {} and index {}: index must have x's ndim {}", op, shape_str(xs),
                            shape_str(is), x.dim()));
  const Shape wx = working(xs), wi = working(is);
  const int64_t d = norm_dim(dim, static_cast<int64_t>(wx.size()), op, xs);
  for (size_t k = 0; k < wx.size(); ++k)
    if (static_cast<int64_t>(k) != d && wi[k] > wx[k])
      throw Error(fmt::format(
          "{}: x {} and index {}: index size {} at dim {} exceeds x's size {} (only dim {} may "
          "be larger)",
          op, shape_str(xs), shape_str(is), wi[k], k, wx[k], d));
  check_range(op, index, wx[d], fmt::format("dim {} of x {}", d, shape_str(xs)));
  Tensor out = Tensor::empty(is, x.dtype());
  dispatch_moves(x.dtype(), "gather", [&](auto tag) {
    using T = decltype(tag);
    cpu::gather<T>(static_cast<T*>(out.data_ptr()), contiguous_strides(wi),
                   static_cast<const T*>(x.data_ptr()), contiguous_strides(wx),
                   index.data<int64_t>(), wi, d);
  });
  if (needs_record({&x})) {
    RecordInfo info = RecordInfo().flops(0, 0);
    Saved hi = info.save(index);
    // data movement only
    record(op, out, {x}, info.differentiable(),
           [xs, d, hi](const Tensor& g) -> std::vector<Tensor> {
             const Tensor si = hi.get();
             return {scatter_add(zeros(xs, g.dtype()), d, si, g)};
           });
  }
  return out;
}

// ---- scatter_add: out = x; out[i][index[i][j]] += src[i][j] (dim 1) ----
Tensor scatter_add(const Tensor& x_in, int64_t dim, const Tensor& index_in, const Tensor& src_in,
                   Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Tensor index = contig(index_in);
  const Tensor src = contig(src_in);
  constexpr const char* op = "scatter_add";
  check_defined(x, op, "x");
  check_dtype(index, kInt64, op, "index", true);
  check_defined(src, op, "src");
  check_same_device(x, index, op, "x", "index");
  check_same_device(x, src, op, "x", "src");
  if (x.dtype() == kBool)
    throw Error(fmt::format("{}: x {} has dtype bool, expected float32, float64 or int64", op,
                            shape_str(x.shape())));
  check_same_dtype(x, src, op, "x", "src");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::scatter_add, x, dim, index, src, site);
  const int64_t d = scatter_shapes(op, x, dim, index, src);
  const Shape xs = x.shape(), ss = src.shape(), wx = working(xs), ws = working(ss),
              wi = working(index.shape());
  Tensor out = Tensor::empty(xs, x.dtype());
  if (is_reduced(x.dtype())) {  // summed in float32, each element rounded once
    NoGradGuard ng;
    out = narrow(scatter_add(widen(x), dim, index, widen(src)), x.dtype());
  } else {
    std::memcpy(out.data_ptr(), x.data_ptr(), x.numel() * dtype_size(x.dtype()));
  }
  if (!is_reduced(x.dtype()))
    dispatch_all(x.dtype(), "scatter_add", [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>)
        cpu::scatter_add<T>(out.data<T>(), contiguous_strides(wx), src.data<T>(),
                            contiguous_strides(ws), index.data<int64_t>(), wi, d);
    });
  if (needs_record({&x, &src})) {
    const bool gsrc = src.requires_grad();
    RecordInfo info =
        RecordInfo().flops(static_cast<double>(index.numel()), static_cast<double>(index.numel()));
    Saved hi = info.save(index);
    record(op, out, {x, src}, info.differentiable(),
           [xs, wx, ss, d, hi, gsrc](const Tensor& g) -> std::vector<Tensor> {
             const Tensor si = hi.get();
             if (!gsrc) return {g, Tensor()};
             Tensor dsrc = zeros(ss, g.dtype());  // src's shape; zero where index does not reach
             dispatch_moves(g.dtype(), "scatter_add backward", [&](auto tag) {
               using T = decltype(tag);
               cpu::gather<T>(static_cast<T*>(dsrc.data_ptr()), contiguous_strides(working(ss)),
                              static_cast<const T*>(g.data_ptr()), contiguous_strides(wx),
                              si.data<int64_t>(), working(si.shape()), d);
             });
             // its adjoint reads src only where index reaches, as dsrc is nonzero only there
             return {g,
                     record_adjoint("scatter_add_backward", dsrc, g, [xs, d, si](const Tensor& gg) {
                       return scatter_add(zeros(xs, gg.dtype()), d, si, gg);
                     })};
           });
  }
  return out;
}

// ---- sort, argsort, topk ----
namespace {
// The first k of x's order along dim (descending or ascending, NaN the largest, ties by lower
// index; sorted = false: the k in index order): values (x's dtype) and indices (int64), x's shape
// with k along dim. A 0-dim x gives 0-dim results (x and 0) for k 0 or 1, like PyTorch.
// record_values: values get a node, dx = dvalues scattered back to the chosen positions.
ValuesIndices sort_kernel(const char* op, const Tensor& x_in, int64_t dim, int64_t k,
                          bool descending, bool sorted, bool record_values) {
  const Tensor x = contig(x_in);
  const Shape xs = x.shape(), wx = working(xs);
  const int64_t d = norm_dim(dim, static_cast<int64_t>(wx.size()), op, xs);
  const Around a = around(wx, d);
  Shape os = xs;
  if (!os.empty()) os[d] = k;
  const int64_t kk = xs.empty() ? 1 : k;  // the kernel's k
  ValuesIndices r{Tensor::empty(os, x.dtype()), Tensor::empty(os, kInt64)};
  if (is_reduced(x.dtype())) {  // sorted as float32 (exact), the values moved back unrounded
    r = sort_kernel(op, widen(x), dim, k, descending, sorted, false);
    r.values = narrow(r.values, x.dtype());
  } else
    dispatch_all(x.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      cpu::sort_rows<T>(r.values.data<T>(), r.indices.data<int64_t>(), x.data<T>(), a.outer, a.n,
                        a.inner, kk, descending, sorted);
    });
  if (record_values && needs_record({&x})) {
    RecordInfo info = RecordInfo().flops(0, 0);
    Saved hi = info.save(r.indices);
    // data movement only
    record(op, r.values, {x}, info.differentiable(),
           [xs, d, hi](const Tensor& g) -> std::vector<Tensor> {
             const Tensor si = hi.get();
             return {scatter_add(zeros(xs, g.dtype()), d, si, g)};
           });
  }
  return r;
}
}  // namespace

ValuesIndices sort(const Tensor& x, int64_t dim, bool descending, Site site) {
  SiteScope scope(site);
  check_defined(x, "sort", "x");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::sort, x, dim, descending, site);
  const Shape wx = working(x.shape());
  const int64_t n = wx[norm_dim(dim, static_cast<int64_t>(wx.size()), "sort", x.shape())];
  return sort_kernel("sort", x, dim, n, descending, true, true);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, Site site) {
  SiteScope scope(site);
  check_defined(x, "argsort", "x");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::argsort, x, dim, descending, site);
  const Shape wx = working(x.shape());
  const int64_t n = wx[norm_dim(dim, static_cast<int64_t>(wx.size()), "argsort", x.shape())];
  return sort_kernel("argsort", x, dim, n, descending, true, false).indices;
}

ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "topk";
  check_defined(x, op, "x");
  if (on_cuda(x)) return via_cpu(x.device(), &tg::topk, x, k, dim, largest, sorted, site);
  const Shape wx = working(x.shape());
  const int64_t d = norm_dim(dim, static_cast<int64_t>(wx.size()), op, x.shape());
  if (k < 0 || k > wx[d])
    throw Error(fmt::format("{}: k {} is out of range [0, {}] for dim {} of x {}", op, k, wx[d], d,
                            shape_str(x.shape())));
  return sort_kernel(op, x, d, k, largest, sorted, true);
}

// ---- tril / triu: x (B..., N, C) keeps (r, c) with c - r <= diagonal (tril) or >= (triu) ----
namespace {
Tensor triangle(const char* op, const Tensor& x_in, int64_t diagonal, bool lower) {
  const Tensor x = contig(x_in);
  check_defined(x, op, "x");
  if (x.dim() < 2)
    throw Error(
        fmt::format("{}: x {} must have at least 2 dims (B..., N, C)", op, shape_str(x.shape())));
  if (on_cuda(x)) return via_cpu(x.device(), &triangle, op, x, diagonal, lower);
  const Shape xs = x.shape();
  const int64_t n = x.dim(), N = xs[n - 2], C = xs[n - 1];
  const int64_t B = around(xs, n - 2).outer;
  Tensor out = Tensor::empty(xs, x.dtype());
  dispatch_moves(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::triangle<T>(static_cast<T*>(out.data_ptr()), static_cast<const T*>(x.data_ptr()), B, N, C,
                     diagonal, lower);
  });
  if (needs_record({&x})) {
    // a mask: no arithmetic
    record(op, out, {x}, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
           [op, diagonal, lower](const Tensor& g) -> std::vector<Tensor> {
             return {triangle(op, g, diagonal, lower)};
           });
  }
  return out;
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal, Site site) {
  SiteScope scope(site);
  return triangle("tril", x, diagonal, true);
}
Tensor triu(const Tensor& x, int64_t diagonal, Site site) {
  SiteScope scope(site);
  return triangle("triu", x, diagonal, false);
}

// ---- one_hot: index int64 (...) -> int64 (..., C), out[..., index[...]] = 1 ----
Tensor one_hot(const Tensor& index_in, int64_t num_classes, Site site) {
  SiteScope scope(site);
  const Tensor index = contig(index_in);
  constexpr const char* op = "one_hot";
  check_dtype(index, kInt64, op, "index", true);
  if (on_cuda(index)) return via_cpu(index.device(), &tg::one_hot, index, num_classes, site);
  const Shape is = index.shape();
  if (num_classes < -1)
    throw Error(
        fmt::format("{}: num_classes must be -1 (the largest value + 1) or >= 0, got {} "
                    "(index {})",
                    op, num_classes, shape_str(is)));
  const int64_t n = index.numel();
  const int64_t* pi = index.data<int64_t>();
  int64_t C = num_classes;
  if (C == -1) {
    if (n == 0)
      throw Error(fmt::format("{}: cannot infer num_classes from an empty index {}; pass it", op,
                              shape_str(is)));
    C = std::max<int64_t>(0, *std::max_element(pi, pi + n) + 1);
  }
  check_range(op, index, C,
              num_classes == -1 ? fmt::format("num_classes {} (the largest value + 1)", C)
                                : fmt::format("num_classes {}", C));
  Shape os = is;
  os.push_back(C);
  Tensor out = zeros(os, kInt64);
  int64_t* po = out.data<int64_t>();
  for (int64_t k = 0; k < n; ++k) po[k * C + pi[k]] = 1;
  return out;
}

// ---- multinomial: probs (C) or (N, C) -> int64 (num_samples) or (N, num_samples) ----
namespace {
// Each entry finite and >= 0; each row with a positive entry and, without replacement, at least
// num_samples of them.
template <typename T>
void check_probs(const Tensor& probs, int64_t N, int64_t C, int64_t num_samples, bool replacement) {
  constexpr const char* op = "multinomial";
  const T* p = probs.data<T>();
  const std::string ps = shape_str(probs.shape());
  for (int64_t r = 0; r < N; ++r) {
    int64_t positive = 0;
    for (int64_t c = 0; c < C; ++c) {
      const T v = p[r * C + c];
      if (!std::isfinite(v) || v < 0)
        throw Error(
            fmt::format("{}: probs {} has the entry {} at {}; probabilities must be finite "
                        "and non-negative",
                        op, ps, v, position_str(r * C + c, probs.shape())));
      positive += v > 0;
    }
    if (positive == 0)
      throw Error(
          fmt::format("{}: row {} of probs {} is all zero; every row needs a positive "
                      "probability",
                      op, r, ps));
    if (!replacement && num_samples > positive)
      throw Error(
          fmt::format("{}: cannot draw {} samples without replacement from row {} of probs "
                      "{}, which has {} non-zero categories",
                      op, num_samples, r, ps, positive));
  }
}
}  // namespace

Tensor multinomial(const Tensor& probs_in, int64_t num_samples, bool replacement, Site site) {
  SiteScope scope(site);
  const Tensor probs = widen(contig(probs_in));  // bfloat16 / float16: drawn from float32 copies
  constexpr const char* op = "multinomial";
  check_float(probs, op, "probs", true);
  if (on_cuda(probs))
    return via_cpu(probs.device(), &tg::multinomial, probs, num_samples, replacement, site);
  const Shape ps = probs.shape();
  if (probs.dim() != 1 && probs.dim() != 2)
    throw Error(fmt::format("{}: probs {} must be (C) or (N, C)", op, shape_str(ps)));
  const int64_t N = probs.dim() == 2 ? ps[0] : 1, C = ps.back();
  if (C == 0) throw Error(fmt::format("{}: probs {} has no categories (C = 0)", op, shape_str(ps)));
  if (num_samples <= 0)
    throw Error(fmt::format("{}: num_samples must be positive, got {} (probs {})", op, num_samples,
                            shape_str(ps)));
  Tensor out = Tensor::empty(probs.dim() == 2 ? Shape{N, num_samples} : Shape{num_samples}, kInt64);
  dispatch_float(probs.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    check_probs<T>(probs, N, C, num_samples, replacement);
    cpu::multinomial<T>(out.data<int64_t>(), probs.data<T>(), N, C, num_samples, replacement,
                        default_generator());
  });
  return out;
}

}  // namespace tg
