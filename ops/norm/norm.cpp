// ops/norm/norm.cpp — layer_norm, forward and closed-form backward side by side (llm.c's
// layernorm_forward / layernorm_backward, generalised to any trailing normalized_shape).
//
// x (N, D) after flattening: N rows of D = numel(normalized_shape) elements each.
//   mean = Σx/D, var = Σ(x-mean)²/D (biased, like PyTorch), rstd = 1/sqrt(var + eps)
//   norm = (x - mean)·rstd, out = norm·w + b
// Saved for backward: x, w, and mean and rstd per row (float64, shape (N)).
//   dnorm = dout·w
//   dx = rstd·(dnorm - mean_D(dnorm) - norm·mean_D(dnorm·norm))
//   dw = Σ_N dout·norm, db = Σ_N dout
// The op: check → allocate → kernel (cpu::layer_norm_forward/backward in ops/norm/cpu/norm.cpp, or
// cuda::) → record. RMSNorm (rms_norm, below) is the same with the mean fixed at 0 and no bias.
// bfloat16 / float16 x: out and dx in x's dtype, statistics float64 as always, and the weight and
// bias either of x's dtype or float32 (PyTorch 1.13 refuses the mixed pair; we take it, as
// autocast's float32 master weights need): the kernels read them, and write dweight / dbias, in
// float32, each gradient rounded once to its parameter's dtype. A float32 x with a bfloat16 /
// float16 weight and bias (mapped reduced weights, float32 activations) is the same the other way
// round: float32 out and dx, the parameters read as float32, their gradients rounded once.
// Deliberately not here: the kernels themselves, batch/group norm.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

#include <cmath>

