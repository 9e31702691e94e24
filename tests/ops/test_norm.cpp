// tests/ops/test_norm.cpp — layer_norm: hand-computed values, gradchecks over one and two trailing
// dims with and without weight/bias, float32 agreement and errors.
#include "helpers.hpp"

#include <cmath>

using namespace tg;

TEST_CASE("layer_norm matches hand-computed values", "[norm]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4, 2, 2, 2, 2}, {2, 4});
  // Row 0: mean 2.5, biased var 1.25. Row 1: constant, normalises to 0.
  const double rs = 1 / std::sqrt(1.25 + 1e-5);
  tgt::require_close(layer_norm(x, {4}), {-1.5 * rs, -0.5 * rs, 0.5 * rs, 1.5 * rs, 0, 0, 0, 0},
                     1e-14, 1e-13);
  Tensor w = tensor(std::vector<double>{1, 2, 3, 4}), b = tensor(std::vector<double>{0, 1, 0, -1});
  tgt::require_close(layer_norm(x, {4}, w, b, 0.5),
                     {-1.5 / std::sqrt(1.75), 2 * -0.5 / std::sqrt(1.75) + 1,
                      3 * 0.5 / std::sqrt(1.75), 4 * 1.5 / std::sqrt(1.75) - 1, 0, 1, 0, -1},
                     1e-14, 1e-13);
  // eps = 0 on a constant row is 0/0, like PyTorch.
  REQUIRE(std::isnan(layer_norm(x, {4}, Tensor(), Tensor(), 0.0).to_vector<double>()[4]));
  // Over both dims: one row of 8 values, mean 2.25.
  Tensor y = layer_norm(x, {2, 4}, Tensor(), Tensor(), 0.0);
  std::vector<double> xv = x.to_vector<double>();
  double m = 2.25, v = 0;
  for (double e : xv) v += (e - m) * (e - m) / 8;
  std::vector<double> want;
  for (double e : xv) want.push_back((e - m) / std::sqrt(v));
  tgt::require_close(y, want, 1e-14, 1e-13);
}

TEST_CASE("layer_norm gradcheck over 1 and 2 trailing dims, with and without weight/bias",
          "[norm]") {
  manual_seed(31);
  struct Case {
    Shape x, ns;
  };
  for (const Case& c : {Case{{3, 5}, {5}}, Case{{2, 3, 4}, {4}}, Case{{2, 3, 4}, {3, 4}},
                        Case{{4, 1}, {1}}, Case{{6}, {6}}}) {
    const std::string what = "layer_norm x " + shape_str(c.x) + " over " + shape_str(c.ns);
    Tensor x = tgt::leaf(c.x, 1.5), w = tgt::leaf(c.ns), b = tgt::leaf(c.ns);
    Shape ns = c.ns;
    tgt::check_grad(
        [ns](const std::vector<Tensor>& in) { return layer_norm(in[0], ns, in[1], in[2]); },
        {x, w, b}, what + " with weight and bias");
    tgt::check_grad([ns](const std::vector<Tensor>& in) { return layer_norm(in[0], ns); }, {x},
                    what);
    tgt::check_grad([ns](const std::vector<Tensor>& in) { return layer_norm(in[0], ns, in[1]); },
                    {x, w}, what + " weight only");
    tgt::check_grad(
        [ns](const std::vector<Tensor>& in) {
          return layer_norm(in[0], ns, Tensor(), in[1], 1e-3);
        },
        {x, b}, what + " bias only");
  }
}

TEST_CASE("layer_norm gradients for weight and bias alone - float32 agrees", "[norm]") {
  manual_seed(32);
  Tensor x = randn({5, 8}, kFloat64);
  Tensor w = tgt::leaf({8}), b = tgt::leaf({8});
  layer_norm(x, {8}, w, b).backward(ones({5, 8}, kFloat64));
  // dbias = Σ_N dout = 5; dweight = Σ_N norm, and each column of norm... sums over rows.
  tgt::require_close(b.grad(), std::vector<double>(8, 5.0), 1e-14, 0);
  Tensor norm = layer_norm(x, {8});
  std::vector<double> nv = norm.to_vector<double>(), dw(8, 0.0);
  for (int r = 0; r < 5; ++r)
    for (int i = 0; i < 8; ++i) dw[i] += nv[r * 8 + i];
  tgt::require_close(w.grad(), dw, 1e-13, 1e-12);

  Tensor x32 = x.to(kFloat32).requires_grad_();
  Tensor w32 = w.detach().to(kFloat32).requires_grad_(), b32 = b.detach().to(kFloat32);
  Tensor y32 = layer_norm(x32, {8}, w32, b32);
  tgt::require_close(y32, layer_norm(x, {8}, w.detach(), b.detach()), 1e-5, 1e-5, "layer_norm f32");
  y32.backward(ones({5, 8}));
  REQUIRE(x32.grad().dtype() == kFloat32);
  REQUIRE(w32.grad().shape() == Shape{8});
}

TEST_CASE("layer_norm errors name normalized_shape, weight and input shapes", "[norm]") {
  Tensor x = zeros({2, 3, 4});
  REQUIRE_ERROR(layer_norm(x, {3}),
                "layer_norm: normalized_shape (3) must match the trailing dims of input (2,3,4)");
  REQUIRE_ERROR(layer_norm(x, {1, 2, 3, 4}),
                "normalized_shape (1,2,3,4) must match the trailing dims of input (2,3,4)");
  REQUIRE_ERROR(layer_norm(x, {}), "layer_norm: normalized_shape is empty");
  REQUIRE_ERROR(layer_norm(x, {4}, zeros({3})),
                "layer_norm: weight (3) must have normalized_shape (4) (input (2,3,4))");
  REQUIRE_ERROR(layer_norm(x, {3, 4}, Tensor(), zeros({4})),
                "layer_norm: bias (4) must have normalized_shape (3,4)");
  REQUIRE_ERROR(layer_norm(x, {4}, zeros({4}, kFloat64)),
                "layer_norm: input (2,3,4) is float32 but weight (4) is float64");
  REQUIRE_ERROR(layer_norm(zeros({2, 4}, kInt64), {4}), "layer_norm: input (2,4) has dtype int64");
  REQUIRE_ERROR(layer_norm(x, {4}, Tensor(), Tensor(), -1), "layer_norm: eps must be >= 0, got -1");
}
