// tests/ops/test_shape.cpp — shape ops: storage sharing of the views, values against hand-written
// and loop references, gradchecks (size-1 dims, negative dims), and error messages; the repeat
// family's 0-dim inputs, negative pads and oversized outputs as PyTorch 1.13 answers them.
#include "helpers.hpp"

#include <limits>

using namespace tg;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
Tensor iota(const Shape& s, DType dt = kFloat64) {
  return arange(0, shape_numel(s), 1, dt).reshape(s);
}
std::vector<double> range(int64_t a, int64_t b, int64_t step = 1) {
  std::vector<double> v;
  for (int64_t i = a; i < b; i += step) v.push_back(static_cast<double>(i));
  return v;
}
std::vector<double> values_of(const Tensor& t) { return t.contiguous().to_vector<double>(); }
}  // namespace

TEST_CASE("reshape and view share storage and infer -1", "[shape]") {
  Tensor x = iota({2, 3}, kFloat32);
  Tensor y = x.reshape({3, -1});
  REQUIRE(y.shape() == Shape{3, 2});
  y.data<float>()[1] = 42;            // write through the view ...
  REQUIRE(x.data<float>()[1] == 42);  // ... read through the original
  x.data<float>()[5] = -7;
  REQUIRE(y.data<float>()[5] == -7);
  Tensor v = view(x, {6});
  REQUIRE(v.data_ptr() == x.data_ptr());
  REQUIRE(reshape(x, {-1}).shape() == Shape{6});
  REQUIRE(reshape(scalar_tensor(3.0), {1, 1}).shape() == Shape{1, 1});
  REQUIRE(reshape(ones({1, 1}), {}).dim() == 0);
  REQUIRE(reshape(zeros({0, 4}), {4, 0}).shape() == Shape{4, 0});
  // A view of a narrowed copy keeps working (offset 0 storage of its own).
  Tensor n = narrow(iota({4, 2}), 0, 1, 2).reshape({4});
  tgt::require_close(n, std::vector<double>{2, 3, 4, 5});
}

TEST_CASE("flatten, squeeze and unsqueeze are views", "[shape]") {
  Tensor x = iota({2, 1, 3, 1});
  Tensor f = flatten(x);
  REQUIRE(f.shape() == Shape{6});
  REQUIRE(f.data_ptr() == x.data_ptr());
  REQUIRE(flatten(x, 1).shape() == Shape{2, 3});
  REQUIRE(flatten(x, 0, -2).shape() == Shape{6, 1});
  REQUIRE(flatten(x, -3, 2).shape() == Shape{2, 3, 1});
  REQUIRE(flatten(scalar_tensor(1.0)).shape() == Shape{1});
  REQUIRE(squeeze(x).shape() == Shape{2, 3});
  REQUIRE(squeeze(x, 1).shape() == Shape{2, 3, 1});
  REQUIRE(x.squeeze(-1).shape() == Shape{2, 1, 3});
  REQUIRE(x.squeeze(0).shape() == Shape{2, 1, 3, 1});  // size 2: a no-op, like PyTorch
  REQUIRE(x.squeeze(0).data_ptr() == x.data_ptr());
  REQUIRE(x.unsqueeze(0).shape() == Shape{1, 2, 1, 3, 1});
  REQUIRE(x.unsqueeze(-1).shape() == Shape{2, 1, 3, 1, 1});
  REQUIRE(unsqueeze(x, 4).shape() == Shape{2, 1, 3, 1, 1});
  REQUIRE(unsqueeze(x, -5).shape() == Shape{1, 2, 1, 3, 1});
  Tensor u = unsqueeze(x, 2);
  u.data<double>()[0] = 9;
  REQUIRE(x.data<double>()[0] == 9);
  REQUIRE(squeeze(scalar_tensor(1.0), 0).dim() == 0);
}

