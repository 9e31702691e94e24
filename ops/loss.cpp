// ops/loss.cpp — cross_entropy: fused log_softmax + negative log likelihood with PyTorch's
// ignore_index, label smoothing and reductions; forward and closed-form backward side by side.
//
// logits (N, C) or (N, C, d1, ...) float, target (N) or (N, d1, ...) int64 class indices; also
// logits (C) with a 0-dim target (one sample). Viewed as (N, C, inner) with inner = d1·d2·...,
// so every (n, i) is one row of C logits at stride inner. Per row, with lse = logsumexp_c(x),
// ε = label_smoothing and t the target:
//   loss = (1-ε)·(lse - x_t) + ε/C·Σ_c(lse - x_c)        (0 where t == ignore_index)
// reduction Mean divides the sum by the number of non-ignored rows (all ignored: 0/0 = NaN, with a
// zero gradient, as PyTorch 1.13 does); Sum sums; None keeps target's shape.
// Backward reads the saved logits and lse per row:
//   dx_c = dloss_row·(softmax_c - (1-ε)·[c == t] - ε/C)   (0 for ignored rows)
// Deliberately not here: class weights, probability targets.
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <cmath>
#include <limits>

namespace tg {
using namespace detail;

namespace {
constexpr const char* kOp = "cross_entropy";

struct CeLayout {
  int64_t N = 1, C = 0, inner = 1;
  int64_t rows() const { return N * inner; }
};

CeLayout check_cross_entropy(const Tensor& x, const Tensor& t, const CrossEntropyOptions& o) {
  check_float(x, kOp, "logits", true);
  check_dtype(t, kInt64, kOp, "target", true);
  check_same_device(x, t, kOp, "logits", "target");
  const Shape& xs = x.shape();
  if (xs.empty())
    throw Error(fmt::format("{}: logits {} must be (N, C), (N, C, d1, ...) or (C) (target {})", kOp,
                            shape_str(xs), shape_str(t.shape())));
  Shape want = xs;
  CeLayout l;
  if (xs.size() == 1) {
    want.clear();  // (C) pairs with a 0-dim target
    l.C = xs[0];
  } else {
    want.erase(want.begin() + 1);
    l.N = xs[0];
    l.C = xs[1];
    for (size_t i = 2; i < xs.size(); ++i) l.inner *= xs[i];
  }
  if (t.shape() != want)
    throw Error(fmt::format(
        "{}: target {} does not match logits {}: expected target {} (logits without the "
        "class dim 1)",
        kOp, shape_str(t.shape()), shape_str(xs), shape_str(want)));
  if (!(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0))
    throw Error(fmt::format("{}: label_smoothing must be in [0, 1], got {} (logits {})", kOp,
                            o.label_smoothing, shape_str(xs)));
  if (on_cuda(t) && t.numel() > 0) {  // ignored rows read as class 0; one read-back
    Tensor ign = full({}, static_cast<double>(o.ignore_index), kInt64, t.device());
    Tensor checked = where(eq(t, ign), zeros({}, kInt64, t.device()), t);
    const int64_t k = on_device(kOp, t.device(), [&] {
      return cuda::first_out_of_range(static_cast<const int64_t*>(checked.data_ptr()), t.numel(), 0,
                                      l.C);
    });
    if (k >= 0)
      throw Error(fmt::format(
          "{}: target class {} at flat position {} is out of range [0, {}) for logits {} "
          "and target {} (ignore_index {})",
          kOp, t.reshape({-1}).narrow(0, k, 1).item<int64_t>(), k, l.C, shape_str(xs),
          shape_str(t.shape()), o.ignore_index));
    return l;
  }
  const int64_t* pt = t.data<int64_t>();
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (pt[k] == o.ignore_index) continue;
    if (pt[k] < 0 || pt[k] >= l.C)
      throw Error(fmt::format(
          "{}: target class {} at flat position {} is out of range [0, {}) for logits {} "
          "and target {} (ignore_index {})",
          kOp, pt[k], k, l.C, shape_str(xs), shape_str(t.shape()), o.ignore_index));
  }
  return l;
}

// loss (rows) and lse (rows) from logits (N, C, inner); returns the count of non-ignored rows.
template <typename T>
int64_t ce_forward(double* loss, double* lse, const T* x, const int64_t* t, const CeLayout& l,
                   const CrossEntropyOptions& o) {
  const int64_t C = l.C, st = l.inner;
  const double eps = o.label_smoothing;
  int64_t count = 0;
  for (int64_t n = 0; n < l.N; ++n) {
    for (int64_t i = 0; i < l.inner; ++i) {
      const int64_t r = n * l.inner + i;
      const T* xr = x + n * C * st + i;
      if (t[r] == o.ignore_index) {
        loss[r] = 0;
        lse[r] = 0;
        continue;
      }
      ++count;
      double mx = -std::numeric_limits<double>::infinity(), sx = 0;
      for (int64_t c = 0; c < C; ++c) mx = std::max(mx, static_cast<double>(xr[c * st]));
      double s = 0;
      for (int64_t c = 0; c < C; ++c) {
        s += std::exp(xr[c * st] - mx);
        sx += xr[c * st];
      }
      const double z = mx + std::log(s);
      const double nll = z - xr[t[r] * st];
      loss[r] = eps == 0 ? nll : (1 - eps) * nll + eps / C * (C * z - sx);
      lse[r] = z;
    }
  }
  return count;
}

// dx (N, C, inner) from the per-row upstream gradient grow (rows) and the saved logits and lse.
template <typename T>
void ce_backward(T* dx, const double* grow, const T* x, const int64_t* t, const double* lse,
                 const CeLayout& l, const CrossEntropyOptions& o) {
  const int64_t C = l.C, st = l.inner;
  const double eps = o.label_smoothing;
  for (int64_t n = 0; n < l.N; ++n) {
    for (int64_t i = 0; i < l.inner; ++i) {
      const int64_t r = n * l.inner + i;
      const T* xr = x + n * C * st + i;
      T* dr = dx + n * C * st + i;
      if (t[r] == o.ignore_index) {
        for (int64_t c = 0; c < C; ++c) dr[c * st] = T(0);
        continue;
      }
      const double g = grow[r];
      for (int64_t c = 0; c < C; ++c) {
        const double target = (c == t[r] ? 1 - eps : 0) + eps / C;
        dr[c * st] = static_cast<T>(g * (std::exp(xr[c * st] - lse[r]) - target));
      }
    }
  }
}

// Per-row upstream gradient (rows) from dout: None reads dout per row, Sum broadcasts the scalar,
// Mean divides it by count (0 when every row is ignored, like PyTorch).
std::vector<double> row_grads(const Tensor& g, int64_t rows, int64_t count, Reduction red) {
  std::vector<double> gv = g.to_vector<double>();
  if (red == Reduction::None) return gv;
  const double s =
      red == Reduction::Sum ? gv[0] : (count > 0 ? gv[0] / static_cast<double>(count) : 0.0);
  return std::vector<double>(rows, s);
}

// The CUDA path: per-row losses and log-sum-exp in float64 on the device, the reduction by ops,
// backward fused (softmax minus the smoothed one-hot, times the row's gradient).
Tensor cuda_cross_entropy(const Tensor& logits, const Tensor& target, const CeLayout& l,
                          const CrossEntropyOptions& opts) {
  const Device dev = logits.device();
  const int64_t rows = l.rows();
  Tensor loss = Tensor::empty({rows}, kFloat64, dev), lse = Tensor::empty({rows}, kFloat64, dev);
  int64_t count = 0;
  if (rows > 0)
    on_device(kOp, dev, [&] {
      cuda::cross_entropy_forward(cdt(logits.dtype()), static_cast<double*>(loss.data_ptr()),
                                  static_cast<double*>(lse.data_ptr()), logits.data_ptr(),
                                  static_cast<const int64_t*>(target.data_ptr()), l.N, l.C, l.inner,
                                  opts.ignore_index, opts.label_smoothing, &count);
    });
  Tensor out;
  if (opts.reduction == Reduction::None) {
    out = reshape(loss, target.shape()).to(logits.dtype());
  } else {
    Tensor total = sum(loss);
    // Mean over non-ignored rows; 0/0 gives NaN when every row is ignored, like PyTorch.
    if (opts.reduction == Reduction::Mean) total = div(total, static_cast<double>(count));
    out = total.to(logits.dtype());
  }
  if (needs_record({&logits})) {
    Tensor sx = logits.detach(), st = target.detach();
    const CrossEntropyOptions o = opts;
    record(kOp, out, {logits, target},
           RecordInfo()
               .flops(4.0 * static_cast<double>(logits.numel()),
                      3.0 * static_cast<double>(logits.numel()))
               .saved(sx, st, lse),
           [sx, st, lse, l, o, rows, count](const Tensor& g) -> std::vector<Tensor> {
             Tensor dx = Tensor::empty(sx.shape(), sx.dtype(), sx.device());
             Tensor grow;  // per row (reduction None) or one scalar for every row
             double gs = 0;
             if (o.reduction == Reduction::None) {
               grow = reshape(g, {rows}).to(kFloat64);
             } else {
               gs = g.item<double>();
               if (o.reduction == Reduction::Mean) gs = count > 0 ? gs / count : 0.0;
             }
             if (rows > 0)
               on_device("cross_entropy backward", sx.device(), [&] {
                 cuda::cross_entropy_backward(
                     cdt(sx.dtype()), dx.data_ptr(),
                     grow.defined() ? static_cast<const double*>(grow.data_ptr()) : nullptr, gs,
                     sx.data_ptr(), static_cast<const int64_t*>(st.data_ptr()),
                     static_cast<const double*>(lse.data_ptr()), l.N, l.C, l.inner, o.ignore_index,
                     o.label_smoothing);
               });
             return {dx, Tensor()};
           });
  }
  return out;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& opts,
                     Site site) {
  SiteScope scope(site);
  const CeLayout l = check_cross_entropy(logits, target, opts);
  if (on_cuda(logits)) return cuda_cross_entropy(logits, target, l, opts);
  const int64_t rows = l.rows();
  std::vector<double> loss(rows);
  Tensor lse = Tensor::empty({rows}, kFloat64);  // saved: logsumexp per row
  int64_t count = 0;
  dispatch_float(logits.dtype(), kOp, [&](auto tag) {
    using T = decltype(tag);
    count = ce_forward(loss.data(), lse.data<double>(), logits.data<T>(), target.data<int64_t>(), l,
                       opts);
  });
  Tensor out;
  if (opts.reduction == Reduction::None) {
    out = Tensor::empty(target.shape(), logits.dtype());
    dispatch_float(logits.dtype(), kOp, [&](auto tag) {
      using T = decltype(tag);
      T* po = out.data<T>();
      for (int64_t r = 0; r < rows; ++r) po[r] = static_cast<T>(loss[r]);
    });
  } else {
    double total = 0;
    for (double v : loss) total += v;
    // Mean over non-ignored rows; 0/0 gives NaN when every row is ignored, like PyTorch.
    if (opts.reduction == Reduction::Mean) total /= static_cast<double>(count);
    out = scalar_tensor(total, logits.dtype());
  }
  if (needs_record({&logits})) {
    Tensor sx = logits.detach(), st = target.detach();
    const CrossEntropyOptions o = opts;
    // Cost model per logit: ~4 forward (max, exp, sum, log), ~3 backward.
    record(kOp, out, {logits, target},
           RecordInfo()
               .flops(4.0 * static_cast<double>(logits.numel()),
                      3.0 * static_cast<double>(logits.numel()))
               .saved(sx, st, lse),
           [sx, st, lse, l, o, rows, count](const Tensor& g) -> std::vector<Tensor> {
             std::vector<double> grow = row_grads(g, rows, count, o.reduction);
             Tensor dx = Tensor::empty(sx.shape(), sx.dtype());
             dispatch_float(sx.dtype(), kOp, [&](auto tag) {
               using T = decltype(tag);
               ce_backward(dx.data<T>(), grow.data(), sx.data<T>(), st.data<int64_t>(),
                           lse.data<double>(), l, o);
             });
             return {dx, Tensor()};
           });
  }
  return out;
}

}  // namespace tg
