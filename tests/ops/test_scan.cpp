// tests/ops/test_scan.cpp — prod, cumprod, cummax, cummin, logcumsumexp and std_mean
// (ops/reduce/scan.cpp): values by hand, zeros in the products' gradients, NaN and ties in the running
// extremes, infinities and large values in logcumsumexp, empty and 0-dim inputs, float64
// gradchecks, errors; int64 and bool products (tests/fixtures/reduce, from
// tools/make_reduce_fixtures.py). PyTorch's values and gradients: test_parity.cpp (scan family).
#include "fixture_case.hpp"
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace tg;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_CASE("prod and cumprod: values, gradients exact with zeros", "[scan]") {
  Tensor x = tgt::vec({2, 0, 3, 0.5}).requires_grad_();
  Tensor p = prod(x);
  REQUIRE(p.item<double>() == 0.0);
  p.backward();
  tgt::require_close(x.grad(), tgt::vec({0, 3, 0, 0}), 0, 0,
                     "d prod: only the zero's neighbours' product");
  Tensor y = tgt::vec({2, 3, 0, 4}).requires_grad_();
  Tensor c = cumprod(y, 0);
  tgt::require_close(c, tgt::vec({2, 6, 0, 0}), 0, 0, "cumprod");
  c.backward(tgt::vec({1, 1, 1, 1}));
  // d/dy0 = 1 + 3 + 0 + 0, d/dy1 = 2, d/dy2 = 6 + 6·4, d/dy3 = 0
  tgt::require_close(y.grad(), tgt::vec({4, 2, 30, 0}), 0, 0, "d cumprod with a zero");
  tgt::require_close(prod(tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}), 1, true),
                     tensor(std::vector<double>{6, 120}, {2, 1}), 0, 0, "prod dim keepdim");
  REQUIRE(prod(zeros({0}, kFloat64)).item<double>() == 1.0);     // the empty product
  REQUIRE(prod(full({}, 3.0, kFloat64)).item<double>() == 3.0);  // 0-dim
  REQUIRE_ERROR(prod(zeros({2, 3}, kFloat64), 2), "prod");
  REQUIRE_ERROR(logcumsumexp(zeros({2}, kInt64), 0), "logcumsumexp: x (2) has dtype int64");
}

TEST_CASE("cummax and cummin: ties take the later index, NaN stays", "[scan]") {
  Tensor x = tgt::vec({1, 3, 3, 2, kNaN, 5});
  auto [v, i] = cummax(x, 0);
  const std::vector<double> vv = v.to_vector<double>();
  REQUIRE(vv[0] == 1);
  REQUIRE(vv[3] == 3);
  REQUIRE(std::isnan(vv[4]));
  REQUIRE(std::isnan(vv[5]));
  REQUIRE(i.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 2, 4, 4});
  auto [mv, mi] = cummin(tgt::vec({4, 2, 2, 5, 1}), 0);
  tgt::require_close(mv, tgt::vec({4, 2, 2, 2, 1}), 0, 0, "cummin");
  REQUIRE(mi.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 2, 4});
  // the gradient goes to the chosen positions, summed
  Tensor y = tgt::vec({1, 3, 2, 2}).requires_grad_();
  cummax(y, 0).values.backward(tgt::vec({1, 10, 100, 1000}));
  tgt::require_close(y.grad(), tgt::vec({1, 1110, 0, 0}), 0, 0, "d cummax");
}

TEST_CASE("logcumsumexp: stable at large values, infinities", "[scan]") {
  Tensor y = logcumsumexp(tgt::vec({1000, 1000, -kInf, 0}), 0);
  const std::vector<double> v = y.to_vector<double>();
  REQUIRE(v[0] == 1000);
  REQUIRE(std::abs(v[1] - (1000 + std::log(2.0))) < 1e-12);
  REQUIRE(v[2] == v[1]);
  REQUIRE(v[3] == v[1]);  // e^0 is nothing beside e^1000
  const std::vector<double> w =
      logcumsumexp(tgt::vec({-kInf, -kInf, 2, kInf}), 0).to_vector<double>();
  REQUIRE(w[0] == -kInf);
  REQUIRE(w[1] == -kInf);
  REQUIRE(w[2] == 2);
  REQUIRE(w[3] == kInf);
  Tensor x = tgt::vec({-kInf, 0.5, 0.5}).requires_grad_();
  logcumsumexp(x, 0).backward(tgt::vec({1, 1, 1}));
  const std::vector<double> g = x.grad().to_vector<double>();
  REQUIRE(g[0] == 0);                     // e^-inf takes no part
  REQUIRE(std::abs(g[1] - 1.5) < 1e-15);  // 1 + 1/2
  REQUIRE(std::abs(g[2] - 0.5) < 1e-15);
}

TEST_CASE("scans: float64 gradchecks along every dim, std_mean", "[scan]") {
  manual_seed(160);
  Tensor x = tgt::leaf({3, 4, 2});
  for (int64_t d : {0, 1, -1}) {
    const std::string s = std::to_string(d);
    tgt::check_grad([d](const std::vector<Tensor>& in) { return prod(in[0], d); }, {x},
                    "prod dim " + s);
    tgt::check_grad([d](const std::vector<Tensor>& in) { return cumprod(in[0], d); }, {x},
                    "cumprod dim " + s);
    tgt::check_grad([d](const std::vector<Tensor>& in) { return cummax(in[0], d).values; }, {x},
                    "cummax dim " + s);
    tgt::check_grad([d](const std::vector<Tensor>& in) { return cummin(in[0], d).values; }, {x},
                    "cummin dim " + s);
    tgt::check_grad([d](const std::vector<Tensor>& in) { return logcumsumexp(in[0], d); }, {x},
                    "logcumsumexp dim " + s);
  }
  tgt::check_grad([](const std::vector<Tensor>& in) { return prod(in[0]); }, {tgt::leaf({2, 3})},
                  "prod all");
  auto [s, m] = std_mean(x, {1}, true);
  tgt::require_close(s, tg::std(x, {1}, true), 0, 0, "std_mean std");
  tgt::require_close(m, mean(x, {1}, true), 0, 0, "std_mean mean");
}

