// ops/softmax/softmax.cpp — softmax and log_softmax over any dim, forward and backward side by
// side, and softmin (softmax of −x: composed, its gradient theirs).
//
// The tensor is seen as (outer, n, inner) with n the reduced dim: element (o, j, i) sits at
// o*n*inner + j*inner + i, so the last dim (inner == 1) is a contiguous row. Both ops subtract the
// row max before exponentiating (in the input's precision; bfloat16 / float16 rows in float32,
// rounded once) and sum in double. Backward reads only
// the saved OUTPUT y:
//   softmax:      dx = y * (g - sum_j(g*y))
//   log_softmax:  dx = g - exp(y) * sum_j(g)
// Rows that are entirely -inf (a fully masked attention row) are defined here, unlike PyTorch
// (which gives NaN): softmax gives 0 for every element, log_softmax gives -inf, and both give a
// zero gradient for that row; a row holding a NaN gives NaN. The CPU kernels, and that rule, are
// cpu::softmax_forward / softmax_backward (ops/softmax/cpu/softmax.cpp, shared with the fused
// attention); CUDA: cuda/softmax.cu. Deliberately not here: the kernels, masking itself (mask.cpp),
// cross entropy's fused log_softmax (loss.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

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

// ---- the kernel pair: CPU (cpu::softmax_forward/backward) or CUDA, picked by the tensor ----
// y = softmax(x) (log_softmax when is_log) along the rows of l.
Tensor softmax_forward(const char* op, const Tensor& x, const RowLayout& l, bool is_log) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.numel() == 0) return y;
  kernels(op, x).softmax_forward(cdt(x.dtype()), y.data_ptr(), x.data_ptr(), l.outer, l.n, l.inner,
                                 is_log);
  return y;
}
// dx from the upstream g and the saved output y.
Tensor softmax_backward(const char* op, const Tensor& g, const Tensor& y, const RowLayout& l,
                        bool is_log) {
  Tensor dx = Tensor::empty(g.shape(), g.dtype(), g.device());
  if (g.numel() == 0) return dx;
  kernels(op, g).softmax_backward(cdt(g.dtype()), dx.data_ptr(), g.data_ptr(), y.data_ptr(),
                                  l.outer, l.n, l.inner, is_log);
  return dx;
}

// check → kernel → record (the backward reads only the saved output y).
Tensor softmax_op(const char* op, const Tensor& x_in, int64_t dim, bool is_log) {
  const Tensor x = contig(x_in);
  const RowLayout l = check_softmax(op, x, dim);
  Tensor y = softmax_forward(op, x, l, is_log);
  if (needs_record({&x})) {
    // Cost model per element: ~5 forward (max, subtract, exp, sum, scale), ~4 backward.
    const double n = static_cast<double>(x.numel());
    RecordInfo info = RecordInfo().flops(5 * n, 4 * n);
    Saved hy = info.save_output(y);
    record(op, y, {x},
           info.rows(static_cast<int>(x.dim() == 0 ? 0 : norm_dim(dim, x.dim(), op, x.shape())))
               .differentiable(),
           [hy, l, is_log, op, dim](const Tensor& g) -> std::vector<Tensor> {
             const Tensor sy = hy.get();
             if (creating_graph()) {
               // softmax: y·(g − Σ g·y); log_softmax: g − exp(y)·Σ g (sums along dim, kept)
               if (is_log) return {sub(g, mul(exp(sy), sum(g, {dim}, true)))};
               return {mul(sy, sub(g, sum(mul(g, sy), {dim}, true)))};
             }
             return {softmax_backward(op, g, sy, l, is_log)};
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

// softmax(−x, dim), as torch.nn.functional.softmin; checked first so errors name softmin.
Tensor softmin(const Tensor& x, int64_t dim, Site site) {
  SiteScope scope(site);
  check_softmax("softmin", x, dim);
  return softmax_op("softmin", neg(x), dim, false);
}

Tensor Tensor::softmax(int64_t dim, Site site) const { return tg::softmax(*this, dim, site); }
Tensor Tensor::log_softmax(int64_t dim, Site site) const {
  return tg::log_softmax(*this, dim, site);
}

}  // namespace tg