TEST_CASE("transpose and permute are views in the new order", "[shape]") {
  Tensor x = iota({2, 3});
  Tensor t = x.transpose(0, 1);
  REQUIRE(t.shape() == Shape{3, 2});
  tgt::require_close(t, std::vector<double>{0, 3, 1, 4, 2, 5});
  REQUIRE(t.data_ptr() == x.data_ptr());  // a view (tests/ops/test_views.cpp)
  REQUIRE_FALSE(t.is_contiguous());
  tgt::require_close(transpose(x, -1, -2), t);
  Tensor y = iota({2, 3, 4});
  Tensor p = permute(y, {2, 0, 1});
  REQUIRE(p.shape() == Shape{4, 2, 3});
  std::vector<double> want;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(i * 12 + j * 4 + k);
  tgt::require_close(p, want, 0, 0);
  tgt::require_close(y.permute({-1, 0, -2}), p);
  // int64 and bool tensors permute too (no gradient).
  Tensor yi = iota({2, 3}, kInt64);
  tgt::require_close(yi.transpose(0, 1), std::vector<double>{0, 3, 1, 4, 2, 5});
  Tensor b = tensor(std::vector<bool>{true, false, false, true, true, false}, {3, 2});
  tgt::require_close(b.transpose(0, 1), std::vector<double>{1, 0, 1, 0, 1, 0});
}

TEST_CASE("expand broadcasts size-1 and new leading dims", "[shape]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3}, {3, 1});
  Tensor e = x.expand({2, 3, 4});
  REQUIRE(e.shape() == Shape{2, 3, 4});
  std::vector<double> want;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) want.push_back(i + 1);
  tgt::require_close(e, want, 0, 0);
  REQUIRE(expand(x, {-1, 2}).shape() == Shape{3, 2});
  REQUIRE(expand(x, {3, 1}).shape() == Shape{3, 1});
  REQUIRE(expand(scalar_tensor(5.0), {2}).to_vector<double>() == std::vector<double>{5, 5});
  REQUIRE(expand(x, {3, 0}).numel() == 0);
}

TEST_CASE("narrow and slice follow PyTorch and Python semantics", "[shape]") {
  Tensor x = iota({10});
  tgt::require_close(narrow(x, 0, 2, 3), std::vector<double>{2, 3, 4});
  tgt::require_close(x.narrow(-1, -3, 2), std::vector<double>{7, 8});
  REQUIRE(narrow(x, 0, 10, 0).numel() == 0);
  tgt::require_close(slice(x, 0, 1, 8, 3), std::vector<double>{1, 4, 7});
  tgt::require_close(slice(x, 0, -3, 100, 2), std::vector<double>{7, 9});
  tgt::require_close(slice(x, 0, -100, 3), std::vector<double>{0, 1, 2});
  tgt::require_close(slice(x, 0, 0, 10, 4), std::vector<double>{0, 4, 8});
  REQUIRE(slice(x, 0, 5, 2).numel() == 0);
  REQUIRE(slice(x, 0, 12, 20).numel() == 0);
  Tensor y = iota({3, 4});
  Tensor s = slice(y, 1, 1, 4, 2);
  REQUIRE(s.shape() == Shape{3, 2});
  tgt::require_close(s, std::vector<double>{1, 3, 5, 7, 9, 11});
  tgt::require_close(narrow(y, -2, 1, 2), range(4, 12));
}

TEST_CASE("index_select gathers rows - repeated indices accumulate gradient", "[shape]") {
  Tensor x = iota({3, 2}).requires_grad_();
  Tensor idx = tensor(std::vector<int64_t>{2, 0, 2});
  Tensor y = index_select(x, 0, idx);
  tgt::require_close(y, std::vector<double>{4, 5, 0, 1, 4, 5});
  y.sum().backward();
  tgt::require_close(x.grad(), std::vector<double>{1, 1, 0, 0, 2, 2});
  Tensor z = index_select(iota({2, 3}), -1, tensor(std::vector<int64_t>{1, 1}));
  tgt::require_close(z, std::vector<double>{1, 1, 4, 4});
  Tensor zi = index_select(iota({2, 3}, kInt64), 1, tensor(std::vector<int64_t>{2}, {1}));
  tgt::require_close(zi, std::vector<double>{2, 5});
  REQUIRE(index_select(x, 0, tensor(std::vector<int64_t>{}, {0})).shape() == Shape{0, 2});
  // A 0-dim index (what tensor() makes of one value) selects one row, keeping the dim.
  REQUIRE(index_select(x, 1, tensor(std::vector<int64_t>{1})).shape() == Shape{3, 1});
}

