// tests/autograd/test_gradcheck_kinks.cpp — tg::gradcheck's kink detector: relu and abs at exactly
// 0, a clamp bound, a max tie and a kink just off the evaluation point are flagged (a warning,
// not a failure); smooth functions, even strongly curved ones, are not; a backward outside the
// one-sided slopes still fails at a kink; fast mode and detect_kinks = false.
#include "tests/helpers.hpp"

#include <string>

using namespace tg;

namespace {
Tensor values(std::vector<double> v) { return tensor(v).requires_grad_(); }
GradcheckReport check(Tensor (*f)(const Tensor&), const Tensor& x, GradcheckOptions o = {}) {
  return gradcheck([f](const std::vector<Tensor>& in) { return f(in[0]); }, {x}, o);
}
}  // namespace

TEST_CASE("kink detector flags relu and abs at exactly 0", "[gradcheck]") {
  GradcheckReport r = check([](const Tensor& x) { return relu(x); }, values({-1, 0, 2}));
  INFO(r.str());
  REQUIRE(r.passed);  // the kink is a warning: relu'(0) = 0 lies between the slopes 0 and 1
  REQUIRE(r.kinks.size() == 1);
  const GradcheckKink& k = r.kinks[0];
  REQUIRE(k.input == 0);
  REQUIRE(k.index == std::vector<int64_t>{1});
  REQUIRE(k.output_index == 1);
  REQUIRE(k.left == Approx(0).margin(1e-9));
  REQUIRE(k.right == Approx(1).epsilon(1e-9));
  REQUIRE(k.analytical == 0);
  REQUIRE(r.inputs[0].kinks == 1);
  REQUIRE(r.inputs[0].failures == 0);
  REQUIRE(r.str().find("WARN kink near input 0 index (1) (output 1)") != std::string::npos);
  REQUIRE(k.str().find("numerical gradient unreliable here") != std::string::npos);

  GradcheckReport a = check([](const Tensor& x) { return abs(x); }, values({0, 1.5, -2}));
  INFO(a.str());
  REQUIRE(a.passed);
  REQUIRE(a.kinks.size() == 1);
  REQUIRE(a.kinks[0].index == std::vector<int64_t>{0});
  REQUIRE(a.kinks[0].left == Approx(-1).epsilon(1e-9));
  REQUIRE(a.kinks[0].right == Approx(1).epsilon(1e-9));
}

TEST_CASE("kink detector flags a clamp bound, a max tie and a kink just off the point",
          "[gradcheck]") {
  GradcheckReport c =
      check([](const Tensor& x) { return clamp(x, -0.5, 0.5); }, values({0.5, 0.1, -0.5, -2}));
  INFO(c.str());
  REQUIRE(c.passed);
  REQUIRE(c.kinks.size() == 2);
  REQUIRE(c.kinks[0].index == std::vector<int64_t>{0});
  REQUIRE(c.kinks[1].index == std::vector<int64_t>{2});

  // max over a tie: the gradient is shared (0.5 each), the one-sided slopes are 0 and 1.
  GradcheckReport m = check([](const Tensor& x) { return max(x); }, values({1, 1, 0}));
  INFO(m.str());
  REQUIRE(m.passed);
  REQUIRE(m.kinks.size() == 2);
  REQUIRE(m.kinks[0].analytical == Approx(0.5));

  // relu at 0.3·h: the central stencil still straddles the kink; relu'(x) = 1 is one side's slope.
  GradcheckReport off = check([](const Tensor& x) { return relu(x); }, values({0.3e-6, 1}));
  INFO(off.str());
  REQUIRE(off.passed);
  REQUIRE(off.kinks.size() == 1);
  REQUIRE(off.kinks[0].left == Approx(0.3).epsilon(1e-6));
}

TEST_CASE("kink detector leaves smooth functions alone", "[gradcheck]") {
  manual_seed(3);
  Tensor x = tgt::leaf({3, 4});
  for (auto f :
       {+[](const Tensor& t) { return tanh(t) * t; }, +[](const Tensor& t) { return exp(t); },
        +[](const Tensor& t) { return softmax(t, 1); }, +[](const Tensor& t) { return gelu(t); },
        // strongly curved: the one-sided slopes differ by 2e4·h > atol, yet no kink
        +[](const Tensor& t) { return t * t * 1e4; },
        // relu away from 0 is linear on both sides of every point
        +[](const Tensor& t) { return relu(t) * 3.0; }}) {
    GradcheckReport r = check(f, x);
    INFO(r.str());
    REQUIRE(r.passed);
    REQUIRE(r.kinks.empty());
    REQUIRE(r.inputs[0].kinks == 0);
  }
}

TEST_CASE("a wrong backward at a kink still fails", "[gradcheck]") {
  // relu whose backward says 5 at 0: outside the one-sided slopes [0, 1].
  auto bad_relu = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor out = relu(x.detach()), saved = x.detach();
    record("bad_relu", out, {x}, [saved](const Tensor& g) -> std::vector<Tensor> {
      std::vector<double> d;
      for (double v : saved.to_vector<double>()) d.push_back(v > 0 ? 1.0 : v == 0 ? 5.0 : 0.0);
      return {g * tensor(d)};
    });
    return out;
  };
  GradcheckReport r = gradcheck(bad_relu, {values({-1, 0, 2})});
  INFO(r.str());
  REQUIRE_FALSE(r.passed);
  REQUIRE(r.kinks.empty());
  REQUIRE(r.inputs[0].failures == 1);
  REQUIRE(r.inputs[0].worst.index == std::vector<int64_t>{1});
}

TEST_CASE("kink detector off: entries at a kink are compared as before, and fast mode flags too",
          "[gradcheck]") {
  GradcheckOptions off;
  off.detect_kinks = false;
  GradcheckReport r = check([](const Tensor& x) { return relu(x); }, values({-1, 0, 2}), off);
  REQUIRE_FALSE(r.passed);  // central difference 0.5 against relu'(0) = 0
  REQUIRE(r.kinks.empty());
  REQUIRE(r.inputs[0].worst.numerical == Approx(0.5));

  GradcheckOptions fast;
  fast.mode = GradcheckMode::Fast;
  GradcheckReport f = check([](const Tensor& x) { return abs(x); }, values({0, 1, -1}), fast);
  INFO(f.str());
  REQUIRE(f.passed);
  REQUIRE(!f.kinks.empty());
  REQUIRE(f.kinks[0].index.empty());
  REQUIRE(f.kinks[0].str().find("along a random direction") != std::string::npos);
  REQUIRE(f.inputs[0].max_abs_err == 0);  // every projection went through the kink
}
