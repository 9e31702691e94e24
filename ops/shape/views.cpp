// ops/shape/views.cpp — the view ops, forward and backward side by side, and their Tensor methods.
//
// Views share storage, as in PyTorch: one helper (make_view) gives a new TensorImpl on x's
// storage with its own offset, shape and strides. reshape/view/flatten/squeeze/unsqueeze keep
// the memory order (a view whenever the strides allow: always for a contiguous input; reshape
// copies otherwise, view refuses); transpose/permute/t reorder strides; expand gives stride 0;
// narrow/slice/select move the offset and scale a stride. A view's node watches its input's
// version (RecordInfo::watch): after an in-place write to the storage, its values are the new
// ones while its history is the old one, so its backward throws rather than send a wrong
// gradient (PyTorch regenerates such a view's grad_fn instead). Each view's backward maps the
// (contiguous) gradient back: reshape, the inverse permutation, sum_to, or a scatter into zeros
// (the one strided scatter, cpu::strided_copy).
// Deliberately not here: joining and splitting (join.cpp), index_select (ops/index/select.cpp),
// einops-style rearrange (rearrange.cpp), reductions (ops/reduce/), indexing with
// integers/ranges/None (ops/index/index.cpp), in-place writes (ops/inplace/).
#include "autograd/copy_detail.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/ops.hpp"

#include <fmt/ranges.h>

#include <cstring>

namespace tg {
using namespace detail;

namespace {}  // namespace

// The adjoint of a view that selects distinct elements: dx = 0 of shape in_shape (row-major),
// dx[offset + Σ idx[d]·st[d]] = g[idx] over g's shape.
namespace {
Tensor view_scatter_raw(const Tensor& g_in, const Shape& in_shape, const Shape& st,
                        int64_t offset) {
  const Tensor g = dense(g_in);
  if (on_cuda(g)) {
    Tensor dx = zeros(in_shape, g.dtype(), g.device());
    if (g.numel() == 0) return dx;
    kern::Strided cs = make_strided(g.shape(), {&g.shape()});
    set_operand(cs, 0, st, offset);
    kernels("scatter", g.device()).strided_copy(cdt(g.dtype()), dx.data_ptr(), g.data_ptr(), cs);
    return dx;
  }
  Tensor dx = zeros(in_shape, g.dtype());
  dispatch_moves(g.dtype(), "scatter", [&](auto tag) {
    using T = decltype(tag);
    cpu::strided_copy<T>(static_cast<T*>(dx.data_ptr()) + offset, st,
                         static_cast<const T*>(g.data_ptr()), contiguous_strides(g.shape()),
                         g.shape());
  });
  return dx;
}
}  // namespace

// The adjoint of view_scatter: the elements of x (row-major, in_shape) at offset + Σ idx·st, as
// a dense tensor of shape `shape`; recorded, its backward is view_scatter again.
Tensor detail::view_gather(const Tensor& x_in, const Shape& shape, const Shape& st,
                           int64_t offset) {
  const Tensor x = x_in.contiguous();
  Tensor out = dense_copy(make_view(x.detach(), shape, st, x.impl()->offset + offset));
  if (needs_record({&x})) {
    const Shape xs = x.shape();
    record("view_scatter_backward", out, {x},
           RecordInfo().flops(0, 0).saves_nothing().differentiable(),
           [xs, st, offset](const Tensor& g) -> std::vector<Tensor> {
             return {view_scatter(g, xs, st, offset)};
           });
  }
  return out;
}

// Recorded when g requires grad, which happens only under create_graph (backward runs without
// grad mode otherwise): its backward is the gather of the same elements.
Tensor detail::view_scatter(const Tensor& g, const Shape& in_shape, const Shape& st,
                            int64_t offset) {
  Tensor dx = view_scatter_raw(g, in_shape, st, offset);
  if (needs_record({&g})) {
    const Shape gs = g.shape();
    record("view_scatter", dx, {g}, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
           [gs, st, offset](const Tensor& gg) -> std::vector<Tensor> {
             return {view_gather(gg, gs, st, offset)};
           });
  }
  return dx;
}

Tensor detail::record_adjoint(const char* op, Tensor dx, const Tensor& g,
                              std::function<Tensor(const Tensor&)> forward_again) {
  if (needs_record({&g}))
    record(op, dx, {g}, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
           [f = std::move(forward_again)](const Tensor& gg) -> std::vector<Tensor> {
             return {f(gg)};
           });
  return dx;
}

// ---- contiguous copies ----
// detail::dense_copy (Tensor::contiguous) on the CPU runs ops' blocked, parallel strided copy,
// registered here, where every strided tensor is made.
namespace {
void cpu_dense_copy(DType dtype, void* out, const void* x, const Shape& x_strides,
                    const Shape& shape) {
  dispatch_bits(dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu::strided_copy<T>(static_cast<T*>(out), contiguous_strides(shape), static_cast<const T*>(x),
                         x_strides, shape);
  });
}
[[maybe_unused]] const bool g_dense_copy_registered = (set_cpu_strided_copy(&cpu_dense_copy), true);
}  // namespace