TEST_CASE("cat, stack, split and chunk", "[shape]") {
  Tensor a = iota({2, 2}), b = iota({2, 1}) + 10.0;
  Tensor c = cat({a, b}, 1);
  REQUIRE(c.shape() == Shape{2, 3});
  tgt::require_close(c, std::vector<double>{0, 1, 10, 2, 3, 11});
  tgt::require_close(cat({a, a}, -2), std::vector<double>{0, 1, 2, 3, 0, 1, 2, 3});
  tgt::require_close(cat({a}), a);
  Tensor s = stack({a, a * 2.0});
  REQUIRE(s.shape() == Shape{2, 2, 2});
  tgt::require_close(s, std::vector<double>{0, 1, 2, 3, 0, 2, 4, 6});
  Tensor s2 = stack({a, a * 2.0}, -1);
  REQUIRE(s2.shape() == Shape{2, 2, 2});
  tgt::require_close(s2, std::vector<double>{0, 0, 1, 2, 2, 4, 3, 6});
  Tensor x = iota({5, 2});
  auto parts = split(x, 2);
  REQUIRE(parts.size() == 3);
  REQUIRE(parts[2].shape() == Shape{1, 2});
  tgt::require_close(parts[1], std::vector<double>{4, 5, 6, 7});
  auto p2 = split(x, std::vector<int64_t>{1, 4}, 0);
  REQUIRE(p2[1].shape() == Shape{4, 2});
  tgt::require_close(p2[0], std::vector<double>{0, 1});
  auto p3 = split(x, 1, -1);
  REQUIRE(p3.size() == 2);
  tgt::require_close(p3[1], std::vector<double>{1, 3, 5, 7, 9});
  // chunk: pieces of ceil(n / chunks), so 6 into 4 gives 3 pieces of 2.
  auto ch = chunk(iota({6}), 4);
  REQUIRE(ch.size() == 3);
  tgt::require_close(ch[2], std::vector<double>{4, 5});
  auto ch5 = chunk(iota({5}), 3);
  REQUIRE(ch5.size() == 3);
  REQUIRE(ch5[2].numel() == 1);
  REQUIRE(chunk(zeros({0, 2}), 3).size() == 3);
  REQUIRE(split(zeros({0, 2}), 2).size() == 1);
}

