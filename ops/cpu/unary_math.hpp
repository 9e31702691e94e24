// ops/cpu/unary_math.hpp — the CPU kernels of the math and activation unary ops (UnOp::Sin …
// UnOp::Softsign: ops/kernel_codes.hpp), which cpu::unary and cpu::unary_backward (unary.cpp) hand
// every op past Clamp. Both return false for an op that is not theirs. x is always read; y only
// by the ops whose backward reads the result (ops/unary_formulas.hpp's kMathReadsY). Internal to
// ops/cpu/.
#pragma once

#include "ops/kern/kernel_codes.hpp"

#include <cstdint>

namespace tg::cpu {
using kern::UnOp;

template <typename T>
bool unary_math(UnOp op, T* out, const T* x, int64_t n, T p0, T p1);
template <typename T>
bool unary_math_backward(UnOp op, T* dx, const T* g, const T* x, const T* y, int64_t n, T p0, T p1);
}  // namespace tg::cpu
