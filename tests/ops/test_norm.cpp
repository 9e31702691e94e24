// tests/ops/test_norm.cpp — layer_norm and rms_norm: hand-computed values, gradchecks over one and
// two trailing dims with and without weight/bias, float32 agreement, special values and errors.
#include "helpers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tg;

TEST_CASE("layer_norm matches hand-computed values", "[norm]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4, 2, 2, 2, 2}, {2, 4});
  // Row 0: mean 2.5, biased var 1.25. Row 1: constant, normalises to 0.
  const double rs = 1 / std::sqrt(1.25 + 1e-5);
  tgt::require_close(layer_norm(x, {4}), {-1.5 * rs, -0.5 * rs, 0.5 * rs, 1.5 * rs, 0, 0, 0, 0},
                     1e-14, 1e-13);
  Tensor w = tensor(std::vector<double>{1, 2, 3, 4}), b = tensor(std::vector<double>{0, 1, 0, -1});
  tgt::require_close(layer_norm(x, {4}, w, b, 0.5),
                     {-1.5 / std::sqrt(1.75), 2 * -0.5 / std::sqrt(1.75) + 1,
                      3 * 0.5 / std::sqrt(1.75), 4 * 1.5 / std::sqrt(1.75) - 1, 0, 1, 0, -1},
                     1e-14, 1e-13);
  // eps = 0 on a constant row is 0/0, like PyTorch.
  REQUIRE(std::isnan(layer_norm(x, {4}, Tensor(), Tensor(), 0.0).to_vector<double>()[4]));
  // Over both dims: one row of 8 values, mean 2.25.
  Tensor y = layer_norm(x, {2, 4}, Tensor(), Tensor(), 0.0);
  std::vector<double> xv = x.to_vector<double>();
  double m = 2.25, v = 0;
  for (double e : xv) v += (e - m) * (e - m) / 8;
  std::vector<double> want;
  for (double e : xv) want.push_back((e - m) / std::sqrt(v));
  tgt::require_close(y, want, 1e-14, 1e-13);
}

TEST_CASE("layer_norm gradcheck over 1 and 2 trailing dims, with and without weight/bias",
          "[norm]") {
  manual_seed(31);
  struct Case {
    Shape x, ns;
  };
  for (const Case& c : {Case{{3, 5}, {5}}, Case{{2, 3, 4}, {4}}, Case{{2, 3, 4}, {3, 4}},
                        Case{{4, 1}, {1}}, Case{{6}, {6}}}) {
    const std::string what = "layer_norm x " + shape_str(c.x) + " over " + shape_str(c.ns);
    Tensor x = tgt::leaf(c.x, 1.5), w = tgt::leaf(c.ns), b = tgt::leaf(c.ns);
    Shape ns = c.ns;
    tgt::check_grad(
        [ns](const std::vector<Tensor>& in) { return layer_norm(in[0], ns, in[1], in[2]); },
        {x, w, b}, what + " with weight and bias");
    tgt::check_grad([ns](const std::vector<Tensor>& in) { return layer_norm(in[0], ns); }, {x},
                    what);
    tgt::check_grad([ns](const std::vector<Tensor>& in) { return layer_norm(in[0], ns, in[1]); },
                    {x, w}, what + " weight only");
    tgt::check_grad(
        [ns](const std::vector<Tensor>& in) {
          return layer_norm(in[0], ns, Tensor(), in[1], 1e-3);
        },
        {x, b}, what + " bias only");
  }
}

