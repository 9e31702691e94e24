// tests/ops/test_advanced_indexing.cpp — issue 40's indexing hardening against PyTorch 1.13
// (tests/fixtures/indexing/, tools/make_indexing_fixtures.py): x.index({...}) with several, n-D,
// broadcast, non-adjacent, negative and bool tensor indices among integers, slices, None and
// Ellipsis; index_put / index_put_ with and without accumulate; pad with negative pads in every
// mode; scatter with one value. Values and gradients against the fixtures, float64 gradcheck and
// gradgradcheck, the corners worked out by hand (repeated writes, 0-dim bool indices, bool and
// int64 targets) and the error messages. In-place writes through overlapping views: test_inplace.
#include "indexing_cases.hpp"

using namespace tg;
using namespace tg::indexing;

namespace {
using tgt::one;
Tensor i64(std::vector<int64_t> v, Shape s) { return tensor(v, std::move(s)); }
std::vector<double> values(const Tensor& t) { return t.contiguous().to_vector<double>(); }

std::vector<tgt::IndexingCase> cases() {
  using In = const std::vector<Tensor>&;
  const Slice all;
  return {
      {"adv_two",
       {"x", "i", "j"},
       [](In in) {
         return one(in[0].index({in[1], in[2]}));
       }},
      {"adv_2d",
       {"x", "i"},
       [=](In in) {
         return one(in[0].index({all, in[1]}));
       }},
      {"adv_nonadjacent",
       {"x", "i", "j"},
       [=](In in) {
         return one(in[0].index({in[1], all, in[2]}));
       }},
      {"adv_broadcast",
       {"x", "i", "j"},
       [](In in) {
         return one(in[0].index({Ellipsis, in[1], in[2]}));
       }},
      {"adv_mixed",
       {"x", "i", "j"},
       [=](In in) {
         return one(in[0].index({1, all, in[1], None, in[2]}));
       }},
      {"adv_scalar_index",
       {"x", "i", "j"},
       [](In in) {
         return one(in[0].index({in[1], Slice(1, None), in[2]}));
       }},
      {"adv_none_first",
       {"x", "i", "j"},
       [](In in) {
         return one(in[0].index({None, in[1], Ellipsis, in[2]}));
       }},
      {"adv_mask_and_index",
       {"x", "m", "j"},
       [=](In in) {
         return one(in[0].index({in[1], all, in[2]}));
       }},
      {"adv_mask2d_index",
       {"x", "m", "j"},
       [](In in) {
         return one(in[0].index({in[1], in[2]}));
       }},
      {"put_accumulate",
       {"x", "i", "j", "v"},
       [](In in) {
         return one(index_put(in[0], {in[1], in[2]}, in[3], true));
       }},
      {"put_distinct",
       {"x", "i", "j", "v"},
       [](In in) {
         return one(index_put(in[0], {in[1], in[2]}, in[3]));
       }},
      {"put_nonadjacent_accumulate",
       {"x", "i", "j", "v"},
       [=](In in) {
         return one(index_put(in[0], {in[1], all, in[2]}, in[3], true));
       }},
      {"pad_constant_crop",
       {"x"},
       [](In in) {
         return one(pad(in[0], {-1, 2, 1, -2}, "constant", 0.5));
       }},
      {"pad_reflect_crop",
       {"x"},
       [](In in) {
         return one(pad(in[0], {3, -2, -1, 2}, "reflect"));
       }},
      {"pad_replicate_crop",
       {"x"},
       [](In in) {
         return one(pad(in[0], {-6, 3, -1, 1}, "replicate"));
       }},
      {"pad_circular_crop",
       {"x"},
       [](In in) {
         return one(pad(in[0], {-2, 3, 2, -1}, "circular"));
       }},
      {"scatter_value", {"x", "i"}, [](In in) { return one(scatter(in[0], 1, in[1], 1.0)); }},
  };
}
}  // namespace

