// tests/ops/test_cpu_softmax.cpp — the CPU row softmax (ops/softmax/cpu/softmax.cpp) against a raw loop
// in double: softmax and log_softmax rows, forward and backward, with ordinary, mixed (some -inf),
// fully -inf, NaN (with -inf, with finite values, all NaN) rows, lengths on both sides of the
// SIMD widths, in place and out of place, the (outer, n, inner) strided form, float32 and float64.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class Kind { Normal, Mixed, AllNegInf, NaNAndNegInf, NaNAndFinite, AllNaN };

std::vector<double> make_row(Kind kind, int64_t n, std::mt19937& rng) {
  std::normal_distribution<double> nd(0.0, 3.0);
  std::vector<double> r(n);
  for (double& v : r) v = nd(rng);
  for (int64_t j = 0; j < n; ++j) switch (kind) {
      case Kind::Normal:
        break;
      case Kind::Mixed:  // some keys blocked, never all
        if (j % 3 != 1) r[j] = -kInf;
        break;
      case Kind::AllNegInf:
        r[j] = -kInf;
        break;
      case Kind::NaNAndNegInf:
        r[j] = j == n / 2 ? kNaN : -kInf;
        break;
      case Kind::NaNAndFinite:
        if (j == n - 1) r[j] = kNaN;
        break;
      case Kind::AllNaN:
        r[j] = kNaN;
        break;
    }
  return r;
}

// The rule, written out independently: all -inf -> 0 (log: -inf); any NaN -> NaN.
std::vector<double> ref_forward(const std::vector<double>& x, bool is_log) {
  const int64_t n = static_cast<int64_t>(x.size());
  bool nan = false, all_ninf = true;
  for (double v : x) nan = nan || std::isnan(v), all_ninf = all_ninf && v == -kInf;
  std::vector<double> y(n);
  if (nan || all_ninf) {
    for (double& v : y) v = nan ? kNaN : (is_log ? -kInf : 0.0);
    return y;
  }
  double mx = -kInf, s = 0;
  for (double v : x) mx = std::max(mx, v);
  for (double v : x) s += std::exp(v - mx);
  for (int64_t j = 0; j < n; ++j) y[j] = is_log ? x[j] - mx - std::log(s) : std::exp(x[j] - mx) / s;
  return y;
}
// dx from g and the reference output y (softmax: y·(g − Σ g·y); log: g − exp(y)·Σ g, 0 when
// every y is -inf); *mag gets each entry's scale (the size of the terms it is the difference of).
std::vector<double> ref_backward(const std::vector<double>& g, const std::vector<double>& y,
                                 bool is_log, std::vector<double>* mag) {
  const size_t n = g.size();
  std::vector<double> dx(n);
  mag->assign(n, 0.0);
  double dot = 0, sg = 0, absdot = 0, abssg = 0;
  bool masked = true;
  for (size_t j = 0; j < n; ++j) {
    dot += g[j] * y[j];
    sg += g[j];
    absdot += std::fabs(g[j] * y[j]);
    abssg += std::fabs(g[j]);
    masked = masked && y[j] == -kInf;
  }
  for (size_t j = 0; j < n; ++j) {
    dx[j] = is_log ? (masked ? 0.0 : g[j] - std::exp(y[j]) * sg) : y[j] * (g[j] - dot);
    (*mag)[j] = is_log ? std::fabs(g[j]) + std::exp(y[j]) * abssg
                       : std::fabs(y[j]) * (std::fabs(g[j]) + absdot);
  }
  return dx;
}

