// ops/optim/optim.cpp — the tensor-level entries of the optimizer and clipping kernels
// (ops/optim/entries.hpp): the fused Adam / AdamW step and the sum of squares, each one call of
// the kernel table (ops/optim/cpu/optim.cpp, cuda/optim.cu) after checking its tensors. Not here:
// the optimizers themselves and their state (nn/optim.cpp), clip_grad_norm_'s other orders
// (composed from ops in nn/clip.cpp).
#include "ops/core/kernels.hpp"
#include "ops/optim/cpu/optim.hpp"
#include "ops/optim/entries.hpp"

#include <fmt/format.h>

namespace tg::detail {

namespace {
// t is defined, row-major contiguous, of p's dtype and device and element count.
void check_like(const char* op, const char* what, const Tensor& t, const Tensor& p) {
  if (t.defined() && t.is_contiguous() && t.dtype() == p.dtype() && t.device() == p.device() &&
      t.numel() == p.numel())
    return;
  if (!t.defined()) throw Error(fmt::format("{}: internal error: {} is undefined", op, what));
  throw Error(
      fmt::format("{}: internal error: {} {} {} on {}{} does not match the parameter {} {} on {}",
                  op, what, shape_str(t.shape()), dtype_name(t.dtype()), t.device().str(),
                  t.is_contiguous() ? "" : " (strided)", shape_str(p.shape()),
                  dtype_name(p.dtype()), p.device().str()));
}
}  // namespace

void adam_step_(const char* op, const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                const Tensor& vmax, const AdamScalars& s) {
  if (!is_floating(p.dtype()))
    throw Error(
        fmt::format("{}: parameter of dtype {} is not floating", op, dtype_name(p.dtype())));
  check_like(op, "the parameter", p, p);
  check_like(op, "exp_avg", m, p);
  check_like(op, "exp_avg_sq", v, p);
  if (vmax.defined()) check_like(op, "max_exp_avg_sq", vmax, p);
  const bool mixed = g.defined() && is_reduced(g.dtype()) && p.dtype() == kFloat32;
  if (mixed && p.device().type != DeviceType::CPU)  // a GPU converts the gradient first
    return adam_step_(op, p, g.to(kFloat32), m, v, vmax, s);
  if (!mixed) {
    check_like(op, "the gradient", g, p);
    kernels(op, p).adam_step(cdt(p.dtype()), p.data_ptr(), g.data_ptr(), m.data_ptr(), v.data_ptr(),
                             data_or_null(vmax), p.numel(), s.lr, s.beta1, s.beta2, s.eps, s.wd,
                             s.decoupled, s.maximize, s.bc1, s.bc2);
    return;
  }
  // float32 master weights with a bfloat16 / float16 gradient, read once as float32
  if (!g.is_contiguous() || g.numel() != p.numel() || g.device() != p.device())
    throw Error(
        fmt::format("{}: internal error: the gradient {} {} on {} does not match the "
                    "parameter {} {} on {}",
                    op, shape_str(g.shape()), dtype_name(g.dtype()), g.device().str(),
                    shape_str(p.shape()), dtype_name(p.dtype()), p.device().str()));
  cpu::adam_step_mixed(cdt(g.dtype()), static_cast<float*>(p.data_ptr()), g.data_ptr(),
                       static_cast<float*>(m.data_ptr()), static_cast<float*>(v.data_ptr()),
                       static_cast<float*>(data_or_null(vmax)), p.numel(), s.lr, s.beta1, s.beta2,
                       s.eps, s.wd, s.decoupled, s.maximize, s.bc1, s.bc2);
}

Tensor sum_squares(const char* op, const Tensor& x) {
  if (!x.defined() || !is_floating(x.dtype()))
    throw Error(fmt::format("{}: sum of squares of {} {}, expected a float tensor", op,
                            x.defined() ? shape_str(x.shape()) : "an undefined tensor",
                            x.defined() ? dtype_name(x.dtype()) : ""));
  const Tensor d = dense(x);  // the kernel reads row-major memory
  Tensor acc = zeros({}, kFloat64, d.device());
  kernels(op, d).sum_squares(cdt(d.dtype()), static_cast<double*>(acc.data_ptr()), d.data_ptr(),
                             d.numel());
  return acc;
}

}  // namespace tg::detail
