// ops/inplace/inplace.cpp — in-place writes under the version counter: add_, sub_, mul_, div_, clamp_,
// zero_, fill_, copy_, masked_fill_, index_put_ (free functions and Tensor methods).
//
// Every one has the same shape: check → compute the new values out of place with the existing
// op (dtype rules, broadcasting, CUDA and the backward come with it) → write them into x's
// elements (write_into: a strided copy when x is a view, so a view writes into its base) → bump
// x's storage version (note_inplace_write) → when autograd records, x takes the new values'
// node as its grad_fn (PyTorch's history rebase; through a view, the view's base takes the
// history "base with the view's region replaced", PyTorch's CopySlices, and the view becomes a
// view of it). A recording op reads a clone of x, so its own
// backward never reads the values this write replaces; any older node that saved them throws
// at backward (autograd/engine.cpp, check_saved_versions).
// A target some of whose elements share one memory location (an expanded view, overlapping
// unfold windows) is refused in check_target, the one place every in-place op resolves its
// target, as PyTorch 2 does (1.13 wrote such views once per element or per window).
// Deliberately not here: the out-of-place ops themselves, indexing (index.cpp).
#include "autograd/grad_detail.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tg {
using namespace detail;

namespace {
// x's elements = v broadcast to x's shape (v has x's dtype and device; not aliasing x); no tape.
void write_into(const char* op, const Tensor& x, const Tensor& v_in) {
  const Tensor v = dense(v_in);
  if (x.numel() == 0) return;
  const Shape xst = x.strides(), vst = broadcast_strides(v.shape(), x.shape());
  if (on_cuda(x)) {
    kern::Strided st = make_strided(x.shape(), {});
    set_operand(st, 0, xst, 0);
    set_operand(st, 1, vst, 0);
    kernels(op, x.device()).strided_copy(cdt(x.dtype()), x.data_ptr(), v.data_ptr(), st);
    return;
  }
  if (x.is_contiguous() && v.shape() == x.shape()) {
    std::memcpy(x.data_ptr(), v.data_ptr(), x.numel() * dtype_size(x.dtype()));
    return;
  }
  dispatch_moves(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::strided_copy<T>(static_cast<T*>(x.data_ptr()), xst, static_cast<const T*>(v.data_ptr()),
                         vst, x.shape());
  });
}

// Does a tensor of shape `from` broadcast to `to` without changing it (NumPy rules)?
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

// PyTorch's can_cast: a result is written into self only within its kind or up (bool → int64 →
// float), so int64 += 2.5 or bool += 1 is refused rather than truncated.
void check_cast(const char* op, const Tensor& r, const Tensor& x) {
  auto kind = [](DType t) { return t == kBool ? 0 : t == kInt64 ? 1 : 2; };
  if (kind(r.dtype()) > kind(x.dtype()))
    throw Error(
        fmt::format("{}: result type {} can't be cast to self {} of dtype {} (PyTorch's "
                    "rule: a floating result into int64 or bool, or int64 into bool)",
                    op, dtype_name(r.dtype()), shape_str(x.shape()), dtype_name(x.dtype())));
}

}  // namespace

// A stride 0 over a dim of two or more is an overlap at once. Otherwise dims by increasing
// stride, each stride beyond the span of the smaller ones, prove the elements distinct (row-major,
// transposed, sliced, diagonals, windows that do not overlap) in O(ndim); what that cannot prove
// is settled by marking each element's offset in a bitmap over the view's span (strides are
// never negative here), stopping at the first offset marked twice.
bool detail::has_internal_overlap(const Shape& shape, const Shape& strides) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return false;
    if (shape[d] == 1) continue;
    if (strides[d] == 0) return true;
    dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t span = 0;  // the largest offset the smaller-stride dims reach
  bool proven = true;
  for (size_t d : dims) {
    proven = proven && strides[d] > span;
    span += strides[d] * (shape[d] - 1);
  }
  if (proven) return false;
  std::vector<bool> seen(static_cast<size_t>(span) + 1, false);
  std::vector<int64_t> i(dims.size(), 0);
  for (int64_t off = 0;;) {
    if (seen[static_cast<size_t>(off)]) return true;
    seen[static_cast<size_t>(off)] = true;
    size_t k = 0;  // advance the odometer (the smallest stride fastest)
    for (; k < dims.size(); ++k) {
      const size_t d = dims[k];
      if (++i[k] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      i[k] = 0;
    }
    if (k == dims.size()) return false;
  }
}

