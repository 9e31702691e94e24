// ops/softmax.cpp — softmax and log_softmax over any dim, forward and backward side by side.
//
// The tensor is seen as (outer, n, inner) with n the reduced dim: element (o, j, i) sits at
// o*n*inner + j*inner + i, so the last dim (inner == 1) is a contiguous row. Both ops subtract the
// row max before exponentiating and accumulate in double. Backward reads only the saved OUTPUT y:
//   softmax:      dx = y * (g - sum_j(g*y))
//   log_softmax:  dx = g - exp(y) * sum_j(g)
// Rows that are entirely -inf (a fully masked attention row) are defined here, unlike PyTorch
// (which gives NaN): softmax gives 0 for every element, log_softmax gives -inf, and both give a
// zero gradient for that row. Deliberately not here: masking itself (mask.cpp), cross entropy's
// fused log_softmax (loss.cpp).
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <cmath>
#include <limits>

namespace tg {
using namespace detail;

namespace {

// x viewed as (outer, n, inner) around dim d.
struct RowLayout {
  int64_t outer = 1, n = 1, inner = 1;
};
RowLayout layout_of(const Shape& s, int64_t d) {
  RowLayout l;
  if (s.empty()) return l;  // a 0-dim tensor is one row of one element
  for (int64_t i = 0; i < d; ++i) l.outer *= s[i];
  l.n = s[d];
  for (size_t i = d + 1; i < s.size(); ++i) l.inner *= s[i];
  return l;
}

// Validates x and normalises dim (a 0-dim tensor accepts dim 0 and -1, like PyTorch).
RowLayout check_softmax(const char* op, const Tensor& x, int64_t dim) {
  check_float(x, op, "input", true);
  const int64_t rank = std::max<int64_t>(x.dim(), 1);
  const int64_t d = norm_dim(dim, rank, op, x.shape());
  return layout_of(x.shape(), d);
}

// Calls f(base) for the first element of every row; the row's elements are base + j*inner.
template <typename F>
void for_each_row(const RowLayout& l, F f) {
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) f(o * l.n * l.inner + i);
}

// y = softmax(x) (log_softmax when is_log) along the rows of l.
template <typename T>
void softmax_forward(T* y, const T* x, const RowLayout& l, bool is_log) {
  const int64_t n = l.n, st = l.inner;
  for_each_row(l, [&](int64_t b) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(x[b + j * st]));
    if (mx == -std::numeric_limits<double>::infinity()) {  // all -inf: see the file comment
      bool nan = false;  // NaN and -inf only: std::max skipped the NaNs, the row stays NaN
      for (int64_t j = 0; j < n && !nan; ++j) nan = std::isnan(x[b + j * st]);
      for (int64_t j = 0; j < n; ++j)
        y[b + j * st] = nan ? std::numeric_limits<T>::quiet_NaN()
                            : (is_log ? -std::numeric_limits<T>::infinity() : T(0));
      return;
    }
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(x[b + j * st]) - mx);
    if (is_log) {
      const double lse = mx + std::log(s);
      for (int64_t j = 0; j < n; ++j)
        y[b + j * st] = static_cast<T>(static_cast<double>(x[b + j * st]) - lse);
    } else {
      const double inv = 1.0 / s;
      for (int64_t j = 0; j < n; ++j)
        y[b + j * st] = static_cast<T>(std::exp(static_cast<double>(x[b + j * st]) - mx) * inv);
    }
  });
}

// dx from dy (g) and the saved output y. Fully masked rows (softmax all 0, log_softmax all -inf)
// get a zero gradient.
template <typename T>
void softmax_backward(T* dx, const T* g, const T* y, const RowLayout& l, bool is_log) {
  const int64_t n = l.n, st = l.inner;
  for_each_row(l, [&](int64_t b) {
    if (is_log) {
      double sg = 0, sp = 0;
      for (int64_t j = 0; j < n; ++j) {
        sg += g[b + j * st];
        sp += std::exp(static_cast<double>(y[b + j * st]));
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k = b + j * st;
        dx[k] = sp == 0 ? T(0) : static_cast<T>(g[k] - std::exp(static_cast<double>(y[k])) * sg);
      }
    } else {
      double dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(g[b + j * st]) * y[b + j * st];
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k = b + j * st;
        dx[k] = static_cast<T>(y[k] * (g[k] - dot));
      }
    }
  });
}

Tensor softmax_op(const char* op, const Tensor& x, int64_t dim, bool is_log) {
  const RowLayout l = check_softmax(op, x, dim);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (on_cuda(x)) {
    if (x.numel() > 0)
      on_device(op, x.device(), [&] {
        cuda::softmax_forward(cdt(x.dtype()), y.data_ptr(), x.data_ptr(), l.outer, l.n, l.inner,
                              is_log);
      });
  } else {
    dispatch_float(x.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      softmax_forward(y.data<T>(), x.data<T>(), l, is_log);
    });
  }
  if (needs_record({&x})) {
    Tensor sy = y.detach();  // y: the saved output
    // Cost model per element: ~5 forward (max, subtract, exp, sum, scale), ~4 backward.
    const double n = static_cast<double>(x.numel());
    record(op, y, {x},
           RecordInfo()
               .flops(5 * n, 4 * n)
               .saved(sy)
               .rows(static_cast<int>(x.dim() == 0 ? 0 : norm_dim(dim, x.dim(), op, x.shape()))),
           [sy, l, is_log, op](const Tensor& g) -> std::vector<Tensor> {
             Tensor dx = Tensor::empty(g.shape(), g.dtype(), g.device());
             if (on_cuda(g)) {
               if (g.numel() > 0)
                 on_device(op, g.device(), [&] {
                   cuda::softmax_backward(cdt(g.dtype()), dx.data_ptr(), g.data_ptr(),
                                          sy.data_ptr(), l.outer, l.n, l.inner, is_log);
                 });
               return {dx};
             }
             dispatch_float(g.dtype(), op, [&](auto tag) {
               using T = decltype(tag);
               softmax_backward(dx.data<T>(), g.data<T>(), sy.data<T>(), l, is_log);
             });
             return {dx};
           });
  }
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, Site site) {
  SiteScope scope(site);
  return softmax_op("softmax", x, dim, false);
}
Tensor log_softmax(const Tensor& x, int64_t dim, Site site) {
  SiteScope scope(site);
  return softmax_op("log_softmax", x, dim, true);
}

Tensor Tensor::softmax(int64_t dim, Site site) const { return tg::softmax(*this, dim, site); }
Tensor Tensor::log_softmax(int64_t dim, Site site) const {
  return tg::log_softmax(*this, dim, site);
}

}  // namespace tg
