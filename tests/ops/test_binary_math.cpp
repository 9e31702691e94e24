// tests/ops/test_binary_math.cpp — fmod, remainder, copysign, lerp, logaddexp, isclose and the
// logical ops (ops/binary/math.cpp) at their edge cases: signs of the results, -0, infinities,
// NaN, ties, broadcasting; float64 gradchecks; errors. Values and gradients against PyTorch are
// in test_parity.cpp (binary_math family).
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace tg;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
std::vector<bool> bools(const Tensor& x) {
  std::vector<bool> out;
  for (int64_t i = 0; i < x.numel(); ++i) out.push_back(x.data<bool>()[i]);
  return out;
}
}  // namespace

TEST_CASE("fmod and remainder: the dividend's sign and the divisor's", "[binary_math]") {
  Tensor a = tgt::vec({5.5, -5.5, 5.5, -5.5, 3.0, -0.0}), b = tgt::vec({2, 2, -2, -2, 1.5, 2});
  tgt::require_close(fmod(a, b), tgt::vec({1.5, -1.5, 1.5, -1.5, 0, -0.0}), 0, 0, "fmod");
  tgt::require_close(remainder(a, b), tgt::vec({1.5, 0.5, -0.5, -1.5, 0, 0}), 0, 0, "remainder");
  tgt::require_close(fmod(a, 2.0), tgt::vec({1.5, -1.5, 1.5, -1.5, 1, -0.0}), 0, 0, "fmod scalar");
  tgt::require_close(remainder(a, -2.0), tgt::vec({-0.5, -1.5, -0.5, -1.5, -1, 0}), 0, 0,
                     "remainder scalar");
  REQUIRE(std::signbit(fmod(a, b).data<double>()[5]));  // -0 keeps its sign
  // x mod 0 is NaN for both
  REQUIRE(std::isnan(fmod(tgt::vec({1}), tgt::vec({0})).item<double>()));
  REQUIRE(std::isnan(remainder(tgt::vec({1}), tgt::vec({0})).item<double>()));
}

TEST_CASE("copysign reads the sign bit: -0 is negative", "[binary_math]") {
  Tensor a = tgt::vec({1, -2, 3, -4, 0, 5}), b = tgt::vec({-1, 1, -0.0, 0.0, -3, kInf});
  Tensor y = copysign(a, b);
  tgt::require_close(y, tgt::vec({-1, 2, -3, 4, -0.0, 5}), 0, 0, "copysign");
  REQUIRE(std::signbit(y.data<double>()[4]));
  tgt::require_close(copysign(a, -1.0), tgt::vec({-1, -2, -3, -4, -0.0, -5}), 0, 0, "copysign scalar");
  // the gradient: sign(a)·sign(b) to a, 0 to b (and 0 at a = 0)
  Tensor al = a.clone().requires_grad_(), bl = b.clone().requires_grad_();
  std::vector<Tensor> g = tg::grad({copysign(al, bl).sum()}, {al, bl});
  tgt::require_close(g[0], tgt::vec({-1, -1, -1, -1, 0, 1}), 0, 0, "d/da");
  tgt::require_close(g[1], zeros({6}, kFloat64), 0, 0, "d/db");
}

TEST_CASE("lerp: exact at both ends, PyTorch's two-sided formula", "[binary_math]") {
  Tensor a = tgt::vec({1e16, -3, 2}), e = tgt::vec({1, 5, 2});
  tgt::require_close(lerp(a, e, 1.0), e, 0, 0, "weight 1 gives end exactly");
  tgt::require_close(lerp(a, e, 0.0), a, 0, 0, "weight 0 gives input exactly");
  tgt::require_close(lerp(a, e, tgt::vec({0.25, 0.75, 0.5})), tgt::vec({0.75e16 + 0.25, 3, 2}), 1e-16, 0,
                     "weights");
}

