// tests/ops/test_torch_corners.cpp — PyTorch 1.13's answers in the corner cases where tapegrad
// used to differ without need: pow's exponent gradient at base 0, clamp with min > max or a NaN
// bound (clamp and clamp_), maximum/minimum on int64 and bool, max over bool, logical_not on
// numbers, and int64 targets refusing values int64 cannot hold (fill_, full, masked_fill_).
// Every expected value below is what torch 1.13 printed for the same call.
#include <catch2/catch.hpp>

#include "ops/ops.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using tg::Tensor;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> f64(const Tensor& t) {
  const Tensor c = t.to(tg::kFloat64).contiguous();
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}
// Equal element by element, NaN matching NaN.
void require_same(const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("[" << i << "] got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      REQUIRE(std::isnan(got[i]));
    else
      REQUIRE(got[i] == want[i]);
  }
}
// x repeated to n elements (the vector kernels' body and tail both see the values).
std::vector<double> rep(const std::vector<double>& x, size_t n) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(x[i % x.size()]);
  return out;
}
}  // namespace

TEST_CASE("pow(a, b): the exponent's gradient is 0 at base 0 for b >= 0, as PyTorch", "[torch]") {
  // torch 1.13: a = [0, 0, 0, -0, 1, -2], b = [0, 2, -1, 0.5, 3, 2]
  Tensor a = tg::tensor(std::vector<double>{0, 0, 0, -0.0, 1, -2}).requires_grad_();
  Tensor b = tg::tensor(std::vector<double>{0, 2, -1, 0.5, 3, 2}).requires_grad_();
  Tensor y = tg::pow(a, b);
  y.backward(tg::ones_like(y));
  require_same(f64(y), {1, 0, kInf, 0, 1, 4}, "pow");
  require_same(f64(a.grad()), {0, 0, -kInf, kInf, 3, -4}, "d/da");
  require_same(f64(b.grad()), {0, 0, -kInf, 0, 0, kNaN}, "d/db");
}

TEST_CASE("clamp with min > max gives max everywhere and no gradient, as PyTorch", "[torch]") {
  for (size_t n : {4, 9, 67}) {
    Tensor x = tg::tensor(rep({1, 5, -3, kNaN}, n)).requires_grad_();
    Tensor y = tg::clamp(x, 3, 1);
    y.backward(tg::ones_like(y));
    require_same(f64(y), rep({1, 1, 1, kNaN}, n), "clamp(x, 3, 1)");
    require_same(f64(x.grad()), rep({0}, n), "its gradient");
  }
  Tensor z = tg::tensor(std::vector<double>{1, 5, -3, 2});
  z.clamp_(3.0, 1.0);
  require_same(f64(z), {1, 1, 1, 1}, "clamp_(3, 1)");
}

TEST_CASE("clamp with a NaN bound: NaN when two-sided, x when one-sided, as PyTorch", "[torch]") {
  const std::vector<double> base = {1, 5, -3, kNaN, kInf, -kInf, 0};
  for (size_t n : {3, 8, 67}) {
    const std::vector<double> xv = rep(base, n);
    for (auto [lo, hi] : {std::pair<double, double>{kNaN, 1}, {0, kNaN}, {kNaN, kNaN}}) {
      Tensor x = tg::tensor(xv).requires_grad_();
      Tensor y = tg::clamp(x, lo, hi);
      y.backward(tg::ones_like(y));
      require_same(f64(y), rep({kNaN}, n), "clamp with a NaN bound");
      require_same(f64(x.grad()), rep({0}, n), "its gradient");
      Tensor z = tg::tensor(xv);
      z.clamp_(lo, hi);
      require_same(f64(z), rep({kNaN}, n), "clamp_ with a NaN bound");
    }
    Tensor x = tg::tensor(xv).requires_grad_();
    Tensor y = tg::clamp_min(x, kNaN) + tg::clamp_max(x, kNaN);
    y.backward(tg::ones_like(y));
    require_same(f64(y), f64(tg::tensor(xv) * 2.0), "clamp_min / clamp_max with NaN");
    require_same(f64(x.grad()), rep({0}, n), "their gradient");
    Tensor z = tg::tensor(xv), w = tg::tensor(xv);
    z.clamp_(kNaN, std::nullopt);
    w.clamp_(std::nullopt, kNaN);
    require_same(f64(z), xv, "clamp_(min=NaN)");
    require_same(f64(w), xv, "clamp_(max=NaN)");
  }
}

