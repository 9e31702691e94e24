// ops/optim/entries.hpp — the ops-level entries nn/'s optimizers, gradient clipping and flat
// buffers (DDP, ZeRO-1) reach the kernels through instead of ops' kernel table (STYLE habit 11):
// tensor in, tensor out, over the same kernels. The fused Adam / AdamW step and the sum of squares
// (ops/optim/optim.cpp), element copies between flat buffers and parameters
// (ops/shape/flat_copy.cpp).
// Not here: any autograd record (these run on detached data, like PyTorch's torch._foreach_* and
// fused optimizer steps under no_grad), the optimizers' state or option handling (nn/optim.cpp).
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>

namespace tg::detail {

// The scalars of one Adam / AdamW step (bc1, bc2: the bias corrections 1 − beta^step).
struct AdamScalars {
  double lr, beta1, beta2, eps, wd;
  double bc1, bc2;
  bool decoupled, maximize;
};
// One Adam / AdamW step in place on p, m and v (and vmax, the amsgrad running max, when defined)
// from the gradient g: every tensor row-major contiguous, of p's float dtype, device and element
// count (checked), `op` named in errors; g may also be bfloat16 / float16 with p float32 (master
// weights: g read once as float32). No record and no version bump: the caller notes the write.
void adam_step_(const char* op, const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                const Tensor& vmax, const AdamScalars& s);
// Σ x² over a float tensor of any layout, accumulated in double: a float64 scalar on x's device
// (one kernel; reading it back is the caller's choice).
Tensor sum_squares(const char* op, const Tensor& x);
// dst[doff .. doff+n) = src[soff .. soff+n), elements counted in row-major order of each shape
// (either may be a strided view: a transposed or narrowed parameter); same dtype and device
// (checked, `op` named). A memcpy on the host, a stream-ordered copy on a GPU. No record.
void copy_elems_(const char* op, const Tensor& dst, int64_t doff, const Tensor& src, int64_t soff,
                 int64_t n);
// dst[off .. off+n) = 0, counted as above (checked, `op` named). No record.
void zero_elems_(const char* op, const Tensor& dst, int64_t off, int64_t n);

}  // namespace tg::detail