// |got − want| <= atol + rtol·scale, scale = |want| unless given (NaN must meet NaN).
template <typename T>
void require_rows_close(const std::vector<T>& got, const std::vector<double>& want,
                        const std::string& what, const std::vector<double>* scale = nullptr) {
  // float32: exp and the products in float32 (~1e-7 relative), sums in double
  const double atol = std::is_same_v<T, float> ? 2e-7 : 1e-15,
               rtol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  REQUIRE(got.size() == want.size());
  int bad = 0;
  std::string first;
  for (size_t j = 0; j < got.size(); ++j) {
    const double a = got[j], b = want[j];
    const double sc = scale ? (*scale)[j] : std::fabs(b);
    const bool ok = (std::isnan(a) && std::isnan(b)) || a == b ||
                    std::fabs(a - b) <= atol + rtol * (std::isnan(sc) ? 0.0 : sc);
    if (!ok && bad++ < 5) first += fmt::format("  [{}] got {:.10g} want {:.10g}\n", j, a, b);
  }
  INFO(what << (std::is_same_v<T, float> ? " float32" : " float64") << "\n" << first);
  REQUIRE(bad == 0);
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <typename T>
std::vector<double> widen(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

template <typename T>
void check_rows() {
  std::mt19937 rng(3);
  std::normal_distribution<double> nd;
  for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 33, 64, 67, 130, 600}) {
    for (Kind kind : {Kind::Normal, Kind::Mixed, Kind::AllNegInf, Kind::NaNAndNegInf,
                      Kind::NaNAndFinite, Kind::AllNaN}) {
      if (kind == Kind::Mixed && n < 2) continue;
      const std::vector<T> x = cast<T>(make_row(kind, n, rng));
      std::vector<double> gd(n);
      for (double& v : gd) v = nd(rng);
      const std::vector<T> g = cast<T>(gd);
      for (bool is_log : {false, true}) {
        const std::string what =
            fmt::format("{} n={} kind={}", is_log ? "log_softmax" : "softmax", n, int(kind));
        const std::vector<double> want = ref_forward(widen(x), is_log);
        std::vector<T> y(n);
        const bool has_key = tg::cpu::softmax_row(y.data(), x.data(), n, is_log);
        REQUIRE(has_key == (kind != Kind::AllNegInf));
        require_rows_close(y, want, what + " forward");
        std::vector<T> inplace = x;  // y may be x
        tg::cpu::softmax_row(inplace.data(), inplace.data(), n, is_log);
        require_rows_close(inplace, want, what + " forward in place");
        // backward from the kernel's own output (what the tape saves)
        std::vector<double> mag;
        const std::vector<double> dwant = ref_backward(widen(g), widen(y), is_log, &mag);
        std::vector<T> dx(n);
        tg::cpu::softmax_backward_row(dx.data(), g.data(), y.data(), n, is_log);
        require_rows_close(dx, dwant, what + " backward", &mag);
        std::vector<T> dinplace = g;  // dx may be g
        tg::cpu::softmax_backward_row(dinplace.data(), dinplace.data(), y.data(), n, is_log);
        require_rows_close(dinplace, dwant, what + " backward in place", &mag);
        if (kind == Kind::AllNegInf)  // zero gradient, exactly
          for (T v : dx) REQUIRE(v == T(0));
      }
    }
  }
}

// (outer, n, inner): every (o, i) column of n elements is one row.
template <typename T>
void check_strided(int64_t outer, int64_t n, int64_t inner) {
  std::mt19937 rng(5);
  std::normal_distribution<double> nd;
  const int64_t total = outer * n * inner;
  std::vector<double> xd(total), gd(total);
  for (int64_t e = 0; e < total; ++e) xd[e] = 2 * nd(rng), gd[e] = nd(rng);
  // column (0, 0) fully -inf, column (0, 1) NaN, column (outer-1, inner-1) mixed
  for (int64_t j = 0; j < n; ++j) {
    xd[j * inner] = -kInf;
    if (inner > 1) xd[j * inner + 1] = j == 0 ? kNaN : -kInf;
    if (j % 2) xd[((outer - 1) * n + j) * inner + inner - 1] = -kInf;
  }
  const std::vector<T> x = cast<T>(xd), g = cast<T>(gd);
  for (bool is_log : {false, true}) {
    std::vector<T> y(total), dx(total);
    tg::cpu::softmax_forward(y.data(), x.data(), outer, n, inner, is_log);
    tg::cpu::softmax_backward(dx.data(), g.data(), y.data(), outer, n, inner, is_log);
    std::vector<double> want(total), dwant(total), mag(total);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<double> xr(n), gr(n), yr(n);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = (o * n + j) * inner + i;
          xr[j] = x[at], gr[j] = g[at], yr[j] = y[at];
        }
        std::vector<double> m;
        const std::vector<double> f = ref_forward(xr, is_log), b = ref_backward(gr, yr, is_log, &m);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = (o * n + j) * inner + i;
          want[at] = f[j], dwant[at] = b[j], mag[at] = m[j];
        }
      }
    const std::string what =
        fmt::format("{} ({}, {}, {})", is_log ? "log_softmax" : "softmax", outer, n, inner);
    require_rows_close(y, want, what + " forward");
    require_rows_close(dx, dwant, what + " backward", &mag);
  }
}

}  // namespace

