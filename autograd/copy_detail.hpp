// autograd/copy_detail.hpp — internal (not installed): the CPU kernel behind detail::dense_copy
// and the recorded add of create_graph backward, both registered by ops/.
// autograd has a plain strided loop; ops/shape/shape.cpp, where every strided tensor is made, registers
// ops' blocked and parallel strided copy (cpu::strided_copy) at start-up in its place.
#pragma once

#include "autograd/tensor.hpp"

namespace tg::detail {
// out (row-major, `shape`) = x seen through x_strides (elements); dtype gives the element type.
using CpuStridedCopy = void (*)(DType dtype, void* out, const void* x, const Shape& x_strides,
                                const Shape& shape);
void set_cpu_strided_copy(CpuStridedCopy f);

// The recorded add the engine sums gradients with under create_graph (autograd has no ops of
// its own): ops/binary/elementwise.cpp registers tg::add at start-up.
using RecordedAdd = Tensor (*)(const Tensor& a, const Tensor& b);
void set_recorded_add(RecordedAdd f);
}  // namespace tg::detail
