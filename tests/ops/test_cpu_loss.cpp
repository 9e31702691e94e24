// tests/ops/test_cpu_loss.cpp — the cross-entropy kernels of ops/loss/cpu/cross_entropy.cpp against a plain
// float64 raw loop (the formulas of ops/loss/cross_entropy.cpp), float64 and float32: (N, C) and (N, C, inner)
// layouts, C = 1, C below / at / above the vector width, N = 0, ignore_index out of and in range,
// label smoothing 0, 0.1 and 1, per-row and scalar upstream gradients, rows holding NaN, -inf
// and +inf; and the same bits at 1 and 3 threads.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <limits>
#include <cstring>
#include <random>

using namespace tg;
using tgt::require_near;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

struct Case {
  int64_t N, C, inner;
};

struct Ref {
  std::vector<double> loss, lse, dx;
  int64_t count = 0;
};

// The float64 reference: the row at stride inner, logsumexp by max-shift, then the closed form.
Ref reference(const std::vector<double>& x, const std::vector<int64_t>& t,
              const std::vector<double>& grow, const Case& k, int64_t ignore, double eps) {
  Ref r;
  const int64_t rows = k.N * k.inner;
  r.loss.assign(rows, 0);
  r.lse.assign(rows, 0);
  r.dx.assign(x.size(), 0);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = row / k.inner, i = row % k.inner;
    auto at = [&](int64_t c) { return (n * k.C + c) * k.inner + i; };
    if (t[row] == ignore) continue;
    ++r.count;
    double mx = -kInf, s = 0, sx = 0;
    for (int64_t c = 0; c < k.C; ++c) mx = std::max(mx, x[at(c)]);  // std::max skips NaN
    for (int64_t c = 0; c < k.C; ++c) {
      s += std::exp(x[at(c)] - mx);
      sx += x[at(c)];
    }
    const double z = mx + std::log(s), nll = z - x[at(t[row])];
    r.loss[row] = eps == 0 ? nll : (1 - eps) * nll + eps / k.C * (k.C * z - sx);
    r.lse[row] = z;
    for (int64_t c = 0; c < k.C; ++c) {
      const double target = (c == t[row] ? 1 - eps : 0) + eps / k.C;
      r.dx[at(c)] = grow[row] * (std::exp(x[at(c)] - z) - target);
    }
  }
  return r;
}

template <typename T>
void check(const Case& k, int64_t ignore, double eps, bool specials, bool per_row) {
  const bool f32 = std::is_same_v<T, float>;
  const std::string what =
      fmt::format("{} (N, C, inner) = ({}, {}, {}) ignore {} smoothing {} specials {} per-row {}",
                  f32 ? "float32" : "float64", k.N, k.C, k.inner, ignore, eps, specials, per_row);
  const int64_t rows = k.N * k.inner;
  std::mt19937 rng(static_cast<unsigned>(k.N * 7 + k.C * 13 + k.inner));
  std::normal_distribution<double> nd;
  std::vector<T> x(rows * k.C);
  for (T& v : x) v = static_cast<T>(2 * nd(rng));
  std::vector<int64_t> t(rows);
  for (int64_t r = 0; r < rows; ++r) t[r] = r % 4 == 3 ? ignore : static_cast<int64_t>(rng() % k.C);
  std::vector<double> grow(rows, 0.375);
  if (per_row)
    for (double& g : grow) g = nd(rng);
  if (specials && k.C > 1) {  // rows 0, 1, 2 (not ignored): one NaN, all -inf, one +inf
    auto at = [&](int64_t row, int64_t c) {
      return ((row / k.inner) * k.C + c) * k.inner + row % k.inner;
    };
    if (rows > 0) x[at(0, k.C / 2)] = static_cast<T>(kNaN);
    for (int64_t c = 0; rows > 1 && c < k.C; ++c) x[at(1, c)] = static_cast<T>(-kInf);
    if (rows > 2) x[at(2, 0)] = static_cast<T>(kInf);
    if (rows > 4) x[at(4, k.C - 1)] = static_cast<T>(-kInf);  // one masked class: finite loss
  }
  const Ref ref = reference(std::vector<double>(x.begin(), x.end()), t, grow, k, ignore, eps);
  std::vector<double> loss(rows), lse(rows);
  const int64_t count = cpu::cross_entropy_forward<T>(loss.data(), lse.data(), x.data(), t.data(),
                                                      k.N, k.C, k.inner, ignore, eps);
  INFO(what);
  REQUIRE(count == ref.count);
  // float32: exp in float32 (a few ulps per term), sums in double.
  const double rt = f32 ? 1e-6 : 1e-13, at = f32 ? 1e-6 : 1e-13;
  require_near(lse, ref.lse, rt, at, "lse " + what);
  require_near(loss, ref.loss, rt, at, "loss " + what);
  std::vector<T> dx(x.size(), T(-7));
  cpu::cross_entropy_backward<T>(dx.data(), per_row ? grow.data() : nullptr,
                                 rows > 0 ? grow[0] : 0.0, x.data(), t.data(), lse.data(), k.N, k.C,
                                 k.inner, ignore, eps);
  require_near(dx, ref.dx, rt, f32 ? 2e-7 : 1e-15, "dx " + what);
}
}  // namespace