namespace {
// The checks every in-place op makes on its target; returns whether autograd records the write.
bool check_target(const char* op, const Tensor& x, std::initializer_list<const Tensor*> others) {
  check_defined(x, op, "self");
  const Shape& s = x.shape();
  const Shape st = x.strides();
  if (has_internal_overlap(s, st))
    throw Error(fmt::format(
        "{}: self {} with strides {} (an expanded view or overlapping windows): unsupported "
        "operation: more than one element of the written-to tensor refers to a single memory "
        "location. Please clone() the tensor before performing the operation",
        op, shape_str(s), shape_str(st)));
  bool rec = grad_enabled() && x.requires_grad();
  for (const Tensor* o : others)
    rec = rec || (grad_enabled() && o->defined() && o->requires_grad());
  if (!rec) return false;
  if (x.is_leaf() && x.requires_grad())
    throw Error(fmt::format(
        "{}: self {} is a leaf that requires grad; an in-place write would hide its value from "
        "the backward. Run it under tg::NoGradGuard (as optimizer steps do) or write into a "
        "clone()",
        op, shape_str(s)));
  if (x.impl()->is_view) {
    const Tensor base(x.impl()->base);
    if (!base.defined() || !base.is_contiguous())
      throw Error(fmt::format(
          "{}: self {} is a view of a strided tensor and the write would be recorded (self or an "
          "argument requires grad); tapegrad rewrites a base's history only for a contiguous "
          "base. Write into a view of a contiguous tensor, or under tg::NoGradGuard",
          op, shape_str(s)));
    if (base.is_leaf() && base.requires_grad())
      throw Error(fmt::format(
          "{}: self {} is a view of a leaf {} that requires grad; an in-place write would hide "
          "the leaf's value from the backward. Run it under tg::NoGradGuard or write into a "
          "clone()",
          op, shape_str(s), shape_str(base.shape())));
  }
  return true;
}

// After a recorded write of r into the view x: x's base b takes the history "b with x's region
// replaced by r" (PyTorch's CopySlices) and x becomes a view of that new b. g reaching b goes
// to the old b with the region zeroed and, the region's part, to r.
void rebase_through_view(const char* op, const Tensor& x, const Tensor& r) {
  const Tensor b(x.impl()->base);
  const Shape bs = b.shape(), xs = x.shape(), xst = x.strides();
  const int64_t rel = x.impl()->offset - b.impl()->offset;  // x's region within b (row-major)
  Tensor bnew = make_view(b, bs, {}, b.impl()->offset);
  record(op, bnew, {b, r}, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
         [bs, xs, xst, rel](const Tensor& g) -> std::vector<Tensor> {  // g: contiguous (engine)
           if (creating_graph()) {  // the region to r, the rest to the old b, recorded
             const Tensor dr = view_gather(g, xs, xst, rel);
             return {sub(g, view_scatter(dr, bs, xst, rel)), dr};
           }
           Tensor dr = dense_copy(make_view(g, xs, xst, g.impl()->offset + rel));
           Tensor db = dense_copy(g);
           write_into("copy_slices backward", make_view(db, xs, xst, db.impl()->offset + rel),
                      zeros({}, db.dtype(), db.device()));
           return {db, dr};
         });
  b.impl()->grad_fn = bnew.impl()->grad_fn;
  b.impl()->requires_grad = true;
  ++b.impl()->storage->history;  // views made before now (x's old node too) are stale
  Tensor xv = make_view(b, xs, xst, x.impl()->offset);
  record("as_strided", xv, {b}, RecordInfo().flops(0, 0).saves_nothing().watch(b).differentiable(),
         [bs, xst, rel](const Tensor& g) -> std::vector<Tensor> {
           return {view_scatter(g, bs, xst, rel)};
         });
  x.impl()->grad_fn = xv.impl()->grad_fn;
  x.impl()->requires_grad = true;
}

// Writes compute(values of x) into x. compute returns x's shape, or unrecorded a shape that
// broadcasts to it; under recording it gets a clone of x and its result's node becomes x's
// grad_fn.
template <typename F>
Tensor inplace(const char* op, const Tensor& x, std::initializer_list<const Tensor*> others,
               F&& compute) {
  const bool rec = check_target(op, x, others);
  Tensor r;
  if (rec) {
    r = compute(x.clone());
  } else {
    NoGradGuard ng;
    r = compute(x);
  }
  // a recorded result becomes x's history, so it has x's shape; else it may broadcast to it
  if (rec ? r.shape() != x.shape() : !broadcasts_to(r.shape(), x.shape()))
    throw Error(
        fmt::format("{}: the result {} does not fit self {} (an in-place op cannot "
                    "broadcast self)",
                    op, shape_str(r.shape()), shape_str(x.shape())));
  check_cast(op, r, x);
  if (r.dtype() != x.dtype()) r = r.to(x.dtype());
  if (r.device() != x.device()) r = r.to(x.device());
  if (r.impl()->storage == x.impl()->storage) r = dense_copy(r);  // a source that aliases self
  write_into(op, x, r);
  note_inplace_write(x, op);
  if (rec && r.requires_grad()) {
    if (Node* n = r.grad_fn()) detail::release_if_stale(*n, x);  // it may hold x: x.div_(x)
    if (x.impl()->is_view) {
      rebase_through_view(op, x, r);
    } else {
      x.impl()->grad_fn = r.impl()->grad_fn;
      x.impl()->requires_grad = true;
      ++x.impl()->storage->history;  // views made before now have a stale history
    }
  }
  return x;
}

// New values that do not depend on the old ones (fill_, copy_): recorded with self as an input
// that gets no gradient, so self keeps requiring grad as in PyTorch.
Tensor replacing(const char* op, const Tensor& self, const Tensor& values) {
  if (!needs_record({&self, &values})) return values;  // write_into broadcasts it
  Tensor out = dense_copy(values.expand(self.shape()));
  const Shape vs = values.shape();
  const bool gv = values.requires_grad();
  record(op, out, {self, values}, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
         [vs, gv](const Tensor& g) -> std::vector<Tensor> {
           return {Tensor(), gv ? sum_to(g, vs) : Tensor()};
         });
  return out;
}
}  // namespace

