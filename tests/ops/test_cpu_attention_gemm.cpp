// tests/ops/test_cpu_attention_gemm.cpp — the attention's float32 AVX-512 kernels
// (ops/attention/cpu/gemm_avx512.cpp, through cpu::attention_gemm_f32 / attention_transpose_f32)
// against raw loops in double: random shapes on both sides of the 16-float batch, the 64-column
// panel and the row blocks, A read by rows or down its columns, accumulation, the B and A packing
// scratch, the key-mask select (NaN and inf scores of blocked keys leave no trace), K = 0, and
// the gaps between rows untouched. Skipped, with a warning, where the CPU has no AVX-512.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

TEST_CASE("cpu::attention_gemm_f32 matches a raw loop: shapes, layouts, packing, key mask",
          "[cpu][attention]") {
  struct Restore {
    ~Restore() { tg::cpu::reset_simd_kernels(); }
  } restore;
  if (!tg::cpu::set_kernel_variant(tg::cpu::KernelFamily::Attention, true)) {
    WARN("no AVX-512 on this CPU or build: the kernel is not used here");
    return;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  int checked = 0;
  for (int t = 0; t < 600; ++t) {
    const int64_t M = 1 + rng() % 80, N = 1 + rng() % 200, K = rng() % 100;
    const bool down = rng() % 2, acc = rng() % 2, packs = rng() % 2, masked = rng() % 3 == 0;
    // A (M, K) by rows (am = lda, ak = 1) or down its columns (stored (K, M): am = 1, ak = lda)
    const int64_t lda = (down ? M : K) + rng() % 4, ldb = N + (rng() % 2 ? rng() % 5 : 300),
                  ldc = N + rng() % 4;
    std::vector<float> A((down ? K : M) * lda + 1), B(K * ldb + 1), C(M * ldc), keys(N, 0.f);
    for (float& x : A) x = u(rng);
    for (float& x : B) x = u(rng);
    for (float& x : C) x = u(rng);
    if (masked)
      for (int64_t n = 0; n < N; ++n)
        if (rng() % 3 == 0) keys[n] = -inf;
    if (masked && K > 0 && N > 1) {  // a NaN and an inf in the products of blocked keys
      keys[0] = -inf, keys[N - 1] = -inf;
      B[0] = nan, B[N - 1] = inf;
    }
    const std::vector<float> C0 = C;
    std::vector<float> bpack(K * 64 + 1), apack(((M + 5) / 6 * 6) * K + 1);
    const float alpha = 0.75f;
    const int64_t am = down ? 1 : lda, ak = down ? lda : 1;
    tg::cpu::attention_gemm_f32(M, N, K, alpha, A.data(), am, ak, B.data(), ldb, acc, C.data(), ldc,
                                packs ? bpack.data() : nullptr, packs ? apack.data() : nullptr,
                                masked ? keys.data() : nullptr);
    int bad = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < ldc; ++n) {
        const float got = C[m * ldc + n];
        if (n >= N) {  // the gap after each row
          bad += got != C0[m * ldc + n];
          continue;
        }
        if (masked && keys[n] != 0.f) {
          bad += got != keys[n];
          continue;
        }
        double want = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = double(A[m * am + k * ak]) * B[k * ldb + n];
          want += p, mag += std::fabs(p);
        }
        want = alpha * want + (acc ? C0[m * ldc + n] : 0.0);
        mag = alpha * mag + (acc ? std::fabs(C0[m * ldc + n]) : 0.0);
        bad += !(std::fabs(got - want) <= 1e-6 + 4e-7 * mag);
      }
    INFO("M " << M << " N " << N << " K " << K << " down " << down << " acc " << acc << " packs "
              << packs << " masked " << masked << " ldb " << ldb);
    REQUIRE(bad == 0);
    ++checked;
  }
  REQUIRE(checked == 600);
}

TEST_CASE("cpu::attention_transpose_f32 transposes any shape and leaves the gaps",
          "[cpu][attention]") {
  struct Restore {
    ~Restore() { tg::cpu::reset_simd_kernels(); }
  } restore;
  if (!tg::cpu::set_kernel_variant(tg::cpu::KernelFamily::Attention, true)) {
    WARN("no AVX-512 on this CPU or build: the kernel is not used here");
    return;
  }
  std::mt19937 rng(8);
  for (int t = 0; t < 300; ++t) {
    const int64_t R = 1 + rng() % 70, Cn = 1 + rng() % 70, lds = Cn + rng() % 5,
                  ldd = R + rng() % 4;
    std::vector<float> s(R * lds), d(Cn * ldd, -1.f);
    for (float& x : s) x = static_cast<float>(rng() % 1000);
    tg::cpu::attention_transpose_f32(R, Cn, s.data(), lds, d.data(), ldd);
    int bad = 0;
    for (int64_t c = 0; c < Cn; ++c)
      for (int64_t r = 0; r < ldd; ++r) bad += d[c * ldd + r] != (r < R ? s[r * lds + c] : -1.f);
    INFO("rows " << R << " cols " << Cn);
    REQUIRE(bad == 0);
  }
}
