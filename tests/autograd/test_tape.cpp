// tests/autograd/test_tape.cpp — the tape engine: fan-out, retain_graph, no-grad, hooks,
// tg::grad, the freed-graph error, bounded memory without backward, deep graphs.
#include "helpers.hpp"

using namespace tg;

TEST_CASE("backward accumulates into leaves - fan-out sums") {
  Tensor x = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor y = x * x + x * 3.0;  // x used three times
  y.backward(ones({3}, kFloat64));
  tgt::require_close(x.grad(), std::vector<double>{5, 7, 9});
  // A second forward/backward accumulates, as in PyTorch.
  Tensor z = (x * 2.0).sum();
  z.backward();
  tgt::require_close(x.grad(), std::vector<double>{7, 9, 11});
  x.zero_grad();
  tgt::require_close(x.grad(), std::vector<double>{0, 0, 0});
  x.reset_grad();
  REQUIRE_FALSE(x.grad().defined());
}

TEST_CASE("backward needs a scalar or an explicit gradient") {
  Tensor x = ones({2, 2}, kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  REQUIRE_ERROR(y.backward(),
                "grad can be implicitly created only for scalar outputs; output 0 is (2,2)");
  REQUIRE_ERROR(y.backward(ones({3}, kFloat64)),
                "gradient (3) float64 does not match output (2,2) float64");
  Tensor c = ones({2});
  REQUIRE_ERROR(c.backward(), "does not require grad");
}

TEST_CASE("a freed graph refuses a second backward unless retain_graph") {
  Tensor x = tensor(std::vector<double>{2}).requires_grad_();
  Tensor y = x.exp() * x;
  y.backward(Tensor(), {/*retain_graph=*/true});
  y.backward();  // allowed: the first call retained the graph
  double e2 = std::exp(2.0);
  tgt::require_close(x.grad(), std::vector<double>{2 * (e2 + 2 * e2)});
  REQUIRE_ERROR(y.backward(), "was already freed by an earlier backward; pass retain_graph=true");
}

TEST_CASE("NoGradGuard records nothing") {
  Tensor x = ones({3}, kFloat64).requires_grad_();
  {
    NoGradGuard ng;
    Tensor y = x * 2.0;
    REQUIRE_FALSE(y.requires_grad());
    REQUIRE(y.grad_fn() == nullptr);
    {
      EnableGradGuard eg;
      REQUIRE((x * 2.0).requires_grad());
    }
  }
  Tensor y = x * 2.0;
  REQUIRE(y.requires_grad());
  REQUIRE(std::string(y.grad_fn()->op) == "mul");
  REQUIRE_FALSE(y.detach().requires_grad());
}

TEST_CASE("hooks read and replace gradients") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor seen;
  x.register_hook([&](const Tensor& g) {
    seen = g.clone();
    return Tensor();  // keep
  });
  Tensor h = x * 3.0;
  h.register_hook([](const Tensor& g) { return g * 10.0; });  // replace the gradient of h
  (h * h).sum().backward();
  // d/dh = 2h = (6, 12), times 10, times dh/dx = 3
  tgt::require_close(seen, std::vector<double>{180, 360});
  tgt::require_close(x.grad(), std::vector<double>{180, 360});
  Tensor c = ones({1});
  REQUIRE_ERROR(c.register_hook([](const Tensor&) { return Tensor(); }), "does not require grad");
}

TEST_CASE("tg::grad returns gradients without touching .grad()") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor w = tensor(std::vector<double>{3, 4}).requires_grad_();
  Tensor h = x * w;
  Tensor y = (h * h).sum();
  std::vector<Tensor> g = grad({y}, {x, h}, {}, {/*retain_graph=*/true});
  tgt::require_close(g[0], std::vector<double>{2 * 3 * 3 * 1, 2 * 4 * 4 * 2});
  tgt::require_close(g[1], std::vector<double>{6, 16});
  REQUIRE_FALSE(x.grad().defined());
  REQUIRE_FALSE(w.grad().defined());
  Tensor unused = ones({2}, kFloat64).requires_grad_();
  std::vector<Tensor> g2 = grad({y}, {unused}, {}, {true, true});
  REQUIRE_FALSE(g2[0].defined());
  REQUIRE_ERROR(grad({y}, {unused}, {}, {true, false}), "grad: input 0 (2) was not used");
  // issue 40: an undefined output, or one without history, is named with its position
  REQUIRE_ERROR(grad({y, Tensor()}, {x}, {}, {true}),
                "tg::grad: output 1 (of 2) is an undefined tensor");
  REQUIRE_ERROR(grad({ones({2}, kFloat64)}, {x}),
                "tg::grad: output 0 (2) (of 1) does not require grad");
  REQUIRE_ERROR(backward({y, Tensor()}, {}, true), "backward: output 1 is an undefined tensor");
}

