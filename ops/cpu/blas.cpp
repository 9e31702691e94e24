// ops/cpu/blas.cpp — the one CPU GEMM (cpu::gemm): xt::blas::gemm on xtd::mat adaptors of the
// caller's buffers, transposes as flags and leading dimensions as strides, so OpenBLAS reads and
// writes tapegrad's storage directly (0 allocations, no copies; xt.hpp says why xtd::mat has the
// form it has). matmul, mm, bmm, linear (ops/matmul.cpp) and the fused CPU attention's tile GEMMs
// (ops/attention.cpp) all call it.
// Deliberately not here: size checks against BLAS's 32-bit int (each caller's op names itself in
// the error), cuBLAS (cuda/blas.cu), threading (autograd/tensor.cpp sets OpenBLAS's pool, the
// one thing xtensor-blas cannot do), xt::linalg::dot (it allocates).
#include "ops/cpu/kernels.hpp"
#include "ops/cpu/xt.hpp"

#include <xtensor-blas/xblas.hpp>

namespace tg::cpu {

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // an empty sum: C = beta·C (BLAS rejects a leading dimension of 0)
    for (int64_t i = 0; i < M; ++i) {
      T* c = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) c[j] = beta == T(0) ? T(0) : beta * c[j];
    }
    return;
  }
  // Stored shapes: op(A) (M, K) is A (M, K), or A (K, M) transposed; likewise B.
  const xtd::mat<const T> a(A, ta ? K : M, ta ? M : K, lda);
  const xtd::mat<const T> b(B, tb ? N : K, tb ? K : N, ldb);
  xtd::mat<T> c(C, M, N, ldc);
  xt::blas::gemm(a, b, c, ta, tb, alpha, beta);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace tg::cpu
