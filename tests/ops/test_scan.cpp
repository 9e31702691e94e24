// tests/ops/test_scan.cpp — prod, cumprod, cummax, cummin, logcumsumexp and std_mean
// (ops/scan.cpp): values by hand, zeros in the products' gradients, NaN and ties in the running
// extremes, infinities and large values in logcumsumexp, empty and 0-dim inputs, float64
// gradchecks, errors. PyTorch's values and gradients: test_parity.cpp (scan family).
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
  REQUIRE_ERROR(cumprod(zeros({2}, kInt64), 0), "cumprod: x (2) has dtype int64");
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
  const std::vector<double> w = logcumsumexp(tgt::vec({-kInf, -kInf, 2, kInf}), 0).to_vector<double>();
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
