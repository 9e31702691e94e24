// ops/loss/cross_entropy.cpp — cross_entropy: fused log_softmax + negative log likelihood with
// PyTorch's ignore_index, label smoothing and reductions; forward and closed-form backward side by
// side.
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
// The op: check → allocate → kernel pair (cpu:: in ops/loss/cpu/cross_entropy.cpp, or cuda::) →
// reduction by ops → record. bfloat16 / float16 logits give a loss and dlogits of their dtype (as
// PyTorch's op; autocast casts the logits to float32 first), computed in float32 / float64 and
// rounded once. Deliberately not here: the kernels, class weights, probability targets.
#include "ops/autocast/autocast.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

namespace tg {
using namespace detail;

namespace {
constexpr const char* kOp = "cross_entropy";

struct CeLayout {
  int64_t N = 1, C = 0, inner = 1;
  int64_t rows() const { return N * inner; }
};

// Logits need a class dim: every path reads it (the weight's check too), so this comes first.
void check_rank(const Tensor& x, const Tensor& t) {
  if (x.dim() == 0)
    throw Error(fmt::format("{}: logits {} must be (N, C), (N, C, d1, ...) or (C) (target {})", kOp,
                            shape_str(x.shape()), shape_str(t.shape())));
}

CeLayout check_cross_entropy(const Tensor& x, const Tensor& t, const CrossEntropyOptions& o) {
  check_float(x, kOp, "logits", true);
  check_dtype(t, kInt64, kOp, "target", true);
  check_same_device(x, t, kOp, "logits", "target");
  check_rank(x, t);
  const Shape& xs = x.shape();
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
    const int64_t k =
        kernels(kOp, t.device())
            .first_out_of_range(static_cast<const int64_t*>(checked.data_ptr()), t.numel(), 0, l.C);
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

// loss and lse (rows, float64, allocated) from logits (N, C, inner) and target: the CPU or CUDA
// kernel. Returns the number of rows not ignored.
int64_t forward_kernel(const Tensor& loss, const Tensor& lse, const Tensor& x, const Tensor& t,
                       const CeLayout& l, const CrossEntropyOptions& o) {
  if (l.rows() == 0) return 0;
  int64_t count = 0;
  kernels(kOp, x).cross_entropy_forward(cdt(x.dtype()), static_cast<double*>(loss.data_ptr()),
                                        static_cast<double*>(lse.data_ptr()), x.data_ptr(),
                                        static_cast<const int64_t*>(t.data_ptr()), l.N, l.C,
                                        l.inner, o.ignore_index, o.label_smoothing, &count);
  return count;
}

// dx (N, C, inner, allocated) from the per-row upstream gradient — grow (rows, float64) or, when
// undefined, gs for every row — and the saved logits, target and lse: the CPU or CUDA kernel.
void backward_kernel(const Tensor& dx, const Tensor& grow, double gs, const Tensor& x,
                     const Tensor& t, const Tensor& lse, const CeLayout& l,
                     const CrossEntropyOptions& o) {
  if (l.rows() == 0) return;
  const double* pg = grow.defined() ? static_cast<const double*>(grow.data_ptr()) : nullptr;
  kernels("cross_entropy backward", x)
      .cross_entropy_backward(cdt(x.dtype()), dx.data_ptr(), pg, gs, x.data_ptr(),
                              static_cast<const int64_t*>(t.data_ptr()),
                              static_cast<const double*>(lse.data_ptr()), l.N, l.C, l.inner,
                              o.ignore_index, o.label_smoothing);
}

}  // namespace

namespace {
// weight (C) viewed to broadcast along the class dim of x (dim 1, or 0 for unbatched (C)).
Tensor class_view(const Tensor& w, const Tensor& x) {
  Shape s(static_cast<size_t>(x.dim()), 1);
  s[x.dim() == 1 ? 0 : 1] = w.numel();
  return reshape(w, s);
}

void check_weight(const Tensor& w, const Tensor& x) {
  check_float(w, kOp, "weight", true);
  check_same_dtype(x, w, kOp, "logits", "weight");
  check_same_device(x, w, kOp, "logits", "weight");
  const int64_t C = x.dim() == 1 ? x.size(0) : x.size(1);
  if (w.dim() != 1 || w.size(0) != C)
    throw Error(fmt::format("{}: weight {} must be (C) = ({}) for logits {}", kOp,
                            shape_str(w.shape()), C, shape_str(x.shape())));
}

// Probability targets: -Σ_c w_c·t_c·log_softmax(x)_c per row (t smoothed first), mean over rows.
Tensor cross_entropy_probs(const Tensor& x, const Tensor& t, const CrossEntropyOptions& o) {
  if (t.shape() != x.shape())  // (logits have a class dim: check_rank)
    throw Error(
        fmt::format("{}: target {} has dtype {}, expected int64 class indices, or "
                    "probabilities of the logits' shape {}",
                    kOp, shape_str(t.shape()), dtype_name(t.dtype()), shape_str(x.shape())));
  check_same_dtype(x, t, kOp, "logits", "target");
  check_same_device(x, t, kOp, "logits", "target");
  if (!(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0))
    throw Error(fmt::format("{}: label_smoothing must be in [0, 1], got {} (logits {})", kOp,
                            o.label_smoothing, shape_str(x.shape())));
  const int64_t cd = x.dim() == 1 ? 0 : 1, C = x.size(cd);
  Tensor target = t;
  if (o.label_smoothing > 0)
    target = add(mul(t, 1.0 - o.label_smoothing), o.label_smoothing / static_cast<double>(C));
  Tensor terms = mul(log_softmax(x, cd), target);
  if (o.weight.defined()) terms = mul(terms, class_view(o.weight, x));
  if (o.reduction == Reduction::None) return neg(sum(terms, {cd}));
  Tensor total = neg(sum(terms));
  if (o.reduction == Reduction::Sum) return total;
  const double rows = C > 0 ? static_cast<double>(x.numel() / C) : 0.0;
  return div(total, rows);  // 0 rows: NaN, as PyTorch
}

// Class-index targets with class weights: nll_loss of log_softmax, plus PyTorch's weighted
// label-smoothing term (-Σ_c w_c·log_softmax_c / C per row, 0 on ignored rows; mean divides
// by the targets' summed weights, as nll_loss).
Tensor cross_entropy_weighted(const Tensor& x, const Tensor& t, const CrossEntropyOptions& o) {
  const int64_t cd = x.dim() == 1 ? 0 : 1, C = x.size(cd);
  const Tensor lsm = log_softmax(x, cd);
  Tensor loss = nll_loss(lsm, t, o.weight, o.ignore_index, o.reduction);
  if (o.label_smoothing <= 0) return loss;
  const Tensor keep = ne(t, static_cast<double>(o.ignore_index));  // rows not ignored
  Tensor smooth = neg(sum(mul(lsm, class_view(o.weight, x)), {cd}));
  smooth = where(keep, smooth, zeros({}, x.dtype(), x.device()));
  Tensor ret;
  if (o.reduction == Reduction::None) {
    ret = smooth;
  } else {
    ret = sum(smooth);
    if (o.reduction == Reduction::Mean) {
      const Tensor safe = where(keep, t, zeros({}, kInt64, t.device()));
      const Tensor wt = index_select(o.weight, 0, reshape(safe, {-1}));
      const Tensor kept = reshape(keep, {-1}).to(x.dtype());
      ret = div(ret, sum(mul(wt.detach(), kept)));
    }
  }
  return add(mul(loss, 1.0 - o.label_smoothing),
             mul(ret, o.label_smoothing / static_cast<double>(C)));
}
}  // namespace

namespace {
// create_graph: the same dx in recorded ops, so it differentiates again through the softmax.
Tensor cross_entropy_grad(const Tensor& g, const Tensor& x, const Tensor& target, const CeLayout& l,
                          const CrossEntropyOptions& o, int64_t count) {
  const Device dev = x.device();
  const Tensor x3 = reshape(x, {l.N, l.C, l.inner});
  const Tensor t3 = reshape(target, {l.N, 1, l.inner});
  const Tensor valid = ne(t3, static_cast<double>(o.ignore_index));  // (N, 1, inner)
  const Tensor classes = reshape(arange(static_cast<double>(l.C)).to(dev), {1, l.C, 1});
  const Tensor onehot = eq(t3, classes).to(x.dtype());  // an ignored target matches no class
  const double eps = o.label_smoothing;
  const Tensor coef = sub(softmax(x3, 1), add(mul(onehot, 1.0 - eps), eps / l.C));
  Tensor w;  // dloss per row
  if (o.reduction == Reduction::None)
    w = reshape(g, {l.N, 1, l.inner});
  else  // Mean: 0 when every row is ignored, like PyTorch
    w = mul(reshape(g, {1, 1, 1}),
            o.reduction == Reduction::Mean ? (count > 0 ? 1.0 / count : 0.0) : 1.0);
  return reshape(mul(mul(coef, w), valid.to(x.dtype())), x.shape());
}
}  // namespace

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target_in,
                     const CrossEntropyOptions& opts, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("cross_entropy", {&logits_in, &target_in, &opts.weight}))
    return cross_entropy(
        (*c)[0], (*c)[1],
        CrossEntropyOptions{opts.reduction, opts.ignore_index, opts.label_smoothing, (*c)[2]},
        site);
  const Tensor logits = contig(logits_in);
  const Tensor target = contig(target_in);
  if (opts.reduction == Reduction::BatchMean)
    throw Error(
        fmt::format("cross_entropy: reduction batchmean is kl_div's alone; use none, mean "
                    "or sum (logits {})",
                    shape_str(logits_in.shape())));
  check_defined(logits, kOp, "logits");
  check_defined(target, kOp, "target");
  check_rank(logits, target);
  if (opts.weight.defined()) {
    check_float(logits, kOp, "logits", true);
    check_weight(opts.weight, logits);
  }
  if (is_floating(target.dtype())) {
    check_float(logits, kOp, "logits", true);
    return cross_entropy_probs(logits, target, opts);
  }
  if (opts.weight.defined()) {
    check_cross_entropy(logits, target, opts);  // shapes, classes in range
    return cross_entropy_weighted(logits, target, opts);
  }
  const CeLayout l = check_cross_entropy(logits, target, opts);
  const Device dev = logits.device();
  const int64_t rows = l.rows();
  Tensor loss = Tensor::empty({rows}, kFloat64, dev);  // per row
  Tensor lse = Tensor::empty({rows}, kFloat64, dev);   // saved: logsumexp per row
  const int64_t count = forward_kernel(loss, lse, logits, target, l, opts);
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
    const CrossEntropyOptions o = opts;
    // Cost model per logit: ~4 forward (max, exp, sum, log), ~3 backward.
    RecordInfo info = RecordInfo().flops(4.0 * static_cast<double>(logits.numel()),
                                         3.0 * static_cast<double>(logits.numel()));
    Saved hx = info.save(logits), ht = info.save(target), hl = info.save(lse);
    record(kOp, out, {logits, target}, info.differentiable(),
           [hx, ht, hl, l, o, rows, count](const Tensor& g) -> std::vector<Tensor> {
             const Tensor sx = hx.get(), st = ht.get(), lse = hl.get();
             if (creating_graph()) return {cross_entropy_grad(g, sx, st, l, o, count), Tensor()};
             Tensor dx = Tensor::empty(sx.shape(), sx.dtype(), sx.device());
             Tensor grow;  // per row (reduction None) or one scalar for every row
             double gs = 0;
             if (o.reduction == Reduction::None) {
               grow = reshape(g, {rows}).to(kFloat64);
             } else {
               gs = g.item<double>();
               // Mean: 0 when every row is ignored, like PyTorch.
               if (o.reduction == Reduction::Mean) gs = count > 0 ? gs / count : 0.0;
             }
             backward_kernel(dx, grow, gs, sx, st, lse, l, o);
             return {dx, Tensor()};
           });
  }
  return out;
}

}  // namespace tg
