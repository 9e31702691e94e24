// nn/init.hpp — parameter initialisation with PyTorch's formulas (torch.nn.init), drawing from the
// seeded global generator. All functions fill the tensor in place, without recording.
#pragma once

#include "autograd/tensor.hpp"

#include <utility>

namespace tg::nn::init {

// (fan_in, fan_out) of a weight: (size(1)·receptive, size(0)·receptive); a 1-D tensor has fan_in
// = fan_out = size(0) as PyTorch computes it for biases through the owning layer instead.
std::pair<int64_t, int64_t> fan_in_and_out(const Tensor& w);

void uniform_(Tensor& t, double low = 0, double high = 1);
void normal_(Tensor& t, double mean = 0, double std = 1);
void constant_(Tensor& t, double value);
void zeros_(Tensor& t);
void ones_(Tensor& t);
// U(-b, b) with b = gain·sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(Tensor& t, double gain = 1.0);
// PyTorch's Linear default: kaiming_uniform_(a = sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void kaiming_uniform_(Tensor& t, double a = 0.0);

// While a SkipInitGuard lives, the initialisers above on this thread leave their tensor as it is
// and draw nothing (Hugging Face's no_init_weights, PyTorch's skip_init): for a model whose
// parameters are about to be replaced by loaded ones (nn/hf's from_pretrained). Guards nest.
class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;

 private:
  bool prev_;
};
bool is_init_skipped();

}  // namespace tg::nn::init