TEST_CASE("shape ops pass gradcheck", "[shape]") {
  manual_seed(21);
  Tensor x = tgt::leaf({2, 3, 4});
  Tensor x1 = tgt::leaf({3, 1, 2});
  Tensor w = randn({2, 3, 4}, kFloat64);  // a fixed weight makes every Jacobian entry distinct
  const std::vector<std::pair<std::string, Fn>> cases = {
      {"reshape",
       [w](auto& in) {
         return reshape(in[0] * w, {4, -1});
       }},
      {"view", [](auto& in) { return view(in[0], {-1}); }},
      {"flatten 1..2", [](auto& in) { return flatten(in[0], 1, -1); }},
      {"transpose", [](auto& in) { return transpose(in[0], 0, -1); }},
      {"permute",
       [](auto& in) {
         return permute(in[0], {1, -1, 0});
       }},
      {"narrow", [](auto& in) { return narrow(in[0], -1, 1, 2); }},
      {"slice step 2", [](auto& in) { return slice(in[0], 2, -10, 10, 2); }},
      {"slice dim 1", [](auto& in) { return slice(in[0], 1, 1, 3); }},
      {"index_select dup",
       [](auto& in) {
         return index_select(in[0], 1, tensor(std::vector<int64_t>{2, 0, 2, 2}));
       }},
      {"split sizes",
       [](auto& in) {
         auto p = split(in[0], std::vector<int64_t>{1, 3}, -1);
         return cat({p[1] * 2.0, p[0] * 3.0}, -1);
       }},
      {"chunk",
       [](auto& in) {
         auto p = chunk(in[0], 2, 1);  // sizes 2, 1
         return cat({p[1] * 5.0, p[0]}, 1);
       }},
      {"stack",
       [](auto& in) {
         return stack({in[0], in[0] * 2.0}, -2);
       }},
  };
  for (const auto& [name, fn] : cases) tgt::check_grad(fn, {x}, name);
  const std::vector<std::pair<std::string, Fn>> cases1 = {
      {"squeeze all", [](auto& in) { return squeeze(in[0]) * 2.0; }},
      {"squeeze -2", [](auto& in) { return squeeze(in[0], -2); }},
      {"unsqueeze -1", [](auto& in) { return unsqueeze(in[0], -1); }},
      {"expand",
       [](auto& in) {
         return expand(in[0], {2, 3, 4, 2});
       }},
      {"expand -1",
       [](auto& in) {
         return in[0].expand({-1, 3, -1});
       }},
      {"permute size-1",
       [](auto& in) {
         return permute(in[0], {1, 2, 0});
       }},
      {"cat dim 1",
       [](auto& in) {
         return cat({in[0], in[0] * 3.0, in[0]}, 1);
       }},
  };
  for (const auto& [name, fn] : cases1) tgt::check_grad(fn, {x1}, name);
  // cat with two leaves, one not requiring grad.
  Tensor y = tgt::leaf({2, 5, 4});
  Tensor k = randn({2, 1, 4}, kFloat64);
  tgt::check_grad([k](auto& in) { return cat({in[0], k, in[1]}, -2); }, {x, y}, "cat two leaves");
}

