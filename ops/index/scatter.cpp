// ops/index/scatter.cpp — scatter (overwrite) and scatter_reduce (sum, prod, mean, amax, amin, with or
// without the input's own values), PyTorch's semantics and argument order, forward (the table's
// scatter_reduce: ops/index/cpu/indexing.cpp, cuda/scatter.cu) beside backward (recorded ops: gather,
// scatter_add, where). Gradients: overwrite: dx = g where nothing was written, dsrc = gather(g) for
// each target's last write (the one the output holds; 0 for the writes it replaced); sum: dx = g (0
// on targets without include_self); mean: g / count; amax / amin: g shared evenly among the
// contributions equal to the result; prod: g · the product of the other contributions (exact with
// zeros). src may be larger than index (only its index-shaped corner takes part; the rest gets 0),
// as scatter_add. scatter with one value for every position (the one-hot idiom) and the in-place
// scatter_ (through ops/inplace/inplace.cpp's machinery) are the same op.
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cstring>

namespace tg {
using namespace detail;

namespace {
using R = kern::ScatterOp;

R parse_reduce(const std::string& r, const Tensor& x) {
  if (r == "sum") return R::Sum;
  if (r == "prod") return R::Prod;
  if (r == "mean") return R::Mean;
  if (r == "amax") return R::Amax;
  if (r == "amin") return R::Amin;
  throw Error(
      fmt::format("scatter_reduce: reduce '{}' for x {}: expected sum, prod, mean, amax or "
                  "amin",
                  r, shape_str(x.shape())));
}

// The forward (contiguous x, src, index on one device, shapes checked by scatter_add's rules):
// the table's scatter_reduce over the index's positions.
Tensor scatter_kernel(const char* op, const Tensor& x, int64_t d, const Tensor& index,
                      const Tensor& src, R r, bool include_self) {
  if (!on_cuda(x) && is_reduced(x.dtype()))  // the float32 kernel on float32 copies, rounded once
    return narrow(scatter_kernel(op, widen(x), d, index, widen(src), r, include_self), x.dtype());
  Tensor out = x.clone().detach();
  if (index.numel() == 0) return out;
  const Shape wx = x.dim() == 0 ? Shape{1} : x.shape(),
              ws = src.dim() == 0 ? Shape{1} : src.shape(),
              wi = index.dim() == 0 ? Shape{1} : index.shape();
  if (wi.size() > static_cast<size_t>(kern::kMaxDims))
    throw Error(fmt::format("{}: index {} has more than {} dims", op, shape_str(index.shape()),
                            kern::kMaxDims));
  kern::Strided st;
  st.ndim = static_cast<int>(wi.size());
  const Shape os = contiguous_strides(wx), ss = contiguous_strides(ws);
  for (int k = 0; k < st.ndim; ++k) {
    st.shape[k] = wi[static_cast<size_t>(k)];
    st.stride[0][k] = os[static_cast<size_t>(k)];
    st.stride[1][k] = ss[static_cast<size_t>(k)];
  }
  Tensor count;  // the GPU's per-target contributions (mean)
  if (r == R::Mean && on_cuda(x)) count = zeros(x.shape(), kInt64, x.device());
  kernels(op, x).scatter_reduce(
      r, cdt(x.dtype()), out.data_ptr(), src.data_ptr(),
      static_cast<const int64_t*>(index.data_ptr()), st, static_cast<int>(d), include_self,
      count.defined() ? static_cast<int64_t*>(count.data_ptr()) : nullptr, x.numel());
  return out;
}

// src's index-shaped corner, and a gradient of that shape padded back to src's shape.
Tensor corner(const Tensor& src, const Shape& is) {
  Tensor c = src;
  for (int64_t k = 0; k < src.dim(); ++k)
    if (is[static_cast<size_t>(k)] != src.size(k)) c = narrow(c, k, 0, is[static_cast<size_t>(k)]);
  return c;
}
Tensor to_src(const Tensor& g, const Shape& ss) {
  std::vector<int64_t> p;
  for (int64_t k = g.dim(); k-- > 0;) {
    p.push_back(0);
    p.push_back(ss[static_cast<size_t>(k)] - g.size(k));
  }
  bool any = false;
  for (int64_t v : p) any = any || v != 0;
  return any ? pad(g, p) : g;
}

Tensor scatter_any(const char* op, const Tensor& x_in, int64_t dim, const Tensor& index_in,
                   const Tensor& src_in, R r, bool include_self, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in), index = contig(index_in), src = contig(src_in);
  check_defined(x, op, "x");
  check_float(x, op, "x", true);
  check_defined(src, op, "src");
  check_dtype(index, kInt64, op, "index", true);
  check_same_device(x, index, op, "x", "index");
  check_same_device(x, src, op, "x", "src");
  check_same_dtype(x, src, op, "x", "src");
  const int64_t d = scatter_shapes(op, x, dim, index, src);
  Tensor out = scatter_kernel(op, x, d, index, src, r, include_self);
  if (!needs_record({&x, &src})) return out;
  RecordInfo info;
  Saved hx = info.save(x), hs = info.save(src), hy = info.save_output(out), hi = info.save(index);
  // Every reduction but prod weighs g by masks of the values (constants, read detached): linear
  // in g. prod reads the values themselves: under create_graph they are the live ones.
  record(
      op, out, {x, src}, info.differentiable(),
      [hx, hs, hy, hi, d, r, include_self](const Tensor& g) -> std::vector<Tensor> {
        const Tensor xd = hx.get().detach(), sd = hs.get().detach(), yd = hy.get().detach(),
                     id = hi.get();
        const Shape is = id.shape();
        const Device dev = g.device();
        const Tensor zero = zeros({}, g.dtype(), dev);
        const Tensor ones_i = full(is, 1.0, g.dtype(), dev);
        const Tensor hits = scatter_add(zeros(xd.shape(), g.dtype(), dev), d, id, ones_i);
        const Tensor touched = gt(hits, 0.0);
        const Tensor s = corner(sd, is);
        if (r == R::Sum) {
          const Tensor dx = include_self ? g : where(touched, zero, g);
          return {dx, to_src(gather(g, d, id), sd.shape())};
        }
        if (r == R::None) {  // only each target's last write reaches the output
          const Tensor pos = arange(static_cast<double>(id.numel()), kFloat64).reshape(is).to(dev);
          const Tensor last = scatter_kernel("scatter backward", zeros(xd.shape(), kFloat64, dev),
                                             d, id, pos, R::Amax, false);
          const Tensor won = eq(gather(last, d, id), pos);
          return {where(touched, zero, g), to_src(where(won, gather(g, d, id), zero), sd.shape())};
        }
        if (r == R::Mean) {
          const Tensor count = add(hits, include_self ? 1.0 : 0.0);
          const Tensor gc = div(g, maximum(count, full({}, 1.0, g.dtype(), dev)));
          const Tensor dx = include_self ? gc : where(touched, zero, g);
          return {dx, to_src(gather(gc, d, id), sd.shape())};
        }
        if (r == R::Amax || r == R::Amin) {
          const Tensor eq_self = include_self ? eq(xd, yd) : zeros(xd.shape(), kBool, dev);
          const Tensor eq_src = eq(s, gather(yd, d, id));
          const Tensor n_eq = add(where(eq_self, full({}, 1.0, g.dtype(), dev), zero),
                                  scatter_add(zeros(xd.shape(), g.dtype(), dev), d, id,
                                              where(eq_src, full({}, 1.0, g.dtype(), dev), zero)));
          const Tensor share = div(g, maximum(n_eq, full({}, 1.0, g.dtype(), dev)));
          const Tensor dx = where(touched, where(eq_self, share, zero), g);
          return {dx, to_src(where(eq_src, gather(share, d, id), zero), sd.shape())};
        }
        // prod: per target the zero count z and the product of the nonzero contributions
        const Tensor one = full({}, 1.0, g.dtype(), dev);
        const Tensor self_zero = include_self ? eq(xd, 0.0) : zeros(xd.shape(), kBool, dev);
        const Tensor z = add(
            where(self_zero, one, zero),
            scatter_add(zeros(xd.shape(), g.dtype(), dev), d, id, where(eq(s, 0.0), one, zero)));
        const bool cg = creating_graph();
        const Tensor xv = cg ? hx.get() : xd, sv = cg ? corner(hs.get(), is) : s;
        const Tensor xs = include_self ? where(self_zero, one, xv) : xv;
        const Tensor ss = where(eq(s, 0.0), one, sv).contiguous();
        const Tensor pnz =
            cg ? scatter_reduce(xs, d, id, ss, "prod", include_self)
               : scatter_kernel("scatter_reduce backward", xs, d, id, ss, R::Prod, include_self);
        // the product of the others of a contribution v at a target (z, pnz)
        auto others = [&](const Tensor& v, const Tensor& zt, const Tensor& pt) {
          const Tensor nonzero_v = where(eq(zt, 0.0), div(pt, where(eq(v, 0.0), one, v)), zero);
          const Tensor zero_v = where(eq(zt, 1.0), pt, zero);
          return where(eq(v, 0.0), zero_v, nonzero_v);
        };
        const Tensor dx =
            include_self ? where(touched, mul(g, others(xv, z, pnz)), g) : where(touched, zero, g);
        const Tensor ds = mul(gather(g, d, id), others(sv, gather(z, d, id), gather(pnz, d, id)));
        return {dx, to_src(ds, sd.shape())};
      });
  return out;
}
}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Site site) {
  return scatter_any("scatter", x, dim, index, src, R::None, true, site);
}

namespace {
// One value at every index position: src is the value at index's shape.
Tensor value_src(const char* op, const Tensor& x, const Tensor& index, double value) {
  check_defined(x, op, "x");
  check_defined(index, op, "index");
  return full(index.shape(), value, x.dtype(), x.device());
}
}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value, Site site) {
  SiteScope scope(site);
  return scatter(x, dim, index, value_src("scatter", x, index, value), site);
}
Tensor scatter_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Site site) {
  SiteScope scope(site);
  return inplace_update("scatter_", x, {&src}, [&](const Tensor& v) {
    return scatter_any("scatter_", v, dim, index, src, R::None, true, site);
  });
}
Tensor scatter_(const Tensor& x, int64_t dim, const Tensor& index, double value, Site site) {
  SiteScope scope(site);
  return scatter_(x, dim, index, value_src("scatter_", x, index, value), site);
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self, Site site) {
  check_defined(x, "scatter_reduce", "x");
  return scatter_any("scatter_reduce", x, dim, index, src, parse_reduce(reduce, x), include_self,
                     site);
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, Site site) {
  tg::scatter_(*this, dim, index, src, site);
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, double value, Site site) {
  tg::scatter_(*this, dim, index, value, site);
  return *this;
}

}  // namespace tg