// ---- the view helper ----
bool detail::is_row_major(const Shape& shape, const Shape& strides) {
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;  // no elements: any strides will do
    if (shape[i] != 1 && strides[i] != acc) {
      for (size_t j = 0; j < i; ++j)  // a 0 in an earlier dim also means no elements
        if (shape[j] == 0) return true;
      return false;
    }
    acc *= shape[i];
  }
  return true;
}

Tensor detail::make_view(const Tensor& x, const Shape& shape, const Shape& strides,
                         int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = x.impl()->storage;
  impl->offset = offset;
  impl->shape = shape;
  if (!strides.empty() && !is_row_major(shape, strides)) impl->strides = strides;  // {}: row-major
  impl->numel = shape_numel(shape);
  impl->dtype = x.dtype();
  impl->is_view = true;
  impl->base = x.impl()->is_view ? x.impl()->base : x.impl_ptr();
  return Tensor(std::move(impl));
}

namespace {
// Strides that show x (numel > 0) with shape `to` without moving an element, or {} with ok =
// false when none exist (PyTorch's computeStride: each run of x's dims that is contiguous in
// memory may be split or merged freely, runs may not mix).
Shape view_strides(const Tensor& x, const Shape& to, bool& ok) {
  const Shape& from = x.shape();
  const Shape st = x.strides();
  Shape out(to.size());
  ok = true;
  if (x.numel() == 0 || x.is_contiguous()) return contiguous_strides(to);
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t base_stride = st.empty() ? 1 : st.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
    tensor_numel *= from[d];
    // a run ends where the next (outer) dim does not continue it in memory
    if (d == 0 || (from[d - 1] != 1 && st[d - 1] != tensor_numel * base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || to[view_d] == 1)) {
        out[view_d] = view_numel * base_stride;
        view_numel *= to[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) {
        ok = false;
        return {};
      }
      if (d > 0) {
        base_stride = st[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) {
    ok = false;
    return {};
  }
  return out;
}

// reshape/view/flatten/squeeze/unsqueeze: out has x's elements in x's order. A view when x's
// strides allow (copy_ok: else a copy, as reshape does; else an error, as view does); dx = dout
// with x's shape.
Tensor view_op(const char* op, const Tensor& x, const Shape& shape, bool copy_ok = true) {
  bool ok = true;
  Shape st = x.is_contiguous() ? Shape() : view_strides(x, shape, ok);
  if (!ok) {
    if (!copy_ok)
      throw Error(fmt::format(
          "{}: shape {} is not compatible with input {} of strides {} (its elements do not lie "
          "in one stride pattern); use reshape, or contiguous() first",
          op, shape_str(shape), shape_str(x.shape()), shape_str(x.strides())));
    return view_op(op, x.contiguous(), shape);
  }
  Tensor out = make_view(x, shape, st, x.impl()->offset);
  if (needs_record({&x})) {
    Shape xs = x.shape();
    // data movement only
    record(op, out, {x}, RecordInfo().flops(0, 0).saves_nothing().watch(x).differentiable(),
           [xs](const Tensor& g) -> std::vector<Tensor> { return {reshape(g, xs)}; });
  }
  return out;
}

// x[start : start + len·step : step] along dim d (already validated), a view; dx scatters.
Tensor slice_view(const char* op, const Tensor& x, int64_t d, int64_t start, int64_t len,
                  int64_t step) {
  Shape os = x.shape(), st = x.strides();
  os[d] = len;
  const int64_t offset = x.impl()->offset + start * st[d];
  st[d] *= step;
  Tensor out = make_view(x, os, st, offset);
  if (needs_record({&x})) {
    const Shape xs = x.shape();
    Shape gst = contiguous_strides(xs);  // where dout's elements go in a row-major dx
    const int64_t goff = start * gst[d];
    gst[d] *= step;
    // data movement only
    record(op, out, {x}, RecordInfo().flops(0, 0).saves_nothing().watch(x).differentiable(),
           [xs, gst, goff](const Tensor& g) -> std::vector<Tensor> {
             return {view_scatter(g, xs, gst, goff)};
           });
  }
  return out;
}
}  // namespace

// ---- views that keep the memory order ----
namespace {
// `want` with its one -1 inferred from x's numel; errors name both shapes.
Shape infer_shape(const char* op, const Tensor& x, const Shape& want) {
  int64_t infer = -1, known = 1;
  bool overflow = false, zero = false;  // the known dims' product overflows int64 / has a 0
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == -1) {
      if (infer >= 0)
        throw Error(fmt::format("{}: only one dimension can be inferred in shape {} (input {})", op,
                                shape_str(want), shape_str(x.shape())));
      infer = static_cast<int64_t>(i);
    } else if (want[i] < 0) {
      throw Error(fmt::format("{}: invalid size {} in shape {} (input {})", op, want[i],
                              shape_str(want), shape_str(x.shape())));
    } else {
      zero |= want[i] == 0;
      overflow |= __builtin_mul_overflow(known, want[i], &known);
    }
  }
  if (zero) known = 0;
  if (overflow && !zero)
    throw Error(
        fmt::format("{}: shape {} is invalid for input of shape {} ({} elements): its "
                    "element count overflows int64",
                    op, shape_str(want), shape_str(x.shape()), x.numel()));
  Shape out = want;
  if (infer >= 0) {
    if (known == 0)
      throw Error(
          fmt::format("{}: cannot infer the -1 in shape {} for input {}: the other dims "
                      "have 0 elements, so any size fits",
                      op, shape_str(want), shape_str(x.shape())));
    out[infer] = x.numel() / known;
  }
  if (shape_numel(out) != x.numel())
    throw Error(fmt::format("{}: shape {} is invalid for input of shape {} ({} elements)", op,
                            shape_str(want), shape_str(x.shape()), x.numel()));
  return out;
}
}  // namespace

