// tests/autograd/test_create_graph.cpp — the engine under create_graph: gradients with a history,
// second and third derivatives against closed forms, retain_graph following create_graph, .grad
// with a history (gradient penalties), saved outputs reattached, the clear error of a backward
// that cannot be recorded, and first-order backward left as it was.
#include "helpers.hpp"

#include "ops/functional/functional.hpp"

using namespace tg;

namespace {
GradOptions cg() {
  GradOptions o;
  o.create_graph = true;
  return o;
}
}  // namespace

TEST_CASE("create_graph: d/dx and d2/dx2 of x^3 are 3x^2 and 6x") {
  Tensor x = tensor(std::vector<double>{-1.5, 0.5, 2}).requires_grad_();
  Tensor y = (x * x * x).sum();
  Tensor g = grad({y}, {x}, {}, cg())[0];
  REQUIRE(g.requires_grad());
  REQUIRE(g.grad_fn() != nullptr);
  tgt::require_close(g, std::vector<double>{6.75, 0.75, 12});
  Tensor h = grad({g.sum()}, {x})[0];
  tgt::require_close(h, std::vector<double>{-9, 3, 12});
  REQUIRE_FALSE(h.requires_grad());  // no create_graph the second time: a plain tensor
}

TEST_CASE("create_graph: third order through pow, exp and a saved output") {
  Tensor x = tensor(std::vector<double>{0.3, -0.7}).requires_grad_();
  // f = x^4 + exp(x): f''' = 24x + exp(x)
  Tensor f = (pow(x, 4.0) + exp(x)).sum();
  Tensor d1 = grad({f}, {x}, {}, cg())[0];
  Tensor d2 = grad({d1.sum()}, {x}, {}, cg())[0];
  Tensor d3 = grad({d2.sum()}, {x})[0];
  tgt::require_close(d1, std::vector<double>{4 * std::pow(0.3, 3) + std::exp(0.3),
                                             4 * std::pow(-0.7, 3) + std::exp(-0.7)});
  tgt::require_close(d2,
                     std::vector<double>{12 * 0.09 + std::exp(0.3), 12 * 0.49 + std::exp(-0.7)});
  tgt::require_close(d3, std::vector<double>{24 * 0.3 + std::exp(0.3), -24 * 0.7 + std::exp(-0.7)});
}

TEST_CASE("create_graph: sigmoid's second derivative flows through its saved output") {
  const std::vector<double> xv{-2, -0.25, 0, 1.5};
  Tensor x = tensor(xv).requires_grad_();
  Tensor g = grad({sigmoid(x).sum()}, {x}, {}, cg())[0];
  Tensor h = grad({g.sum()}, {x})[0];
  std::vector<double> want;
  for (double v : xv) {
    const double s = 1 / (1 + std::exp(-v));
    want.push_back(s * (1 - s) * (1 - 2 * s));
  }
  tgt::require_close(h, want);
}

TEST_CASE("create_graph implies retain_graph unless it is set") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor y = (x * x).sum();
  grad({y}, {x}, {}, cg());
  Tensor again = grad({y}, {x})[0];  // the first call retained the graph
  tgt::require_close(again, std::vector<double>{2, 4});
  Tensor z = exp(x).sum();
  GradOptions o = cg();
  o.retain_graph = false;
  Tensor gz = grad({z}, {x}, {}, o)[0];
  REQUIRE_ERROR(grad({z}, {x}), "was already freed by an earlier backward");
  // the gradient's own graph reaches the freed exp node through its saved output: refused
  REQUIRE_ERROR(grad({gz.sum()}, {x}), "was already freed by an earlier backward");
}

TEST_CASE("backward(create_graph): .grad keeps its history, a gradient penalty differentiates it") {
  // loss = Σ tanh(W x), penalty = ||dloss/dx||²; d penalty / dW checked against gradcheck.
  manual_seed(3);
  Tensor W = tgt::leaf({3, 4}, 0.5);
  Tensor x = tgt::leaf({4});
  Tensor loss = tanh(matmul(W, x)).sum();
  BackwardOptions bo;
  bo.create_graph = true;
  loss.backward(bo);
  REQUIRE(x.grad().requires_grad());
  Tensor penalty = (x.grad() * x.grad()).sum();
  W.reset_grad();
  penalty.backward();
  const Tensor dW = W.grad();
  // The same by numerical differences of the penalty as a function of W.
  tgt::check_grad(
      [&](const std::vector<Tensor>& in) {
        EnableGradGuard with_grad;  // gradcheck evaluates without recording; grad needs a graph
        Tensor xi = x.detach().requires_grad_();
        Tensor l = tanh(matmul(in[0], xi)).sum();
        Tensor gx = grad({l}, {xi}, {}, cg())[0];
        return (gx * gx).sum();
      },
      {W.detach().clone().requires_grad_()}, "penalty");
  Tensor Wd = W.detach().clone().requires_grad_();
  Tensor xi = x.detach().requires_grad_();
  Tensor gx = grad({tanh(matmul(Wd, xi)).sum()}, {xi}, {}, cg())[0];
  Tensor want = grad({(gx * gx).sum()}, {Wd})[0];
  tgt::require_close(dW, want.to_vector<double>());
  // zero_grad on a gradient with a history replaces it instead of writing into the graph
  x.zero_grad();
  REQUIRE_FALSE(x.grad().requires_grad());
  tgt::require_close(x.grad(), std::vector<double>(4, 0.0));
}

