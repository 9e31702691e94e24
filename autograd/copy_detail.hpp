// autograd/copy_detail.hpp — internal (not installed): the CPU kernel behind detail::dense_copy,
// the one thing ops/ registers into autograd. autograd has a plain strided loop; ops/shape/views.cpp,
// where every strided tensor is made, registers ops' blocked and parallel strided copy
// (cpu::strided_copy) at start-up in its place. It cannot be avoided without moving ops' CPU
// kernel table (its instruction-set variants and threading) into autograd, while
// Tensor::contiguous, in autograd, must run at that kernel's speed.
#pragma once

#include "autograd/tensor.hpp"

namespace tg::detail {
// out (row-major, `shape`) = x seen through x_strides (elements); dtype gives the element type.
using CpuStridedCopy = void (*)(DType dtype, void* out, const void* x, const Shape& x_strides,
                                const Shape& shape);
void set_cpu_strided_copy(CpuStridedCopy f);
}  // namespace tg::detail