Tensor reshape(const Tensor& x, Shape shape, Site site) {
  SiteScope scope(site);
  check_defined(x, "reshape", "input");
  return view_op("reshape", x, infer_shape("reshape", x, shape));
}
Tensor view(const Tensor& x, Shape shape, Site site) {
  SiteScope scope(site);
  check_defined(x, "view", "input");
  return view_op("view", x, infer_shape("view", x, shape), false);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim, Site site) {
  SiteScope scope(site);
  check_defined(x, "flatten", "input");
  const int64_t n = x.dim();
  if (n == 0) return view_op("flatten", x, {1});
  const int64_t s = norm_dim(start_dim, n, "flatten", x.shape());
  const int64_t e = norm_dim(end_dim, n, "flatten", x.shape());
  if (s > e)
    throw Error(fmt::format("flatten: start_dim {} comes after end_dim {} for input {}", start_dim,
                            end_dim, shape_str(x.shape())));
  const Shape& xs = x.shape();
  Shape os(xs.begin(), xs.begin() + s);
  os.push_back(span(xs, s, e + 1));
  os.insert(os.end(), xs.begin() + e + 1, xs.end());
  return view_op("flatten", x, os);
}

Tensor squeeze(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "squeeze", "input");
  Shape os;
  for (int64_t s : x.shape())
    if (s != 1) os.push_back(s);
  return view_op("squeeze", x, os);
}
Tensor squeeze(const Tensor& x, int64_t d, Site site) {
  SiteScope scope(site);
  check_defined(x, "squeeze", "input");
  const int64_t n = x.dim();
  const int64_t r = norm_dim(d, std::max<int64_t>(n, 1), "squeeze", x.shape());
  Shape os = x.shape();
  if (n > 0 && os[r] == 1) os.erase(os.begin() + r);  // no-op when size(d) != 1, like PyTorch
  return view_op("squeeze", x, os);
}
Tensor unsqueeze(const Tensor& x, int64_t d, Site site) {
  SiteScope scope(site);
  check_defined(x, "unsqueeze", "input");
  const int64_t r = norm_dim(d, x.dim() + 1, "unsqueeze", x.shape());
  Shape os = x.shape();
  os.insert(os.begin() + r, 1);
  return view_op("unsqueeze", x, os);
}