TEST_CASE("layer_norm gradients for weight and bias alone - float32 agrees", "[norm]") {
  manual_seed(32);
  Tensor x = randn({5, 8}, kFloat64);
  Tensor w = tgt::leaf({8}), b = tgt::leaf({8});
  layer_norm(x, {8}, w, b).backward(ones({5, 8}, kFloat64));
  // dbias = Σ_N dout = 5; dweight = Σ_N norm, and each column of norm... sums over rows.
  tgt::require_close(b.grad(), std::vector<double>(8, 5.0), 1e-14, 0);
  Tensor norm = layer_norm(x, {8});
  std::vector<double> nv = norm.to_vector<double>(), dw(8, 0.0);
  for (int r = 0; r < 5; ++r)
    for (int i = 0; i < 8; ++i) dw[i] += nv[r * 8 + i];
  tgt::require_close(w.grad(), dw, 1e-13, 1e-12);

  Tensor x32 = x.to(kFloat32).requires_grad_();
  Tensor w32 = w.detach().to(kFloat32).requires_grad_(), b32 = b.detach().to(kFloat32);
  Tensor y32 = layer_norm(x32, {8}, w32, b32);
  tgt::require_close(y32, layer_norm(x, {8}, w.detach(), b.detach()), 1e-5, 1e-5, "layer_norm f32");
  y32.backward(ones({5, 8}));
  REQUIRE(x32.grad().dtype() == kFloat32);
  REQUIRE(w32.grad().shape() == Shape{8});
}

TEST_CASE("layer_norm errors name normalized_shape, weight and input shapes", "[norm]") {
  Tensor x = zeros({2, 3, 4});
  REQUIRE_ERROR(layer_norm(x, {3}),
                "layer_norm: normalized_shape (3) must match the trailing dims of input (2,3,4)");
  REQUIRE_ERROR(layer_norm(x, {1, 2, 3, 4}),
                "normalized_shape (1,2,3,4) must match the trailing dims of input (2,3,4)");
  REQUIRE_ERROR(layer_norm(x, {}), "layer_norm: normalized_shape is empty");
  REQUIRE_ERROR(layer_norm(x, {4}, zeros({3})),
                "layer_norm: weight (3) must have normalized_shape (4) (input (2,3,4))");
  REQUIRE_ERROR(layer_norm(x, {3, 4}, Tensor(), zeros({4})),
                "layer_norm: bias (4) must have normalized_shape (3,4)");
  REQUIRE_ERROR(layer_norm(x, {4}, zeros({4}, kFloat64)),
                "layer_norm: input (2,3,4) is float32 but weight (4) is float64");
  REQUIRE_ERROR(layer_norm(zeros({2, 4}, kInt64), {4}), "layer_norm: input (2,4) has dtype int64");
  REQUIRE_ERROR(layer_norm(x, {4}, Tensor(), Tensor(), -1), "layer_norm: eps must be >= 0, got -1");
}

namespace {
// layer_norm over the last dim with weight and bias (rms: rms_norm with weight, the mean fixed
// at 0 and no bias), forward and backward, in long double by the textbook formulas: the reference
// for the special-value test below.
struct LnRef {
  std::vector<double> y, dx, dw, db, rs;  // rs: each row's 1/sqrt(var + eps)
};
LnRef ln_reference(const std::vector<double>& x, const std::vector<double>& w,
                   const std::vector<double>& b, const std::vector<double>& g, int64_t N, int64_t D,
                   double eps, bool rms = false) {
  LnRef r{std::vector<double>(N * D), std::vector<double>(N * D), std::vector<double>(D, 0.0),
          std::vector<double>(D, 0.0), std::vector<double>(N)};
  std::vector<long double> dw(D, 0.0L), db(D, 0.0L);
  for (int64_t i = 0; i < N; ++i) {
    const double* xr = x.data() + i * D;
    const double* gr = g.data() + i * D;
    long double m = 0, v = 0, sa = 0, sc = 0;
    for (int64_t j = 0; j < D && !rms; ++j) m += xr[j];
    m /= D;
    for (int64_t j = 0; j < D; ++j) v += (xr[j] - m) * (xr[j] - m);
    const long double rs = 1.0L / std::sqrt(v / D + eps);
    r.rs[i] = static_cast<double>(rs);
    for (int64_t j = 0; j < D; ++j) {
      const long double nj = (xr[j] - m) * rs, dn = gr[j] * (long double)w[j];
      r.y[i * D + j] = static_cast<double>(nj * w[j] + (rms ? 0.0 : b[j]));
      sa += dn;
      sc += dn * nj;
      dw[j] += gr[j] * nj;
      db[j] += gr[j];
    }
    for (int64_t j = 0; j < D; ++j) {
      const long double nj = (xr[j] - m) * rs, dn = gr[j] * (long double)w[j];
      r.dx[i * D + j] = static_cast<double>(rs * (dn - (rms ? 0.0L : sa / D) - nj * sc / D));
    }
  }
  for (int64_t j = 0; j < D; ++j) {
    r.dw[j] = static_cast<double>(dw[j]);
    r.db[j] = static_cast<double>(db[j]);
  }
  return r;
}

// "" when got matches want: the same NaNs, the same infinities, and finite values within
// tol·scale[i / per] (scale: the size of the terms each value is made of, one per `per` values).
std::string ln_mismatch(const std::vector<double>& got, const std::vector<double>& want, double tol,
                        const std::vector<double>& scale, size_t per, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    const double a = got[i], e = want[i];
    const bool ok = std::isnan(e)   ? std::isnan(a)
                    : std::isinf(e) ? a == e
                                    : std::isfinite(a) && std::fabs(a - e) <= tol * scale[i / per];
    if (!ok) return fmt::format("{}[{}]: {} (want {})", what, i, a, e);
  }
  return "";
}
}  // namespace