TEST_CASE("cpu::softmax_row matches a raw loop on normal, mixed, -inf and NaN rows",
          "[softmax][cpu]") {
  check_rows<float>();
  check_rows<double>();
}

// Both row kernels, the build's own and the AVX-512 one where the CPU has it, against the raw
// loop; and against each other (the same exp, sums in another lane order).
TEST_CASE("cpu::softmax_row on AVX-512 and on the build's own batches", "[softmax][cpu]") {
  struct Restore {
    ~Restore() { tg::cpu::reset_simd_kernels(); }
  } restore;
  REQUIRE(tg::cpu::set_simd_kernels(false));
  REQUIRE(std::string(tg::cpu::simd_kernels()) != "avx512");
  check_rows<float>();
  check_rows<double>();
  std::mt19937 rng(9);
  std::vector<std::vector<float>> x, g, y0, dx0;
  for (int64_t n : {1, 15, 16, 17, 31, 64, 100, 256, 1000}) {
    x.push_back(cast<float>(make_row(Kind::Normal, n, rng)));
    x.push_back(cast<float>(make_row(Kind::Mixed, n, rng)));
  }
  for (const auto& r : x) {
    std::vector<double> gd = make_row(Kind::Normal, static_cast<int64_t>(r.size()), rng);
    g.push_back(cast<float>(gd));
    std::vector<float> y(r.size()), dx(r.size());
    tg::cpu::softmax_row(y.data(), r.data(), static_cast<int64_t>(r.size()));
    tg::cpu::softmax_backward_row(dx.data(), g.back().data(), y.data(),
                                  static_cast<int64_t>(r.size()));
    y0.push_back(y), dx0.push_back(dx);
  }
  if (!tg::cpu::set_simd_kernels(true)) {
    WARN("this CPU (or this build) has no AVX-512 rows: only the build's own were checked");
    return;
  }
  REQUIRE(std::string(tg::cpu::simd_kernels()) == "avx512");
  check_rows<float>();
  check_rows<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t n = static_cast<int64_t>(x[i].size());
    std::vector<float> y(n), dx(n);
    tg::cpu::softmax_row(y.data(), x[i].data(), n);
    tg::cpu::softmax_backward_row(dx.data(), g[i].data(), y.data(), n);
    require_rows_close(y, widen(y0[i]), fmt::format("avx512 against avx2 forward n={}", n));
    std::vector<double> mag;
    ref_backward(widen(g[i]), widen(y), false, &mag);
    require_rows_close(dx, widen(dx0[i]), fmt::format("avx512 against avx2 backward n={}", n),
                       &mag);
  }
}

TEST_CASE("cpu::softmax_forward/backward over (outer, n, inner) match per-column raw loops",
          "[softmax][cpu]") {
  for (auto [outer, n, inner] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 1},
                                 {2, 9, 3},
                                 {1, 33, 17},
                                 {4, 1, 20},
                                 {2, 70, 40}}) {
    check_strided<float>(outer, n, inner);
    check_strided<double>(outer, n, inner);
  }
}
