// tests/ops/test_special_values.cpp — elementwise ops at special values (±0, ±inf, NaN,
// subnormals) on tensors long enough for the vector body: the vector kernels once gave
// pow(0, 0) = 0 and log(1e-310) = -746.5 from 4 float64 / 8 float32 elements on, which no
// 3-element test saw.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "ops/ops.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using tg::Tensor;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// `v` repeated to length n, as T.
template <typename T>
Tensor repeated(std::vector<double> v, int64_t n) {
  std::vector<T> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(static_cast<T>(v[static_cast<size_t>(i) % v.size()]));
  return tg::tensor(out, {n});
}
template <typename T>
void require_values(const Tensor& t, const std::vector<double>& want, const std::string& what) {
  const Tensor c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) {
    const double got = c.data<T>()[i], w = want[static_cast<size_t>(i) % want.size()];
    INFO(what << " n=" << c.numel() << " [" << i << "]: got " << got << ", want " << w);
    if (std::isnan(w))
      REQUIRE(std::isnan(got));
    else
      REQUIRE(got == Approx(w).epsilon(1e-6));
  }
}
}  // namespace

TEMPLATE_TEST_CASE("pow and log at special values do not depend on the tensor's length",
                   "[special]", float, double) {
  using T = TestType;
  for (int64_t n : {1, 3, 4, 8, 9, 16, 67}) {
    // pow(x, e) for x = 0, -0, inf, -inf: PyTorch's (and std::pow's) values
    require_values<T>(tg::pow(repeated<T>({0, -0.0, kInf, -kInf}, n), 0.0), {1, 1, 1, 1}, "x**0");
    require_values<T>(tg::pow(repeated<T>({0, -0.0, kInf, -kInf}, n), -1.0), {kInf, -kInf, 0, -0.0},
                      "x**-1");
    require_values<T>(tg::pow(repeated<T>({0, kInf, -kInf, 4}, n), 0.3),
                      {0, kInf, kInf, std::pow(4.0, 0.3)}, "x**0.3");
    // pow(tensor, tensor): the binary kernel, same rules
    Tensor e = repeated<T>({0, -1, 0, 0.3}, n);
    require_values<T>(tg::pow(repeated<T>({0, 0, kInf, -kInf}, n), e), {1, kInf, 1, kInf},
                      "pow(a, b)");
    // gradients of x**1 and x**0.5 at 0 (PyTorch: 1 and inf)
    Tensor x = repeated<T>({0, 1}, n).requires_grad_();
    tg::pow(x, 1.0).sum().backward();
    require_values<T>(x.grad(), {1, 1}, "d(x**1)");
    Tensor x2 = repeated<T>({0, 4}, n).requires_grad_();
    tg::pow(x2, 0.5).sum().backward();
    require_values<T>(x2.grad(), {kInf, 0.25}, "d(x**0.5)");
  }
  // log of a float64 subnormal: -713.8, not -746.5
  for (int64_t n : {1, 3, 4, 5, 8, 67})
    require_values<double>(tg::log(repeated<double>({1e-310, 1}, n)), {std::log(1e-310), 0},
                           "log(1e-310)");
  for (int64_t n : {1, 7, 8, 9, 67})
    require_values<float>(tg::log(repeated<float>({1e-40, 1}, n)),
                          {std::log(static_cast<double>(1e-40f)), 0}, "log(1e-40f)");
}