TEST_CASE("advanced indexing, index_put, negative pads and scatter(value) match PyTorch",
          "[index][advanced][parity]") {
  for (const tgt::IndexingCase& c : cases()) {
    SECTION(c.name + " float64") { tgt::check_case(c, kFloat64, 1e-12, 1e-10); }
    SECTION(c.name + " float32") { tgt::check_case(c, kFloat32, 1e-5, 1e-5); }
  }
  // the shapes the rules give (the fixtures hold PyTorch's)
  CHECK(tgt::fixture("adv_nonadjacent", "out").shape() == Shape{2, 3, 4});   // B first
  CHECK(tgt::fixture("adv_mixed", "out").shape() == Shape{3, 3, 1});         // None splits them
  CHECK(tgt::fixture("adv_broadcast", "out").shape() == Shape{2, 3, 3, 2});  // adjacent: in place
}

TEST_CASE("advanced indexing and index_put pass gradcheck and gradgradcheck",
          "[index][advanced][grad]") {
  manual_seed(40);
  const Tensor i = i64({2, 0, 2, -1}, {2, 2}), j = i64({1, -1}, {2});
  const Tensor mask = tensor(std::vector<bool>{true, false, true});
  const Slice all;
  using V = const std::vector<Tensor>&;
  auto sq = [](const Tensor& y) { return (y * y).sum(); };
  const std::vector<std::pair<std::string, GradcheckFn>> fns = {
      {"x[i, :, j] (repeats sum)",
       [&](V in) {
         return sq(in[0].index({i, all, j}));
       }},
      {"x[mask, j]",
       [&](V in) {
         return sq(in[0].index({mask, j}));
       }},
      {"x[None, 1, ..., i]",
       [&](V in) {
         return sq(in[0].index({None, 1, Ellipsis, i}));
       }},
      {"index_put accumulate",
       [&](V in) {
         return sq(index_put(in[0], {i, j}, in[1].narrow(1, 0, 1), true));
       }},
      {"index_put (last write)",
       [&](V in) {
         return sq(index_put(in[0], {i, all, j}, in[1].narrow(1, 0, 1)));
       }},
  };
  for (const auto& [name, fn] : fns) {
    const std::vector<Tensor> in = {tgt::leaf({3, 4, 5}), tgt::leaf({2, 2})};
    tgt::check_grad(fn, in, name);
    tgt::check_second_order(name, fn, in);
  }
  for (const std::string mode : {"constant", "reflect", "replicate", "circular"}) {
    const GradcheckFn fn = [&](V in) { return sq(pad(in[0], {-1, 2, 1, -2}, mode, 0.25)); };
    tgt::check_grad(fn, {tgt::leaf({2, 3, 4})}, "pad crop " + mode);
    tgt::check_second_order("pad crop " + mode, fn, {tgt::leaf({2, 3, 4})});
  }
  const GradcheckFn sv = [&](V in) { return sq(scatter(in[0], 1, i64({1, 1, 0}, {1, 3}), 2.0)); };
  tgt::check_grad(sv, {tgt::leaf({2, 4})}, "scatter value");
  tgt::check_second_order("scatter value", sv, {tgt::leaf({2, 4})});
}

