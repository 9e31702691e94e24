// nn/clip.cpp — clip_grad_norm_ and clip_grad_value_ (see clip.hpp). Norms accumulate in double.
#include "nn/clip.hpp"

#include "autograd/tape.hpp"
#include "ops/optim/entries.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace tg::nn {
namespace {
// Calls f(T* g, n) on every defined gradient, in row-major order: a strided gradient through a
// row-major copy, copied back through its strides when `writes`.
template <typename F>
void each_grad(const std::vector<Tensor>& params, const char* op, bool writes, F&& f) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].defined()) throw Error(fmt::format("{}: parameter {} is undefined", op, i));
    const Tensor g = params[i].grad();
    if (!g.defined()) continue;
    if (g.device().is_cuda())
      throw Error(
          fmt::format("{}: internal: CUDA gradient of parameter {} reached the host loop", op, i));
    if (is_reduced(g.dtype())) {  // bfloat16 / float16: a float32 copy (exact), rounded back once
      NoGradGuard ng;
      Tensor d = g.detach().to(kFloat32).contiguous();
      f(d.data<float>(), g.numel());
      if (writes) g.detach().copy_(d.to(g.dtype()));
      continue;
    }
    const Tensor d = tg::detail::dense(g);
    if (g.dtype() == kFloat32)
      f(d.data<float>(), g.numel());
    else if (g.dtype() == kFloat64)
      f(d.data<double>(), g.numel());
    else
      throw Error(fmt::format("{}: gradient of parameter {} {} is {}, expected a float type", op, i,
                              shape_str(g.shape()), dtype_name(g.dtype())));
    if (writes && !g.is_contiguous()) {
      NoGradGuard ng;
      g.detach().copy_(d);
    }
  }
}
// Gradients on CUDA devices; the host loops above take the rest.
std::vector<Tensor> cuda_grads(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined() && p.grad().device().is_cuda()) out.push_back(p.grad());
  return out;
}
std::vector<Tensor> host_params(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params)
    if (!p.defined() || !p.grad().defined() || !p.grad().device().is_cuda()) out.push_back(p);
  return out;
}
// Σ|g|^p (or max |g| for p = inf) of CUDA gradients: norm 2 through one device accumulator per
// device (the kernel table's sum_squares), other orders composed from ops; one read-back each.
double cuda_norm_part(const std::vector<Tensor>& gs, double p) {
  NoGradGuard ng;
  const bool inf = std::isinf(p);
  double acc = 0;
  if (p == 2) {
    for (const Tensor& g : gs) acc += tg::detail::sum_squares("clip_grad_norm_", g).item<double>();
    return acc;
  }
  for (const Tensor& g : gs) {
    if (g.numel() == 0) continue;
    const double part = inf ? max(abs(g)).item<double>() : sum(pow(abs(g), p)).item<double>();
    acc = std::isnan(part) ? part : (inf ? std::max(acc, part) : acc + part);
  }
  return acc;
}
// g *= coef for CUDA gradients (the scaled copy takes the gradient's storage).
void cuda_scale(const std::vector<Tensor>& gs, double coef) {
  NoGradGuard ng;
  for (const Tensor& g : gs) {
    Tensor c = mul(g, coef);
    g.impl()->storage = c.impl()->storage;
    g.impl()->offset = c.impl()->offset;
    g.impl()->strides.clear();
  }
}
}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  if (!(norm_type > 0))
    throw Error(fmt::format("clip_grad_norm_: norm_type must be positive, got {}", norm_type));
  // A negative max_norm would flip every gradient (training ascends); NaN would poison them.
  if (!(max_norm >= 0))
    throw Error(fmt::format("clip_grad_norm_: max_norm must be >= 0, got {}", max_norm));
  bool inf = std::isinf(norm_type);
  const std::vector<Tensor> dev_grads = cuda_grads(params);
  double acc = dev_grads.empty() ? 0.0 : cuda_norm_part(dev_grads, norm_type);
  bool any = !dev_grads.empty();
  if (norm_type == 2) {  // the kernel table's sum of squares, as on a device
    const std::vector<Tensor> ps = host_params(params);
    for (size_t i = 0; i < ps.size(); ++i) {
      if (!ps[i].defined())
        throw Error(fmt::format("clip_grad_norm_: parameter {} is undefined", i));
      if (!ps[i].grad().defined()) continue;
      any = true;
      acc += tg::detail::sum_squares("clip_grad_norm_", ps[i].grad()).item<double>();
    }
  } else
    each_grad(host_params(params), "clip_grad_norm_", false, [&](auto* g, int64_t n) {
      any = true;
      double part = 0;  // each tensor's norm first, then the norm of the norms (PyTorch's order)
      for (int64_t i = 0; i < n; ++i) {
        double a = std::fabs(static_cast<double>(g[i]));
        part = inf ? std::max(part, a) : part + (norm_type == 2 ? a * a : std::pow(a, norm_type));
        if (std::isnan(a)) part = a;
      }
      if (inf)
        acc = std::isnan(part) ? part : std::max(acc, part);
      else
        acc += part;  // sum of norm^p == (norm of norms)^p
    });
  if (!any) return 0.0;
  double total = inf ? acc : (norm_type == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / norm_type));
  if (error_if_nonfinite && !std::isfinite(total))
    throw Error(fmt::format(
        "clip_grad_norm_: the total norm of order {} of the gradients is non-finite ({}), so it "
        "cannot be clipped",
        norm_type, total));
  double coef = max_norm / (total + 1e-6);  // applied only when < 1 (or NaN, like torch.clamp)
  if (coef < 1.0 || std::isnan(coef)) cuda_scale(dev_grads, coef);
  if (coef < 1.0 || std::isnan(coef))
    each_grad(host_params(params), "clip_grad_norm_", true, [&](auto* g, int64_t n) {
      using T = std::remove_reference_t<decltype(*g)>;
      for (int64_t i = 0; i < n; ++i) g[i] = static_cast<T>(g[i] * static_cast<T>(coef));
    });
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  if (!(clip_value >= 0))
    throw Error(fmt::format("clip_grad_value_: clip_value must be >= 0, got {}", clip_value));
  {
    NoGradGuard ng;
    for (const Tensor& g : cuda_grads(params)) {
      Tensor c = clamp(g, -clip_value, clip_value);
      g.impl()->storage = c.impl()->storage;
      g.impl()->offset = c.impl()->offset;
      g.impl()->strides.clear();
    }
  }
  each_grad(host_params(params), "clip_grad_value_", true, [&](auto* g, int64_t n) {
    using T = std::remove_reference_t<decltype(*g)>;
    const T hi = static_cast<T>(clip_value);
    for (int64_t i = 0; i < n; ++i) g[i] = std::clamp(g[i], -hi, hi);
  });
}

}  // namespace tg::nn
