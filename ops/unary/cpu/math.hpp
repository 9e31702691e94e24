// ops/unary/cpu/math.hpp — the CPU kernels of the unary ops that cpu::unary and
// cpu::unary_backward (unary.cpp) do not run on batches themselves: the math and activation ops,
// each its Formula (ops/kern/unary_formulas.hpp). x and y are read as the unary list says
// (ops/kern/unary_list.inc); the other may be null. Both return false for an unknown code.
// Internal to the CPU kernels (ops/<family>/cpu/).
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
