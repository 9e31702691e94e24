// ops/reduce.cpp — reductions over one or several dims (sum, mean, max with amax semantics, var,
// argmax), forward and backward side by side, and the Tensor methods that call them.
//
// Kernels are loops over contiguous .data(): when the reduced dims are adjacent (size-1 dims in
// between do not count) the input is viewed as (outer, reduced, inner); otherwise it is walked
// row-major with an output offset built from strides that are 0 on the reduced dims. float32
// accumulates in double. Every backward spreads dout back over the reduced dims with the same walk.
// Deliberately not here: softmax/log_softmax (softmax.cpp), layer_norm's statistics (norm.cpp).
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <type_traits>

namespace tg {
using namespace detail;

namespace {

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

// Which dims a reduction removes and how input elements map to output elements.
struct ReducePlan {
  Shape in_shape;
  std::vector<bool> reduced;  // per input dim
  Shape out_shape;            // as returned (reduced dims dropped unless keepdim)
  Shape keep_shape;           // reduced dims as 1
  int64_t out_numel = 1;
  int64_t count = 1;     // input elements per output element
  bool adjacent = true;  // reduced dims form one block: the (outer, red, inner) view applies
  int64_t outer = 1, red = 1, inner = 1;
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
  p.in_shape = shape;
  p.reduced = reduced_dims(op, shape, dims);
  const int64_t n = static_cast<int64_t>(shape.size());
  int64_t lo = n, hi = -1;
  for (int64_t d = 0; d < n; ++d) {
    if (p.reduced[d]) {
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
      p.count *= shape[d];
      lo = std::min(lo, d);
      hi = d;
    } else {
      p.keep_shape.push_back(shape[d]);
      p.out_shape.push_back(shape[d]);
      p.out_numel *= shape[d];
    }
  }
  if (hi < 0) lo = hi = n;  // nothing reduced: (numel, 1, 1)
  for (int64_t d = lo; d <= hi && d < n; ++d)
    if (!p.reduced[d] && shape[d] != 1) p.adjacent = false;
  for (int64_t d = 0; d < n; ++d) (d < lo ? p.outer : d <= hi ? p.red : p.inner) *= shape[d];
  return p;
}

// Calls f(in_index, out_index) for every input element.
template <typename F>
void for_each_pair(const ReducePlan& p, F&& f) {
  if (p.adjacent) {
    const int64_t outer = p.outer, red = p.red, inner = p.inner;
    parallel_for(outer, outer * red * inner, [&](int64_t o) {
      for (int64_t r = 0; r < red; ++r)
        for (int64_t i = 0; i < inner; ++i) f((o * red + r) * inner + i, o * inner + i);
    });
    return;
  }
  // General walk: the input row-major, the output through strides that are 0 on reduced dims.
  Shape ost = contiguous_strides(p.keep_shape);
  for (size_t d = 0; d < ost.size(); ++d)
    if (p.reduced[d]) ost[d] = 0;
  broadcast_loop2(p.in_shape, ost, Shape(p.in_shape.size(), 0),
                  [&](int64_t i, int64_t o, int64_t) { f(i, o); });
}

// Sum of each output's inputs, in double.
template <typename T>
std::vector<double> sums(const Tensor& x, const ReducePlan& p) {
  std::vector<double> acc(p.out_numel, 0.0);
  const T* px = x.data<T>();
  for_each_pair(p, [&](int64_t i, int64_t o) { acc[o] += static_cast<double>(px[i]); });
  return acc;
}

template <typename T, typename A>
Tensor from_values(const std::vector<A>& v, const Shape& shape) {
  Tensor out = Tensor::empty(shape, dtype_of<T>::value);
  T* po = out.data<T>();
  for (size_t i = 0; i < v.size(); ++i) po[i] = static_cast<T>(v[i]);
  return out;
}

// dx[i] = dout[o] * w(i, o) over the reduction's walk; T is dout's dtype.
template <typename T, typename W>
Tensor spread(const Tensor& g, const ReducePlan& p, W w) {
  Tensor dx = Tensor::empty(p.in_shape, g.dtype());
  const T* pg = g.data<T>();
  T* pd = dx.data<T>();
  for_each_pair(p, [&](int64_t i, int64_t o) { pd[i] = static_cast<T>(pg[o] * w(i, o)); });
  return dx;
}

void check_input(const Tensor& x, const char* op) { check_defined(x, op, "input"); }

// ---- CUDA: the same reductions, composed from the reduce kernel and broadcasting ops ----
// The reduction of x on its CUDA device, shaped as the op returns it.
Tensor cuda_reduced(const Tensor& x, const ReducePlan& p, cuda::RedOp op) {
  return reshape(cuda_reduce(x, p.reduced, op), p.out_shape);
}
// dout (out_shape) seen at every input position: expanded back over the reduced dims.
Tensor cuda_spread(const Tensor& g, const ReducePlan& p) {
  return expand(reshape(g, p.keep_shape), p.in_shape);
}
Tensor cuda_sum(const Tensor& x, const ReducePlan& p) {
  if (!is_floating(x.dtype()))
    return cuda_reduced(x.to(kInt64), p, cuda::RedOp::Sum);  // int64 and bool sum to int64
  Tensor out = cuda_reduced(x, p, cuda::RedOp::Sum);
  if (needs_record({&x})) {
    record(
        "sum", out, {x},
        RecordInfo().flops(static_cast<double>(x.numel()), static_cast<double>(x.numel())).saved(),
        [p](const Tensor& g) -> std::vector<Tensor> { return {cuda_spread(g, p).clone()}; });
  }
  return out;
}
// amax with ties sharing the gradient, as on the CPU.
Tensor cuda_max(const Tensor& x, const ReducePlan& p) {
  Tensor out = cuda_reduced(x, p, cuda::RedOp::Max);
  if (needs_record({&x})) {
    Tensor sx = x.detach(), sm = out.detach();
    record("max", out, {x},
           RecordInfo()
               .flops(static_cast<double>(x.numel()), 2 * static_cast<double>(x.numel()))
               .saved(sx, sm),
           [p, sx, sm](const Tensor& g) -> std::vector<Tensor> {
             Tensor hit = eq(sx, cuda_spread(sm, p)).to(sx.dtype());
             Tensor ties = reshape(cuda_reduce(hit, p.reduced, cuda::RedOp::Sum), p.out_shape);
             return {mul(hit, cuda_spread(div(g, ties), p))};
           });
  }
  return out;
}
}  // namespace
namespace {
void check_nonempty(const ReducePlan& p, const char* op, const std::vector<int64_t>& dims) {
  if (p.count == 0 && p.out_numel > 0)
    throw Error(fmt::format("{}: cannot reduce input {} over dims {}: the reduced size is 0", op,
                            shape_str(p.in_shape), dims_str(dims)));
}
}  // namespace

// ---- sum, mean ----
// x (D...) -> out (D... without dims). int64 and bool inputs sum to int64 (no gradient).
Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  check_input(x, "sum");
  ReducePlan p = make_plan("sum", x.shape(), dims, keepdim);
  if (on_cuda(x)) return cuda_sum(x, p);
  if (!is_floating(x.dtype())) {
    std::vector<int64_t> acc(p.out_numel, 0);
    dispatch_all(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();
      for_each_pair(p, [&](int64_t i, int64_t o) { acc[o] += static_cast<int64_t>(px[i]); });
    });
    return from_values<int64_t>(acc, p.out_shape);
  }
  Tensor out = dispatch_float(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    return from_values<T>(sums<T>(x, p), p.out_shape);
  });
  if (needs_record({&x})) {
    // adds; backward broadcasts
    record(
        "sum", out, {x},
        RecordInfo().flops(static_cast<double>(x.numel()), static_cast<double>(x.numel())).saved(),
        [p](const Tensor& g) -> std::vector<Tensor> {
          return {dispatch_float(g.dtype(), "sum", [&](auto tag) {
            return spread<decltype(tag)>(g, p, [](int64_t, int64_t) { return 1.0; });
          })};
        });
  }
  return out;
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  check_float(x, "mean", "input", true);
  ReducePlan p = make_plan("mean", x.shape(), dims, keepdim);
  const double n = static_cast<double>(p.count);
  if (on_cuda(x)) return div(cuda_sum(x, p), n);
  Tensor out = dispatch_float(x.dtype(), "mean", [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> acc = sums<T>(x, p);
    for (double& v : acc) v /= n;
    return from_values<T>(acc, p.out_shape);
  });
  if (needs_record({&x})) {
    record(
        "mean", out, {x},
        RecordInfo().flops(static_cast<double>(x.numel()), static_cast<double>(x.numel())).saved(),
        [p, n](const Tensor& g) -> std::vector<Tensor> {
          return {dispatch_float(g.dtype(), "mean", [&](auto tag) {
            return spread<decltype(tag)>(g, p, [n](int64_t, int64_t) { return 1.0 / n; });
          })};
        });
  }
  return out;
}

