// tests/nn/test_optim.cpp — SGD's update rule and the initialisers' ranges.
#include "helpers.hpp"

#include "nn/init.hpp"
#include "nn/optim.hpp"

using namespace tg;

TEST_CASE("SGD with momentum and weight decay follows PyTorch's rule") {
  Tensor p = tensor(std::vector<double>{1.0, -2.0}).requires_grad_();
  nn::SGD opt({p}, {/*lr=*/0.1, /*momentum=*/0.9, /*weight_decay=*/0.01});
  // step 1: g = 2p + 0.01p; b = g; p -= 0.1 b
  (p * p).sum().backward();
  opt.step();
  double g1a = 2 * 1.0 + 0.01 * 1.0, g1b = 2 * -2.0 + 0.01 * -2.0;
  double p1a = 1.0 - 0.1 * g1a, p1b = -2.0 - 0.1 * g1b;
  tgt::require_close(p.detach(), std::vector<double>{p1a, p1b}, 1e-12, 0);
  opt.zero_grad();
  REQUIRE_FALSE(p.grad().defined());
  (p * p).sum().backward();
  opt.step();
  double b2a = 0.9 * g1a + (2 * p1a + 0.01 * p1a), b2b = 0.9 * g1b + (2 * p1b + 0.01 * p1b);
  tgt::require_close(p.detach(), std::vector<double>{p1a - 0.1 * b2a, p1b - 0.1 * b2b}, 1e-12, 0);
  REQUIRE_ERROR(nn::SGD({ones({2})}, {}), "SGD: parameter 0 must be a leaf tensor that requires grad");
}

TEST_CASE("initialisers draw within PyTorch's bounds") {
  manual_seed(3);
  Tensor w = zeros({64, 32});
  nn::init::kaiming_uniform_(w, std::sqrt(5.0));
  double bound = 1.0 / std::sqrt(32.0);
  double mx = 0;
  for (float v : w.to_vector<float>()) mx = std::max(mx, std::fabs(double(v)));
  REQUIRE(mx <= bound);
  REQUIRE(mx > 0.9 * bound);
  nn::init::xavier_uniform_(w);
  double xb = std::sqrt(6.0 / 96);
  for (float v : w.to_vector<float>()) REQUIRE(std::fabs(double(v)) <= xb);
  REQUIRE_ERROR(nn::init::fan_in_and_out(zeros({3})), "need at least 2 dims, got (3)");
}
