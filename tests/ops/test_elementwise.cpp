// tests/ops/test_elementwise.cpp — elementwise ops: values, broadcasting, float64 gradchecks on
// several shapes (incl. size-1 dims), scalar forms, comparisons and error messages.
#include "helpers.hpp"

#include <cmath>
#include <functional>

using namespace tg;

namespace {
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
using Unary = std::function<Tensor(const Tensor&)>;

// Shape pairs that broadcast: equal, scalar, trailing, size-1 in the middle, new leading dims.
const std::vector<std::pair<Shape, Shape>> kBroadcastPairs = {
    {{3, 4}, {3, 4}}, {{3, 4}, {}},     {{3, 4}, {4}},         {{2, 3, 4}, {3, 1}},
    {{1, 4}, {3, 1}}, {{5}, {2, 1, 5}}, {{2, 1, 3}, {1, 4, 1}}};
}  // namespace

TEST_CASE("binary ops broadcast with NumPy rules", "[elementwise]") {
  Tensor a = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor(std::vector<double>{10, 20, 30});
  tgt::require_close(add(a, b), std::vector<double>{11, 22, 33, 14, 25, 36});
  tgt::require_close(sub(a, b), std::vector<double>{-9, -18, -27, -6, -15, -24});
  tgt::require_close(a * tensor(std::vector<double>{2, 3}, {2, 1}),
                     std::vector<double>{2, 4, 6, 12, 15, 18});
  tgt::require_close(div(b, a), std::vector<double>{10, 10, 10, 2.5, 4, 5});
  tgt::require_close(pow(a, tensor(std::vector<double>{2})),
                     std::vector<double>{1, 4, 9, 16, 25, 36});
  tgt::require_close(maximum(a, full({1}, 3.5, kFloat64)),
                     std::vector<double>{3.5, 3.5, 3.5, 4, 5, 6});
  tgt::require_close(minimum(a, full({1}, 3.5, kFloat64)),
                     std::vector<double>{1, 2, 3, 3.5, 3.5, 3.5});
  REQUIRE(broadcast_shapes({2, 1, 3}, {4, 1}, "t") == Shape{2, 4, 3});
  REQUIRE(add(zeros({0, 3}), zeros({3})).shape() == Shape{0, 3});
  // int64 arithmetic (no gradient)
  REQUIRE(add(arange(3), arange(3)).to_vector<int64_t>() == std::vector<int64_t>{0, 2, 4});
}

TEST_CASE("binary op gradients on broadcast shapes", "[elementwise]") {
  manual_seed(1);
  std::vector<std::pair<const char*, Binary>> ops = {
      {"add", [](const Tensor& x, const Tensor& y) { return x + y; }},
      {"sub", [](const Tensor& x, const Tensor& y) { return x - y; }},
      {"mul", [](const Tensor& x, const Tensor& y) { return x * y; }},
      {"div", [](const Tensor& x, const Tensor& y) { return x / (y * y + 1.0); }},
      {"pow", [](const Tensor& x, const Tensor& y) { return pow(x * x + 0.5, y); }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); }},
  };
  for (auto& [name, op] : ops) {
    for (auto& [sa, sb] : kBroadcastPairs) {
      Tensor a = tgt::leaf(sa), b = tgt::leaf(sb);
      tgt::check_grad([op = op](const std::vector<Tensor>& in) { return op(in[0], in[1]); }, {a, b},
                      fmt::format("{} {} {}", name, shape_str(sa), shape_str(sb)));
    }
  }
}

TEST_CASE("maximum and minimum share the gradient at ties", "[elementwise]") {
  Tensor a = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor b = tensor(std::vector<double>{1, 5, 0}).requires_grad_();
  maximum(a, b).backward(ones({3}, kFloat64));
  tgt::require_close(a.grad(), std::vector<double>{0.5, 0, 1});
  tgt::require_close(b.grad(), std::vector<double>{0.5, 1, 0});
}

