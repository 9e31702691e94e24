// tests/nn/test_activation.cpp — the activation modules of nn/activation.hpp: each forward and
// backward is its op's, bit for bit, their reprs read as PyTorch 1.13 prints them, and bad
// constructor arguments are refused naming the module.
// Deliberately not here: the ops' values and gradients (tests/ops/test_special_values.cpp,
// test_cpu_elementwise.cpp, the gradcheck CLI's --all).
#include <catch2/catch.hpp>

#include "nn/activation.hpp"
#include "ops/ops.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace tg;

TEST_CASE("activation modules run their op, forward and backward", "[nn][activation]") {
  struct Case {
    std::shared_ptr<nn::TensorModule> m;
    std::function<Tensor(const Tensor&)> op;
    std::string repr;  // torch 1.13's repr of the same module
  };
  const std::vector<Case> cases = {
      {std::make_shared<nn::SiLU>(), [](const Tensor& x) { return silu(x); }, "SiLU()"},
      {std::make_shared<nn::Sigmoid>(), [](const Tensor& x) { return sigmoid(x); }, "Sigmoid()"},
      {std::make_shared<nn::Softplus>(), [](const Tensor& x) { return softplus(x); },
       "Softplus(beta=1, threshold=20)"},
      {std::make_shared<nn::Softplus>(2.0, 1.5),
       [](const Tensor& x) { return softplus(x, 2.0, 1.5); }, "Softplus(beta=2, threshold=1.5)"},
      {std::make_shared<nn::LeakyReLU>(), [](const Tensor& x) { return leaky_relu(x); },
       "LeakyReLU(negative_slope=0.01)"},
      {std::make_shared<nn::ELU>(), [](const Tensor& x) { return elu(x); }, "ELU(alpha=1.0)"},
      {std::make_shared<nn::SELU>(), [](const Tensor& x) { return selu(x); }, "SELU()"},
      {std::make_shared<nn::CELU>(0.5), [](const Tensor& x) { return celu(x, 0.5); },
       "CELU(alpha=0.5)"},
      {std::make_shared<nn::Mish>(), [](const Tensor& x) { return mish(x); }, "Mish()"},
      {std::make_shared<nn::Hardswish>(), [](const Tensor& x) { return hardswish(x); },
       "Hardswish()"},
      {std::make_shared<nn::Hardsigmoid>(), [](const Tensor& x) { return hardsigmoid(x); },
       "Hardsigmoid()"},
      {std::make_shared<nn::Hardtanh>(), [](const Tensor& x) { return hardtanh(x); },
       "Hardtanh(min_val=-1.0, max_val=1.0)"},
      {std::make_shared<nn::ReLU6>(), [](const Tensor& x) { return relu6(x); }, "ReLU6()"},
      {std::make_shared<nn::LogSigmoid>(), [](const Tensor& x) { return logsigmoid(x); },
       "LogSigmoid()"},
      {std::make_shared<nn::Softsign>(), [](const Tensor& x) { return softsign(x); }, "Softsign()"},
  };
  manual_seed(7);
  const Tensor base = mul(randn({3, 41}), 4.0);  // both sides of every kink, past ±3 and 6
  for (const Case& c : cases) {
    INFO(c.repr);
    CHECK(c.m->repr() == c.repr);
    Tensor x1 = base.detach().requires_grad_(), x2 = base.detach().requires_grad_();
    Tensor y1 = c.m->forward(x1), y2 = c.op(x2);
    const Tensor g = randn({3, 41});
    y1.backward(g);
    y2.backward(g);
    CHECK(y1.to_vector<float>() == y2.to_vector<float>());
    CHECK(x1.grad().to_vector<float>() == x2.grad().to_vector<float>());
    // not the identity: the module changes some element
    CHECK(y1.to_vector<float>() != base.to_vector<float>());
  }
}

TEST_CASE("activation modules refuse bad arguments, naming the module", "[nn][activation]") {
  CHECK_THROWS_WITH(nn::CELU(0.0), Catch::Contains("CELU") && Catch::Contains("alpha"));
  CHECK_THROWS_WITH(nn::Hardtanh(1.0, -1.0),
                    Catch::Contains("Hardtanh") && Catch::Contains("min_val 1"));
  CHECK_THROWS_WITH(celu(ones({2, 3}), 0.0), Catch::Contains("celu") && Catch::Contains("(2,3)"));
  CHECK_THROWS_WITH(silu(ones({2}, kInt64)), Catch::Contains("silu"));
}