namespace tg {
using namespace detail;

namespace {

// Checks x, normalized_shape, weight and bias; returns D (elements per normalised row).
int64_t check_layer_norm(const Tensor& x, const Shape& ns, const Tensor& w, const Tensor& b,
                         double eps, const char* kOp = "layer_norm") {
  check_float(x, kOp, "input", true);
  if (ns.empty())
    throw Error(fmt::format("{}: normalized_shape is empty; expected the trailing dims of input {}",
                            kOp, shape_str(x.shape())));
  const Shape& s = x.shape();
  bool ok = ns.size() <= s.size();
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = s[s.size() - ns.size() + i] == ns[i];
  if (!ok)
    throw Error(fmt::format("{}: normalized_shape {} must match the trailing dims of input {}", kOp,
                            shape_str(ns), shape_str(s)));
  const Tensor* params[2] = {&w, &b};
  const char* names[2] = {"weight", "bias"};
  for (int i = 0; i < 2; ++i) {
    const Tensor& p = *params[i];
    if (!p.defined()) continue;
    check_float(p, kOp, names[i], true);
    check_same_device(x, p, kOp, "input", names[i]);
    // mixed: bf16/f16 x with float32 p, or float32 x with bf16/f16 p (weight-only reduced)
    if (!(is_reduced(x.dtype()) && p.dtype() == kFloat32) &&
        !(x.dtype() == kFloat32 && is_reduced(p.dtype())))
      check_same_dtype(x, p, kOp, "input", names[i]);
    if (p.shape() != ns)
      throw Error(fmt::format("{}: {} {} must have normalized_shape {} (input {})", kOp, names[i],
                              shape_str(p.shape()), shape_str(ns), shape_str(s)));
  }
  if (!(eps >= 0))
    throw Error(fmt::format("{}: eps must be >= 0, got {} (input {})", kOp, eps, shape_str(s)));
  return shape_numel(ns);
}

// A parameter as the kernels read it: float32 for a bfloat16 / float16 input, x's dtype else
// (converted, not recorded: D elements), or p itself when it has that dtype already.
Tensor kernel_param(const Tensor& x, const Tensor& p) {
  const DType want = is_reduced(x.dtype()) ? kFloat32 : x.dtype();
  if (!p.defined() || p.dtype() == want) return p;
  NoGradGuard no_grad;
  return p.detach().to(want);
}
// A zeroed gradient buffer of a parameter of x, in the dtype the kernels write (kernel_param's).
Tensor param_grad_buffer(const Tensor& x, const Shape& ns) {
  return zeros(ns, is_reduced(x.dtype()) ? kFloat32 : x.dtype(), x.device());
}
// The gradient buffer d in its parameter's dtype pd (rounded once when pd is reduced).
Tensor as_param_dtype(const Tensor& d, DType pd) {
  if (!d.defined() || d.dtype() == pd) return d;
  NoGradGuard no_grad;
  return d.to(pd);
}

// The same in a recorded op (create_graph): a mixed pair's parameter gradient comes out of the
// recorded formulas promoted, and goes back in its parameter's dtype.
Tensor recorded_as(const Tensor& d, DType pd) {
  return d.defined() && d.dtype() != pd ? d.to(pd) : d;
}

// out (N, D), mean and rstd (N) float64, all allocated, from x (N, D) and w, b (D) or undefined:
// cpu::layer_norm_forward or cuda::layer_norm_forward.
void forward_kernel(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                    const Tensor& w, const Tensor& b, int64_t N, int64_t D, double eps) {
  if (N == 0) return;
  kernels("layer_norm", x)
      .layer_norm_forward(cdt(x.dtype()), out.data_ptr(), static_cast<double*>(data_or_null(mean)),
                          static_cast<double*>(data_or_null(rstd)), x.data_ptr(),
                          data_or_null(kernel_param(x, w)), data_or_null(kernel_param(x, b)), N, D,
                          eps);
}

// dx (N, D), dw and db (D) — each allocated or undefined, dw and db zeroed — from dout and the
// saved x, w (or undefined), mean and rstd: cpu::layer_norm_backward or cuda::.
void backward_kernel(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g,
                     const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                     int64_t N, int64_t D) {
  if (N == 0) return;
  kernels("layer_norm backward", x)
      .layer_norm_backward(cdt(g.dtype()), data_or_null(dx), data_or_null(dw), data_or_null(db),
                           g.data_ptr(), x.data_ptr(), data_or_null(kernel_param(x, w)),
                           static_cast<const double*>(mean.data_ptr()),
                           static_cast<const double*>(rstd.data_ptr()), N, D);
}
}  // namespace

// ---- create_graph: the same backward in recorded ops (mean and rstd recomputed from the live x,
// so the second derivative flows through them) ----
namespace {
// x, g, w (or undefined) as (N, D) rows; mean_free: RMSNorm (the mean fixed at 0).
std::vector<Tensor> norm_grads(const Tensor& g_in, const Tensor& x_in, const Tensor& w_in,
                               int64_t N, int64_t D, double eps, bool mean_free, bool gx, bool gw,
                               bool gb) {
  const Tensor x = reshape(x_in, {N, D}), g = reshape(g_in, {N, D});
  const Tensor xc = mean_free ? x : sub(x, mean(x, {1}, true));
  const Tensor rstd = rsqrt(add(mean(mul(xc, xc), {1}, true), eps));
  const Tensor norm = mul(xc, rstd);
  const Tensor dnorm = w_in.defined() ? mul(g, reshape(w_in, {1, D})) : g;
  Tensor dx, dw, db;
  if (gx) {
    Tensor inner = sub(dnorm, mul(norm, mean(mul(dnorm, norm), {1}, true)));
    if (!mean_free) inner = sub(inner, mean(dnorm, {1}, true));
    dx = reshape(mul(rstd, inner), x_in.shape());
  }
  if (gw) dw = reshape(sum(mul(g, norm), {0}), w_in.shape());
  if (gb) db = reshape(sum(g, {0}), w_in.defined() ? w_in.shape() : Shape{D});
  return {dx, dw, db};
}
}  // namespace

Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in,
                  const Tensor& bias_in, double eps, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Tensor weight = contig(weight_in);
  const Tensor bias = contig(bias_in);
  const int64_t D = check_layer_norm(x, normalized_shape, weight, bias, eps);
  const char* kOp = "layer_norm";
  const int64_t N = D == 0 ? 0 : x.numel() / D;
  const Device dev = x.device();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), dev);
  Tensor mean = Tensor::empty({N}, kFloat64, dev), rstd = Tensor::empty({N}, kFloat64, dev);
  forward_kernel(out, mean, rstd, x, weight, bias, N, D, eps);
  if (needs_record({&x, &weight, &bias})) {
    const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad(),
               gb = bias.defined() && bias.requires_grad();
    const Shape ns = normalized_shape;
    // Cost model per element: ~8 forward (mean, variance, normalise, affine), ~10 backward.
    RecordInfo info = RecordInfo().flops(8.0 * static_cast<double>(x.numel()),
                                         10.0 * static_cast<double>(x.numel()));
    Saved hx = info.save(x), hw = info.save(weight), hm = info.save(mean), hr = info.save(rstd);
    const DType wdt = weight.defined() ? weight.dtype() : x.dtype();
    const DType bdt = bias.defined() ? bias.dtype() : x.dtype();
    record(kOp, out, {x, weight, bias}, info.differentiable(),
           [hx, hw, hm, hr, wdt, bdt, gx, gw, gb, ns, N, D,
            eps](const Tensor& g) -> std::vector<Tensor> {
             const Tensor sx = hx.get(), sw = hw.get(), mean = hm.get(), rstd = hr.get();
             if (creating_graph()) {
               std::vector<Tensor> d = norm_grads(g, sx, sw, N, D, eps, false, gx, gw, gb);
               if (d[2].defined()) d[2] = reshape(d[2], ns);
               return {d[0], recorded_as(d[1], wdt), recorded_as(d[2], bdt)};
             }
             const Device dev = sx.device();
             Tensor dx = gx ? Tensor::empty(sx.shape(), sx.dtype(), dev) : Tensor();
             Tensor dw = gw ? param_grad_buffer(sx, ns) : Tensor();
             Tensor db = gb ? param_grad_buffer(sx, ns) : Tensor();
             backward_kernel(dx, dw, db, g, sx, sw, mean, rstd, N, D);
             return {dx, as_param_dtype(dw, wdt), as_param_dtype(db, bdt)};
           });
  }
  return out;
}

