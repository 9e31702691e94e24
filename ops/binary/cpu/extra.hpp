// ops/binary/cpu/extra.hpp — CPU kernels of the broadcasting binary ops that have no code in the
// kernel table both backends share (ops/kern/kernel_codes.hpp): PyTorch's floor and trunc division,
// fmod and remainder (std::fmod's exact values for floats, C's % for int64), integer pow and the
// bitwise ops and shifts; and the flat bfloat16 / float16 form of the shared arithmetic. The op
// files hand CUDA tensors to them through host copies (ops/binary/extra_op.hpp). Internal to ops/.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/kern/kernel_codes.hpp"

#include <cstdint>

namespace tg::cpu {

enum class XOp : uint8_t { FloorDiv, TruncDiv, Fmod, Remainder, Pow, And, Or, Xor, Shl, Shr };

// out (so) = a (sa) op b (sb), NumPy broadcasting (so is the broadcast shape). T: float and double
// (FloorDiv, TruncDiv, Fmod, Remainder), int64_t (every op; the caller has checked that a divisor
// holds no 0 and a Pow exponent no negative number where PyTorch refuses one) or bool (And, Or,
// Xor). The formulas, int64 overflow and out-of-range shift counts are documented beside them in
// ops/binary/cpu/binary.cpp.
template <typename T>
void binary_extra(XOp op, T* out, const T* a, const T* b, const Shape& so, const Shape& sa,
                  const Shape& sb);

// a op b on bfloat16 / float16 operands of one shape (n elements, no broadcast), out of their
// dtype: the float32 kernel on float32 chunks, rounded once (ops/core/cpu/reduced.hpp), with no
// whole-tensor copies. Arithmetic ops only (not comparisons).
void binary_flat_reduced(kern::BinOp op, kern::DT dt, void* out, const void* a, const void* b,
                         int64_t n);

}  // namespace tg::cpu
