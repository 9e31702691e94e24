// tests/ops/test_index.cpp — x.index({...}) and index_put_ (ops/index/index.cpp): integers, slices
// with steps and open ends, None, Ellipsis, int64 and bool tensor indices, against values worked
// out by hand from PyTorch's rules; which results are views; gradients (float64 gradcheck);
// index_put_ through views and masks, recorded; the error messages; tg::set_default_dtype.
#include "helpers.hpp"

#include "nn/layers.hpp"

using namespace tg;
using namespace tg::indexing;

namespace {
Tensor iota(const Shape& s) {
  return arange(0, static_cast<double>(shape_numel(s)), 1, kFloat64).reshape(s);
}
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("index: integers, slices, None and Ellipsis give views", "[index]") {
  Tensor x = iota({2, 3, 4});
  Tensor a = x.index({1});  // x[1]
  CHECK(a.shape() == Shape{3, 4});
  CHECK(a.storage_offset() == 12);
  Tensor b = x.index({Slice(), -1});  // x[:, -1]
  CHECK(b.shape() == Shape{2, 4});
  CHECK(values(b) == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  Tensor c = x.index({Ellipsis, Slice(1, None, 2)});  // x[..., 1::2]
  CHECK(c.shape() == Shape{2, 3, 2});
  CHECK(c.strides() == Shape{12, 4, 2});
  CHECK(values(c[0][0]) == std::vector<double>{1, 3});
  Tensor d = x.index({None, 0, Slice(None, 2), None});  // x[None, 0, :2, None]
  CHECK(d.shape() == Shape{1, 2, 1, 4});
  CHECK(values(d) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  Tensor e = x.index({0, Ellipsis, 3});  // x[0, ..., 3]
  CHECK(values(e) == std::vector<double>{3, 7, 11});
  Tensor f = x.index({Slice(-1, None), Slice(1, -1)});  // x[-1:, 1:-1]
  CHECK(f.shape() == Shape{1, 1, 4});
  CHECK(values(f) == std::vector<double>{16, 17, 18, 19});
  CHECK(x.index({Slice(5, 9)}).shape() == Shape{0, 3, 4});  // out-of-range bounds clamp
  for (const Tensor& v : {a, b, c, d, e, f}) CHECK(v.impl()->storage == x.impl()->storage);
  CHECK(x.index({}).same(x));
}

TEST_CASE("index: int64 and bool tensor indices copy", "[index]") {
  Tensor x = iota({3, 4});
  Tensor r = x.index({tensor(std::vector<int64_t>{2, 0, 2})});  // x[[2, 0, 2]]
  CHECK(r.shape() == Shape{3, 4});
  CHECK(values(r[1]) == std::vector<double>{0, 1, 2, 3});
  Tensor cols = x.index({Slice(), tensor(std::vector<int64_t>{3, 1})});  // x[:, [3, 1]]
  CHECK(values(cols) == std::vector<double>{3, 1, 7, 5, 11, 9});
  Tensor one = x.index({Slice(), scalar_tensor(2, kInt64)});  // x[:, tensor(2)]
  CHECK(one.shape() == Shape{3});
  Tensor m = gt(x, full({}, 6.5, kFloat64));
  Tensor sel = x.index({m});  // x[x > 6.5]
  CHECK(values(sel) == std::vector<double>{7, 8, 9, 10, 11});
  Tensor rows = x.index({tensor(std::vector<bool>{true, false, true})});  // x[[True, False, True]]
  CHECK(rows.shape() == Shape{2, 4});
  CHECK(values(rows[1]) == std::vector<double>{8, 9, 10, 11});
}

TEST_CASE("index: gradients flow through every kind of index", "[index][grad]") {
  manual_seed(2);
  auto check = [](const std::string& what, std::function<Tensor(const Tensor&)> f) {
    tgt::check_grad(
        [&](const std::vector<Tensor>& in) {
          Tensor y = f(in[0]);
          return (y * y).sum();
        },
        {tgt::leaf({3, 4, 5})}, what);
  };
  check("integer", [](const Tensor& x) { return x.index({1, Slice(), -2}); });
  check("slice with step", [](const Tensor& x) { return x.index({Slice(None, None, 2)}); });
  check("None and Ellipsis", [](const Tensor& x) { return x.index({None, Ellipsis, 0}); });
  check("repeated int64 rows", [](const Tensor& x) {
    return x.index({Slice(), tensor(std::vector<int64_t>{0, 3, 3})});
  });
  check("bool mask",
        [](const Tensor& x) { return x.index({gt(x.detach(), zeros({}, kFloat64))}); });
}

TEST_CASE("index_put_: views, masks and recorded writes", "[index][inplace]") {
  Tensor x = zeros({3, 4}, kFloat64);
  x.index_put_({1}, 5.0);                                            // x[1] = 5
  x.index_put_({Slice(), 0}, tensor(std::vector<double>{1, 2, 3}));  // x[:, 0] = [1, 2, 3]
  CHECK(values(x) == std::vector<double>{1, 0, 0, 0, 2, 5, 5, 5, 3, 0, 0, 0});
  Tensor m = gt(x, full({}, 2.5, kFloat64));
  x.index_put_({m}, -1.0);  // x[x > 2.5] = -1
  CHECK(values(x) == std::vector<double>{1, 0, 0, 0, 2, -1, -1, -1, -1, 0, 0, 0});
  x.index_put_({eq(x, full({}, -1.0, kFloat64))}, tensor(std::vector<double>{10, 20, 30, 40}));
  CHECK(values(x) == std::vector<double>{1, 0, 0, 0, 2, 10, 20, 30, 40, 0, 0, 0});
  // recorded: y = w·1; y[mask] = v → dy/dw is 0 where masked, dv gets the masked gradient
  Tensor w = tensor(std::vector<double>{1, 2, 3, 4}).requires_grad_();
  Tensor v = tensor(std::vector<double>{7, 8}).requires_grad_();
  Tensor y = w * 1.0;
  y.index_put_({tensor(std::vector<bool>{false, true, false, true})}, v);
  CHECK(values(y) == std::vector<double>{1, 7, 3, 8});
  (y * tensor(std::vector<double>{1, 2, 3, 4})).sum().backward();
  CHECK(values(w.grad()) == std::vector<double>{1, 0, 3, 0});
  CHECK(values(v.grad()) == std::vector<double>{2, 4});
  REQUIRE_THROWS_WITH(x.index_put_({m}, tensor(std::vector<double>{1, 2})),
                      Catch::Contains("index_put_: shape mismatch: value tensor of shape (2) "
                                      "cannot be broadcast to indexing result of shape (4)"));
}

TEST_CASE("index: errors name the indices and the input", "[index]") {
  Tensor x = iota({2, 3});
  REQUIRE_THROWS_WITH(x.index({0, 1, 2}),
                      Catch::Contains("index: too many indices for a tensor of dimension 2: "
                                      "[0, 1, 2] (input (2,3))"));
  REQUIRE_THROWS_WITH(x.index({Slice(), 3}),
                      Catch::Contains("index: index 3 is out of range for dim 1 of size 3"));
  REQUIRE_THROWS_WITH(x.index({Ellipsis, Ellipsis}), Catch::Contains("a single ellipsis"));
  REQUIRE_THROWS_WITH(x.index({Slice(0, 2, 0)}), Catch::Contains("slice step must be positive"));
  REQUIRE_THROWS_WITH(x.index({tensor(std::vector<bool>{true, false, true})}),
                      Catch::Contains("index: bool mask (3) must match the shape (2)"));
  REQUIRE_THROWS_WITH(x.index({x}), Catch::Contains("must be int64 or bool, got float64"));
  CHECK(x.index({tensor(std::vector<int64_t>{1}), tensor(std::vector<int64_t>{2})})
            .to_vector<double>() == std::vector<double>{5});  // several: test_advanced_indexing
  REQUIRE_THROWS_WITH(x.index({tensor(std::vector<int64_t>{5})}),
                      Catch::Contains("index: index 5 is out of range for dim 0 of size 2"));
}

TEST_CASE("set_default_dtype: creation functions and parameters follow it", "[index][dtype]") {
  struct Restore {
    ~Restore() { set_default_dtype(kFloat32); }
  } restore;
  CHECK(get_default_dtype() == kFloat32);
  CHECK(zeros({2}).dtype() == kFloat32);
  set_default_dtype(kFloat64);
  CHECK(zeros({2}).dtype() == kFloat64);
  CHECK(ones({2}).dtype() == kFloat64);
  CHECK(randn({2}).dtype() == kFloat64);
  CHECK(full({2}, 1.5).dtype() == kFloat64);
  CHECK(scalar_tensor(1).dtype() == kFloat64);
  CHECK(Tensor::empty({1}).dtype() == kFloat64);
  CHECK(zeros({2}, kFloat32).dtype() == kFloat32);  // an explicit dtype wins
  nn::Linear lin(2, 3);
  for (const Tensor& p : lin.parameters()) CHECK(p.dtype() == kFloat64);
  CHECK(arange(3).dtype() == kInt64);  // integer creation is unaffected
  REQUIRE_THROWS_WITH(set_default_dtype(kInt64),
                      Catch::Contains("set_default_dtype: dtype must be float32 or float64, got "
                                      "int64"));
}
