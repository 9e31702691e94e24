// ops/matmul/cpu/mixed_gemm.hpp — the CPU GEMM of a float32 matrix with a bfloat16 / float16 one
// (weight-only reduced precision: float32 activations, mapped bf16 weights), computed in float32
// without a float32 copy of the whole reduced operand: it is converted one panel at a time
// (rows of op(A), or columns of op(B), each with its whole K) into a bounded per-thread float32
// scratch, and each panel runs the float32 GEMM (cpu::gemm, OpenBLAS). A product of a few float32
// rows (generation: one token at a time) by a reduced op(B) skips both: dot products (or axpys)
// on the reduced rows widened on the fly, column blocks in parallel, float32 sums in 8 lanes.
// Either way each output element is a K-long float32 sum, in another order than one float32 GEMM
// over the converted operand (float32 rounding apart). Internal to ops/matmul/.
// Deliberately not here: bf16 × bf16 (reduced_gemm.hpp), float32 × float32 (cpu::gemm), CUDA.
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>

namespace tg::cpu {

// C (M, N) float32 = op(A) · op(B) [+ C], row-major with leading dimensions as in cpu::gemm
// (A (M, K), or (K, M) when ta; B (K, N), or (N, K) when tb). Exactly one of a, b is bfloat16 or
// float16, the other float32. M, N, K > 0.
struct MixedGemm {
  DType a = kFloat32, b = kBFloat16;
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;
  int64_t lda = 0;
  const void* B = nullptr;
  int64_t ldb = 0;
  float* C = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
};
void gemm_mixed(const MixedGemm& g);

// Elements of one converted panel: a few hundred KB of float32, which stays in the cache between
// its conversion and its GEMM.
constexpr int64_t kMixedPanelElems = int64_t(1) << 16;

}  // namespace tg::cpu
