// ops/loss/composed.cpp — the losses past cross_entropy (ops/loss/cross_entropy.cpp), with torch.nn.functional's names,
// defaults, reductions and edge cases, each composed from recorded ops so its backward is theirs:
//   mse_loss, l1_loss, smooth_l1_loss (beta), huber_loss (delta)          regression
//   binary_cross_entropy (weight; log clamped at −100 as PyTorch does)
//   binary_cross_entropy_with_logits (weight, pos_weight; (1 − t)·x + lw·softplus(−x), smooth at 0)
//   nll_loss (class weights, ignore_index; mean divides by the weights taken)
//   kl_div (log_target; batchmean), cosine_similarity, normalize
// Input and target broadcast as PyTorch's elementwise losses do; errors name the op and shapes.
// Deliberately not here: cross_entropy's fused kernel (ops/loss/cross_entropy.cpp).
#include "ops/autocast/autocast.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <cmath>

namespace tg {
using namespace detail;

namespace {
// PyTorch's reduction of a pointwise loss; batchmean only for kl_div (sum / size of dim 0).
Tensor reduce_loss(const char* op, const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return sum(loss);
    case Reduction::Mean:
      return mean(loss);
    case Reduction::BatchMean:
      break;
  }
  throw Error(
      fmt::format("{}: reduction batchmean is kl_div's alone; use none, mean or sum (input {})", op,
                  shape_str(loss.shape())));
}

// How many elements of a bool tensor are true (on either device).
int64_t count_true(const Tensor& b) {
  NoGradGuard ng;
  return b.numel() == 0 ? 0 : sum(b.to(kInt64)).to(kCPU).to_vector<int64_t>()[0];
}
// Elementwise a AND b for bool tensors.
Tensor both(const Tensor& a, const Tensor& b) { return (a.to(kInt64) * b.to(kInt64)) == 1.0; }

// Input and target of one floating dtype and device that broadcast (same_shape: are equal).
void check_pair(const char* op, const Tensor& input, const Tensor& target,
                bool same_shape = false) {
  check_float(input, op, "input", true);
  check_float(target, op, "target", true);
  check_same_device(input, target, op, "input", "target");
  check_same_dtype(input, target, op, "input", "target");
  if (same_shape && input.shape() != target.shape())
    throw Error(fmt::format("{}: target {} must have the shape of input {}", op,
                            shape_str(target.shape()), shape_str(input.shape())));
  broadcast_shapes(input.shape(), target.shape(), op);  // throws naming both shapes
}

// A weight (pos_weight) of a binary loss: input's dtype and device, and a shape that broadcasts
// to input's without growing it (PyTorch's rule: its result keeps input's shape).
void check_weight(const char* op, const char* arg, const Tensor& w, const Tensor& input) {
  check_float(w, op, arg, true);
  check_same_dtype(input, w, op, "input", arg);
  check_same_device(input, w, op, "input", arg);
  const Shape& is = input.shape();
  const Shape& ws = w.shape();
  bool ok = ws.size() <= is.size();
  for (size_t k = 0; ok && k < ws.size(); ++k) {
    const int64_t n = ws[ws.size() - 1 - k];
    ok = n == 1 || n == is[is.size() - 1 - k];
  }
  if (!ok)
    throw Error(
        fmt::format("{}: {} {} does not broadcast to input {}: the loss keeps input's shape", op,
                    arg, shape_str(ws), shape_str(is)));
}
}  // namespace

// ---- regression ----
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("mse_loss", {&input, &target}))
    return mse_loss((*c)[0], (*c)[1], reduction, site);
  check_pair("mse_loss", input, target);
  const Tensor d = input - target;
  return reduce_loss("mse_loss", d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("l1_loss", {&input, &target}))
    return l1_loss((*c)[0], (*c)[1], reduction, site);
  check_pair("l1_loss", input, target);
  return reduce_loss("l1_loss", abs(input - target), reduction);
}

// |d| < beta: 0.5·d²/beta, else |d| − 0.5·beta; beta 0 is l1_loss.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta,
                      Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("smooth_l1_loss", {&input, &target}))
    return smooth_l1_loss((*c)[0], (*c)[1], reduction, beta, site);
  check_pair("smooth_l1_loss", input, target);
  if (!(beta >= 0))
    throw Error(fmt::format("smooth_l1_loss: beta must be >= 0, got {} (input {})", beta,
                            shape_str(input.shape())));
  const Tensor d = input - target, a = abs(d);
  if (beta == 0) return reduce_loss("smooth_l1_loss", a, reduction);
  return reduce_loss("smooth_l1_loss", where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta),
                     reduction);
}

