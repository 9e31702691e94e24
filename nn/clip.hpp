// nn/clip.hpp — gradient clipping with torch.nn.utils' semantics, in place on the parameters'
// .grad() (parameters without a gradient are skipped).
#pragma once

#include "autograd/tensor.hpp"

#include <vector>

namespace tg::nn {

// total = the norm_type-norm of all gradients seen as one vector (norm_type = INFINITY: the
// largest |g|). Every gradient is scaled by min(1, max_norm / (total + 1e-6)). Returns total
// (0 when no parameter has a gradient). error_if_nonfinite: throw when total is NaN or inf.
// max_norm must be >= 0 (a negative or NaN max_norm throws: it would flip or poison every
// gradient); max_norm = 0 zeroes the gradients, as in PyTorch — programs that mean "no clipping"
// must not call it.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every gradient element to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace tg::nn
