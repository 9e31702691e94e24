// tests/ops/test_dropout.cpp — dropout: eval/p=0 identity, p=1 zeros, seeded masks, the kept
// fraction and scale, backward through the saved mask, gradcheck with a reseeded mask, errors.
#include "helpers.hpp"

#include <cmath>

using namespace tg;

TEST_CASE("dropout is the identity in eval mode or with p = 0", "[dropout]") {
  Tensor x = randn({3, 4}).requires_grad_();
  REQUIRE(dropout(x, 0.5, false).same(x));
  REQUIRE(dropout(x, 0.0).same(x));
}

TEST_CASE("dropout with p = 1 gives zeros and a zero gradient", "[dropout]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor y = dropout(x, 1.0);
  tgt::require_close(y, {0, 0, 0}, 0, 0);
  y.backward(ones({3}, kFloat64));
  tgt::require_close(x.grad(), {0, 0, 0}, 0, 0);
}

TEST_CASE("dropout masks are seeded, scaled by 1/(1-p), and keep about 1-p", "[dropout]") {
  const double p = 0.3;
  Tensor x = ones({100, 100}, kFloat64).requires_grad_();
  manual_seed(5);
  Tensor y1 = dropout(x, p);
  manual_seed(5);
  Tensor y2 = dropout(x, p);
  std::vector<double> v1 = y1.to_vector<double>(), v2 = y2.to_vector<double>();
  REQUIRE(v1 == v2);
  int64_t kept = 0, bad = 0;
  for (double v : v1) {
    bad += !(v == 0 || std::fabs(v - 1 / (1 - p)) < 1e-15);
    kept += v != 0;
  }
  REQUIRE(bad == 0);
  REQUIRE(std::fabs(kept / 10000.0 - (1 - p)) < 0.02);
  // A different seed gives a different mask.
  manual_seed(6);
  REQUIRE(dropout(x, p).to_vector<double>() != v1);
  // Backward multiplies by the same mask·scale: with x = 1 that is y itself.
  y1.backward(full({100, 100}, 2.0, kFloat64));
  std::vector<double> want;
  for (double v : v1) want.push_back(2 * v);
  tgt::require_close(x.grad(), want, 0, 0);
}

TEST_CASE("dropout gradcheck with a fixed mask - float32 keeps its dtype", "[dropout]") {
  manual_seed(51);
  for (Shape s : {Shape{4, 5}, Shape{2, 1, 3}, Shape{1}}) {
    Tensor x = tgt::leaf(s);
    for (double p : {0.2, 0.5}) {
      tgt::check_grad(
          [p](const std::vector<Tensor>& in) {
            manual_seed(77);  // every evaluation draws the same mask
            return dropout(in[0], p);
          },
          {x}, "dropout " + shape_str(s));
    }
  }
  manual_seed(52);
  Tensor x32 = randn({8}).requires_grad_();
  Tensor y = dropout(x32, 0.5);
  REQUIRE(y.dtype() == kFloat32);
  y.backward(ones({8}));
  std::vector<float> xv = x32.to_vector<float>(), yv = y.to_vector<float>(),
                     gv = x32.grad().to_vector<float>();
  for (int i = 0; i < 8; ++i) REQUIRE(yv[i] == xv[i] * gv[i]);
}

TEST_CASE("dropout errors name p and the input", "[dropout]") {
  Tensor x = zeros({2, 3});
  REQUIRE_ERROR(dropout(x, 1.5), "dropout: probability p must be in [0, 1], got 1.5 (input (2,3))");
  REQUIRE_ERROR(dropout(x, -0.1, false), "dropout: probability p must be in [0, 1], got -0.1");
  REQUIRE_ERROR(dropout(x, std::nan("")), "dropout: probability p must be in [0, 1], got nan");
  REQUIRE_ERROR(dropout(zeros({2}, kInt64), 0.5),
                "dropout: input (2) has dtype int64, expected float32 or float64");
}