// Special values on long lines: every length 1..40 and 300, with 0, -0, ±inf, NaN and
// subnormals scattered along them, against references computed another way (each prefix from
// scratch: products in double as the kernel's contract says, so subnormal products round alike;
// log-sum-exp in long double with its own max shift), along the last dim and along dim 0
// (strided lines).
TEST_CASE("scans at special values on long lines, along both dims", "[scan][special]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan(""),
               sub = std::numeric_limits<double>::denorm_min() * 7;
  const double specials[] = {0.0, -0.0, inf, -inf, nan, sub, -sub, 1.5, -0.5, 2.0};
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 40; ++n) lengths.push_back(n);
  lengths.push_back(300);
  auto same = [](double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b) || a == 0 || b == 0) return a == b;
    return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
  };
  for (int64_t n : lengths) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t)  // mostly ordinary values, a special every few positions
      v[static_cast<size_t>(t)] = t % 5 == 3 ? specials[(t * 7 + n) % 10] : 0.9 + 0.01 * (t % 13);
    for (int dim : {1, 0}) {
      // (2, n) with the line in row 1 (dim 1), or (n, 2) with it in column 1 (dim 0)
      std::vector<double> data(static_cast<size_t>(2 * n), 1.0);
      for (int64_t t = 0; t < n; ++t)
        data[static_cast<size_t>(dim == 1 ? n + t : 2 * t + 1)] = v[static_cast<size_t>(t)];
      const Tensor x = tensor(data, dim == 1 ? Shape{2, n} : Shape{n, 2});
      auto line = [&](const Tensor& y) {
        std::vector<double> all = y.to_vector<double>(), out;
        for (int64_t t = 0; t < n; ++t)
          out.push_back(all[static_cast<size_t>(dim == 1 ? n + t : 2 * t + 1)]);
        return out;
      };
      const std::vector<double> cp = line(cumprod(x, dim)), lc = line(logcumsumexp(x, dim));
      const std::vector<double> cx = line(cummax(x, dim).values), cn = line(cummin(x, dim).values);
      for (int64_t t = 0; t < n; ++t) {
        double p = 1;  // the kernel's contract: products rounded in double, step by step
        long double m = -INFINITY;
        bool seen_nan = false;
        double mx = v[0], mn = v[0];
        for (int64_t j = 0; j <= t; ++j) {
          const double e = v[static_cast<size_t>(j)];
          p *= e;
          if (!std::isnan(e)) m = std::max<long double>(m, e);
          seen_nan = seen_nan || std::isnan(e);
          if (j > 0 && !std::isnan(mx)) mx = std::isnan(e) ? e : std::max(mx, e);
          if (j > 0 && !std::isnan(mn)) mn = std::isnan(e) ? e : std::min(mn, e);
        }
        long double s = 0;
        for (int64_t j = 0; j <= t; ++j)
          s += std::isinf(m) ? (v[static_cast<size_t>(j)] == m ? 1.0L : 0.0L)
                             : std::exp(static_cast<long double>(v[static_cast<size_t>(j)]) - m);
        const double lse = seen_nan        ? nan
                           : std::isinf(m) ? static_cast<double>(m)
                                           : static_cast<double>(m + std::log(s));
        INFO("n " << n << " dim " << dim << " position " << t);
        CHECK(same(cp[static_cast<size_t>(t)], p));
        CHECK(same(lc[static_cast<size_t>(t)], lse));
        CHECK(same(cx[static_cast<size_t>(t)], mx));
        CHECK(same(cn[static_cast<size_t>(t)], mn));
      }
    }
  }
}

TEST_CASE("prod and cumprod of int64 and bool give int64, wrapping as PyTorch", "[scan]") {
  using V = std::vector<Tensor>;
  tgt::require_fixture_case("reduce/prod_bool_dim1", {"x"},
                            [](const V& in) { return prod(in[0], 1); });
  tgt::require_fixture_case("reduce/prod_bool_all", {"x"}, [](const V& in) { return prod(in[0]); });
  tgt::require_fixture_case("reduce/prod_int64_dim0_keepdim", {"x"},
                            [](const V& in) { return prod(in[0], 0, true); });
  tgt::require_fixture_case("reduce/prod_int64_wraps", {"x"},
                            [](const V& in) { return prod(in[0], 1); });
  tgt::require_fixture_case("reduce/cumprod_int64_wraps", {"x"},
                            [](const V& in) { return cumprod(in[0], 1); });
  tgt::require_fixture_case("reduce/cumprod_bool", {"x"},
                            [](const V& in) { return cumprod(in[0], 0); });
  // empty products are 1; 0-dim inputs are one element
  CHECK(prod(zeros({2, 0}, kInt64), 1).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
  CHECK(prod(zeros({0}, kBool)).item<int64_t>() == 1);
  CHECK(prod(scalar_tensor(5, kInt64)).item<int64_t>() == 5);
  CHECK(cumprod(zeros({0, 3}, kInt64), 0).shape() == Shape{0, 3});
  REQUIRE_ERROR(cummax(zeros({2}, kInt64), 0),
                "cummax: x (2) has dtype int64, expected float32 or float64");
}
