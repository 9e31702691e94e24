// tests/ops/test_functional.cpp — tg::func (vjp, jvp, vhp, hvp, jacobian, hessian) against
// closed forms, against each other and against central differences of the gradient; results
// that differentiate again under create_graph; errors for bad arguments.
#include "helpers.hpp"

#include "fixtures.hpp"
#include "nn/attention.hpp"
#include "ops/functional/functional.hpp"

using namespace tg;

namespace {
std::vector<double> values(const Tensor& t) { return t.contiguous().to_vector<double>(); }
// A fixture's parameters and its directions v_<name>, in the order of names.
std::pair<std::vector<Tensor>, std::vector<Tensor>> params_and_v(
    tgt::Fixture& f, const std::vector<std::string>& names) {
  std::vector<Tensor> params, v;
  for (const std::string& n : names) {
    params.push_back(f.tensor(n));
    v.push_back(f.tensor("v_" + n));
  }
  return {params, v};
}
// The loss and every H·v against the fixture's.
void check_products(tgt::Fixture& f, const std::vector<std::string>& names, const Tensor& value,
                    const std::vector<Tensor>& hv) {
  tgt::require_close(value, f.tensor("loss"), 1e-12, 1e-10, "loss");
  for (size_t i = 0; i < names.size(); ++i)
    tgt::require_close(hv[i], f.tensor("hvp_" + names[i]), 1e-12, 1e-9, "hvp " + names[i]);
}
}  // namespace

TEST_CASE("func: vjp, hessian, hvp and vhp of sum(w·x³) against the closed forms") {
  const std::vector<double> xv{0.5, -1.0, 2.0}, wv{1.5, 0.25, -0.5}, vv{1.0, -2.0, 0.5};
  const Tensor x = tensor(xv), w = tensor(wv), v = tensor(vv);
  auto f = [](const std::vector<Tensor>& in) { return (in[1] * in[0] * in[0] * in[0]).sum(); };
  auto [out, g] = func::vjp(f, {x, w});
  REQUIRE_FALSE(out.requires_grad());
  std::vector<double> gx, gw, hxx(9, 0.0), hxw(9, 0.0), hv_x, hv_w;
  for (int i = 0; i < 3; ++i) {
    gx.push_back(3 * wv[i] * xv[i] * xv[i]);
    gw.push_back(xv[i] * xv[i] * xv[i]);
    hxx[i * 3 + i] = 6 * wv[i] * xv[i];
    hxw[i * 3 + i] = 3 * xv[i] * xv[i];
    hv_x.push_back(6 * wv[i] * xv[i] * vv[i] + 3 * xv[i] * xv[i] * vv[i]);  // H·(v, v)
    hv_w.push_back(3 * xv[i] * xv[i] * vv[i]);
  }
  tgt::require_close(g[0], gx, 1e-12);
  tgt::require_close(g[1], gw, 1e-12);
  const auto H = func::hessian(f, {x, w});
  REQUIRE(H[0][0].shape() == Shape{3, 3});
  tgt::require_close(H[0][0], hxx, 1e-12);
  tgt::require_close(H[0][1], hxw, 1e-12);
  tgt::require_close(H[1][0], hxw, 1e-12);
  tgt::require_close(H[1][1], std::vector<double>(9, 0.0), 1e-12);
  auto [o2, hv] = func::hvp(f, {x, w}, {v, v});
  tgt::require_close(hv[0], hv_x, 1e-12);
  tgt::require_close(hv[1], hv_w, 1e-12);
  auto [o3, vh] = func::vhp(f, {x, w}, {v, v});  // H is symmetric: the same
  tgt::require_close(vh[0], hv_x, 1e-12);
  tgt::require_close(vh[1], hv_w, 1e-12);
  REQUIRE(o2.item<double>() == Approx(out.item<double>()));
}

