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

// ---- reductions: sum/mean/var/max/min/argmax (ops/cpu/reduce.cpp) ----

// ---- row softmax / log_softmax with the fully-masked/NaN rule, shared by softmax and SDPA
// (ops/cpu/softmax.cpp) ----
// The rule, coded once here for the CPU (cuda/softmax.cu and cuda/attention.cu mirror it): a row
// whose entries are all -inf (a fully masked attention row) gives 0 (log_softmax: -inf) and a zero
// gradient; a row holding a NaN gives NaN everywhere (the max skips NaN, so without the check an
// all NaN/-inf row would pass for fully masked); otherwise y = exp(x - max) / sum exp(x - max),
// exponentials in T's precision (float32 math for float32, as PyTorch), the sum in double.
// One contiguous row of n: y = softmax(x) (log_softmax when is_log); y may be x. Returns false for
// a fully masked row (all -inf), true otherwise (NaN rows included).
template <typename T>
bool softmax_row(T* y, const T* x, int64_t n, bool is_log = false);
// Backward of one contiguous row from the upstream g and the saved output y; dx may be g.
// softmax: dx = y ⊙ (g − Σ g⊙y); log_softmax: dx = g − exp(y)·Σ g, and 0 on a fully masked row.
template <typename T>
void softmax_backward_row(T* dx, const T* g, const T* y, int64_t n, bool is_log = false);
// The same over an (outer, n, inner) tensor, softmax along n: element (o, j, i) at
// (o·n + j)·inner + i; inner == 1 is contiguous rows, else columns are gathered in blocks.
template <typename T>
void softmax_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner, bool is_log);
template <typename T>
void softmax_backward(T* dx, const T* g, const T* y, int64_t outer, int64_t n, int64_t inner,
                      bool is_log);

// ---- layer norm (ops/cpu/norm.cpp) ----

// ---- cross-entropy (ops/cpu/loss.cpp) ----

// ---- dropout, embedding (ops/cpu/dropout.cpp, ops/cpu/embedding.cpp) ----

// ---- GEMM through xt::blas::gemm (ops/cpu/blas.cpp) ----
// C (M, N) = alpha·op(A)·op(B) + beta·C, every matrix row-major with the given leading dimension
// (the stored row length: A is (M, K), or (K, M) when ta, with rows lda apart; B is (K, N), or
// (N, K) when tb; C rows ldc apart, ld >= the stored row length). No copy, no allocation: BLAS
// reads the buffers themselves. M or N == 0: nothing; K == 0: C = beta·C (0 when beta == 0, even
// over NaN). beta == 0 never reads C. Sizes and leading dimensions must fit BLAS's int: callers
// check (with their own op's message).
template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// ---- copies: cat/stack/split, permutes (ops/cpu/copy.cpp) ----

}  // namespace tg::cpu
