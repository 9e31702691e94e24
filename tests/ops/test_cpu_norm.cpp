// tests/ops/test_cpu_norm.cpp — the layer norm kernels of ops/norm/cpu/norm.cpp against a plain
// float64 raw-loop reference (the closed form of ops/norm/norm.cpp), float64 and float32, with and
// without weight and bias, on odd (N, D): D = 1, rows longer than the vector width, more rows
// than one dw/db chunk, N = 0; rows holding NaN, -inf, a constant row, a row far from 0 (x - mean
// must keep its precision); and the same bits at 1 and 3 threads.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <cstring>

using namespace tg;
using tgt::require_near;

namespace {
struct Ref {
  std::vector<double> out, mean, rstd, dx, dw, db;
};

// The float64 reference, straight from the formulas.
Ref reference(const std::vector<double>& x, const std::vector<double>& w,
              const std::vector<double>& b, const std::vector<double>& g, int64_t N, int64_t D,
              double eps, bool has_w, bool has_b) {
  Ref r;
  r.out.resize(N * D);
  r.dx.resize(N * D);
  r.dw.assign(D, 0);
  r.db.assign(D, 0);
  for (int64_t n = 0; n < N; ++n) {
    const double* xr = &x[n * D];
    double m = 0, v = 0;
    for (int64_t i = 0; i < D; ++i) m += xr[i];
    m /= D;
    for (int64_t i = 0; i < D; ++i) v += (xr[i] - m) * (xr[i] - m);
    v /= D;
    const double rs = 1 / std::sqrt(v + eps);
    r.mean.push_back(m);
    r.rstd.push_back(rs);
    double a = 0, c = 0;
    for (int64_t i = 0; i < D; ++i) {
      const double norm = (xr[i] - m) * rs, dn = (has_w ? w[i] : 1.0) * g[n * D + i];
      r.out[n * D + i] = norm * (has_w ? w[i] : 1.0) + (has_b ? b[i] : 0.0);
      a += dn;
      c += dn * norm;
    }
    a /= D;
    c /= D;
    for (int64_t i = 0; i < D; ++i) {
      const double norm = (xr[i] - m) * rs, dn = (has_w ? w[i] : 1.0) * g[n * D + i];
      r.dx[n * D + i] = rs * (dn - a - norm * c);
      r.dw[i] += g[n * D + i] * norm;
      r.db[i] += g[n * D + i];
    }
  }
  return r;
}

enum class Rows { Plain, Specials, FarFromZero };

template <typename T>
void check(int64_t N, int64_t D, Rows kind, bool has_w, bool has_b, double eps) {
  const bool f32 = std::is_same_v<T, float>;
  const std::string what =
      fmt::format("{} ({}, {}) rows {} weight {} bias {} eps {}", f32 ? "float32" : "float64", N, D,
                  static_cast<int>(kind), has_w, has_b, eps);
  std::mt19937 rng(static_cast<unsigned>(N * 131 + D));
  std::normal_distribution<double> nd;
  std::vector<T> x(N * D), g(N * D), w(D), b(D);
  for (T& v : x) v = static_cast<T>(kind == Rows::FarFromZero ? 1000 + 0.01 * nd(rng) : nd(rng));
  for (T& v : g) v = static_cast<T>(nd(rng));
  for (T& v : w) v = static_cast<T>(1 + 0.5 * nd(rng));
  for (T& v : b) v = static_cast<T>(nd(rng));
  if (kind == Rows::Specials) {
    const double nan = std::numeric_limits<double>::quiet_NaN(),
                 inf = std::numeric_limits<double>::infinity();
    if (N > 0) x[D / 2] = static_cast<T>(nan);                                     // row 0
    for (int64_t i = 0; N > 1 && i < D; ++i) x[D + i] = static_cast<T>(-inf);      // row 1
    for (int64_t i = 0; N > 2 && i < D; ++i) x[2 * D + i] = static_cast<T>(0.75);  // row 2
  }
  auto dbl = [](const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); };
  const Ref ref = reference(dbl(x), dbl(w), dbl(b), dbl(g), N, D, eps, has_w, has_b);