// ---- max (amax) ----
// The gradient is shared evenly among the elements equal to the maximum. NaN propagates.
Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim, Site site) {
  SiteScope scope(site);
  check_input(x, "max");
  if (x.dtype() == kBool)
    throw Error(fmt::format("max: input {} has dtype bool, expected float32, float64 or int64",
                            shape_str(x.shape())));
  ReducePlan p = make_plan("max", x.shape(), dims, keepdim);
  check_nonempty(p, "max", dims);
  if (on_cuda(x)) return cuda_max(x, p);
  Tensor out = dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> best(p.out_numel, std::numeric_limits<T>::lowest());
    if constexpr (std::is_floating_point_v<T>) best.assign(p.out_numel, -INFINITY);
    const T* px = x.data<T>();
    for_each_pair(p, [&](int64_t i, int64_t o) {
      T v = px[i];
      if (v > best[o] || is_nan(v)) best[o] = v;  // once NaN, stays NaN (v > NaN is false)
    });
    return from_values<T>(best, p.out_shape);
  });
  if (needs_record({&x})) {
    Tensor sx = x.detach(), sm = out.detach();
    record("max", out, {x},
           RecordInfo()
               .flops(static_cast<double>(x.numel()), 2 * static_cast<double>(x.numel()))
               .saved(sx, sm),
           [p, sx, sm](const Tensor& g) -> std::vector<Tensor> {
             return {dispatch_float(g.dtype(), "max", [&](auto tag) {
               using T = decltype(tag);
               const T* px = sx.data<T>();
               const T* pm = sm.data<T>();
               std::vector<int64_t> ties(p.out_numel, 0);
               for_each_pair(p, [&](int64_t i, int64_t o) { ties[o] += px[i] == pm[o]; });
               return spread<T>(g, p, [&](int64_t i, int64_t o) {
                 return px[i] == pm[o] ? 1.0 / static_cast<double>(ties[o]) : 0.0;
               });
             })};
           });
  }
  return out;
}