// |d| < delta: 0.5·d², else delta·(|d| − 0.5·delta).
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta,
                  Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("huber_loss", {&input, &target}))
    return huber_loss((*c)[0], (*c)[1], reduction, delta, site);
  check_pair("huber_loss", input, target);
  if (!(delta > 0))
    throw Error(fmt::format("huber_loss: delta must be > 0, got {} (input {})", delta,
                            shape_str(input.shape())));
  const Tensor d = input - target, a = abs(d);
  return reduce_loss("huber_loss", where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta),
                     reduction);
}

// ---- binary ----
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction reduction, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("binary_cross_entropy", {&input, &target, &weight}))
    return binary_cross_entropy((*c)[0], (*c)[1], (*c)[2], reduction, site);
  const char* op = "binary_cross_entropy";
  check_pair(op, input, target, true);
  if (weight.defined()) check_weight(op, "weight", weight, input);
  {
    NoGradGuard ng;  // NaN is out of range too, as in PyTorch
    if (count_true(both(input >= 0.0, input <= 1.0)) != input.numel())
      throw Error(fmt::format("{}: all elements of input {} should be between 0 and 1", op,
                              shape_str(input.shape())));
  }
  // PyTorch clamps each log at −100 so that 0 and 1 give a finite loss
  Tensor loss = -(target * clamp_min(log(input), -100.0) +
                  (1.0 - target) * clamp_min(log(1.0 - input), -100.0));
  if (weight.defined()) loss = loss * weight;
  return reduce_loss(op, loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        Reduction reduction, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("binary_cross_entropy_with_logits",
                              {&input, &target, &weight, &pos_weight}))
    return binary_cross_entropy_with_logits((*c)[0], (*c)[1], (*c)[2], (*c)[3], reduction, site);
  const char* op = "binary_cross_entropy_with_logits";
  check_pair(op, input, target, true);
  if (weight.defined()) check_weight(op, "weight", weight, input);
  if (pos_weight.defined()) check_weight(op, "pos_weight", pos_weight, input);
  // (1 − t)·x + lw·log(1 + e^−x), lw = (pos_weight − 1)·t + 1: softplus keeps it stable for any x
  // and its gradient σ(x)·lw − pos_weight·t exact at x = 0
  const Tensor sp = softplus(-input);
  Tensor loss = pos_weight.defined()
                    ? (1.0 - target) * input + ((pos_weight - 1.0) * target + 1.0) * sp
                    : (1.0 - target) * input + sp;
  if (weight.defined()) loss = loss * weight;
  return reduce_loss(op, loss, reduction);
}

// ---- negative log likelihood: input (N, C) or (N, C, d1, ...) log-probabilities ----
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, Reduction reduction, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("nll_loss", {&input, &target, &weight}))
    return nll_loss((*c)[0], (*c)[1], (*c)[2], ignore_index, reduction, site);
  const char* op = "nll_loss";
  check_float(input, op, "input", true);
  check_defined(target, op, "target");
  check_same_device(input, target, op, "input", "target");
  const Shape& is = input.shape();
  if (target.dtype() != kInt64)
    throw Error(fmt::format("{}: target {} must be int64 class indices (input {})", op,
                            shape_str(target.shape()), shape_str(is)));
  if (is.empty())  // before is[0] is read
    throw Error(
        fmt::format("{}: input {} has 0 dims, expected 1 or more: input (C), (N, C) or "
                    "(N, C, d1, ...) and target (), (N) or (N, d1, ...) (target {})",
                    op, shape_str(is), shape_str(target.shape())));
  Shape want_t;
  if (is.size() == 1) {
    want_t = {};
  } else {
    want_t = {is[0]};
    want_t.insert(want_t.end(), is.begin() + 2, is.end());
  }
  if (target.shape() != want_t)
    throw Error(
        fmt::format("{}: input {} and target {}: expected input (N, C) or (N, C, d1, ...) "
                    "and target (N) or (N, d1, ...)",
                    op, shape_str(is), shape_str(target.shape())));
  const int64_t C = is.size() == 1 ? is[0] : is[1];
  if (weight.defined()) {
    check_float(weight, op, "weight", true);
    check_same_dtype(input, weight, op, "input", "weight");
    check_same_device(input, weight, op, "input", "weight");
    if (weight.shape() != Shape{C})
      throw Error(fmt::format("{}: weight {} must be ({}) (input {})", op,
                              shape_str(weight.shape()), C, shape_str(is)));
  }
  // (M, C) rows with their classes, C last
  Tensor rows;
  if (is.size() == 1) {
    rows = reshape(input, {1, C});
  } else {
    std::vector<int64_t> perm = {0};
    for (size_t d = 2; d < is.size(); ++d) perm.push_back(static_cast<int64_t>(d));
    perm.push_back(1);
    rows = reshape(permute(input, perm), {-1, C});
  }
  const Tensor t = reshape(target, {-1});
  const Tensor valid = t != static_cast<double>(ignore_index);
  {
    NoGradGuard ng;
    const Tensor in_range = both(t >= 0.0, t < static_cast<double>(C));
    if (count_true(both(valid, logical_not(in_range))) > 0)
      throw Error(
          fmt::format("{}: target {} has a class outside [0, {}) that is not ignore_index "
                      "{} (input {})",
                      op, shape_str(target.shape()), C, ignore_index, shape_str(is)));
  }
  const Tensor safe = where(valid, t, zeros_like(t));
  const Tensor picked = reshape(gather(rows, 1, reshape(safe, {-1, 1})), {-1});
  Tensor w = valid.to(input.dtype());
  if (weight.defined()) w = w * index_select(weight, 0, safe);
  const Tensor loss = -(picked * w);
  switch (reduction) {
    case Reduction::None:
      return reshape(loss, target.shape());
    case Reduction::Sum:
      return sum(loss);
    case Reduction::Mean:
      return sum(loss) / sum(w);  // all ignored: 0/0 = NaN, as PyTorch
    case Reduction::BatchMean:
      break;
  }
  return reduce_loss(op, loss, reduction);
}