// The row kernels (ops/norm/cpu/norm.cpp) run four double accumulators over xsimd batches, a single-
// batch loop and a scalar tail; lengths 1..67 reach each of them with every tail length at 4 and 8
// lanes. One special value sits at the start, middle or end of row 1 of 3: a NaN or ±inf makes its
// row NaN (and dw NaN), while ±0 and subnormals are ordinary values.
TEMPLATE_TEST_CASE(
    "layer_norm and rms_norm forward and backward at special values, any length and position",
    "[norm][special]", float, double) {
  using T = TestType;
  const DType dt = std::is_same_v<T, float> ? kFloat32 : kFloat64;
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  const double eps = 1e-5;
  const std::vector<double> specials = {
      0.0,
      -0.0,
      std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN(),
      static_cast<double>(std::numeric_limits<T>::denorm_min()),
      -static_cast<double>(std::numeric_limits<T>::denorm_min()) * 3};
  manual_seed(41);
  int64_t cases = 0, nan_rows = 0;
  std::string fail;
  for (bool rms : {false, true})
    for (int64_t D = 1; D <= 67 && fail.empty(); ++D) {
      const int64_t N = 3;
      // Values exactly representable in T, so the reference sees what the kernel sees.
      auto draw = [&](Shape s, double scale, double shift) {
        return (randn(s, kFloat64) * scale + shift).to(dt).to(kFloat64).to_vector<double>();
      };
      const std::vector<double> x0 = draw({N, D}, 2.0, 3.0), w = draw({D}, 0.5, 1.0),
                                b = draw({D}, 1.0, 0.0), g = draw({N, D}, 1.0, 0.0);
      for (double v : specials)
        for (int64_t pos : {int64_t{0}, D / 2, D - 1}) {
          std::vector<double> xv = x0;
          xv[D + pos] = v;
          const LnRef want = ln_reference(xv, w, b, g, N, D, eps, rms);
          Tensor x = tensor(xv, {N, D}).to(dt).detach().requires_grad_();
          Tensor wt = tensor(w, {D}).to(dt).detach().requires_grad_();
          Tensor bt = tensor(b, {D}).to(dt).detach().requires_grad_();
          Tensor y = rms ? rms_norm(x, {D}, wt, eps) : layer_norm(x, {D}, wt, bt, eps);
          y.backward(tensor(g, {N, D}).to(dt));
          // Scales: y is norm·w + b; a row's dx is rs·(terms of size |w·g|, rs up to 1/sqrt(eps) on
          // a constant row); dw and db sum N rows of g·norm and g.
          double gw = 1;
          for (int64_t j = 0; j < N * D; ++j) gw = std::max(gw, std::fabs(g[j] * w[j % D]));
          std::vector<double> dx_scale(N);
          for (int64_t i = 0; i < N; ++i) dx_scale[i] = std::max(1.0, want.rs[i]) * gw;
          const std::vector<double> ten = {10.0}, sums = {10.0 * N};
          const size_t all = static_cast<size_t>(N * D);
          const std::string what =
              fmt::format("{} D {} x[1][{}] = {}: ", rms ? "rms_norm" : "layer_norm", D, pos, v);
          for (const std::string& m :
               {ln_mismatch(y.to_vector<double>(), want.y, tol, ten, all, what + "y"),
                ln_mismatch(x.grad().to_vector<double>(), want.dx, tol, dx_scale,
                            static_cast<size_t>(D), what + "dx"),
                ln_mismatch(wt.grad().to_vector<double>(), want.dw, tol, sums, all, what + "dw"),
                rms ? std::string()
                    : ln_mismatch(bt.grad().to_vector<double>(), want.db, tol, sums, all,
                                  what + "db")})
            if (fail.empty() && !m.empty()) fail = m;
          ++cases;
          nan_rows += std::isnan(want.y[D + pos]);
        }
    }
  INFO(fail);
  CHECK(fail.empty());
  CHECK(cases == 2 * 67 * 7 * 3);
  CHECK(nan_rows == 2 * 67 * 3 * 3);  // every NaN and ±inf case, and only those
}

