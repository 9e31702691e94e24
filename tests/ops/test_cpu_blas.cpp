// tests/ops/test_cpu_blas.cpp — cpu::gemm (ops/matmul/cpu/blas.cpp, xt::blas::gemm on strided
// adaptors) against a raw triple loop in double: all four transpose combinations, leading
// dimensions larger than the rows (the gaps between rows must stay untouched), alpha and beta,
// beta = 0 over a C full of NaN, and sizes 0 and 1 for M, N and K, float32 and float64.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace {

// One case: C (M, N) = alpha·op(A)·op(B) + beta·C with the stored rows `pad` elements longer
// than needed.
struct GemmCase {
  bool ta, tb;
  int64_t M, N, K, pad;
  double alpha, beta;
};

template <typename T>
void check_gemm(const GemmCase& g, std::mt19937& rng) {
  const int64_t ar = g.ta ? g.K : g.M, ac = g.ta ? g.M : g.K;  // A as stored
  const int64_t br = g.tb ? g.N : g.K, bc = g.tb ? g.K : g.N;
  const int64_t lda = ac + g.pad, ldb = bc + g.pad, ldc = g.N + g.pad;
  std::uniform_real_distribution<double> u(-1, 1);
  const T sentinel = static_cast<T>(12345.5);
  std::vector<T> A(ar * lda, sentinel), B(br * ldb, sentinel), C(g.M * ldc, sentinel);
  for (int64_t i = 0; i < ar; ++i)
    for (int64_t j = 0; j < ac; ++j) A[i * lda + j] = static_cast<T>(u(rng));
  for (int64_t i = 0; i < br; ++i)
    for (int64_t j = 0; j < bc; ++j) B[i * ldb + j] = static_cast<T>(u(rng));
  const bool nan_c = g.beta == 0;  // beta = 0 must not read C: fill it with NaN
  for (int64_t i = 0; i < g.M; ++i)
    for (int64_t j = 0; j < g.N; ++j)
      C[i * ldc + j] = nan_c ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(u(rng));
  // The raw triple loop, in double; scale: Σ |alpha·a·b| + |beta·c| bounds the rounding.
  std::vector<double> ref(g.M * g.N), mag(g.M * g.N);
  for (int64_t i = 0; i < g.M; ++i)
    for (int64_t j = 0; j < g.N; ++j) {
      double s = 0, m = 0;
      for (int64_t k = 0; k < g.K; ++k) {
        const double a = g.ta ? A[k * lda + i] : A[i * lda + k];
        const double b = g.tb ? B[j * ldb + k] : B[k * ldb + j];
        s += a * b;
        m += std::fabs(a * b);
      }
      const double c = nan_c ? 0.0 : static_cast<double>(C[i * ldc + j]);
      ref[i * g.N + j] = g.alpha * s + g.beta * c;
      mag[i * g.N + j] = std::fabs(g.alpha) * m + std::fabs(g.beta * c);
    }
  tg::cpu::gemm<T>(g.ta, g.tb, g.M, g.N, g.K, static_cast<T>(g.alpha), A.data(), lda, B.data(), ldb,
                   static_cast<T>(g.beta), C.data(), ldc);
  const double eps = std::is_same_v<T, float> ? 1e-6 : 1e-15;
  INFO(fmt::format("{} ta={} tb={} M={} N={} K={} pad={} alpha={} beta={}",
                   std::is_same_v<T, float> ? "float32" : "float64", g.ta, g.tb, g.M, g.N, g.K,
                   g.pad, g.alpha, g.beta));
  double maxd = 0;
  int bad = 0;
  for (int64_t i = 0; i < g.M; ++i) {
    for (int64_t j = 0; j < g.N; ++j) {
      const double got = C[i * ldc + j], want = ref[i * g.N + j];
      const double d = std::fabs(got - want);
      maxd = std::max(maxd, d);
      if (!(d <= eps * (4 + mag[i * g.N + j]))) ++bad;
    }
    for (int64_t j = g.N; j < ldc; ++j)
      if (C[i * ldc + j] != sentinel) ++bad;  // the gap between rows of C is not C's
  }
  INFO("max |diff| " << maxd << ", entries wrong or gaps written: " << bad);
  REQUIRE(bad == 0);
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // ordinary, padded rows, alpha/beta, and every degenerate size
      cases.push_back({ta, tb, 5, 7, 9, 0, 1.0, 0.0});
      cases.push_back({ta, tb, 13, 6, 17, 3, 1.0, 0.0});
      cases.push_back({ta, tb, 13, 6, 17, 3, -0.75, 1.0});
      cases.push_back({ta, tb, 8, 11, 33, 5, 0.5, -2.0});
      cases.push_back({ta, tb, 1, 9, 4, 2, 1.0, 0.5});
      cases.push_back({ta, tb, 9, 1, 4, 2, 1.0, 0.5});
      cases.push_back({ta, tb, 6, 5, 1, 1, 1.5, 0.0});
      cases.push_back({ta, tb, 1, 1, 1, 0, 1.0, 1.0});
      cases.push_back({ta, tb, 0, 5, 3, 1, 1.0, 1.0});
      cases.push_back({ta, tb, 4, 0, 3, 1, 1.0, 1.0});
      cases.push_back({ta, tb, 4, 5, 0, 2, 1.0, 0.0});   // empty sum, beta 0: C = 0 over NaN
      cases.push_back({ta, tb, 4, 5, 0, 2, 1.0, 0.25});  // empty sum: C = beta·C
      cases.push_back({ta, tb, 70, 65, 129, 7, 1.0, 1.0});
    }
  return cases;
}

}  // namespace

TEST_CASE("cpu::gemm matches a raw triple loop: transposes, leading dims, alpha/beta, sizes 0/1",
          "[gemm]") {
  std::mt19937 rng(7);
  for (const GemmCase& g : gemm_cases()) {
    check_gemm<float>(g, rng);
    check_gemm<double>(g, rng);
  }
}
