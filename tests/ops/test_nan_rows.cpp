// tests/ops/test_nan_rows.cpp — a row of NaN scores stays NaN in softmax, log_softmax and SDPA
// (std::max skips NaN, so such a row used to look fully masked and silently became 0).
#include "helpers.hpp"

#include "ops/attention.hpp"

#include <cmath>
#include <limits>

using namespace tg;

TEST_CASE("softmax: an all-NaN row stays NaN, an all -inf row stays 0") {
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor(std::vector<double>{nan, nan, -inf, -inf, 0, 0}, {3, 2});
  Tensor y = softmax(x, -1), ly = log_softmax(x, -1);
  REQUIRE(std::isnan(y.data<double>()[0]));
  REQUIRE(std::isnan(ly.data<double>()[1]));
  REQUIRE(y.data<double>()[2] == 0);
  REQUIRE(y.data<double>()[4] == 0.5);
}

TEST_CASE("scaled_dot_product_attention: a NaN query row gives a NaN output row only") {
  manual_seed(9);
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor q = randn({1, 1, 3, 4}, dt), k = randn({1, 1, 3, 4}, dt), v = randn({1, 1, 3, 4}, dt);
    for (int64_t c = 0; c < 4; ++c) {
      if (dt == kFloat32)
        q.data<float>()[4 + c] = std::numeric_limits<float>::quiet_NaN();
      else
        q.data<double>()[4 + c] = std::numeric_limits<double>::quiet_NaN();
    }
    std::vector<double> out = scaled_dot_product_attention(q, k, v).output.to_vector<double>();
    for (int64_t i = 0; i < 12; ++i) REQUIRE(std::isnan(out[i]) == (i >= 4 && i < 8));
  }
}
