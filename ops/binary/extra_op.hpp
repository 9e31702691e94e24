// ops/binary/extra_op.hpp — the tensor face of the CPU kernels outside the shared kernel table
// (ops/binary/cpu/extra.hpp), for the op files that use them (ops/binary/math.cpp, which defines
// these, ops/binary/elementwise.cpp and ops/binary/bitwise.cpp), and PyTorch's reading of a plain number beside
// an integer tensor. Internal to ops/.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/binary/cpu/extra.hpp"

namespace tg::detail {

// a op b over the broadcast shape, in a's dtype, values only (nothing is recorded). These ops
// have no CUDA kernels: CUDA operands go through host copies. The caller checked both operands
// (one dtype, one device).
Tensor binary_extra(const char* op, cpu::XOp code, const Tensor& a, const Tensor& b);
// input a and other b of a binary op: defined, on one device, of one dtype, broadcastable (the
// errors name op, both shapes, dtypes and devices).
void check_operands(const char* op, const Tensor& a, const Tensor& b);
// An int64 divisor with a 0 anywhere raises PyTorch's ZeroDivisionError (integer floor and trunc
// division, fmod, remainder), naming op and shape, before anything is allocated.
void check_int_divisor(const char* op, const Tensor& b);
// A plain number beside an int64 tensor, as PyTorch reads a Python scalar: one that holds an
// integer in int64's range counts as a Python int (the result stays int64); any other (2.5, inf,
// NaN, 1e20) as a Python float (the tensor promotes to the default float dtype).
bool is_int_scalar(double v);
// PyTorch's promotion between two floating tensors when either is bfloat16 or float16 (bfloat16
// with float32 gives float32, bfloat16 with float16 float32): the dtype both are cast to, or
// kBool when none applies (one dtype; float32 with float64 and int with float keep their errors).
// The caller casts with .to(), recorded, so each gradient reaches its operand in its own dtype.
DType reduced_promotion(const Tensor& a, const Tensor& b);
// The dtype such an op returns: the promoted one, except that a 0-dim tensor does not promote a
// dimensioned one (PyTorch's rule: a bfloat16 tensor times a float32 0-dim tensor is bfloat16,
// computed in float32 and rounded once here).
DType reduced_result(const Tensor& a, const Tensor& b);
// v as a 0-dim int64 tensor on `device`, exactly (a double holds integers to 2^53 only).
Tensor int64_scalar(int64_t v, Device device);

}  // namespace tg::detail