TEST_CASE("unary ops: values and gradients", "[elementwise]") {
  manual_seed(2);
  struct Case {
    const char* name;
    Unary op;
    std::function<double(double)> ref;
    bool positive;  // needs x > 0
  };
  std::vector<Case> cases = {
      {"neg", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, false},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, false},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, true},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); },
       true},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); },
       true},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::fabs(x); }, false},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); },
       false},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](double x) { return 1 / (1 + std::exp(-x)); }, false},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; },
       false},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, false},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); },
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       },
       false},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.7); },
       [](double x) { return std::min(0.7, std::max(-0.5, x)); }, false},
      {"pow 3", [](const Tensor& x) { return pow(x, 3.0); }, [](double x) { return x * x * x; },
       false},
      {"pow -0.5", [](const Tensor& x) { return pow(x, -0.5); },
       [](double x) { return std::pow(x, -0.5); }, true},
      {"rsub", [](const Tensor& x) { return 2.0 - x; }, [](double x) { return 2 - x; }, false},
      {"rdiv", [](const Tensor& x) { return 2.0 / x; }, [](double x) { return 2 / x; }, true},
      {"scalar add/mul/div/sub", [](const Tensor& x) { return ((x + 1.5) * 3.0 - 1.0) / 4.0; },
       [](double x) { return ((x + 1.5) * 3 - 1) / 4; }, false},
  };
  for (auto& c : cases) {
    for (Shape s : {Shape{}, Shape{7}, Shape{2, 1, 3}}) {
      Tensor x = tgt::leaf(s);
      if (c.positive) x = (abs(x.detach()) + 0.2).requires_grad_();
      // Keep away from the kinks of abs/relu/clamp, where central differences are not defined.
      double* p = x.data<double>();
      for (int64_t i = 0; i < x.numel(); ++i)
        for (double k : {0.0, -0.5, 0.7})
          if (std::fabs(p[i] - k) < 1e-3) p[i] += 0.01;
      std::vector<double> want;
      for (double v : x.to_vector<double>()) want.push_back(c.ref(v));
      tgt::require_close(c.op(x), want, 1e-12, 1e-12, c.name);
      tgt::check_grad([op = c.op](const std::vector<Tensor>& in) { return op(in[0]); }, {x},
                      fmt::format("{} {}", c.name, shape_str(s)));
    }
  }
}

TEST_CASE("float32 ops match float64 to float precision", "[elementwise]") {
  manual_seed(3);
  Tensor x = randn({64}, kFloat64);
  Tensor x32 = x.to(kFloat32);
  tgt::require_close(tanh(x32), tanh(x), 1e-6, 1e-5);
  tgt::require_close(gelu(x32, "tanh"), gelu(x, "tanh"), 1e-6, 1e-5);
  tgt::require_close(x32 * x32 + x32, x * x + x, 1e-5, 1e-5);
  // Gradients flow through a dtype conversion.
  Tensor l = x.detach().requires_grad_();
  (l.to(kFloat32) * 2.0f).backward(ones({64}));
  REQUIRE(l.grad().dtype() == kFloat64);
  tgt::require_close(l.grad(), std::vector<double>(64, 2.0));
}

TEST_CASE("comparisons produce bool and no gradient", "[elementwise]") {
  Tensor a = tensor(std::vector<double>{1, 2, 3});
  Tensor b = tensor(std::vector<double>{2});
  REQUIRE(lt(a, b).to_vector<bool>() == std::vector<bool>{true, false, false});
  REQUIRE(le(a, b).to_vector<bool>() == std::vector<bool>{true, true, false});
  REQUIRE(gt(a, b).to_vector<bool>() == std::vector<bool>{false, false, true});
  REQUIRE(ge(a, b).to_vector<bool>() == std::vector<bool>{false, true, true});
  REQUIRE(eq(a, b).to_vector<bool>() == std::vector<bool>{false, true, false});
  REQUIRE(ne(a, b).to_vector<bool>() == std::vector<bool>{true, false, true});
  REQUIRE(logical_not(eq(a, b)).to_vector<bool>() == std::vector<bool>{true, false, true});
  // on numbers: x == 0, as PyTorch (tests/ops/test_torch_corners.cpp)
  REQUIRE(logical_not(a).to_vector<bool>() == std::vector<bool>{false, false, false});
}