TEST_CASE("cpu cross-entropy kernels match a float64 raw loop: layouts, smoothing, ignore, NaN",
          "[loss][cpu]") {
  for (const Case& k :
       {Case{1, 1, 1}, Case{3, 5, 1}, Case{5, 8, 1}, Case{4, 7, 3}, Case{2, 130, 1},
        Case{6, 1000, 1}, Case{0, 4, 1}, Case{3, 9, 2}, Case{9, 16, 1}, Case{2, 33, 5}}) {
    for (int64_t ignore : {int64_t(-100), int64_t(0)})
      for (double eps : {0.0, 0.1, 1.0})
        for (bool per_row : {false, true}) {
          check<double>(k, ignore, eps, false, per_row);
          check<float>(k, ignore, eps, false, per_row);
        }
    check<double>(k, -100, 0.1, true, true);
    check<float>(k, -100, 0.1, true, true);
    check<float>(k, -100, 0.0, true, false);
  }
}

TEST_CASE("cpu cross-entropy kernels give the same bits at 1 and 3 threads", "[loss][cpu]") {
  const int saved = get_num_threads();
  for (const Case& k : {Case{300, 137, 1}, Case{64, 50, 3}}) {
    const int64_t rows = k.N * k.inner;
    std::mt19937 rng(2);
    std::normal_distribution<float> nd;
    std::vector<float> x(rows * k.C);
    for (float& v : x) v = 3 * nd(rng);
    std::vector<int64_t> t(rows);
    for (int64_t r = 0; r < rows; ++r) t[r] = r % 5 == 0 ? -100 : static_cast<int64_t>(rng() % k.C);
    auto run = [&](int threads) {
      set_num_threads(threads);
      std::vector<double> loss(rows), lse(rows);
      cpu::cross_entropy_forward<float>(loss.data(), lse.data(), x.data(), t.data(), k.N, k.C,
                                        k.inner, -100, 0.1);
      std::vector<float> dx(x.size());
      cpu::cross_entropy_backward<float>(dx.data(), nullptr, 0.5, x.data(), t.data(), lse.data(),
                                         k.N, k.C, k.inner, -100, 0.1);
      for (float v : dx) loss.push_back(v);
      loss.insert(loss.end(), lse.begin(), lse.end());
      return loss;
    };
    const std::vector<double> one = run(1), three = run(3);
    INFO(k.N << " " << k.C << " " << k.inner);
    REQUIRE(std::memcmp(one.data(), three.data(), one.size() * sizeof(double)) == 0);
  }
  set_num_threads(saved);
}