TEST_CASE("logaddexp: stable, infinities, ties split the gradient", "[binary_math]") {
  Tensor a = tgt::vec({1000, -1000, 0, -kInf, kInf, -kInf, 2, kNaN}),
         b = tgt::vec({1000, -1001, 0, -kInf, kInf, 3, 2, 1});
  Tensor y = logaddexp(a, b);
  const std::vector<double> v = y.to_vector<double>();
  REQUIRE(v[0] == 1000 + std::log(2.0));
  REQUIRE(std::abs(v[1] - (-1000 + std::log1p(std::exp(-1.0)))) < 1e-12);
  REQUIRE(v[2] == std::log(2.0));
  REQUIRE(v[3] == -kInf);
  REQUIRE(v[4] == kInf);
  REQUIRE(v[5] == 3);
  REQUIRE(std::isnan(v[7]));
  Tensor al = tgt::vec({2, 0, 5}).requires_grad_(), bl = tgt::vec({2, 1, -30}).requires_grad_();
  std::vector<Tensor> g = tg::grad({logaddexp(al, bl).sum()}, {al, bl});
  tgt::require_close(g[0], tgt::vec({0.5, 1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-35.0))}), 1e-15, 0,
                     "d/da");
  tgt::require_close(g[1], tgt::vec({0.5, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(35.0))}), 1e-15,
                     1e-300, "d/db");
}

TEST_CASE("isclose and the logical ops", "[binary_math]") {
  Tensor a = tgt::vec({1, 1, kInf, kInf, kNaN, 0, 1e-9}),
         b = tgt::vec({1 + 1e-6, 1.1, kInf, -kInf, kNaN, 1e-9, 0});
  REQUIRE(bools(isclose(a, b)) == std::vector<bool>{true, false, true, false, false, true, true});
  REQUIRE(bools(isclose(a, b, 1e-5, 1e-8, true)) ==
          std::vector<bool>{true, false, true, false, true, true, true});
  REQUIRE(bools(isclose(a, b, 0, 0)) ==
          std::vector<bool>{false, false, true, false, false, false, false});
  REQUIRE_ERROR(isclose(a, b, -1), "isclose: rtol -1 and atol 1e-08 must be >= 0");
  Tensor p = tensor(std::vector<bool>{true, true, false, false}, {4}),
         q = tensor(std::vector<bool>{true, false, true, false}, {4});
  REQUIRE(bools(logical_and(p, q)) == std::vector<bool>{true, false, false, false});
  REQUIRE(bools(logical_or(p, q)) == std::vector<bool>{true, true, true, false});
  REQUIRE(bools(logical_xor(p, q)) == std::vector<bool>{false, true, true, false});
  // nonzero numbers are true, and the ops broadcast
  Tensor m = logical_and(tgt::vec({0, 2, -1}).reshape({3, 1}), tgt::vec({3, 0}));
  REQUIRE(m.shape() == Shape{3, 2});
  REQUIRE(bools(m) == std::vector<bool>{false, false, true, false, true, false});
}

TEST_CASE("binary math: gradchecks and errors", "[binary_math]") {
  manual_seed(150);
  Tensor x = tgt::leaf({3, 4}), y = tgt::leaf({4}), w = tgt::leaf({3, 1});
  Tensor away = (abs(tgt::leaf({4})) + 0.5).detach().requires_grad_();  // divisors away from 0
  tgt::check_grad([](const std::vector<Tensor>& in) { return fmod(in[0], in[1]); }, {x, away},
                  "fmod");
  tgt::check_grad([](const std::vector<Tensor>& in) { return remainder(in[0], in[1]); }, {x, away},
                  "remainder");
  tgt::check_grad([](const std::vector<Tensor>& in) { return copysign(in[0], in[1]); }, {x, y},
                  "copysign");
  tgt::check_grad([](const std::vector<Tensor>& in) { return lerp(in[0], in[1], in[2]); },
                  {x, y, w}, "lerp");
  tgt::check_grad([](const std::vector<Tensor>& in) { return logaddexp(in[0], in[1]); }, {x, y},
                  "logaddexp");
  REQUIRE_ERROR(fmod(zeros({2, 3}, kFloat64), zeros({4}, kFloat64)), "fmod");
  REQUIRE_ERROR(logaddexp(zeros({2}, kFloat64), zeros({2}, kFloat32)),
                "logaddexp: input (2) is float64 but other (2) is float32");
  REQUIRE_ERROR(copysign(zeros({2}, kInt64), zeros({2}, kFloat64)),
                "copysign: input (2) has dtype int64");
}