// ---- var ----
// sum((x - mean)²) / (n - correction); d/dx = 2(x - mean) / (n - correction) · dout.
Tensor var(const Tensor& x, std::vector<int64_t> dims, bool keepdim, int64_t correction,
           Site site) {
  SiteScope scope(site);
  check_float(x, "var", "input", true);
  if (correction < 0)
    throw Error(fmt::format("var: correction must be >= 0, got {} (input {})", correction,
                            shape_str(x.shape())));
  ReducePlan p = make_plan("var", x.shape(), dims, keepdim);
  // PyTorch divides by max(0, n - correction): 0 gives inf or nan, as there.
  const double denom = std::max<double>(0.0, static_cast<double>(p.count - correction));
  if (on_cuda(x)) {  // composed: its backward comes from the ops
    Tensor d = sub(x, cuda_spread(div(cuda_sum(x, p), static_cast<double>(p.count)), p));
    return div(cuda_sum(mul(d, d), p), denom);
  }
  std::vector<double> mu;
  Tensor out = dispatch_float(x.dtype(), "var", [&](auto tag) {
    using T = decltype(tag);
    mu = sums<T>(x, p);
    for (double& v : mu) v /= static_cast<double>(p.count);
    std::vector<double> ss(p.out_numel, 0.0);
    const T* px = x.data<T>();
    for_each_pair(p, [&](int64_t i, int64_t o) {
      double d = static_cast<double>(px[i]) - mu[o];
      ss[o] += d * d;
    });
    for (double& v : ss) v /= denom;
    return from_values<T>(ss, p.out_shape);
  });
  if (needs_record({&x})) {
    Tensor sx = x.detach();
    record("var", out, {x},
           RecordInfo()
               .flops(3 * static_cast<double>(x.numel()), 3 * static_cast<double>(x.numel()))
               .saved_plus(tensor_bytes(sx) + static_cast<int64_t>(sizeof(double) * mu.size())),
           [p, sx, mu, denom](const Tensor& g) -> std::vector<Tensor> {
             return {dispatch_float(g.dtype(), "var", [&](auto tag) {
               using T = decltype(tag);
               const T* px = sx.data<T>();
               return spread<T>(g, p, [&](int64_t i, int64_t o) {
                 return 2.0 * (static_cast<double>(px[i]) - mu[o]) / denom;
               });
             })};
           });
  }
  return out;
}

// ---- argmax ----
// int64 index of the first maximum along dim (NaN counts as the maximum); no gradient.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim, Site site) {
  SiteScope scope(site);
  check_input(x, "argmax");
  if (x.dtype() == kBool)
    throw Error(fmt::format("argmax: input {} has dtype bool, expected float32, float64 or int64",
                            shape_str(x.shape())));
  ReducePlan p = make_plan("argmax", x.shape(), {dim}, keepdim);
  check_nonempty(p, "argmax", {dim});
  if (on_cuda(x)) {
    Tensor out = Tensor::empty(p.out_shape, kInt64, x.device());
    on_device("argmax", x.device(), [&] {
      cuda::argmax(cdt(x.dtype()), static_cast<int64_t*>(out.data_ptr()), x.data_ptr(), p.outer,
                   p.red, p.inner);
    });
    return out;
  }
  Tensor out = Tensor::empty(p.out_shape, kInt64);
  int64_t* po = out.data<int64_t>();
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const int64_t red = p.red, inner = p.inner;  // one dim: always the adjacent layout
    for (int64_t o = 0; o < p.outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = px + o * red * inner + i;
        int64_t bi = 0;
        for (int64_t r = 1; r < red; ++r) {
          T v = row[r * inner], b = row[bi * inner];
          if (!is_nan(b) && (v > b || is_nan(v))) bi = r;
        }
        po[o * inner + i] = bi;
      }
    }
  });
  return out;
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