  std::vector<T> out(N * D), dx(N * D), dw(D), db(D);
  std::vector<double> mean(N), rstd(N);
  const T* pw = has_w ? w.data() : nullptr;
  cpu::layer_norm_forward<T>(out.data(), mean.data(), rstd.data(), x.data(), pw,
                             has_b ? b.data() : nullptr, N, D, eps);
  cpu::layer_norm_backward<T>(dx.data(), dw.data(), db.data(), g.data(), x.data(), pw, mean.data(),
                              rstd.data(), N, D);
  // float32: the per-element passes run in float32 (a few ulps of values up to ~10); the
  // statistics in double agree to double rounding either way.
  // Rows far from 0 are ill-conditioned (mean 1000, spread 0.01): the float64 reference itself
  // is only good to ~1e-10 there.
  const double rt = f32 ? 2e-6 : 1e-12, at = f32 ? 4e-6 : kind == Rows::FarFromZero ? 1e-9 : 1e-12;
  require_near(mean, ref.mean, 1e-15, 1e-12, "mean " + what);
  require_near(rstd, ref.rstd, f32 ? 1e-12 : 1e-13, 0, "rstd " + what);
  require_near(out, ref.out, rt, at, "out " + what);
  // dx's terms are of size rstd·|dnorm| and cancel: compare against that scale.
  double scale = 0;
  for (int64_t n = 0; n < N; ++n)
    if (std::isfinite(ref.rstd[n])) scale = std::max(scale, ref.rstd[n]);
  require_near(dx, ref.dx, rt, at * 4 * std::max(1.0, scale), "dx " + what);
  require_near(dw, ref.dw, rt, at * std::max<int64_t>(N, 1), "dw " + what);
  require_near(db, ref.db, rt, at * std::max<int64_t>(N, 1), "db " + what);
  // dx alone, and dw/db alone, give the same values.
  std::vector<T> dx2(N * D), dw2(D);
  cpu::layer_norm_backward<T>(dx2.data(), nullptr, nullptr, g.data(), x.data(), pw, mean.data(),
                              rstd.data(), N, D);
  cpu::layer_norm_backward<T>(nullptr, dw2.data(), nullptr, g.data(), x.data(), pw, mean.data(),
                              rstd.data(), N, D);
  require_near(dx2, std::vector<double>(dx.begin(), dx.end()), 0, 0, "dx alone " + what);
  require_near(dw2, std::vector<double>(dw.begin(), dw.end()), 0, 0, "dw alone " + what);
}
}  // namespace

TEST_CASE("cpu layer norm kernels match a float64 raw loop: f64 and f32, odd shapes, NaN rows",
          "[norm][cpu]") {
  struct Shape2 {
    int64_t N, D;
  };
  for (const Shape2& s : {Shape2{1, 1}, Shape2{3, 5}, Shape2{7, 33}, Shape2{69, 17},
                          Shape2{2, 1000}, Shape2{130, 8}, Shape2{0, 4}}) {
    for (bool has_w : {true, false})
      for (bool has_b : {true, false}) {
        check<double>(s.N, s.D, Rows::Plain, has_w, has_b, 1e-5);
        check<float>(s.N, s.D, Rows::Plain, has_w, has_b, 1e-5);
      }
    for (Rows kind : {Rows::Specials, Rows::FarFromZero}) {
      check<double>(s.N, s.D, kind, true, true, 1e-5);
      check<float>(s.N, s.D, kind, true, true, 1e-5);
    }
    check<double>(s.N, s.D, Rows::Plain, true, false, 0.0);
  }
}

TEST_CASE("cpu layer norm kernels give the same bits at 1 and 3 threads", "[norm][cpu]") {
  const int saved = get_num_threads();
  const int64_t N = 300, D = 130;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(N * D), g(N * D), w(D), b(D);
  for (float* v : {x.data(), g.data()})
    for (int64_t i = 0; i < N * D; ++i) v[i] = nd(rng);
  for (int64_t i = 0; i < D; ++i) w[i] = nd(rng), b[i] = nd(rng);
  auto run = [&](int threads) {
    set_num_threads(threads);
    std::vector<float> out(N * D), dx(N * D), dw(D), db(D);
    std::vector<double> mean(N), rstd(N);
    cpu::layer_norm_forward<float>(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                   b.data(), N, D, 1e-5);
    cpu::layer_norm_backward<float>(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(),
                                    mean.data(), rstd.data(), N, D);
    out.insert(out.end(), dx.begin(), dx.end());
    out.insert(out.end(), dw.begin(), dw.end());
    out.insert(out.end(), db.begin(), db.end());
    for (double v : mean) out.push_back(static_cast<float>(v));
    return out;
  };
  const std::vector<float> one = run(1), three = run(3);
  REQUIRE(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)) == 0);
  set_num_threads(saved);
}
