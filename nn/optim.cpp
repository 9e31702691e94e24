// nn/optim.cpp — SGD (see optim.hpp). Updates run in place on the parameters, outside the tape.
#include "nn/optim.hpp"

#include <fmt/format.h>

namespace tg::nn {
namespace {
template <typename T>
void sgd_update(T* p, const T* g, T* buf, int64_t n, const SGDOptions& o, bool first) {
  for (int64_t i = 0; i < n; ++i) {
    T d = g[i] + static_cast<T>(o.weight_decay) * p[i];
    if (buf) {
      buf[i] = first ? d : static_cast<T>(o.momentum) * buf[i] + d;
      d = buf[i];
    }
    p[i] -= static_cast<T>(o.lr) * d;
  }
}
}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions opts) : params_(std::move(params)), opts_(opts) {
  if (opts.lr < 0) throw Error(fmt::format("SGD: invalid learning rate {}", opts.lr));
  for (size_t i = 0; i < params_.size(); ++i)
    if (!params_[i].defined() || !params_[i].requires_grad() || !params_[i].is_leaf())
      throw Error(fmt::format("SGD: parameter {} must be a leaf tensor that requires grad", i));
  momentum_.resize(params_.size());
}

void SGD::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    bool first = false;
    if (opts_.momentum != 0 && !momentum_[i].defined()) {
      momentum_[i] = zeros_like(p.detach());
      first = true;
    }
    Tensor& b = momentum_[i];
    if (p.dtype() == kFloat32)
      sgd_update(p.data<float>(), g.data<float>(), b.defined() ? b.data<float>() : nullptr, p.numel(), opts_, first);
    else
      sgd_update(p.data<double>(), g.data<double>(), b.defined() ? b.data<double>() : nullptr, p.numel(), opts_, first);
  }
}

void SGD::zero_grad(bool set_to_none) {
  for (Tensor& p : params_) set_to_none ? p.reset_grad() : p.zero_grad();
}

}  // namespace tg::nn