TEST_CASE("shape op errors name the op and every shape", "[shape]") {
  Tensor x = zeros({3, 3});
  REQUIRE_ERROR(reshape(x, {2, 5}),
                "reshape: shape (2,5) is invalid for input of shape (3,3) (9 elements)");
  REQUIRE_ERROR(reshape(x, {-1, 2}), "reshape: shape (-1,2) is invalid for input of shape (3,3)");
  REQUIRE_ERROR(view(x, {-1, -1}),
                "view: only one dimension can be inferred in shape (-1,-1) (input (3,3))");
  REQUIRE_ERROR(reshape(x, {-3, 3}), "reshape: invalid size -3 in shape (-3,3)");
  REQUIRE_ERROR(reshape(zeros({0, 2}), {0, -1}),
                "reshape: cannot infer the -1 in shape (0,-1) for input (0,2)");
  REQUIRE_ERROR(flatten(zeros({2, 3, 4}), 2, 1),
                "flatten: start_dim 2 comes after end_dim 1 for input (2,3,4)");
  REQUIRE_ERROR(squeeze(x, 2), "squeeze: dim 2 out of range for a tensor of shape (3,3)");
  REQUIRE_ERROR(unsqueeze(x, 3), "unsqueeze: dim 3 out of range for a tensor of shape (3,3)");
  REQUIRE_ERROR(transpose(x, 0, 2), "transpose: dim 2 out of range for a tensor of shape (3,3)");
  REQUIRE_ERROR(permute(x, {0}), "permute: dims [0] has 1 entries but input (3,3) has 2 dims");
  REQUIRE_ERROR(permute(x, {1, -1}), "permute: dim 1 repeated in dims [1,-1] for input (3,3)");
  REQUIRE_ERROR(expand(x, {3, 4}),
                "expand: size 4 must match the existing size 3 at non-singleton dim 1 (input "
                "(3,3), target (3,4))");
  REQUIRE_ERROR(expand(x, {3}), "expand: target (3) has fewer dims than input (3,3)");
  REQUIRE_ERROR(expand(x, {-1, 3, 3}), "expand: size -1 is not allowed for the new leading dim 0");
  REQUIRE_ERROR(narrow(x, 0, 2, 2),
                "narrow: start 2 and length 2 are out of range for dim 0 of size 3 (input (3,3))");
  REQUIRE_ERROR(narrow(x, 1, 0, -1), "narrow: start 0 and length -1 are out of range");
  REQUIRE_ERROR(slice(x, 0, 0, 2, 0), "slice: step must be positive, got 0 (dim 0 of input (3,3))");
  REQUIRE_ERROR(slice(x, 2, 0, 2), "slice: dim 2 out of range for a tensor of shape (3,3)");
  Tensor idx = tensor(std::vector<int64_t>{0, 3});
  REQUIRE_ERROR(index_select(x, 1, idx),
                "index_select: index 3 at position 1 is out of range for dim 1 of size 3 (input "
                "(3,3), index (2))");
  REQUIRE_ERROR(index_select(x, 0, tensor(std::vector<int64_t>{-1}, {1})),
                "index_select: index -1 at position 0 is out of range");
  REQUIRE_ERROR(index_select(x, 0, tensor(std::vector<double>{0}, {1})),
                "index_select: index (1) has dtype float64, expected int64");
  REQUIRE_ERROR(index_select(x, 0, zeros({1, 1}, kInt64)),
                "index_select: index (1,1) must be 1-D (input (3,3))");
  REQUIRE_ERROR(cat({}, 0), "cat: expected a non-empty list of tensors");
  REQUIRE_ERROR(cat({x, zeros({3, 3}, kFloat64)}),
                "cat: tensors[0] (3,3) is float32 but tensors[1] (3,3) is float64");
  REQUIRE_ERROR(cat({x, zeros({2, 2})}, 1),
                "cat: tensors[1] (2,2) does not match tensors[0] (3,3): shapes must be equal "
                "except in dim 1");
  REQUIRE_ERROR(cat({x, zeros({3})}), "cat: tensors[1] (3) does not match tensors[0] (3,3)");
  REQUIRE_ERROR(cat({x, Tensor()}), "cat: tensors[1] is undefined");
  REQUIRE_ERROR(cat({scalar_tensor(1)}), "cat: tensors[0] is 0-dim () and cannot be concatenated");
  REQUIRE_ERROR(stack({x, zeros({3, 2})}),
                "stack: tensors[1] (3,2) and tensors[0] (3,3) must have the same shape");
  REQUIRE_ERROR(stack({x, x}, 3), "stack: dim 3 out of range for a tensor of shape (3,3)");
  REQUIRE_ERROR(split(x, 0), "split: split_size must be positive, got 0 (dim 0 of input (3,3))");
  REQUIRE_ERROR(split(x, std::vector<int64_t>{1, 1}, 1),
                "split: sizes [1,1] sum to 2 but dim 1 of input (3,3) has size 3");
  REQUIRE_ERROR(split(x, std::vector<int64_t>{4, -1}, 1),
                "split: sizes [4,-1] has a negative entry (input (3,3))");
  REQUIRE_ERROR(chunk(x, 0), "chunk: chunks must be positive, got 0 (input (3,3))");
  REQUIRE_ERROR(reshape(Tensor(), {1}), "reshape: input is undefined");
}