// ---- RMSNorm: x·rstd·w, rstd = 1/sqrt(mean(x²) + eps) over the trailing dims ----
// Saved: x, w and rstd per row. dnorm = dout·w, norm = x·rstd:
//   dx = rstd·(dnorm − norm·mean_D(dnorm·norm)),  dw = Σ_N dout·norm
// (layer norm's formulas with the mean fixed at 0: the same kernels, ops/norm/cpu/norm.cpp).
Tensor rms_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in,
                std::optional<double> eps_in, Site site) {
  SiteScope scope(site);
  const char* kOp = "rms_norm";
  const Tensor x = contig(x_in);
  const Tensor weight = contig(weight_in);
  check_float(x, kOp, "input", true);
  // eps None: the machine epsilon of x's dtype, as torch.nn.functional.rms_norm
  const double eps = eps_in ? *eps_in : finfo(x.dtype()).eps;
  const int64_t D = check_layer_norm(x, normalized_shape, weight, Tensor(), eps, kOp);
  const int64_t N = D == 0 ? 0 : x.numel() / D;
  const Device dev = x.device();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), dev);
  Tensor rstd = Tensor::empty({N}, kFloat64, dev);
  if (N > 0)
    kernels(kOp, x).rms_norm_forward(cdt(x.dtype()), out.data_ptr(),
                                     static_cast<double*>(rstd.data_ptr()), x.data_ptr(),
                                     data_or_null(kernel_param(x, weight)), N, D, eps);
  if (needs_record({&x, &weight})) {
    const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad();
    const Shape ns = normalized_shape;
    // Cost model per element: ~5 forward (square-sum, scale, weight), ~8 backward.
    RecordInfo info = RecordInfo().flops(5.0 * static_cast<double>(x.numel()),
                                         8.0 * static_cast<double>(x.numel()));
    Saved hx = info.save(x), hw = info.save(weight), hr = info.save(rstd);
    record(
        kOp, out, {x, weight}, info.differentiable(),
        [hx, hw, hr, gx, gw, ns, N, D, eps](const Tensor& g_in) -> std::vector<Tensor> {
          const Tensor sx = hx.get(), sw = hw.get(), rstd = hr.get();
          if (creating_graph()) {
            const std::vector<Tensor> d = norm_grads(g_in, sx, sw, N, D, eps, true, gx, gw, false);
            return {d[0], recorded_as(d[1], sw.defined() ? sw.dtype() : sx.dtype())};
          }
          const Tensor g = contig(g_in);
          const Device dev = sx.device();
          Tensor dx = gx ? Tensor::empty(sx.shape(), sx.dtype(), dev) : Tensor();
          Tensor dw = gw ? param_grad_buffer(sx, ns) : Tensor();
          if (N > 0)
            kernels("rms_norm backward", sx)
                .rms_norm_backward(cdt(g.dtype()), data_or_null(dx), data_or_null(dw), g.data_ptr(),
                                   sx.data_ptr(), data_or_null(kernel_param(sx, sw)),
                                   static_cast<const double*>(rstd.data_ptr()), N, D);
          return {dx, as_param_dtype(dw, sw.defined() ? sw.dtype() : sx.dtype())};
        });
  }
  return out;
}

}  // namespace tg
