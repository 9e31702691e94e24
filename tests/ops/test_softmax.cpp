// tests/ops/test_softmax.cpp — softmax, log_softmax and softmin: values, stability, fully masked
// rows, float64 gradchecks over several dims, float32 agreement and errors; softmin against
// PyTorch fixtures (tests/fixtures/softmin, tools/make_reduce_fixtures.py) and second order.
#include "fixture_case.hpp"
#include "helpers.hpp"


#include <cmath>
#include <limits>

using namespace tg;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
}

TEST_CASE("softmax and log_softmax match hand-computed values", "[softmax]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 0, 0, 0}, {2, 3});
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  tgt::require_close(
      softmax(x, 1),
      {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15,
      1e-14);
  tgt::require_close(x.log_softmax(-1),
                     {1 - std::log(s), 2 - std::log(s), 3 - std::log(s), -std::log(3.0),
                      -std::log(3.0), -std::log(3.0)},
                     1e-15, 1e-14);
  // Over dim 0: columns (1,0), (2,0), (3,0).
  auto col = [](double a) { return std::exp(a) / (std::exp(a) + 1); };
  tgt::require_close(x.softmax(0), {col(1), col(2), col(3), 1 - col(1), 1 - col(2), 1 - col(3)},
                     1e-15, 1e-14);
  // A 0-dim tensor is a row of one element.
  tgt::require_close(softmax(scalar_tensor(5.0, kFloat64), -1), {1.0}, 0, 0);
}

TEST_CASE("softmax is stable for large logits", "[softmax]") {
  Tensor x = tensor(std::vector<float>{1000, 1001, -1000});
  const double e = std::exp(-1.0);
  tgt::require_close(softmax(x, 0), {e / (1 + e), 1 / (1 + e), 0}, 1e-7, 1e-6);
  tgt::require_close(log_softmax(x, 0), {-1 - std::log1p(e), -std::log1p(e), -2001 - std::log1p(e)},
                     1e-3, 1e-6);
}

TEST_CASE("fully masked rows give 0 (softmax), -inf (log_softmax) and zero gradient", "[softmax]") {
  Tensor x =
      tensor(std::vector<double>{-kInf, -kInf, -kInf, 0.5, -kInf, 0.5}, {2, 3}).requires_grad_();
  Tensor y = softmax(x, 1);
  tgt::require_close(y, {0, 0, 0, 0.5, 0, 0.5}, 0, 1e-15);
  y.backward(tensor(std::vector<double>{1, 2, 3, 1, 2, 5}, {2, 3}));
  // Row 1: dx = y*(g - sum(g*y)) = 0.5*(1-3), 0, 0.5*(5-3).
  tgt::require_close(x.grad(), {0, 0, 0, -1, 0, 1}, 1e-15, 0);
  x.reset_grad();
  Tensor ly = log_softmax(x, 1);
  std::vector<double> lv = ly.to_vector<double>();
  for (int i = 0; i < 3; ++i) REQUIRE(lv[i] == -kInf);
  REQUIRE(lv[3] == Approx(-std::log(2.0)).epsilon(1e-14));
  ly.backward(tensor(std::vector<double>{1, 2, 3, 1, 2, 5}, {2, 3}));
  // Row 1: dx = g - exp(y)*sum(g) = 1-4, 2-0, 5-4.
  tgt::require_close(x.grad(), {0, 0, 0, -3, 2, 1}, 1e-14, 0);
}

TEST_CASE("softmax and log_softmax gradcheck over dims 0, 1, -1", "[softmax]") {
  manual_seed(11);
  for (Shape s : {Shape{3, 4, 5}, Shape{1, 4, 1}, Shape{2, 1, 3}}) {
    Tensor x = tgt::leaf(s, 2.0);
    for (int64_t d : {0, 1, -1, -3}) {
      tgt::check_grad([d](const std::vector<Tensor>& in) { return softmax(in[0], d); }, {x},
                      "softmax dim " + std::to_string(d) + " " + shape_str(s));
      tgt::check_grad([d](const std::vector<Tensor>& in) { return log_softmax(in[0], d); }, {x},
                      "log_softmax dim " + std::to_string(d) + " " + shape_str(s));
    }
  }
  Tensor v = tgt::leaf({7});
  tgt::check_grad([](const std::vector<Tensor>& in) { return in[0].softmax(0); }, {v},
                  "softmax 1-D");
  tgt::check_grad([](const std::vector<Tensor>& in) { return in[0].log_softmax(-1); }, {v},
                  "log_softmax 1-D");
}

TEST_CASE("softmax float32 agrees with float64 and backward keeps the dtype", "[softmax]") {
  manual_seed(12);
  Tensor x = randn({4, 6, 3}, kFloat64);
  Tensor x32 = x.to(kFloat32).requires_grad_();
  for (int64_t d : {0, 1, 2}) {
    tgt::require_close(softmax(x32, d), softmax(x, d), 1e-6, 1e-5, "softmax f32");
    tgt::require_close(log_softmax(x32, d), log_softmax(x, d), 1e-5, 1e-5, "log_softmax f32");
  }
  Tensor y = softmax(x32, 1);
  y.backward(ones({4, 6, 3}));
  REQUIRE(x32.grad().dtype() == kFloat32);
  // Softmax rows sum to 1, so a constant upstream gradient gives zero.
  for (float g : x32.grad().to_vector<float>()) REQUIRE(std::fabs(g) < 1e-6);
}

TEST_CASE("softmax errors name the op, dim and shape", "[softmax]") {
  Tensor x = zeros({2, 3});
  REQUIRE_ERROR(softmax(x, 2), "softmax: dim 2 out of range for a tensor of shape (2,3) (rank 2)");
  REQUIRE_ERROR(log_softmax(x, -3), "log_softmax: dim -3 out of range for a tensor of shape (2,3)");
  REQUIRE_ERROR(softmax(zeros({2}, kInt64), 0),
                "softmax: input (2) has dtype int64, expected float32 or float64");
  REQUIRE_ERROR(log_softmax(Tensor(), 0), "log_softmax: input is undefined");
}

TEST_CASE("softmin is softmax of -x: PyTorch's values and gradients, second order, errors",
          "[softmax][softmin]") {
  auto at = [](int64_t d) {
    return [d](const std::vector<Tensor>& in) { return softmin(in[0], d); };
  };
  tgt::require_fixture_case("softmin/dim1", {"x"}, at(1));
  tgt::require_fixture_case("softmin/dim0_3d", {"x"}, at(0));
  tgt::require_fixture_case("softmin/dimm1_large", {"x"}, at(-1));  // a +inf logit: weight 0
  manual_seed(14);
  for (int64_t d : {0, 1, -1}) {
    tgt::check_grad(at(d), {tgt::leaf({3, 4, 2})}, "softmin dim " + std::to_string(d));
    tgt::check_second_order("softmin dim " + std::to_string(d), at(d), {tgt::leaf({2, 3, 4})});
  }
  // a 0-dim input is one row of one element (dim 0 or -1), as PyTorch
  CHECK(softmin(scalar_tensor(2.0), -1).item<double>() == 1.0);
  REQUIRE_ERROR(softmin(zeros({2, 3}), 2),
                "softmin: dim 2 out of range for a tensor of shape (2,3) (rank 2)");
  REQUIRE_ERROR(softmin(scalar_tensor(2.0), 1), "softmin: dim 1 out of range");
  REQUIRE_ERROR(softmin(zeros({2}, kInt64), 0),
                "softmin: input (2) has dtype int64, expected float32 or float64");
  REQUIRE_ERROR(softmin(Tensor(), 0), "softmin: input is undefined");
}