TEST_CASE("create_graph: a backward that cannot be recorded throws, naming the op") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor y = Tensor::empty({2}, kFloat64);
  y.data<double>()[0] = 1;
  y.data<double>()[1] = 4;
  Tensor xd = x.detach();
  record("my_square", y, {x}, [xd](const Tensor& g) -> std::vector<Tensor> {
    return {g * xd * 2.0};  // a raw closure: its result would have no history through x
  });
  REQUIRE_ERROR(grad({y.sum()}, {x}, {}, cg()), "backward of my_square (node #");
  REQUIRE_ERROR(grad({y.sum()}, {x}, {}, cg()), "is not differentiable yet");
  // first order is unaffected
  tgt::require_close(grad({y.sum()}, {x})[0], std::vector<double>{2, 4});
}

TEST_CASE("create_graph: a user op marked differentiable reattaches what it saved") {
  Tensor x = tensor(std::vector<double>{1.5, -2}).requires_grad_();
  Tensor y = Tensor::empty({2}, kFloat64);
  y.data<double>()[0] = 1.5 * 1.5;
  y.data<double>()[1] = 4;
  RecordInfo info;
  Saved sx = info.save(x);
  record("my_square", y, {x}, info.differentiable(),
         [sx](const Tensor& g) -> std::vector<Tensor> { return {g * sx.get() * 2.0}; });
  Tensor g = grad({y.sum()}, {x}, {}, cg())[0];
  tgt::require_close(g, std::vector<double>{3, -4});
  tgt::require_close(grad({g.sum()}, {x})[0], std::vector<double>{2, 2});
}

TEST_CASE("without create_graph gradients have no history") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor g = grad({(x * x).sum()}, {x})[0];
  REQUIRE_FALSE(g.requires_grad());
  REQUIRE(g.grad_fn() == nullptr);
  REQUIRE_FALSE(creating_graph());
  Tensor s = Tensor::empty({1}, kFloat64);
  RecordInfo info;
  REQUIRE(info.save(s).get().same(s));  // outside a recorded backward: the saved tensor itself
  const Tensor o = info.save_output(s).get();  // an output: detached, on the same memory
  REQUIRE((!o.same(s) && o.data_ptr() == s.data_ptr() && !o.requires_grad()));
}

TEST_CASE("create_graph with a gradient hook and fan-in sums recorded") {
  Tensor x = tensor(std::vector<double>{0.5, 1.0}).requires_grad_();
  Tensor a = x * x;  // used twice: the two gradients meet at a's node
  Tensor y = (a * a + a * 3.0).sum();
  a.register_hook([](const Tensor& g) { return g * 2.0; });
  Tensor g = grad({y}, {x}, {}, cg())[0];
  // dy/dx = 2(2a + 3)·2x with the hook's factor 2 on dy/da. The second backward reaches a's node
  // again (through the saved a), and the hook doubles that gradient too, as PyTorch's tensor
  // hooks do: d/dx = 4(2a + 3) + 2·(8x)·(2x) = 40x² + 12.
  const std::vector<double> xv{0.5, 1.0};
  std::vector<double> want, want2;
  for (double v : xv) {
    want.push_back(2 * (2 * v * v + 3) * 2 * v);
    want2.push_back(40 * v * v + 12);
  }
  tgt::require_close(g, want);
  tgt::require_close(grad({g.sum()}, {x})[0], want2);
}

TEST_CASE("the README's taste of second order runs as written") {
  manual_seed(0);
  Tensor x = randn({4, 3}, kFloat64);
  Tensor W = randn({2, 3}, kFloat64).requires_grad_();
  Tensor b = zeros({2}, kFloat64).requires_grad_();
  Tensor loss = tanh(linear(x, W, b)).pow(2.0).mean();
  loss.backward();
  auto f = [&](const std::vector<Tensor>& p) {
    return tanh(linear(x, p[0], p[1])).pow(2.0).mean();
  };
  GradOptions cg;
  cg.create_graph = true;
  Tensor gW = grad({f({W, b})}, {W}, {}, cg)[0];
  REQUIRE(gW.grad_fn() != nullptr);
  tgt::require_close(gW, W.grad());  // the same gradient as the backward above
  Tensor dpen = grad({(gW * gW).sum()}, {W})[0];
  REQUIRE(dpen.shape() == Shape{2, 3});
  auto [value, Hv] = func::hvp(f, {W, b}, {ones({2, 3}, kFloat64), zeros({2}, kFloat64)});
  REQUIRE(Hv[0].shape() == Shape{2, 3});
  REQUIRE(gradgradcheck(f, {W, b}).passed);
}