TEST_CASE("index_put_: repeated positions, broadcast values, bool and int64 targets",
          "[index][advanced][inplace]") {
  // without accumulate the last write lands (PyTorch's CPU order) and alone gets the gradient
  // (PyTorch 1.13 hands every repeated value the gradient: its docs call repeats undefined)
  Tensor x = zeros({3, 4}, kFloat64).requires_grad_();
  Tensor v = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  const Tensor i = i64({0, 2, 0}, {3}), j = i64({1, 1, 1}, {3});
  Tensor y = x * 1.0;
  y.index_put_({i, j}, v);
  CHECK(values(y) == std::vector<double>{0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0});
  (y * arange(0, 12, 1, kFloat64).reshape({3, 4})).sum().backward();
  CHECK(values(v.grad()) == std::vector<double>{0, 9, 1});
  CHECK(values(x.grad()) == std::vector<double>{0, 0, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11});
  Tensor a = zeros({3, 4}, kFloat64);
  index_put_(a, {i, j}, v.detach(), true);  // repeats sum
  CHECK(values(a) == std::vector<double>{0, 4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0});
  index_put_(a, {i}, tensor(std::vector<double>{1, 2, 3, 4}), true);  // a row broadcast to (3, 4)
  CHECK(values(a.index({0})) == std::vector<double>{2, 8, 6, 8});
  Tensor b = zeros({3}, kBool);  // bool: accumulate is a logical or
  index_put_(b, {i64({0, 0}, {2})}, tensor(std::vector<bool>{true, true}), true);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, false});
  Tensor n = zeros({3}, kInt64);
  index_put_(n, {i64({0, 0}, {2})}, i64({4, 5}, {2}), true);
  CHECK(n.to_vector<int64_t>() == std::vector<int64_t>{9, 0, 0});
  index_put_(n, {i64({2, 2}, {2})}, i64({4, 5}, {2}));
  CHECK(n.to_vector<int64_t>() == std::vector<int64_t>{9, 0, 5});
  // index_put is out of place; a 0-dim bool index adds a dim (true: kept, false: empty)
  Tensor c = arange(0, 6, 1, kFloat64).reshape({2, 3});
  CHECK(values(index_put(c, {i64({1}, {1})}, scalar_tensor(-1.0, kFloat64))) ==
        std::vector<double>{0, 1, 2, -1, -1, -1});
  CHECK(values(c) == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(c.index({scalar_tensor(true, kBool)}).shape() == Shape{1, 2, 3});
  CHECK(c.index({scalar_tensor(false, kBool)}).shape() == Shape{0, 2, 3});
  CHECK(c.index({i64({1, 0}, {2}), scalar_tensor(true, kBool)}).shape() == Shape{2, 3});
  CHECK(zeros({2, 3, 4}).index({i64({}, {0}), Slice(), i64({}, {0})}).shape() == Shape{0, 3});
  CHECK(values(c.index({Slice(), i64({-1, -3}, {2})})) == std::vector<double>{2, 0, 5, 3});
}

TEST_CASE("advanced indexing errors name the op, the index, the dim and every shape",
          "[index][advanced]") {
  Tensor x = zeros({2, 3, 4}, kFloat64);
  REQUIRE_ERROR(x.index({i64({1, 0}, {2}), i64({0, 1, 2}, {3})}),
                "index: shape mismatch: indexing tensors could not be broadcast together with "
                "shapes (2), (3) (input (2,3,4)");
  REQUIRE_ERROR(x.index({Slice(), i64({0, 5}, {2})}),
                "index: index 5 is out of range for dim 1 of size 3 (input (2,3,4)");
  REQUIRE_ERROR(x.index({Slice(), i64({-4}, {1})}), "index: index -4 is out of range for dim 1");
  REQUIRE_ERROR(x.index({i64({0}, {1}), None, i64({3}, {1})}),
                "index: index 3 is out of range for dim 1 of size 3");
  REQUIRE_ERROR(
      x.index({tensor(std::vector<bool>{true, false, true}, {3})}),
      "index: bool mask (3) must match the shape (2) of the dims it indexes (dims 0 to 0");
  REQUIRE_ERROR(x.index({Slice(), tensor(std::vector<double>{1}, {1})}),
                "index: a tensor index must be int64 or bool, got float64");
  REQUIRE_ERROR(index_put_(x, {i64({0, 1, 0}, {3})}, zeros({2}, kFloat64)),
                "index_put_: shape mismatch: value tensor of shape (2) cannot be broadcast to "
                "indexing result of shape (3,3,4)");
  REQUIRE_ERROR(index_put(x, {i64({7}, {1})}, zeros({}, kFloat64), true),
                "index_put: index 7 is out of range for dim 0 of size 2");
  REQUIRE_ERROR(index_put_(x, {Slice(), Slice(), 9}, 1.0),
                "index_put_: index 9 is out of range for dim 2 of size 4");
}