TEST_CASE("repeat family: values by hand, meshgrid, linspace, eye(n, m), errors",
          "[shape][repeat]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3}, {3});
  CHECK(flip(x, {0}).to_vector<double>() == std::vector<double>{3, 2, 1});
  CHECK(roll(x, {1}).to_vector<double>() == std::vector<double>{3, 1, 2});
  CHECK(roll(x, {-4}).to_vector<double>() == std::vector<double>{2, 3, 1});
  CHECK(repeat(x, {2}).to_vector<double>() == std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK(repeat_interleave(x, 2).to_vector<double>() == std::vector<double>{1, 1, 2, 2, 3, 3});
  CHECK(repeat_interleave(x, tensor(std::vector<int64_t>{0, 2, 1}, {3}), 0).to_vector<double>() ==
        std::vector<double>{2, 2, 3});
  CHECK(pad(x, {2, 1}, "reflect").to_vector<double>() == std::vector<double>{3, 2, 1, 2, 3, 2});
  CHECK(pad(x, {1, 2}, "replicate").to_vector<double>() == std::vector<double>{1, 1, 2, 3, 3, 3});
  CHECK(pad(x, {1, 1}, "circular").to_vector<double>() == std::vector<double>{3, 1, 2, 3, 1});
  CHECK(unflatten(zeros({2, 12}), 1, {3, -1}).shape() == Shape{2, 3, 4});
  // meshgrid: "ij" and "xy"
  std::vector<Tensor> g = meshgrid({x, tensor(std::vector<double>{10, 20}, {2})});
  CHECK(g[0].shape() == Shape{3, 2});
  CHECK(g[1].contiguous().to_vector<double>() == std::vector<double>{10, 20, 10, 20, 10, 20});
  std::vector<Tensor> gx = meshgrid({x, tensor(std::vector<double>{10, 20}, {2})}, "xy");
  CHECK(gx[0].shape() == Shape{2, 3});
  CHECK(gx[0].contiguous().to_vector<double>() == std::vector<double>{1, 2, 3, 1, 2, 3});
  // linspace ends exactly at end; eye(n, m)
  std::vector<double> ls = linspace(0.0, 1.0, 4, kFloat64).to_vector<double>();
  CHECK(ls == std::vector<double>{0.0, 1.0 / 3, 1.0 - 1.0 / 3, 1.0});
  CHECK(linspace(2.0, 5.0, 1, kFloat64).to_vector<double>() == std::vector<double>{2.0});
  CHECK(eye(2, 3, kFloat64).to_vector<double>() == std::vector<double>{1, 0, 0, 0, 1, 0});
  // gradients: reflected elements sum their gradients (1 and 3 appear twice, 2 three times)
  Tensor xl = tensor(std::vector<double>{1, 2, 3}, {3}).requires_grad_();
  sum(pad(xl, {2, 2}, "reflect")).backward();
  CHECK(xl.grad().to_vector<double>() == std::vector<double>{2, 3, 2});
  REQUIRE_ERROR(pad(x, {3, 0}, "reflect"),
                "pad: reflect padding (3, 0) must be less than the dim's size (dim 0 of size 3");
  REQUIRE_ERROR(pad(x, {1, 1}, "wrap"), "pad: mode \"wrap\" is not one of constant");
  REQUIRE_ERROR(pad(x, {1}), "pad: pads [1] must hold pairs");
  REQUIRE_ERROR(flip(x, {0, -1}), "flip: dim -1 appears more than once");
  REQUIRE_ERROR(roll(x, {1, 2}, {0}), "roll: shifts [1, 2] and dims [0] must have the same length");
  REQUIRE_ERROR(repeat(zeros({2, 3}), {2}),
                "repeat: 1 repeats [2] cannot be fewer than the 2 dims");
  REQUIRE_ERROR(
      unflatten(zeros({2, 12}), 1, {5, -1}),
      "unflatten: sizes (5,-1) don't multiply up to the size 12 of dim 1 of input (2,12)");
  REQUIRE_ERROR(linspace(0, 1, -1), "linspace: number of steps must be >= 0, got -1");
  REQUIRE_ERROR(meshgrid({zeros({2, 2})}), "meshgrid: every tensor must be 0-D or 1-D, got (2,2)");
}

// PyTorch 1.13's answers (checked with torch) for 0-dim inputs, negative pads and sizes too
// large to allocate.
TEST_CASE("repeat family: 0-dim inputs, as PyTorch", "[shape][repeat]") {
  const Tensor s = scalar_tensor(2.0, kFloat64);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {-1}}) {
    const Tensor f = flip(s, dims);  // the scalar itself, a new tensor
    CHECK((f.shape() == Shape{} && f.item<double>() == 2.0 && !f.same(s)));
  }
  CHECK(roll(s, {1}).shape() == Shape{});  // no dims: over the flattened tensor, then back
  CHECK(repeat_interleave(s, 3).to_vector<double>() == std::vector<double>{2, 2, 2});
  CHECK(repeat_interleave(s, tensor(std::vector<int64_t>{3}, {1})).shape() == Shape{3});
  CHECK(values_of(repeat_interleave(tensor(std::vector<double>{1, 2}, {2}),
                                    scalar_tensor(2, kInt64), 0)) ==
        std::vector<double>{1, 1, 2, 2});
  REQUIRE_ERROR(flip(s, {1}), "flip: dim 1 out of range for input (): expected [-1, 0]");
  for (int64_t d : {0, -1}) {
    REQUIRE_ERROR(repeat_interleave(s, 3, d),
                  fmt::format("repeat_interleave: dim {} specified but input () is 0-dim", d));
    REQUIRE_ERROR(roll(s, {1}, {d}),
                  fmt::format("roll: dim {} specified but input () is 0-dim", d));
    REQUIRE_ERROR(unflatten(s, d, {1}),
                  fmt::format("unflatten: dim {} specified but input () is 0-dim", d));
  }
  REQUIRE_ERROR(unflatten(zeros({4}), 0, {}), "unflatten: sizes must be non-empty");
  REQUIRE_ERROR(unflatten(zeros({4}), 0, {-1, -1}), "only one size can be inferred (-1)");
  REQUIRE_ERROR(unflatten(zeros({4}), 0, {2, -2}), "unflatten: sizes (2,-2): invalid size -2");
  REQUIRE_ERROR(unflatten(zeros({0}), 0, {0, -1}), "the -1 is ambiguous beside a size 0");
  // meshgrid: a 0-dim tensor counts as one element
  const std::vector<Tensor> g = meshgrid({s, tensor(std::vector<double>{3, 4}, {2})});
  CHECK((g[0].shape() == Shape{1, 2} && values_of(g[0]) == std::vector<double>{2, 2}));
  const std::vector<Tensor> gx = meshgrid(
      {tensor(std::vector<double>{4, 5, 6}, {3}), s, tensor(std::vector<double>{7, 8}, {2})}, "xy");
  CHECK((gx[1].shape() == Shape{1, 3, 2} && values_of(gx[1]) == std::vector<double>(6, 2.0)));
  CHECK(meshgrid({s}).at(0).shape() == Shape{1});
  REQUIRE_ERROR(meshgrid({}), "meshgrid: expects a non-empty list of tensors");
  REQUIRE_ERROR(meshgrid({s, zeros({2}, kFloat32)}),
                "meshgrid: tensor (2) at 1 is float32 on cpu, tensor 0 () is float64 on cpu");
}