TEST_CASE("maximum and minimum: NaN gives both operands the gradient, as PyTorch", "[torch]") {
  // torch 1.13: a = [1, nan, 2, nan, 3], b = [nan, 1, 2, nan, 1]
  Tensor a = tg::tensor(std::vector<double>{1, kNaN, 2, kNaN, 3}).requires_grad_();
  Tensor b = tg::tensor(std::vector<double>{kNaN, 1, 2, kNaN, 1}).requires_grad_();
  tg::maximum(a, b).sum().backward();
  require_same(f64(a.grad()), {1, 1, 0.5, 1, 1}, "maximum d/da");
  require_same(f64(b.grad()), {1, 1, 0.5, 1, 0}, "maximum d/db");
  Tensor c = tg::tensor(std::vector<double>{1, kNaN, 2, kNaN, 3}).requires_grad_();
  Tensor d = tg::tensor(std::vector<double>{kNaN, 1, 2, kNaN, 1}).requires_grad_();
  tg::minimum(c, d).sum().backward();
  require_same(f64(c.grad()), {1, 1, 0.5, 1, 0}, "minimum d/da");
  require_same(f64(d.grad()), {1, 1, 0.5, 1, 1}, "minimum d/db");
}

TEST_CASE("maximum/minimum on int64 and bool, max over bool, as PyTorch", "[torch]") {
  Tensor i = tg::tensor(std::vector<int64_t>{1, 5, -3}),
         j = tg::tensor(std::vector<int64_t>{2, 2, 2});
  CHECK(tg::maximum(i, j).dtype() == tg::kInt64);
  require_same(f64(tg::maximum(i, j)), {2, 5, 2}, "maximum int64");
  require_same(f64(tg::minimum(i, j)), {1, 2, -3}, "minimum int64");
  Tensor p = tg::tensor(std::vector<bool>{true, false, true}),
         q = tg::tensor(std::vector<bool>{false, false, true});
  CHECK(tg::maximum(p, q).dtype() == tg::kBool);
  require_same(f64(tg::maximum(p, q)), {1, 0, 1}, "maximum bool");
  require_same(f64(tg::minimum(p, q)), {0, 0, 1}, "minimum bool");
  Tensor m = tg::max(p);
  CHECK(m.dtype() == tg::kBool);
  CHECK(m.item<double>() == 1);
  Tensor rows = tg::max(tg::tensor(std::vector<bool>{true, false, false, false}, {2, 2}), {1});
  CHECK(rows.dtype() == tg::kBool);
  require_same(f64(rows), {1, 0}, "max(dim=1) over bool");
}

TEST_CASE("logical_not on numbers is x == 0, bool, as PyTorch", "[torch]") {
  Tensor y = tg::logical_not(tg::tensor(std::vector<double>{0, -0.0, 1, kNaN, kInf}));
  CHECK(y.dtype() == tg::kBool);
  require_same(f64(y), {1, 1, 0, 0, 0}, "logical_not float64");
  Tensor z = tg::logical_not(tg::tensor(std::vector<int64_t>{0, 3}));
  CHECK(z.dtype() == tg::kBool);
  require_same(f64(z), {1, 0}, "logical_not int64");
}

TEST_CASE("an int64 target refuses a value int64 cannot hold, as PyTorch", "[torch]") {
  // torch 1.13: "value cannot be converted to type int64_t without overflow"
  for (double v : {kNaN, 1e30, kInf, -kInf, 9.3e18, -9.3e18, 9223372036854775808.0}) {
    INFO("value " << v);
    Tensor x = tg::zeros({3}, tg::kInt64);
    REQUIRE_THROWS_WITH(x.fill_(v), Catch::Contains("fill_: value") &&
                                        Catch::Contains("cannot be converted to type int64"));
    require_same(f64(x), {0, 0, 0}, "x is left as it was");
    REQUIRE_THROWS_WITH(tg::full({2}, v, tg::kInt64),
                        Catch::Contains("full: value") && Catch::Contains("without overflow"));
    Tensor mask = tg::tensor(std::vector<bool>{true, false, true});
    REQUIRE_THROWS_WITH(x.masked_fill_(mask, v), Catch::Contains("masked_fill_: value") &&
                                                     Catch::Contains("without overflow"));
    REQUIRE_THROWS_WITH(tg::masked_fill(x, mask, v), Catch::Contains("without overflow"));
    // add_/mul_ with a non-integral number make a float result, which an int64 target refuses
    // (PyTorch: "result type Float can't be cast to the desired output type Long")
    REQUIRE_THROWS_WITH(x.add_(v), Catch::Contains("add_: result type float32 can't be cast to "
                                                   "self (3) of dtype int64"));
    REQUIRE_THROWS_WITH(x.mul_(v), Catch::Contains("mul_: result type float32 can't be cast"));
    require_same(f64(x), {0, 0, 0}, "x is still as it was");
  }
  // In range it truncates, as PyTorch: 2.5 -> 2, and -2^63 is held.
  Tensor x = tg::zeros({2}, tg::kInt64);
  x.fill_(2.5);
  CHECK(x.data<int64_t>()[0] == 2);
  x.fill_(-9223372036854775808.0);
  CHECK(x.data<int64_t>()[1] == std::numeric_limits<int64_t>::min());
  // bool takes any value: NaN and 1e30 are true
  Tensor b = tg::zeros({2}, tg::kBool);
  b.fill_(kNaN);
  CHECK(b.data<bool>()[0]);
}