// RMSNorm: hand values, gradchecks with and without weight, the eps default and errors.
TEST_CASE("rms_norm matches hand-computed values and the dtype's epsilon by default", "[norm]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4, 0, 0, 0, 0}, {2, 4});
  const double rs = 1 / std::sqrt(7.5 + 1e-5);  // mean(x²) = 30/4
  tgt::require_close(rms_norm(x, {4}, Tensor(), 1e-5), {rs, 2 * rs, 3 * rs, 4 * rs, 0, 0, 0, 0},
                     1e-14);
  Tensor w = tensor(std::vector<double>{1, -1, 0.5, 2}, {4});
  const double rs0 = 1 / std::sqrt(7.5 + 2.220446049250313e-16);
  tgt::require_close(rms_norm(x, {4}, w), {rs0, -2 * rs0, 1.5 * rs0, 8 * rs0, 0, 0, 0, 0}, 1e-14);
  // float32's default eps is 2^-23: a zero row gives 0, not NaN
  std::vector<float> zf = rms_norm(zeros({2, 3}), {3}).to_vector<float>();
  for (float v : zf) CHECK(v == 0.0f);
  // over two trailing dims: one statistic over all 6 elements
  Tensor y =
      rms_norm(tensor(std::vector<double>{1, 1, 1, 1, 1, 1}, {1, 2, 3}), {2, 3}, Tensor(), 0.0);
  tgt::require_close(y, {1, 1, 1, 1, 1, 1}, 1e-15);
}

TEST_CASE("rms_norm gradcheck over 1 and 2 trailing dims, with and without weight", "[norm]") {
  manual_seed(5);
  for (const Shape& ns : {Shape{5}, Shape{2, 3}}) {
    Shape xs = {3};
    xs.insert(xs.end(), ns.begin(), ns.end());
    Tensor x = randn(xs, kFloat64).requires_grad_();
    Tensor w = randn(ns, kFloat64).requires_grad_();
    const std::string what = "rms_norm over " + shape_str(ns);
    tgt::check_grad(
        [ns](const std::vector<Tensor>& in) { return rms_norm(in[0], ns, in[1], 1e-3); }, {x, w},
        what + " with weight");
    tgt::check_grad([ns](const std::vector<Tensor>& in) { return rms_norm(in[0], ns); }, {x},
                    what + " without weight");
  }
}

TEST_CASE("rms_norm errors name the op, normalized_shape, weight and input shapes", "[norm]") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH(rms_norm(x, {4}),
                    "rms_norm: normalized_shape (4) must match the trailing dims of input (2,3)");
  CHECK_THROWS_WITH(rms_norm(x, {3}, zeros({2})),
                    "rms_norm: weight (2) must have normalized_shape (3) (input (2,3))");
  CHECK_THROWS_WITH(rms_norm(x, {3}, Tensor(), -1.0),
                    "rms_norm: eps must be >= 0, got -1 (input (2,3))");
}