TEST_CASE("func: jacobian, jvp and vjp of tanh(W·x) agree with J = diag(1 - y²)·W") {
  manual_seed(11);
  const Tensor W = randn({3, 4}, kFloat64), x = randn({4}, kFloat64);
  const Tensor v = randn({4}, kFloat64), u = randn({3}, kFloat64);
  auto f = [](const std::vector<Tensor>& in) { return tanh(matmul(in[0], in[1])); };
  const Tensor y = tanh(matmul(W, x));
  const Tensor J = mul(unsqueeze(rsub(1.0, y * y), 1), W);  // (3, 4)
  const std::vector<Tensor> jac = func::jacobian(f, {W, x});
  REQUIRE(jac[1].shape() == Shape{3, 4});
  REQUIRE(jac[0].shape() == Shape{3, 3, 4});
  tgt::require_close(jac[1], J, 1e-12);
  auto [out, jv] = func::jvp(f, {W, x}, {zeros({3, 4}, kFloat64), v});
  tgt::require_close(jv, matmul(J, v), 1e-12);
  auto [out2, uj] = func::vjp(f, {W, x}, u);
  tgt::require_close(uj[1], matmul(u, J), 1e-12);
  // jvp through W: d tanh(W x) = (1 - y²)·(dW x)
  const Tensor dW = randn({3, 4}, kFloat64);
  auto [out3, jw] = func::jvp(f, {W, x}, {dW, zeros({4}, kFloat64)});
  tgt::require_close(jw, rsub(1.0, y * y) * matmul(dW, x), 1e-12);
}

TEST_CASE("func: the hessian of an MLP + cross-entropy loss matches central differences") {
  manual_seed(12);
  const Tensor X = randn({5, 4}, kFloat64);
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 1, 1, 0});
  const Tensor W1 = randn({6, 4}, kFloat64) * 0.5, W2 = randn({3, 6}, kFloat64) * 0.5;
  auto loss = [&](const std::vector<Tensor>& in) {
    return cross_entropy(linear(gelu(layer_norm(linear(X, in[0]), {6})), in[1]), target);
  };
  const auto H = func::hessian(loss, {W1, W2});
  // column k of H (k over W1's then W2's elements) = (∇f(θ + h e_k) − ∇f(θ − h e_k)) / 2h
  const double h = 1e-5;
  auto gradient = [&](const Tensor& a, const Tensor& b) {
    auto [o, g] = func::vjp(loss, {a, b});
    return std::vector<Tensor>{g[0], g[1]};
  };
  double worst = 0;
  const std::vector<Tensor> params{W1, W2};
  for (int pk = 0; pk < 2; ++pk) {
    for (int64_t k = 0; k < params[pk].numel(); ++k) {
      Tensor p = params[pk].clone(), m = params[pk].clone();
      p.data<double>()[k] += h;
      m.data<double>()[k] -= h;
      const auto gp = pk == 0 ? gradient(p, W2) : gradient(W1, p);
      const auto gm = pk == 0 ? gradient(m, W2) : gradient(W1, m);
      for (int pi = 0; pi < 2; ++pi) {
        const std::vector<double> num = values((gp[pi] - gm[pi]) / (2 * h));
        // H[pi][pk] has shape (param pi, param pk): column k of it
        const std::vector<double> hcol =
            values(reshape(H[pi][pk], {params[pi].numel(), params[pk].numel()}).select(1, k));
        for (size_t j = 0; j < num.size(); ++j)
          worst = std::max(worst, std::fabs(num[j] - hcol[j]) / (1e-6 + std::fabs(num[j])));
      }
    }
  }
  INFO("worst relative error " << worst);
  REQUIRE(worst < 1e-5);
  // symmetry: H[0][1] is H[1][0] transposed
  tgt::require_close(reshape(H[0][1], {24, 18}), reshape(H[1][0], {18, 24}).t(), 1e-10);
}

TEST_CASE("func: create_graph keeps the results differentiable (a third derivative)") {
  const std::vector<double> xv{0.5, -1.5}, vv{2.0, 1.0};
  Tensor x = tensor(xv).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return pow(in[0], 4.0).sum(); };
  auto [out, hv] = func::hvp(f, {x}, {tensor(vv)}, /*create_graph=*/true);
  REQUIRE(hv[0].requires_grad());
  tgt::require_close(hv[0], std::vector<double>{12 * 0.25 * 2, 12 * 2.25 * 1}, 1e-12);
  // d/dx Σ 12x²v = 24xv
  tgt::require_close(grad({hv[0].sum()}, {x})[0], std::vector<double>{24 * 0.5 * 2, -24 * 1.5},
                     1e-12);
}

