// ops/matmul/cpu/mixed_gemm.cpp — cpu::gemm_mixed: float32 × bfloat16 / float16 in float32, the
// reduced operand converted panel by panel (see mixed_gemm.hpp). Deliberately not here: the op
// level (ops/matmul/mixed.cpp), the same-dtype GEMMs.
#include "ops/matmul/cpu/mixed_gemm.hpp"

#include "autograd/convert.hpp"
#include "ops/core/cpu/kernels.hpp"

#include <algorithm>
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

}  // namespace

void gemm_mixed(const MixedGemm& g) {
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
