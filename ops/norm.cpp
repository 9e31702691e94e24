// ops/norm.cpp — layer_norm, forward and closed-form backward side by side (llm.c's
// layernorm_forward / layernorm_backward, generalised to any trailing normalized_shape).
//
// x (N, D) after flattening: N rows of D = numel(normalized_shape) elements each.
//   mean = Σx/D, var = Σ(x-mean)²/D (biased, like PyTorch), rstd = 1/sqrt(var + eps)
//   norm = (x - mean)·rstd, out = norm·w + b
// Saved for backward: x, w, and mean and rstd per row (float64, shape (N)).
//   dnorm = dout·w
//   dx = rstd·(dnorm - mean_D(dnorm) - norm·mean_D(dnorm·norm))
//   dw = Σ_N dout·norm, db = Σ_N dout
// Deliberately not here: batch/group norm, RMSNorm.
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <cmath>

namespace tg {
using namespace detail;

namespace {
constexpr const char* kOp = "layer_norm";

// Checks x, normalized_shape, weight and bias; returns D (elements per normalised row).
int64_t check_layer_norm(const Tensor& x, const Shape& ns, const Tensor& w, const Tensor& b,
                         double eps) {
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
    check_same_dtype(x, p, kOp, "input", names[i]);
    if (p.shape() != ns)
      throw Error(fmt::format("{}: {} {} must have normalized_shape {} (input {})", kOp, names[i],
                              shape_str(p.shape()), shape_str(ns), shape_str(s)));
  }
  if (!(eps >= 0))
    throw Error(fmt::format("{}: eps must be >= 0, got {} (input {})", kOp, eps, shape_str(s)));
  return shape_numel(ns);
}

// out (N, D), mean (N), rstd (N) from x (N, D), w (D) or null, b (D) or null.
template <typename T>
void layer_norm_forward(T* out, double* mean, double* rstd, const T* x, const T* w, const T* b,
                        int64_t N, int64_t D, double eps) {
  for (int64_t r = 0; r < N; ++r) {
    const T* xr = x + r * D;
    T* orow = out + r * D;
    double m = 0;
    for (int64_t i = 0; i < D; ++i) m += xr[i];
    m /= static_cast<double>(D);
    double v = 0;
    for (int64_t i = 0; i < D; ++i) {
      const double d = xr[i] - m;
      v += d * d;
    }
    v /= static_cast<double>(D);
    const double rs = 1.0 / std::sqrt(v + eps);
    for (int64_t i = 0; i < D; ++i) {
      double n = (xr[i] - m) * rs;
      if (w) n *= w[i];
      if (b) n += b[i];
      orow[i] = static_cast<T>(n);
    }
    mean[r] = m;
    rstd[r] = rs;
  }
}

// dx (N, D), dw (D) or null, db (D) or null (both zero-initialised) from dout (N, D) and the
// saved x, w, mean, rstd.
template <typename T>
void layer_norm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w,
                         const double* mean, const double* rstd, int64_t N, int64_t D) {
  std::vector<double> dwacc(dw ? D : 0, 0.0), dbacc(db ? D : 0, 0.0);
  for (int64_t r = 0; r < N; ++r) {
    const T* xr = x + r * D;
    const T* gr = dout + r * D;
    const double m = mean[r], rs = rstd[r];
    // The two row means the closed form needs.
    double dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int64_t i = 0; i < D; ++i) {
      const double norm = (xr[i] - m) * rs;
      const double dnorm = w ? static_cast<double>(w[i]) * gr[i] : static_cast<double>(gr[i]);
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= static_cast<double>(D);
    dnorm_norm_mean /= static_cast<double>(D);
    for (int64_t i = 0; i < D; ++i) {
      const double norm = (xr[i] - m) * rs;
      const double dnorm = w ? static_cast<double>(w[i]) * gr[i] : static_cast<double>(gr[i]);
      if (dx) dx[r * D + i] = static_cast<T>(rs * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
      if (dw) dwacc[i] += gr[i] * norm;
      if (db) dbacc[i] += gr[i];
    }
  }
  for (int64_t i = 0; dw && i < D; ++i) dw[i] = static_cast<T>(dwacc[i]);
  for (int64_t i = 0; db && i < D; ++i) db[i] = static_cast<T>(dbacc[i]);
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Site site) {
  SiteScope scope(site);
  const int64_t D = check_layer_norm(x, normalized_shape, weight, bias, eps);
  const int64_t N = D == 0 ? 0 : x.numel() / D;
  const Device dev = x.device();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), dev);
  Tensor mean = Tensor::empty({N}, kFloat64, dev), rstd = Tensor::empty({N}, kFloat64, dev);
  auto ptr = [](const Tensor& t) -> void* { return t.defined() ? t.data_ptr() : nullptr; };
  if (on_cuda(x) && N > 0) {
    on_device(kOp, dev, [&] {
      cuda::layer_norm_forward(cdt(x.dtype()), out.data_ptr(), static_cast<double*>(ptr(mean)),
                               static_cast<double*>(ptr(rstd)), x.data_ptr(), ptr(weight),
                               ptr(bias), N, D, eps);
    });
  }
  if (!on_cuda(x))
    dispatch_float(x.dtype(), kOp, [&](auto tag) {
      using T = decltype(tag);
      layer_norm_forward(out.data<T>(), mean.data<double>(), rstd.data<double>(), x.data<T>(),
                         weight.defined() ? weight.data<T>() : nullptr,
                         bias.defined() ? bias.data<T>() : nullptr, N, D, eps);
    });
  if (needs_record({&x, &weight, &bias})) {
    Tensor sx = x.detach(), sw = weight.defined() ? weight.detach() : Tensor();
    const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad(),
               gb = bias.defined() && bias.requires_grad();
    const Shape ns = normalized_shape;
    // Cost model per element: ~8 forward (mean, variance, normalise, affine), ~10 backward.
    record(kOp, out, {x, weight, bias},
           RecordInfo()
               .flops(8.0 * static_cast<double>(x.numel()), 10.0 * static_cast<double>(x.numel()))
               .saved(sx, sw, mean, rstd),
           [sx, sw, mean, rstd, gx, gw, gb, ns, N, D](const Tensor& g) -> std::vector<Tensor> {
             const Device dev = sx.device();
             Tensor dx = gx ? Tensor::empty(sx.shape(), sx.dtype(), dev) : Tensor();
             Tensor dw = gw ? zeros(ns, sx.dtype(), dev) : Tensor();
             Tensor db = gb ? zeros(ns, sx.dtype(), dev) : Tensor();
             auto ptr = [](const Tensor& t) -> void* {
               return t.defined() ? t.data_ptr() : nullptr;
             };
             if (on_cuda(sx)) {
               if (N > 0)
                 on_device("layer_norm backward", dev, [&] {
                   cuda::layer_norm_backward(cdt(g.dtype()), ptr(dx), ptr(dw), ptr(db),
                                             g.data_ptr(), sx.data_ptr(), ptr(sw),
                                             static_cast<const double*>(mean.data_ptr()),
                                             static_cast<const double*>(rstd.data_ptr()), N, D);
                 });
               return {dx, dw, db};
             }
             dispatch_float(g.dtype(), kOp, [&](auto tag) {
               using T = decltype(tag);
               layer_norm_backward(dx.defined() ? dx.data<T>() : nullptr,
                                   dw.defined() ? dw.data<T>() : nullptr,
                                   db.defined() ? db.data<T>() : nullptr, g.data<T>(), sx.data<T>(),
                                   sw.defined() ? sw.data<T>() : nullptr, mean.data<double>(),
                                   rstd.data<double>(), N, D);
             });
             return {dx, dw, db};
           });
  }
  return out;
}

}  // namespace tg
