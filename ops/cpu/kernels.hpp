// ops/cpu/kernels.hpp — the plain C++ face of tapegrad's CPU kernels (ops/cpu/*.cpp): raw
// pointers, sizes and the op codes of cuda/kernels.cuh, so both backends of an op read one table
// of codes and the op families (ops/*.cpp) dispatch with one switch. No xtensor here: it stays in
// the kernel translation units. ops/ checks every argument and shape first; these trust them.
//
// Conventions, as in cuda/kernels.cuh: outputs, inputs, saved buffers, sizes, options; every
// pointer contiguous row-major unless strides say otherwise; T is float or double unless stated.
// float32 computes in float32 with vectorised math (xsimd), as PyTorch does; sums over long rows
// accumulate in double. These kernels are the specification the CUDA kernels are tested against.
// Shape vocabulary: N rows, D a trailing size, (outer, r, inner) a tensor seen around one dim.
#pragma once

#include "autograd/tensor.hpp"
#include "cuda/kernels.cuh"

#include <cstdint>

namespace tg::cpu {

using cuda::BinOp;
using cuda::RedOp;
using cuda::UnOp;

// ---- elementwise (ops/cpu/unary.cpp, ops/cpu/binary.cpp) ----
// out[i] = f(x[i]) for i < n, f as documented for cuda::UnOp (p0, p1 its scalar parameters).
template <typename T>
void unary(UnOp op, T* out, const T* x, int64_t n, double p0 = 0, double p1 = 0);
// dx[i] = g[i] · f'(x[i]) where y = f(x); the same reads as cuda::unary_backward (x or y may be
// null when the op does not read it).
template <typename T>
void unary_backward(UnOp op, T* dx, const T* g, const T* x, const T* y, int64_t n, double p0 = 0,
                    double p1 = 0);

// ---- broadcasting binary ops, comparisons, where (ops/cpu/binary.cpp) ----
// out (so) = a (sa) op b (sb), NumPy broadcasting (so is the broadcast shape). T: float, double,
// int64_t (arithmetic; no Div/Pow for int64) or bool (comparisons only); O: T for arithmetic,
// bool for comparisons. Max/Min propagate NaN like torch.maximum.
template <typename T, typename O>
void binary(BinOp op, O* out, const T* a, const T* b, const Shape& so, const Shape& sa,
            const Shape& sb);
// out (so) = cond (sc) ? a (sa) : b (sb), all broadcast to so; T any of float, double, int64_t,
// bool. masked_fill is where(mask, value, x) with a one-element value.
template <typename T>
void where(T* out, const bool* cond, const T* a, const T* b, const Shape& so, const Shape& sc,
           const Shape& sa, const Shape& sb);

// ---- reductions: sum/mean/var/max/min/argmax (ops/cpu/reduce.cpp) ----

// ---- row softmax / log_softmax with the fully-masked/NaN rule, shared by softmax and SDPA
// (ops/cpu/softmax.cpp) ----

// ---- layer norm (ops/cpu/norm.cpp) ----

// ---- cross-entropy (ops/cpu/loss.cpp) ----

// ---- dropout, embedding (ops/cpu/dropout.cpp, ops/cpu/embedding.cpp) ----

// ---- GEMM through xt::blas::gemm (ops/cpu/blas.cpp) ----

// ---- copies: cat/stack/split, permutes (ops/cpu/copy.cpp) ----
// out[Σ i_d·out_strides[d]] = x[Σ i_d·x_strides[d]] for every index i of `shape` (element
// strides, 0 where x is broadcast; the pointers already at their offsets). T: float, double,
// int64_t, bool. The gather of transpose/permute/expand/narrow and the scatter of their backward.
template <typename T>
void strided_copy(T* out, const Shape& out_strides, const T* x, const Shape& x_strides,
                  const Shape& shape);

}  // namespace tg::cpu