Tensor add_(const Tensor& x, const Tensor& other, double alpha, Site site) {
  SiteScope scope(site);
  return inplace("add_", x, {&other},
                 [&](const Tensor& v) { return add(v, alpha == 1 ? other : mul(other, alpha)); });
}
Tensor add_(const Tensor& x, double other, Site site) {
  SiteScope scope(site);
  return inplace("add_", x, {}, [&](const Tensor& v) { return add(v, other); });
}
Tensor sub_(const Tensor& x, const Tensor& other, Site site) {
  SiteScope scope(site);
  return inplace("sub_", x, {&other}, [&](const Tensor& v) { return sub(v, other); });
}
Tensor sub_(const Tensor& x, double other, Site site) {
  SiteScope scope(site);
  return inplace("sub_", x, {}, [&](const Tensor& v) { return sub(v, other); });
}
Tensor mul_(const Tensor& x, const Tensor& other, Site site) {
  SiteScope scope(site);
  return inplace("mul_", x, {&other}, [&](const Tensor& v) { return mul(v, other); });
}
Tensor mul_(const Tensor& x, double other, Site site) {
  SiteScope scope(site);
  return inplace("mul_", x, {}, [&](const Tensor& v) { return mul(v, other); });
}
Tensor div_(const Tensor& x, const Tensor& other, Site site) {
  SiteScope scope(site);
  return inplace("div_", x, {&other}, [&](const Tensor& v) { return div(v, other); });
}
Tensor div_(const Tensor& x, double other, Site site) {
  SiteScope scope(site);
  return inplace("div_", x, {}, [&](const Tensor& v) { return div(v, other); });
}
Tensor clamp_(const Tensor& x, std::optional<double> min, std::optional<double> max, Site site) {
  SiteScope scope(site);
  if (!min && !max)
    throw Error(fmt::format("clamp_: self {}: at least one of min and max must be given",
                            shape_str(x.defined() ? x.shape() : Shape{})));
  return inplace("clamp_", x, {}, [&](const Tensor& v) {
    if (min && max) return clamp(v, *min, *max);
    return min ? clamp_min(v, *min) : clamp_max(v, *max);
  });
}
namespace {
// An int64 target takes only a value that int64 holds (a cast of NaN, ±inf or anything outside
// [-2^63, 2^63) is undefined behaviour; PyTorch refuses these values too). Fractions truncate.
void check_int64_value(const char* op, const Tensor& x, double value) {
  if (x.defined() && x.dtype() == kInt64 &&
      !(value >= -9223372036854775808.0 && value < 9223372036854775808.0))
    throw Error(
        fmt::format("{}: value {} cannot be converted to type int64 without overflow "
                    "(self {} int64)",
                    op, value, shape_str(x.shape())));
}
}  // namespace

