// ops/matmul/cpu/mixed_gemm.cpp — cpu::gemm_mixed: float32 × bfloat16 / float16 in float32, the
// reduced operand converted panel by panel, or read directly for a few rows (see mixed_gemm.hpp).
// Deliberately not here: the op level (ops/matmul/mixed.cpp), the same-dtype GEMMs.
#include "ops/matmul/cpu/mixed_gemm.hpp"

#include "autograd/convert.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/detail.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tg::cpu {
namespace {

// A per-thread float32 panel buffer, grown and kept.
float* panel_scratch(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

// rows × cols of a reduced-type matrix whose rows lie ld apart, as contiguous float32 at out.
void convert_block(DType dt, float* out, const void* src, int64_t ld, int64_t rows, int64_t cols) {
  const auto* s = static_cast<const uint16_t*>(src);
  if (ld == cols) return convert::to_float(dt, out, s, rows * cols);
  for (int64_t r = 0; r < rows; ++r) convert::to_float(dt, out + r * cols, s + r * ld, cols);
}

// Rows of op(A) below which the product skips the panels and BLAS (a token at a time through
// the KV cache: each weight element is used once per row, so the work is reading the weights):
// direct dot products / axpys on the reduced rows, widened on the fly.
constexpr int64_t kDirectRows = 4;

// Σ a[k]·w[k] over K, w bfloat16 widened inline, in 8 float32 lanes (the compiler's vector FMA).
float dot_bf16(const float* a, const uint16_t* w, int64_t K) {
  auto widen = [](uint16_t h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  };
  float acc[8] = {};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[k + l] * widen(w[k + l]);
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; k < K; ++k) s += a[k] * widen(w[k]);
  return s;
}
float dot_f32(const float* a, const float* w, int64_t K) {
  float acc[8] = {};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[k + l] * w[k + l];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; k < K; ++k) s += a[k] * w[k];
  return s;
}

// C rows (M <= kDirectRows) = A (M, K) float32 · op(B) with B reduced, column blocks in parallel.
// B (N, K) (linear's weight): a dot product per output; B (K, N) (Conv1D's): each B row widened
// once and added into the block's M accumulator rows.
void gemm_direct(const MixedGemm& g) {
  constexpr int64_t kCols = 256;
  const auto* A = static_cast<const float*>(g.A);
  const auto* B = static_cast<const uint16_t*>(g.B);
  const int64_t blocks = (g.N + kCols - 1) / kCols;
  detail::parallel_for(blocks, g.N * g.K, [&](int64_t blk) {
    const int64_t j0 = blk * kCols, n = std::min(kCols, g.N - j0);
    float acc[kDirectRows][kCols];
    for (int64_t m = 0; m < g.M; ++m)
      for (int64_t j = 0; j < n; ++j) acc[m][j] = g.accumulate ? g.C[m * g.ldc + j0 + j] : 0.0f;
    if (g.tb) {
      thread_local std::vector<float> row;
      if (g.b != kBFloat16) row.resize(static_cast<size_t>(g.K));
      for (int64_t j = 0; j < n; ++j) {
        const uint16_t* w = B + (j0 + j) * g.ldb;
        if (g.b != kBFloat16) convert::to_float(g.b, row.data(), w, g.K);
        for (int64_t m = 0; m < g.M; ++m)
          acc[m][j] += g.b == kBFloat16 ? dot_bf16(A + m * g.lda, w, g.K)
                                        : dot_f32(A + m * g.lda, row.data(), g.K);
      }
    } else {
      float w[kCols];
      for (int64_t k = 0; k < g.K; ++k) {
        convert::to_float(g.b, w, B + k * g.ldb + j0, n);
        for (int64_t m = 0; m < g.M; ++m) {
          const float a = A[m * g.lda + k];
          float* __restrict c = acc[m];
          for (int64_t j = 0; j < n; ++j) c[j] += a * w[j];
        }
      }
    }
    for (int64_t m = 0; m < g.M; ++m)
      std::memcpy(g.C + m * g.ldc + j0, acc[m], static_cast<size_t>(n) * sizeof(float));
  });
}

}  // namespace

void gemm_mixed(const MixedGemm& g) {
  if (is_reduced(g.b) && !g.ta && g.M <= kDirectRows) return gemm_direct(g);
  const bool b_reduced = is_reduced(g.b);
  const float beta = g.accumulate ? 1.0f : 0.0f;
  // Panels along the dimension the reduced operand does not share with K: columns of op(B) (N)
  // or rows of op(A) (M), each panel w of them by the whole K.
  const int64_t extent = b_reduced ? g.N : g.M;
  const int64_t w = std::min(extent, std::max<int64_t>(16, kMixedPanelElems / g.K));
  float* p = panel_scratch(w * g.K);
  for (int64_t j0 = 0; j0 < extent; j0 += w) {
    const int64_t n = std::min(w, extent - j0);
    if (b_reduced) {
      const auto* B = static_cast<const uint16_t*>(g.B);
      const auto* A = static_cast<const float*>(g.A);
      if (g.tb) {  // B (N, K): rows j0.. of B are columns j0.. of op(B)
        convert_block(g.b, p, B + j0 * g.ldb, g.ldb, n, g.K);
        gemm<float>(g.ta, true, g.M, n, g.K, 1.0f, A, g.lda, p, g.K, beta, g.C + j0, g.ldc);
      } else {  // B (K, N): columns j0.. of every row
        convert_block(g.b, p, B + j0, g.ldb, g.K, n);
        gemm<float>(g.ta, false, g.M, n, g.K, 1.0f, A, g.lda, p, n, beta, g.C + j0, g.ldc);
      }
    } else {
      const auto* A = static_cast<const uint16_t*>(g.A);
      const auto* B = static_cast<const float*>(g.B);
      float* C = g.C + j0 * g.ldc;
      if (!g.ta) {  // A (M, K): rows j0..
        convert_block(g.a, p, A + j0 * g.lda, g.lda, n, g.K);
        gemm<float>(false, g.tb, n, g.N, g.K, 1.0f, p, g.K, B, g.ldb, beta, C, g.ldc);
      } else {  // A (K, M): columns j0.. of every row are rows j0.. of op(A)
        convert_block(g.a, p, A + j0, g.lda, g.K, n);
        gemm<float>(true, g.tb, n, g.N, g.K, 1.0f, p, n, B, g.ldb, beta, C, g.ldc);
      }
    }
  }
}

}  // namespace tg::cpu