TEST_CASE("pad: negative pads crop in every mode, with PyTorch 1.13's limits", "[shape][repeat]") {
  const Tensor x = arange(0, 5, 1, kFloat64);
  auto p = [&](std::vector<int64_t> pads, const std::string& mode) {
    return values_of(pad(x, std::move(pads), mode));
  };
  using D = std::vector<double>;
  CHECK(p({-1, 2}, "constant") == D{1, 2, 3, 4, 0, 0});
  CHECK(p({-3, -2}, "constant").empty());
  CHECK(p({2, -1}, "reflect") == D{2, 1, 0, 1, 2, 3});
  CHECK(p({-6, 3}, "reflect") == D{2, 1});  // reflected from the whole dim
  CHECK(p({3, -2}, "replicate") == D{0, 0, 0, 0, 1, 2});
  CHECK(p({-6, 3}, "replicate") == D{4, 4});                     // clamped
  const int64_t far = std::numeric_limits<int64_t>::max() - 10;  // i - lo would overflow
  CHECK(p({-far, far}, "replicate") == D{4, 4, 4, 4, 4});
  CHECK(p({-1, 3}, "circular") == D{1, 2, 3, 4, 1, 2, 3});  // cropped, then wrapped
  CHECK(p({2, -1}, "circular") == D{2, 3, 0, 1, 2, 3});
  CHECK(p({-5, 0}, "circular").empty());
  REQUIRE_ERROR(pad(x, {-6, 1}),
                "pad: constant padding (-6, 1) crops more than the dim holds "
                "(dim 0 of size 5, pads [-6, 1], input (5))");
  REQUIRE_ERROR(pad(x, {-3, -3}),
                "pad: constant padding (-3, -3) gives an output size -1; it "
                "must be at least 0");
  REQUIRE_ERROR(pad(x, {-3, -2}, "reflect"), "gives an output size 0; it must be at least 1");
  REQUIRE_ERROR(pad(x, {-4, 5}, "reflect"), "pad: reflect padding (-4, 5) must be less than");
  REQUIRE_ERROR(pad(x, {1, -6}, "replicate"), "gives an output size 0");
  REQUIRE_ERROR(pad(zeros({0}), {1, 1}, "replicate"), "replicate padding (1, 1) gives an output");
  REQUIRE_ERROR(pad(x, {-2, 4}, "circular"),
                "pad: circular padding (-2, 4) wraps around more than once: each pad must be at "
                "most the size 3 left after cropping");
  REQUIRE_ERROR(pad(x, {-5, 2}, "circular"), "at most the size 0 left after cropping");
  REQUIRE_ERROR(pad(x, {std::numeric_limits<int64_t>::max(), 1}),
                "pad: the padded size of dim 0 (pads [9223372036854775807, 1]) overflows int64");
}