// ---- views that reorder ----
// out dim i is x dim dims[i]; dx = dout permuted by the inverse.
Tensor permute(const Tensor& x, std::vector<int64_t> dims, Site site) {
  SiteScope scope(site);
  check_defined(x, "permute", "input");
  const int64_t n = x.dim();
  if (static_cast<int64_t>(dims.size()) != n)
    throw Error(fmt::format("permute: dims {} has {} entries but input {} has {} dims",
                            list_str(dims), dims.size(), shape_str(x.shape()), n));
  std::vector<int64_t> perm(n), inv(n, -1);
  for (int64_t i = 0; i < n; ++i) {
    perm[i] = norm_dim(dims[i], n, "permute", x.shape());
    if (inv[perm[i]] >= 0)
      throw Error(fmt::format("permute: dim {} repeated in dims {} for input {}", perm[i],
                              list_str(dims), shape_str(x.shape())));
    inv[perm[i]] = i;
  }
  Shape os(n), st(n), xst = x.strides();
  for (int64_t i = 0; i < n; ++i) {
    os[i] = x.shape()[perm[i]];
    st[i] = xst[perm[i]];
  }
  Tensor out = make_view(x, os, st, x.impl()->offset);
  if (needs_record({&x})) {
    // data movement only
    record("permute", out, {x}, RecordInfo().flops(0, 0).saves_nothing().watch(x).differentiable(),
           [inv](const Tensor& g) -> std::vector<Tensor> { return {permute(g, inv)}; });
  }
  return out;
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1, Site site) {
  SiteScope scope(site);
  check_defined(x, "transpose", "input");
  const int64_t n = x.dim();
  if (n == 0) {  // PyTorch: dims 0/-1 of a 0-dim tensor are a no-op
    norm_dim(d0, 1, "transpose", x.shape());
    norm_dim(d1, 1, "transpose", x.shape());
    return view_op("transpose", x, {});
  }
  const int64_t a = norm_dim(d0, n, "transpose", x.shape());
  const int64_t b = norm_dim(d1, n, "transpose", x.shape());
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  std::swap(perm[a], perm[b]);
  return permute(x, perm);
}

// PyTorch's t(): a 0-D or 1-D tensor as it is, a 2-D one transposed; more dims are refused.
Tensor t(const Tensor& x, Site site) {
  SiteScope scope(site);
  check_defined(x, "t", "input");
  if (x.dim() > 2)
    throw Error(fmt::format("t: input {} has {} dims, expected at most 2 (use transpose)",
                            shape_str(x.shape()), x.dim()));
  return x.dim() < 2 ? view_op("t", x, x.shape()) : transpose(x, 0, 1);
}

// Broadcasts size-1 dims (and new leading dims) to `shape` with stride 0; -1 keeps a dim.
// dx = sum_to(dout).
Tensor expand(const Tensor& x, Shape shape, Site site) {
  SiteScope scope(site);
  check_defined(x, "expand", "input");
  const Shape& xs = x.shape();
  const int64_t n = static_cast<int64_t>(shape.size()), lead = n - x.dim();
  if (lead < 0)
    throw Error(fmt::format("expand: target {} has fewer dims than input {}", shape_str(shape),
                            shape_str(xs)));
  Shape os(n), st(n, 0), xst = x.strides();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t want = shape[i];
    if (i < lead) {
      if (want < 0)
        throw Error(
            fmt::format("expand: size {} is not allowed for the new leading dim {} (input "
                        "{}, target {})",
                        want, i, shape_str(xs), shape_str(shape)));
      os[i] = want;
      continue;
    }
    const int64_t have = xs[i - lead];
    if (want == -1 || want == have) {
      os[i] = have;
      st[i] = xst[i - lead];
    } else if (have == 1 && want >= 0) {
      os[i] = want;
    } else {
      throw Error(
          fmt::format("expand: size {} must match the existing size {} at non-singleton "
                      "dim {} (input {}, target {})",
                      want, have, i, shape_str(xs), shape_str(shape)));
    }
  }
  shape_numel(os);  // overflow check
  Tensor out = make_view(x, os, st, x.impl()->offset);
  if (needs_record({&x})) {
    // data movement only
    record("expand", out, {x}, RecordInfo().flops(0, 0).saves_nothing().watch(x).differentiable(),
           [xs](const Tensor& g) -> std::vector<Tensor> { return {sum_to(g, xs)}; });
  }
  return out;
}