// ---- kl_div: input log-probabilities; target probabilities (or log-probabilities) ----
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target,
              Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("kl_div", {&input, &target}))
    return kl_div((*c)[0], (*c)[1], reduction, log_target, site);
  const char* op = "kl_div";
  check_pair(op, input, target);
  Tensor loss;
  if (log_target) {
    loss = exp(target) * (target - input);
  } else {
    // PyTorch 1.13's form: xlogy(t, t) − t·x, with xlogy(t, t) = t·log(t), 0 at t = 0. So a
    // negative or NaN target gives NaN, and a zero target gives 0 unless x is ±inf or NaN
    // (0·x); at t = 0 the target's gradient is NaN (xlogy's t / t), as PyTorch's. Input's
    // gradient is −t.
    const Tensor zero = zeros({}, target.dtype(), target.device());
    loss = where(target == 0.0, zero, target * log(target)) - target * input;
  }
  if (reduction == Reduction::BatchMean) {
    const int64_t n = input.dim() == 0 ? 1 : input.size(0);
    return sum(loss) / static_cast<double>(n);
  }
  return reduce_loss(op, loss, reduction);
}

// ---- similarity and normalisation ----
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps, Site site) {
  SiteScope scope(site);
  const char* op = "cosine_similarity";
  check_pair(op, x1, x2);
  const Shape bs = broadcast_shapes(x1.shape(), x2.shape(), op);
  // a 0-dim pair is one vector of one element: dim 0 or −1, as PyTorch
  const int64_t nd = std::max<int64_t>(static_cast<int64_t>(bs.size()), 1);
  if (dim < -nd || dim >= nd)
    throw Error(fmt::format("{}: dim {} out of range for x1 {} and x2 {}: expected [{}, {}]", op,
                            dim, shape_str(x1.shape()), shape_str(x2.shape()), -nd, nd - 1));
  // PyTorch 1.13: Σ (x1 / n1)·(x2 / n2) with n = max(‖x‖, eps) each, both broadcast first (so a
  // size-1 dim broadcast along dim counts once per element it stands for). Its clamp is made in
  // place under no_grad, so the gradient treats n as the norm even where eps replaced it:
  // dn/dx = x / n. sqrt(w + detach(max(w, eps²) − w)) has that value and that derivative, and
  // no NaN at a zero vector.
  const Tensor a = expand(x1, bs), b = expand(x2, bs);
  const auto clamped_norm = [&](const Tensor& x) {
    const Tensor w = sum(x * x, {dim}, /*keepdim=*/true);
    return sqrt(w + (clamp_min(w, eps * eps) - w).detach());
  };
  return sum((a / clamped_norm(a)) * (b / clamped_norm(b)), {dim});
}

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps, Site site) {
  SiteScope scope(site);
  const char* op = "normalize";
  check_float(x, op, "input", true);
  const int64_t nd = std::max<int64_t>(x.dim(), 1);  // 0-dim: dim 0 or −1, as PyTorch
  if (dim < -nd || dim >= nd)
    throw Error(fmt::format("{}: dim {} out of range for input {}: expected [{}, {}]", op, dim,
                            shape_str(x.shape()), -nd, nd - 1));
  if (!(p > 0) || !std::isfinite(p))
    throw Error(fmt::format("{}: p must be a positive finite number, got {} (input {})", op, p,
                            shape_str(x.shape())));
  // x / max(‖x‖_p, eps), the max taken inside the root so a zero row has a finite gradient
  const Tensor s = p == 2 ? sum(x * x, {dim}, true) : sum(pow(abs(x), p), {dim}, true);
  const Tensor norm =
      p == 2 ? sqrt(clamp_min(s, eps * eps)) : pow(clamp_min(s, std::pow(eps, p)), 1.0 / p);
  return x / norm;
}

}  // namespace tg