TEST_CASE("repeat family: sizes too large are errors before anything is allocated",
          "[shape][repeat]") {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const Tensor x = tensor(std::vector<double>{1, 2}, {2});
  REQUIRE_ERROR(repeat_interleave(x, tensor(std::vector<int64_t>{big, big}, {2}), 0),
                "repeat_interleave: the total of repeats along dim 0 of input (2) overflows int64");
  REQUIRE_ERROR(repeat_interleave(x, big, 0),
                "repeat_interleave: the size of dim 0 (input (2)) overflows int64");
  REQUIRE_ERROR(repeat_interleave(zeros({3, 4}), int64_t{1} << 61, 0),
                "repeat_interleave: the output shape (6917529027641081856,4) has more than 2^63");
  REQUIRE_ERROR(repeat(x, {1, int64_t{1} << 62}),
                "repeat: the size of dim 1 (repeats [1, 4611686018427387904], input (2)) "
                "overflows int64");
  REQUIRE_ERROR(repeat(zeros({3}), {int64_t{1} << 62, 2}), "has more than 2^63 elements");
  const Tensor wide = zeros({1}).expand({int64_t{1} << 32});  // a view: nothing allocated
  REQUIRE_ERROR(meshgrid({wide, wide}), "meshgrid: the output shape");
  REQUIRE_ERROR(diag(x, big), "diag: diagonal 9223372036854775807 of x (2) makes a matrix");
  REQUIRE_ERROR(repeat_interleave(x, tensor(std::vector<int64_t>{1, 2, 3}, {3}), 0),
                "repeat_interleave: repeats (3) (int64) must be int64 of shape (2)");
}

TEST_CASE("chunk<N> and split<N> unpack into structured bindings", "[shape]") {
  Tensor x = arange(24, kFloat64).reshape({2, 12});
  auto [q, k, v] = chunk<3>(x, -1);
  REQUIRE(q.shape() == Shape{2, 4});
  tgt::require_close(k, narrow(x, 1, 4, 4), 0, 0, "k");
  tgt::require_close(v, narrow(x, 1, 8, 4), 0, 0, "v");
  auto [a, b] = split<2>(x, 1, 0);
  tgt::require_close(b, narrow(x, 0, 1, 1), 0, 0, "split<2> second");
  (void)a;
  // gradients flow to the one tensor
  Tensor xl = x.clone().requires_grad_();
  auto [p0, p1] = chunk<2>(xl, 1);
  (p0 * 2.0 + p1).sum().backward();
  REQUIRE(xl.grad().to_vector<double>()[0] == 2.0);
  REQUIRE(xl.grad().to_vector<double>()[6] == 1.0);
  REQUIRE_ERROR(chunk<3>(zeros({4}, kFloat64)), "chunk<3>: x (4) along dim 0 gives 2 parts, not 3");
  REQUIRE_ERROR(split<2>(x, 5, 1), "split<2>: x (2,12) along dim 1 gives 3 parts, not 2");
}
