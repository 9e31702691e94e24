// tests/ops/test_rearrange.cpp — einops-style rearrange: values against reshape/permute, size
// inference, anonymous axes, gradchecks, and error messages naming the pattern and the shape.
#include "helpers.hpp"

using namespace tg;

TEST_CASE("rearrange matches reshape and permute", "[rearrange]") {
  manual_seed(31);
  Tensor x = randn({2, 3, 8}, kFloat64);  // (B, T, C) with C = NH·hs = 4·2
  Tensor heads = rearrange(x, "b t (h d) -> b h t d", {{"h", 4}});
  REQUIRE(heads.shape() == Shape{2, 4, 3, 2});
  tgt::require_close(heads, x.reshape({2, 3, 4, 2}).permute({0, 2, 1, 3}), 0, 0);
  // d given instead of h infers h.
  tgt::require_close(rearrange(x, "b t (h d) -> b h t d", {{"d", 2}}), heads, 0, 0);
  Tensor back = rearrange(heads, "b h t d -> b t (h d)");
  REQUIRE(back.shape() == Shape{2, 3, 8});
  tgt::require_close(back, x, 0, 0);
  Tensor y = randn({6, 4}, kFloat64);
  Tensor bt = rearrange(y, "(b t) c -> b t c", {{"b", 2}});
  REQUIRE(bt.shape() == Shape{2, 3, 4});
  tgt::require_close(bt, y.reshape({2, 3, 4}), 0, 0);
  REQUIRE(bt.data_ptr() == y.data_ptr());  // no reordering: a view
  tgt::require_close(rearrange(bt, "b t c -> (b t) c"), y, 0, 0);
  tgt::require_close(rearrange(y, "a b -> b a"), y.transpose(0, 1), 0, 0);
  tgt::require_close(rearrange(y, "a b -> (b a)"), y.transpose(0, 1).reshape({-1}), 0, 0);
  Tensor u = rearrange(x, "b t c -> b 1 t c");
  REQUIRE(u.shape() == Shape{2, 1, 3, 8});
  tgt::require_close(u, x.unsqueeze(1), 0, 0);
  tgt::require_close(rearrange(u, "b 1 t c -> b t c"), x, 0, 0);
  REQUIRE(rearrange(x, "b t c -> b () t (c 1)").shape() == Shape{2, 1, 3, 8});
  REQUIRE(rearrange(x, "b t (h d) -> (d b) t h", {{"h", 2}, {"d", 4}}).shape() == Shape{8, 3, 2});
  tgt::require_close(rearrange(x, "b t (h d) -> (d b) t h", {{"h", 2}}),
                     x.reshape({2, 3, 2, 4}).permute({3, 0, 1, 2}).reshape({8, 3, 2}), 0, 0);
  // float32 and int64 work the same way.
  Tensor xi = arange(0, 6, 1, kInt64).reshape({2, 3});
  tgt::require_close(rearrange(xi, "a b -> b a"), std::vector<double>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("rearrange passes gradcheck", "[rearrange]") {
  manual_seed(32);
  Tensor x = tgt::leaf({2, 3, 4});
  tgt::check_grad(
      [](auto& in) {
        return rearrange(in[0], "b t (h d) -> b h t d", {{"h", 2}});
      },
      {x}, "split heads");
  tgt::check_grad([](auto& in) { return rearrange(in[0], "b h t -> t (b h)"); }, {x}, "merge");
  tgt::check_grad(
      [](auto& in) {
        return rearrange(in[0], "(a b) t c -> c b 1 t a", {{"a", 1}});
      },
      {x}, "anonymous + size-1 axis");
  Tensor heads = tgt::leaf({2, 2, 3, 2});
  tgt::check_grad([](auto& in) { return rearrange(in[0], "b h t d -> b t (h d)") * 3.0; }, {heads},
                  "merge heads");
}

TEST_CASE("rearrange errors name the pattern and the shape", "[rearrange]") {
  Tensor x = zeros({2, 3});
  REQUIRE_ERROR((rearrange(x, "b t (h d) -> b h t d", {{"h", 4}})),
                "rearrange: pattern \"b t (h d) -> b h t d\" expects 3 dims, got (2,3)");
  REQUIRE_ERROR(rearrange(x, "a b -> a c"),
                "rearrange: pattern \"a b -> a c\" on input (2,3): axis \"c\" on the right side "
                "does not appear on the left");
  REQUIRE_ERROR(rearrange(x, "a b -> a"),
                "on input (2,3): axis \"b\" on the left side is missing on the right (rearrange "
                "cannot reduce)");
  REQUIRE_ERROR(
      rearrange(x, "a a -> a"),
      "rearrange: pattern \"a a -> a\" on input (2,3): axis \"a\" is repeated on the left side");
  REQUIRE_ERROR(rearrange(x, "a b -> (a b a)"), "axis \"a\" is repeated on the right side");
  REQUIRE_ERROR((rearrange(x, "a (b c) -> a b c", {{"b", 2}})),
                "rearrange: pattern \"a (b c) -> a b c\" on input (2,3): group (b c) (dim 1 of "
                "size 3) is not divisible by the known sizes' product 2");
  REQUIRE_ERROR(rearrange(x, "a (b c) -> a b c"),
                "cannot infer the sizes of 2 axes in group (b c) (dim 1 of size 3): give all but "
                "one in sizes");
  REQUIRE_ERROR((rearrange(x, "a (b c) -> a b c", {{"b", 2}, {"c", 2}})),
                "group (b c) (dim 1) has size 3 but its axis sizes multiply to 4");
  REQUIRE_ERROR((rearrange(x, "a b -> b a", {{"b", 4}})),
                "group b (dim 1) has size 3 but its axis sizes multiply to 4");
  REQUIRE_ERROR(rearrange(x, "1 b -> b"),
                "group 1 (dim 0) has size 2 but its axis sizes multiply to 1");
  REQUIRE_ERROR((rearrange(x, "a b -> b a", {{"z", 2}})),
                "a size is given for axis \"z\", which is not in the pattern");
  REQUIRE_ERROR((rearrange(x, "a b -> b a", {{"a", 0}})),
                "the size of axis \"a\" must be positive, got 0");
  REQUIRE_ERROR(rearrange(x, "a b b a"),
                "rearrange: pattern \"a b b a\" on input (2,3): expected exactly one \"->\"");
  REQUIRE_ERROR(rearrange(x, "a b -> a -> b"), "expected exactly one \"->\"");
  REQUIRE_ERROR(rearrange(x, "a ... -> a ..."), "the ellipsis \"...\" is not supported");
  REQUIRE_ERROR(rearrange(x, "(a (b)) -> a b"), "nested parentheses on the left side");
  REQUIRE_ERROR(rearrange(x, "a b) -> a b"), "unbalanced ')' on the left side");
  REQUIRE_ERROR(rearrange(x, "a b -> (a b"), "unbalanced '(' on the right side");
  REQUIRE_ERROR(rearrange(x, "a b -> a b 2"),
                "axis \"2\" on the right side: only the anonymous axis 1 is supported");
  REQUIRE_ERROR(rearrange(x, "a b -> a*b"), "unexpected character '*' on the right side");
}
