// ops/matmul/mixed.hpp — matmul / mm / bmm / linear of a float32 operand with a bfloat16 or
// float16 one (weight-only reduced precision: float32 activations times mapped bf16 weights).
// tapegrad promotes where PyTorch refuses the pair: promote_types(float32, bf16) = float32, as
// the binary ops do. The product is float32, computed in float32 (the reduced operand converted
// panel by panel, ops/matmul/cpu/mixed_gemm.hpp: never a float32 copy of the whole of it);
// each gradient is float32 arithmetic, written straight into a float32 operand's gradient and
// rounded once into a reduced operand's. On CUDA the reduced operand is cast to float32 first
// (a recorded .to(), then the float32 product). Internal to ops/matmul/ (matmul.cpp calls it
// after autocast, which casts both operands itself).
// Deliberately not here: bf16 × f16, float64 × reduced (refused by the callers' checks).
#pragma once

#include "autograd/tensor.hpp"

namespace tg::matmul_mixed {

// float32 with bfloat16 / float16, either way round.
bool is_mixed(DType a, DType b);
// matmul / mm / bmm of a and b, already checked by the caller (shapes for mm / bmm) and laid out
// as matmul_plan wants them: stored transposed when ta / tb, else contiguous.
Tensor matmul(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb);
// linear of contiguous, checked x (..., Cin), weight (Cout, Cin) and bias (Cout) or undefined;
// bias float32 or the reduced dtype of the pair.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace tg::matmul_mixed
