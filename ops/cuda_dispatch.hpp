// ops/cuda_dispatch.hpp — internal (not installed): the pieces the CUDA branches of the ops share.
// Each op checks its arguments as on the CPU, then, when its inputs live on a CUDA device, makes
// its kernel calls through kernels(op, x) (ops/kernels.hpp, which selects the device and converts
// errors); these build the strided descriptors and the multi-dim reductions those calls take.
// Deliberately no kernels and no cuda/ include here.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/kernels.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <vector>

namespace tg::detail {

// Every tensor argument of one op lives on one device: the error names the op and both.
inline void check_same_device(const Tensor& a, const Tensor& b, const char* op, const char* an,
                              const char* bn) {
  if (a.defined() && b.defined() && a.device() != b.device())
    throw Error(fmt::format("{}: {} {} is on {} but {} {} is on {}; move one with .to()", op, an,
                            shape_str(a.shape()), a.device().str(), bn, shape_str(b.shape()),
                            b.device().str()));
}

// A Strided over `out` (contiguous) with up to two more operands broadcast to it.
kern::Strided make_strided(const Shape& out, std::initializer_list<const Shape*> operands);
// Operand k's strides and offset set to a tensor viewed with `strides` (elements) from `offset`.
void set_operand(kern::Strided& st, int k, const Shape& strides, int64_t offset);

// Reduces x over the dims flagged in `reduced` with op; the result has x's rank (reduced dims 1).
Tensor cuda_reduce(const Tensor& x, const std::vector<bool>& reduced, kern::RedOp op);

}  // namespace tg::detail