TEST_CASE("elementwise errors name the op and every shape", "[elementwise]") {
  Tensor a = zeros({2, 3}), b = zeros({4});
  REQUIRE_ERROR(add(a, b), "add: shapes (2,3) and (4) cannot be broadcast: dim -1 is 3 vs 4");
  REQUIRE_ERROR(sub(a, b), "sub: shapes (2,3) and (4)");
  REQUIRE_ERROR(mul(a, b), "mul: shapes (2,3) and (4)");
  REQUIRE_ERROR(div(a, b), "div: shapes (2,3) and (4)");
  REQUIRE_ERROR(pow(a, b), "pow: shapes (2,3) and (4)");
  REQUIRE_ERROR(maximum(a, b), "maximum: shapes (2,3) and (4)");
  REQUIRE_ERROR(minimum(a, b), "minimum: shapes (2,3) and (4)");
  REQUIRE_ERROR(eq(a, b), "eq: shapes (2,3) and (4)");
  REQUIRE_ERROR(add(a, zeros({3}, kFloat64)),
                "add: self (2,3) is float32 but other (3) is float64");
  // int64 divides in float and pows in int64 (tests/ops/test_integer_ops.cpp); bool does neither
  const Tensor flags = tensor(std::vector<bool>{true, false, true});
  REQUIRE_ERROR(div(flags, flags),
                "div: self (3) and other (3) have dtype bool, expected a floating dtype or int64");
  REQUIRE_ERROR(pow(flags, flags), "pow: self (3) and other (3) have dtype bool");
  REQUIRE_ERROR(add(a, Tensor()), "add: other is undefined");
  // neg and abs take int64 (tests/ops/test_integer_ops.cpp); these take floats only
  Tensor i = arange(3);
  for (auto& [name, op] : std::vector<std::pair<std::string, Unary>>{
           {"exp", [](const Tensor& x) { return exp(x); }},
           {"log", [](const Tensor& x) { return log(x); }},
           {"sqrt", [](const Tensor& x) { return sqrt(x); }},
           {"rsqrt", [](const Tensor& x) { return rsqrt(x); }},
           {"tanh", [](const Tensor& x) { return tanh(x); }},
           {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
           {"relu", [](const Tensor& x) { return relu(x); }},
           {"gelu", [](const Tensor& x) { return gelu(x); }},
           {"clamp", [](const Tensor& x) { return clamp(x, 0, 1); }}}) {
    REQUIRE_ERROR(op(i), name + ": input (3) has dtype int64, expected float32 or float64");
  }
  REQUIRE_ERROR(gelu(a, "fast"), "gelu: approximate must be \"none\" or \"tanh\", got \"fast\"");
  // clamp(a, 1, 0) is PyTorch's max everywhere, not an error (tests/ops/test_torch_corners.cpp)
}

TEST_CASE("sum_to is the one unbroadcast", "[elementwise]") {
  Tensor g = ones({2, 3, 4}, kFloat64);
  tgt::require_close(sum_to(g, {3, 1}), std::vector<double>{8, 8, 8});
  tgt::require_close(sum_to(g, {}), std::vector<double>{24});
  tgt::require_close(sum_to(g, {1, 1, 4}), std::vector<double>{6, 6, 6, 6});
  REQUIRE_ERROR(sum_to(g, {5}), "sum_to: shapes (5) and (2,3,4) cannot be broadcast");
}