Tensor fill_(const Tensor& x, double value, Site site) {
  SiteScope scope(site);
  check_int64_value("fill_", x, value);
  return inplace("fill_", x, {}, [&](const Tensor& v) {
    return replacing("fill_", v, scalar_tensor(value, v.dtype(), v.device()));
  });
}
Tensor zero_(const Tensor& x, Site site) {
  SiteScope scope(site);
  return inplace("zero_", x, {}, [&](const Tensor& v) {
    return replacing("zero_", v, scalar_tensor(0, v.dtype(), v.device()));
  });
}
Tensor detail::copy_named(const char* op, const Tensor& x, const Tensor& src) {
  check_defined(src, op, "src");
  check_defined(x, op, "self");
  if (broadcast_shapes(src.shape(), x.shape(), op) != x.shape())
    throw Error(fmt::format("{}: src {} cannot be broadcast to self {}", op, shape_str(src.shape()),
                            shape_str(x.shape())));
  return inplace(op, x, {&src}, [&](const Tensor& v) {
    Tensor s = src;
    if (s.dtype() != v.dtype()) s = s.to(v.dtype());
    if (s.device() != v.device()) s = s.to(v.device());
    return replacing(op, v, s);
  });
}
Tensor detail::inplace_update(const char* op, const Tensor& x,
                              std::initializer_list<const Tensor*> others,
                              const std::function<Tensor(const Tensor&)>& compute) {
  return inplace(op, x, others, compute);
}
Tensor copy_(const Tensor& x, const Tensor& src, Site site) {
  SiteScope scope(site);
  return copy_named("copy_", x, src);
}
Tensor masked_fill_(const Tensor& x, const Tensor& mask, double value, Site site) {
  SiteScope scope(site);
  check_int64_value("masked_fill_", x, value);
  return inplace("masked_fill_", x, {},
                 [&](const Tensor& v) { return masked_fill(v, mask, value); });
}

// ---- Tensor methods ----
Tensor& Tensor::add_(const Tensor& other, double alpha, Site site) {
  tg::add_(*this, other, alpha, site);
  return *this;
}
Tensor& Tensor::add_(double other, Site site) {
  tg::add_(*this, other, site);
  return *this;
}
Tensor& Tensor::sub_(const Tensor& other, Site site) {
  tg::sub_(*this, other, site);
  return *this;
}
Tensor& Tensor::sub_(double other, Site site) {
  tg::sub_(*this, other, site);
  return *this;
}
Tensor& Tensor::mul_(const Tensor& other, Site site) {
  tg::mul_(*this, other, site);
  return *this;
}
Tensor& Tensor::mul_(double other, Site site) {
  tg::mul_(*this, other, site);
  return *this;
}
Tensor& Tensor::div_(const Tensor& other, Site site) {
  tg::div_(*this, other, site);
  return *this;
}
Tensor& Tensor::div_(double other, Site site) {
  tg::div_(*this, other, site);
  return *this;
}
Tensor& Tensor::clamp_(std::optional<double> min, std::optional<double> max, Site site) {
  tg::clamp_(*this, min, max, site);
  return *this;
}
Tensor& Tensor::zero_(Site site) {
  tg::zero_(*this, site);
  return *this;
}
Tensor& Tensor::fill_(double value, Site site) {
  tg::fill_(*this, value, site);
  return *this;
}
Tensor& Tensor::copy_(const Tensor& src, Site site) {
  tg::copy_(*this, src, site);
  return *this;
}
Tensor& Tensor::masked_fill_(const Tensor& mask, double value, Site site) {
  tg::masked_fill_(*this, mask, value, site);
  return *this;
}

}  // namespace tg
