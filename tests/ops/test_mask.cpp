// tests/ops/test_mask.cpp — masked_fill and where: values with broadcasting masks, gradients that
// skip the filled / unselected elements, gradchecks and errors.
#include "helpers.hpp"

#include <limits>

using namespace tg;

namespace {
Tensor mask_of(std::vector<bool> v, Shape s) { return tensor(v, std::move(s)); }
}  // namespace

TEST_CASE("masked_fill writes value where the broadcast mask is true", "[mask]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor m = mask_of({false, true, true}, {3});
  Tensor y = x.masked_fill(m, -9);
  tgt::require_close(y, {1, -9, -9, 4, -9, -9}, 0, 0);
  y.backward(tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}));
  tgt::require_close(x.grad(), {1, 0, 0, 4, 0, 0}, 0, 0);
  // A causal mask (T, T) over (B, NH, T, T) scores, filled with -inf.
  Tensor s = zeros({1, 1, 2, 2}, kFloat32);
  Tensor causal = mask_of({false, true, false, false}, {2, 2});
  std::vector<float> f =
      masked_fill(s, causal, -std::numeric_limits<double>::infinity()).to_vector<float>();
  REQUIRE(f[0] == 0);
  REQUIRE(std::isinf(f[1]));
  // int64 inputs work too (no gradient).
  tgt::require_close(
      masked_fill(tensor(std::vector<int64_t>{1, 2}), mask_of({true, false}, {2}), 7), {7, 2}, 0,
      0);
}

TEST_CASE("masked_fill gradcheck with broadcasting masks", "[mask]") {
  manual_seed(21);
  Tensor x = tgt::leaf({2, 3, 4});
  for (Shape ms : {Shape{2, 3, 4}, Shape{2, 1, 4}, Shape{4}, Shape{1}}) {
    Tensor m = rand(ms, kFloat64);
    std::vector<bool> mv;
    for (double v : m.to_vector<double>()) mv.push_back(v < 0.5);
    Tensor mask = mask_of(mv, ms);
    tgt::check_grad([mask](const std::vector<Tensor>& in) { return masked_fill(in[0], mask, 3.5); },
                    {x}, "masked_fill mask " + shape_str(ms));
  }
}

TEST_CASE("masked_fill errors name mask and input shapes and dtype", "[mask]") {
  Tensor x = zeros({2, 3});
  REQUIRE_ERROR(masked_fill(x, zeros({2, 3}), 0),
                "masked_fill: mask (2,3) has dtype float32, expected bool (input is (2,3))");
  REQUIRE_ERROR(masked_fill(x, mask_of({true, false, true, false}, {4}), 0),
                "masked_fill: mask (4) does not broadcast to input (2,3)");
  REQUIRE_ERROR(masked_fill(x, mask_of({true, false, true, false, true, false}, {2, 1, 3}), 0),
                "masked_fill: mask (2,1,3) does not broadcast to input (2,3)");
  REQUIRE_ERROR(masked_fill(mask_of({true}, {1}), mask_of({true}, {1}), 0),
                "masked_fill: input (1) has dtype bool");
}

TEST_CASE("where selects with broadcasting and routes gradients", "[mask]") {
  Tensor c = mask_of({true, false, true}, {3});
  Tensor a = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor b = tensor(std::vector<double>{-1, -2}, {2, 1}).requires_grad_();
  Tensor y = where(c, a, b);
  REQUIRE(y.shape() == Shape{2, 3});
  tgt::require_close(y, {1, -1, 3, 4, -2, 6}, 0, 0);
  y.backward(tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}));
  tgt::require_close(a.grad(), {1, 0, 3, 4, 0, 6}, 0, 0);
  tgt::require_close(b.grad(), {2, 5}, 0, 0);
  // The condition alone may set the output shape.
  Tensor c2 = mask_of({true, false, false, true}, {2, 2, 1});
  Tensor y2 = where(c2, tensor(std::vector<double>{7}, {1}), tensor(std::vector<double>{8}, {1}));
  REQUIRE(y2.shape() == Shape{2, 2, 1});
  tgt::require_close(y2, {7, 8, 8, 7}, 0, 0);
}

TEST_CASE("where gradcheck on several broadcast layouts", "[mask]") {
  manual_seed(22);
  struct Layout {
    Shape c, a, b;
  };
  for (const Layout& l : {Layout{{3, 4}, {3, 4}, {3, 4}}, Layout{{4}, {2, 3, 4}, {3, 1}},
                          Layout{{2, 1, 1}, {1, 4}, {3, 4}}, Layout{{1}, {5}, {1}}}) {
    Tensor m = rand(l.c, kFloat64);
    std::vector<bool> mv;
    for (double v : m.to_vector<double>()) mv.push_back(v < 0.5);
    Tensor cond = mask_of(mv, l.c);
    Tensor a = tgt::leaf(l.a), b = tgt::leaf(l.b);
    tgt::check_grad([cond](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); },
                    {a, b}, "where " + shape_str(l.c) + shape_str(l.a) + shape_str(l.b));
  }
}

TEST_CASE("where errors name condition and operand shapes", "[mask]") {
  Tensor a = zeros({2, 3}), b = zeros({3});
  REQUIRE_ERROR(where(zeros({3}, kInt64), a, b),
                "where: condition (3) has dtype int64, expected bool");
  REQUIRE_ERROR(where(mask_of({true, false}, {2}), a, b),
                "where: condition (2), self (2,3) and other (3) cannot be broadcast together");
  REQUIRE_ERROR(where(mask_of({true}, {1}), a, zeros({3}, kFloat64)),
                "where: self (2,3) is float32 but other (3) is float64");
  REQUIRE_ERROR(where(mask_of({true}, {1}), a, zeros({4})),
                "where: shapes (2,3) and (4) cannot be broadcast");
}
