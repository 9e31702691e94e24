// tests/ops/test_nan_rows.cpp — a row of NaN scores stays NaN in softmax, log_softmax and SDPA
// (std::max skips NaN, so such a row used to look fully masked and silently became 0).
#include "helpers.hpp"

#include "ops/attention/attention.hpp"

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

TEST_CASE("scaled_dot_product_attention: NaN or inf keys at padded positions take no part") {
  // Padding is a select, not an added -inf: a NaN score at a blocked key must not leak into the
  // row (NaN + -inf is NaN), and +inf must not either (inf + -inf is NaN).
  manual_seed(10);
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor q = randn({2, 2, 5, 4}, dt), k = randn({2, 2, 7, 4}, dt), v = randn({2, 2, 7, 4}, dt);
    Tensor pad = zeros({2, 7}, kBool);  // TrueBlocked: keys 5, 6 of batch 0, key 6 of batch 1
    pad.data<bool>()[5] = pad.data<bool>()[6] = pad.data<bool>()[13] = true;
    for (AttentionMask m : {AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked),
                            AttentionMask::key_lengths(tensor(std::vector<int64_t>{5, 6}))}) {
      const std::vector<double> clean =
          scaled_dot_product_attention(q, k, v, m).output.to_vector<double>();
      Tensor kbad = k.clone();
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t c = 0; c < 4; ++c) {
          const int64_t b0 = ((0 * 2 + h) * 7 + 5) * 4 + c, b1 = ((1 * 2 + h) * 7 + 6) * 4 + c;
          const double nan = std::numeric_limits<double>::quiet_NaN(),
                       inf = std::numeric_limits<double>::infinity();
          if (dt == kFloat32)
            kbad.data<float>()[b0] = static_cast<float>(nan),
            kbad.data<float>()[b1] = static_cast<float>(inf);
          else
            kbad.data<double>()[b0] = nan, kbad.data<double>()[b1] = inf;
        }
      const std::vector<double> got =
          scaled_dot_product_attention(q, kbad, v, m).output.to_vector<double>();
      REQUIRE(got == clean);
    }
  }
}
