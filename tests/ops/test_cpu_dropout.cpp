// tests/ops/test_cpu_dropout.cpp — the dropout kernel of ops/random/cpu/dropout.cpp against a raw loop
// over the generator's own stream (one next_u64() per element, kept iff (u >> 11)·2⁻⁵³ >= p), so
// a seed gives the mask it gave before the kernel moved; float64 and float32, sizes around the
// kernel's draw block, p = 1 draws nothing, and the op itself follows the same stream.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>

using namespace tg;

namespace {
// The mask·scale a raw loop draws from the default generator after manual_seed(seed).
std::vector<double> ref_keep(uint64_t seed, int64_t n, double p) {
  manual_seed(seed);
  std::vector<double> k;
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(default_generator().next_u64() >> 11) * 0x1.0p-53;
    k.push_back(u >= p ? 1.0 / (1.0 - p) : 0.0);
  }
  return k;
}

template <typename T>
void check(int64_t n, double p) {
  INFO((sizeof(T) == 4 ? "float32" : "float64") << " n " << n << " p " << p);
  std::vector<T> x(n), out(n), keep(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(0.5 + 0.25 * static_cast<double>(i % 7));
  const std::vector<double> want = ref_keep(21, n, p);
  manual_seed(21);
  cpu::dropout_forward<T>(out.data(), keep.data(), x.data(), n, p, default_generator());
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE(keep[i] == static_cast<T>(want[i]));
    REQUIRE(out[i] == x[i] * static_cast<T>(want[i]));
  }
  // The kernel drew exactly n values: the stream continues where the raw loop's does.
  const uint64_t next = default_generator().next_u64();
  ref_keep(21, n, p);
  REQUIRE(next == default_generator().next_u64());
}
}  // namespace

TEST_CASE("cpu dropout kernel follows the generator stream exactly", "[dropout][cpu]") {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(1023), int64_t(1024), int64_t(1025),
                    int64_t(5000)})
    for (double p : {0.1, 0.5, 0.9}) {
      check<double>(n, p);
      check<float>(n, p);
    }
  // p = 1: zeros, and nothing drawn.
  std::vector<float> x(10, 1.f), out(10, 5.f), keep(10, 5.f);
  manual_seed(3);
  cpu::dropout_forward<float>(out.data(), keep.data(), x.data(), 10, 1.0, default_generator());
  const uint64_t next = default_generator().next_u64();
  manual_seed(3);
  REQUIRE(next == default_generator().next_u64());
  for (int i = 0; i < 10; ++i) REQUIRE((out[i] == 0 && keep[i] == 0));
}

TEST_CASE("dropout (the op) draws the raw-loop mask for a seed", "[dropout][cpu]") {
  const double p = 0.3;
  Tensor x = randn({37, 41}, kFloat64);
  const std::vector<double> want = ref_keep(8, x.numel(), p);
  manual_seed(8);
  Tensor y = dropout(x, p);
  std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) REQUIRE(yv[i] == xv[i] * want[i]);
}
