// ops/matmul/cpu/blas.cpp — the one CPU GEMM (cpu::gemm): xt::blas::gemm on xtd::mat adaptors of the
// caller's buffers, transposes as flags and leading dimensions as strides, so OpenBLAS reads and
// writes tapegrad's storage directly (0 allocations, no copies; xt.hpp says why xtd::mat has the
// form it has). matmul, mm, bmm, linear (ops/matmul/matmul.cpp) and the fused CPU attention's tile GEMMs
// (ops/attention/cpu/fused.cpp) all call it; SerialBlas keeps OpenBLAS on the calling thread while our
// own parallel loops call it.
// Deliberately not here: size checks against BLAS's 32-bit int (each caller's op names itself in
// the error), cuBLAS (cuda/blas.cu), the pool's size (autograd/device.cpp sets it, the one thing
// xtensor-blas cannot do), xt::linalg::dot (it allocates).
#include "autograd/tensor.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/xt.hpp"

#include <xtensor-blas/xblas.hpp>

#include <atomic>

extern "C" void openblas_set_num_threads(int);

namespace tg::cpu {
namespace {
// Multiply-adds below which a GEMM runs on one OpenBLAS thread. OpenBLAS splits a product across
// its pool from 2^18 on; so small a split gains little on an idle machine and, on a loaded one,
// waits a time slice for a descheduled worker at every call (bench/sampling.sh: sampling at the
// default thread count was many times slower than at one thread). Setting the count is a store
// in OpenBLAS (built NO_AFFINITY), so it is set per call.
constexpr double kBlasParallelMacs = 16777216;  // 2^24
// Live SerialBlas scopes: while there are any, the pool stays at one thread.
std::atomic<int> g_serial{0};
class OneBlasThreadIfSmall {
 public:
  explicit OneBlasThreadIfSmall(double macs)
      : on_(macs < kBlasParallelMacs && get_num_threads() > 1 &&
            g_serial.load(std::memory_order_relaxed) == 0) {
    if (on_) openblas_set_num_threads(1);
  }
  ~OneBlasThreadIfSmall() {
    if (on_) openblas_set_num_threads(get_num_threads());
  }
  OneBlasThreadIfSmall(const OneBlasThreadIfSmall&) = delete;
  OneBlasThreadIfSmall& operator=(const OneBlasThreadIfSmall&) = delete;

 private:
  bool on_;
};
}  // namespace

SerialBlas::SerialBlas() {
  if (g_serial.fetch_add(1) == 0 && get_num_threads() > 1) openblas_set_num_threads(1);
}
SerialBlas::~SerialBlas() {
  if (g_serial.fetch_sub(1) == 1 && get_num_threads() > 1)
    openblas_set_num_threads(get_num_threads());
}

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
  OneBlasThreadIfSmall pool(static_cast<double>(M) * static_cast<double>(N) *
                            static_cast<double>(K));
  xt::blas::gemm(a, b, c, ta, tb, alpha, beta);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace tg::cpu