TEST_CASE("func: unused inputs get zeros, bad arguments are refused") {
  const Tensor x = tensor(std::vector<double>{1, 2}), z = tensor(std::vector<double>{3});
  auto f = [](const std::vector<Tensor>& in) { return (in[0] * in[0]).sum(); };
  auto [o, g] = func::vjp(f, {x, z});
  tgt::require_close(g[1], std::vector<double>{0});
  const auto H = func::hessian(f, {x, z});
  tgt::require_close(H[1][1], std::vector<double>{0});
  tgt::require_close(H[0][0], std::vector<double>{2, 0, 0, 2});
  auto vecf = [](const std::vector<Tensor>& in) { return in[0] * 2.0; };
  REQUIRE_ERROR(func::hvp(vecf, {x}, {x}),
                "hvp: fn must return a tensor with a single element, got (2)");
  REQUIRE_ERROR(func::vjp(vecf, {x}), "vjp: v is needed for an output (2)");
  REQUIRE_ERROR(func::jvp(vecf, {x}, {z}),
                "jvp: v[0] is (1) float64, expected input 0's (2) float64");
  REQUIRE_ERROR(func::vhp(f, {x}, {}), "vhp: v has 0 tensors for 1 inputs");
}

TEST_CASE("func: hvp and hessian of a LayerNorm + GELU + cross-entropy model match PyTorch") {
  tgt::Fixture f("higher_order/mlp");
  const Tensor x = f.tensor("x"), target = f.tensor("target");
  const std::vector<std::string> names{"ln_w", "ln_b", "W1", "b1", "W2"};
  const auto [params, v] = params_and_v(f, names);
  auto loss = [&](const std::vector<Tensor>& p) {
    const Tensor h = gelu(linear(layer_norm(x, {6}, p[0], p[1]), p[2], p[3]));
    return cross_entropy(linear(h, p[4]), target);
  };
  auto [value, hv] = func::hvp(loss, params, v);
  check_products(f, names, value, hv);
  const auto H = func::hessian(loss, params);
  tgt::require_close(H[0][0], f.tensor("H_ln_w_ln_w"), 1e-12, 1e-9, "H ln_w ln_w");
  tgt::require_close(H[0][4], f.tensor("H_ln_w_W2"), 1e-12, 1e-9, "H ln_w W2");
  tgt::require_close(H[4][4], f.tensor("H_W2_W2"), 1e-12, 1e-9, "H W2 W2");
}

TEST_CASE("func: hvp and hessian of a LayerNorm + MultiheadAttention + GELU model match PyTorch") {
  // The fused attention's second order (ops/attention/create_graph.cpp) against PyTorch's composed
  // multi_head_attention_forward, with key padding.
  tgt::Fixture f("higher_order/mha");
  const Tensor x = f.tensor("x"), pad = f.tensor("pad"), target = f.tensor("target");
  const std::vector<std::string> names{
      "ln_w", "ln_b", "in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "W"};
  const auto [params, v] = params_and_v(f, names);
  nn::MultiheadAttentionOptions mo;
  mo.batch_first = true;
  auto mha = std::make_shared<nn::MultiheadAttention>(6, 2, mo);
  mha->to(kFloat64);
  auto loss = [&](const std::vector<Tensor>& p) {
    mha->in_proj_weight = p[2];
    mha->in_proj_bias = p[3];
    mha->out_proj->weight = p[4];
    mha->out_proj->bias = p[5];
    const Tensor h = layer_norm(x, {6}, p[0], p[1]);
    nn::MHAForwardOptions fo;
    fo.key_padding_mask = pad;
    fo.need_weights = false;
    const Tensor z = mean(gelu(mha->forward(h, h, h, fo).first), {1});
    return cross_entropy(linear(z, p[6]), target);
  };
  auto [value, hv] = func::hvp(loss, params, v);
  check_products(f, names, value, hv);
  const auto H = func::hessian(loss, params);
  tgt::require_close(H[4][4], f.tensor("H_out_proj_weight"), 1e-12, 1e-9, "H out_proj.weight");
  tgt::require_close(H[3][3], f.tensor("H_in_proj_bias"), 1e-12, 1e-9, "H in_proj_bias");
}