TEST_CASE("10,000 forward passes without backward keep memory bounded") {
  Tensor w = randn({16}, kFloat64).requires_grad_();
  int64_t live_before = Tape::live_count();
  size_t max_tape = 0;
  for (int i = 0; i < 10000; ++i) {
    Tensor y = ((w * 2.0).tanh() * w).sum();
    max_tape = std::max(max_tape, Tape::size());
  }
  REQUIRE(Tape::live_count() == live_before);  // every node freed with its outputs
  REQUIRE(max_tape <= 4096);                   // the inspection list is pruned
}

TEST_CASE("a deep graph is built, differentiated and freed without recursion") {
  Tensor x = tensor(std::vector<double>{0.5}).requires_grad_();
  int64_t live_before = Tape::live_count();
  {
    Tensor y = x;
    for (int i = 0; i < 200000; ++i) y = y * 1.0;
    y.sum().backward();
  }
  tgt::require_close(x.grad(), std::vector<double>{1});
  {
    Tensor z = x;
    for (int i = 0; i < 200000; ++i) z = z + 0.0;
  }  // dropped without backward: freed iteratively
  REQUIRE(Tape::live_count() == live_before);
}

TEST_CASE("gradcheck reports the worst element and catches a wrong backward") {
  manual_seed(0);
  Tensor x = tgt::leaf({3, 2});
  GradcheckReport ok =
      gradcheck([](const std::vector<Tensor>& in) { return in[0].tanh() * in[0]; }, {x});
  REQUIRE(ok.passed);
  REQUIRE_FALSE(ok.fast_mode);
  REQUIRE(ok.inputs[0].worst.abs_err < 1e-8);

  // An op with a deliberately wrong backward (factor 2 instead of 3).
  auto bad_cube = [](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    Tensor out = a.detach() * a.detach() * a.detach();
    Tensor saved = a.detach();
    record("bad_cube", out, {a},
           [saved](const Tensor& g) -> std::vector<Tensor> { return {g * saved * saved * 2.0}; });
    return out;
  };
  GradcheckReport bad = gradcheck(bad_cube, {x});
  REQUIRE_FALSE(bad.passed);
  REQUIRE(bad.inputs[0].failures == 6);
  const GradcheckElement& w = bad.inputs[0].worst;
  REQUIRE(std::fabs(w.analytical / w.numerical - 2.0 / 3.0) < 1e-6);
  REQUIRE(bad.str().find("FAIL") != std::string::npos);

  // Fast mode agrees on both.
  GradcheckOptions fast;
  fast.mode = GradcheckMode::Fast;
  REQUIRE(gradcheck([](const std::vector<Tensor>& in) { return in[0].tanh() * in[0]; }, {x}, fast)
              .passed);
  REQUIRE_FALSE(gradcheck(bad_cube, {x}, fast).passed);
  REQUIRE_ERROR(
      gradcheck([](const std::vector<Tensor>& in) { return in[0]; }, {ones({2}).requires_grad_()}),
      "gradcheck: input 0 (2) is float32; gradcheck needs float64 inputs");
}

TEST_CASE("saved values are freed after backward") {
  Tensor x = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor h = x.exp();        // saves its output
  Tensor y = (h * x).sum();  // saves h and x
  std::weak_ptr<TensorImpl> h_impl = h.impl_ptr();
  Node* mul_node = y.grad_fn();
  REQUIRE(mul_node != nullptr);
  h = Tensor();  // only the tape still holds h's values now
  REQUIRE_FALSE(h_impl.expired());
  y.backward();
  REQUIRE(y.grad_fn()->released);
  REQUIRE_FALSE(static_cast<bool>(y.grad_fn()->backward));
  REQUIRE(h_impl.expired());  // the closure that saved h is gone
}
