// autograd/anomaly.hpp — anomaly mode (PyTorch's torch.autograd.detect_anomaly): while a guard
// is alive on this thread, every recorded forward output and every gradient a backward returns is
// checked for NaN/Inf, and the first non-finite value throws tg::Error naming the op, the node's
// tape position, its creation site and the element — for softmax/log_softmax the row (the index
// tuple without the softmax dim), for scaled_dot_product_attention (and the MHA path through it)
// the batch, head and query row b, h, t:
//   anomaly: forward of softmax (node #7, created at train.cpp:42) produced nan in output
//   (2,3,5) at (1,2,0): row (1,2) over dim 2
// Off by default; when off the tape pays one thread-local load per record and per backward node.
// Deliberately not here: checks of values that are not recorded (no_grad forwards).
#pragma once

#include "autograd/tensor.hpp"

namespace tg {

class AnomalyGuard {
 public:
  explicit AnomalyGuard(bool on = true);
  ~AnomalyGuard();
  AnomalyGuard(const AnomalyGuard&) = delete;
  AnomalyGuard& operator=(const AnomalyGuard&) = delete;

 private:
  bool prev_;
};
bool anomaly_enabled();

// The first non-finite element of a floating tensor as a flat index, or -1 (int/bool: -1).
int64_t first_nonfinite(const Tensor& t);

}  // namespace tg