// ---- views that select ----
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Site site) {
  SiteScope scope(site);
  check_defined(x, "narrow", "input");
  const int64_t d = norm_dim(dim, x.dim(), "narrow", x.shape());
  const int64_t size = x.shape()[d];
  const int64_t s = start < 0 ? start + size : start;
  if (s < 0 || s > size || length < 0 || s + length > size)
    throw Error(
        fmt::format("narrow: start {} and length {} are out of range for dim {} of size {} "
                    "(input {})",
                    start, length, dim, size, shape_str(x.shape())));
  return slice_view("narrow", x, d, s, length, 1);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step, Site site) {
  SiteScope scope(site);
  check_defined(x, "slice", "input");
  const int64_t d = norm_dim(dim, x.dim(), "slice", x.shape());
  if (step <= 0)
    throw Error(fmt::format("slice: step must be positive, got {} (dim {} of input {})", step, dim,
                            shape_str(x.shape())));
  const int64_t size = x.shape()[d];
  auto clampi = [size](int64_t v) {
    if (v < 0) v += size;
    return std::min(std::max<int64_t>(v, 0), size);
  };
  const int64_t s = clampi(start), e = clampi(end);
  const int64_t len = e > s ? (e - s + step - 1) / step : 0;
  return slice_view("slice", x, d, s, len, step);
}

// x[..., i, ...] along dim: one dim fewer; dx is zero except row i of dim, which gets dout.
Tensor select(const Tensor& x, int64_t dim, int64_t index, Site site) {
  SiteScope scope(site);
  check_defined(x, "select", "input");
  if (x.dim() == 0)
    throw Error(fmt::format("select: input () is 0-dim; there is no dim {} to select from", dim));
  const int64_t d = norm_dim(dim, x.dim(), "select", x.shape());
  const int64_t size = x.shape()[d];
  const int64_t i = index < 0 ? index + size : index;
  if (i < 0 || i >= size)
    throw Error(fmt::format("select: index {} is out of range for dim {} of size {} (input {})",
                            index, dim, size, shape_str(x.shape())));
  Shape os = x.shape(), st = x.strides();
  const int64_t offset = x.impl()->offset + i * st[d];
  os.erase(os.begin() + d);
  st.erase(st.begin() + d);
  Tensor out = make_view(x, os, st, offset);
  if (needs_record({&x})) {
    const Shape xs = x.shape();
    Shape gst = contiguous_strides(xs);
    const int64_t goff = i * gst[d];
    gst.erase(gst.begin() + d);
    // data movement only
    record("select", out, {x}, RecordInfo().flops(0, 0).saves_nothing().watch(x).differentiable(),
           [xs, gst, goff](const Tensor& g) -> std::vector<Tensor> {
             return {view_scatter(g, xs, gst, goff)};
           });
  }
  return out;
}

// ---- Tensor methods ----
Tensor Tensor::reshape(Shape shape, Site site) const {
  return tg::reshape(*this, std::move(shape), site);
}
Tensor Tensor::view(Shape shape, Site site) const {
  return tg::view(*this, std::move(shape), site);
}
Tensor Tensor::transpose(int64_t d0, int64_t d1, Site site) const {
  return tg::transpose(*this, d0, d1, site);
}
Tensor Tensor::permute(std::vector<int64_t> dims, Site site) const {
  return tg::permute(*this, std::move(dims), site);
}
Tensor Tensor::squeeze(int64_t d, Site site) const { return tg::squeeze(*this, d, site); }
Tensor Tensor::unsqueeze(int64_t d, Site site) const { return tg::unsqueeze(*this, d, site); }
Tensor Tensor::expand(Shape shape, Site site) const {
  return tg::expand(*this, std::move(shape), site);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length, Site site) const {
  return tg::narrow(*this, dim, start, length, site);
}
Tensor Tensor::select(int64_t dim, int64_t index, Site site) const {
  return tg::select(*this, dim, index, site);
}
Tensor Tensor::operator[](int64_t index) const { return tg::select(*this, 0, index); }
Tensor Tensor::t(Site site) const { return tg::t(*this, site); }

}  // namespace tg
