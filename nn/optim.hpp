// nn/optim.hpp — optimizers over a list of parameters. For now SGD with momentum, with PyTorch's
// update rule; Adam/AdamW, parameter groups and state dicts arrive with the nn issue.
#pragma once

#include "autograd/tensor.hpp"

#include <vector>

namespace tg::nn {

struct SGDOptions {
  double lr = 1e-2;
  double momentum = 0;
  double weight_decay = 0;
};

// PyTorch's torch.optim.SGD (dampening 0, nesterov off):
//   g = grad + weight_decay·p;  b = momentum·b + g (b = g at the first step);  p -= lr·b
class SGD {
 public:
  SGD(std::vector<Tensor> params, SGDOptions opts);
  void step();
  void zero_grad(bool set_to_none = true);
  const SGDOptions& options() const { return opts_; }

 private:
  std::vector<Tensor> params_;
  std::vector<Tensor> momentum_;
  SGDOptions opts_;
};

}  // namespace tg::nn
