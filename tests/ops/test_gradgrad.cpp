// tests/ops/test_gradgrad.cpp — second order, op family by op family: every op whose backward is
// recorded under create_graph passes tg::gradgradcheck (float64, random output gradients), and its
// create_graph gradient equals its first-order one (the recorded formula is the raw kernel's).
// Cases cover broadcasting, reductions over several dims, views and non-contiguous inputs.
#include "helpers.hpp"

#include "ops/functional/functional.hpp"

#include <functional>

using namespace tg;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
struct Case {
  const char* name;
  Fn fn;
  std::vector<Tensor> inputs;
};

Tensor pos(const Shape& s) {  // in [0.3, ...): log, sqrt, pow's base
  Tensor t = abs(randn(s, kFloat64)) + 0.3;
  return t.detach().requires_grad_();
}
Tensor unit(const Shape& s) {  // in (-0.8, 0.8): asin, acos, atanh
  Tensor t = tanh(randn(s, kFloat64)) * 0.8;
  return t.detach().requires_grad_();
}

Tensor with_zero(const Shape& s) {  // random, element 0 exactly 0 (prod's exact case)
  Tensor t = randn(s, kFloat64);
  t.data<double>()[0] = 0.0;
  return t.requires_grad_();
}

void check_case(const Case& c) { tgt::check_second_order(c.name, c.fn, c.inputs); }
}  // namespace

TEST_CASE("gradgradcheck: elementwise binary ops with broadcasting") {
  manual_seed(1);
  const std::vector<Case> cases = {
      {"add", [](auto& in) { return add(in[0], in[1]); }, {tgt::leaf({2, 3}), tgt::leaf({3})}},
      {"sub", [](auto& in) { return sub(in[0], in[1]); }, {tgt::leaf({2, 1}), tgt::leaf({2, 3})}},
      {"mul", [](auto& in) { return mul(in[0], in[1]); }, {tgt::leaf({2, 3}), tgt::leaf({2, 1})}},
      {"mul self", [](auto& in) { return mul(in[0], in[0]); }, {tgt::leaf({4})}},
      {"div", [](auto& in) { return div(in[0], in[1]); }, {tgt::leaf({2, 3}), pos({3})}},
      {"pow", [](auto& in) { return pow(in[0], in[1]); }, {pos({2, 3}), tgt::leaf({2, 3})}},
      {"maximum", [](auto& in) { return maximum(in[0], in[1]); }, {tgt::leaf({5}), tgt::leaf({5})}},
      {"minimum",
       [](auto& in) { return minimum(in[0], in[1]); },
       {tgt::leaf({2, 3}), tgt::leaf({3})}},
      {"scalar forms",
       [](auto& in) { return rdiv(2.0, in[0]) + rsub(1.0, in[0]) * 3.0 - in[0] / 4.0; },
       {pos({5})}},
      {"pow scalar", [](auto& in) { return pow(in[0], 2.5) + pow(in[0], -1.0); }, {pos({5})}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("gradgradcheck: every unary math and activation op") {
  manual_seed(2);
  const Shape s{7};
  using U = Tensor (*)(const Tensor&, Site);
  const std::vector<std::pair<const char*, U>> any_x = {{"neg", neg},
                                                        {"exp", exp},
                                                        {"tanh", tanh},
                                                        {"sigmoid", sigmoid},
                                                        {"relu", relu},
                                                        {"abs", abs},
                                                        {"sin", sin},
                                                        {"cos", cos},
                                                        {"tan", tan},
                                                        {"atan", atan},
                                                        {"sinh", sinh},
                                                        {"cosh", cosh},
                                                        {"asinh", asinh},
                                                        {"erf", erf},
                                                        {"erfc", erfc},
                                                        {"exp2", exp2},
                                                        {"expm1", expm1},
                                                        {"silu", silu},
                                                        {"mish", mish},
                                                        {"hardswish", hardswish},
                                                        {"hardsigmoid", hardsigmoid},
                                                        {"relu6", relu6},
                                                        {"logsigmoid", logsigmoid},
                                                        {"softsign", softsign},
                                                        {"selu", selu},
                                                        {"floor", floor},
                                                        {"sign", sign}};
  for (auto [name, f] : any_x)
    check_case({name, [f = f](auto& in) { return f(in[0], Site()); }, {tgt::leaf(s, 2.0)}});
  const std::vector<std::pair<const char*, U>> positive = {{"log", log},     {"sqrt", sqrt},
                                                           {"rsqrt", rsqrt}, {"log2", log2},
                                                           {"log10", log10}, {"log1p", log1p}};
  for (auto [name, f] : positive)
    check_case({name, [f = f](auto& in) { return f(in[0], Site()); }, {pos(s)}});
  for (auto [name, f] :
       std::vector<std::pair<const char*, U>>{{"asin", asin}, {"acos", acos}, {"atanh", atanh}})
    check_case({name, [f = f](auto& in) { return f(in[0], Site()); }, {unit(s)}});
  check_case(
      {"acosh", [](auto& in) { return acosh(in[0]); }, {(pos(s) + 1.0).detach().requires_grad_()}});
  check_case({"gelu", [](auto& in) { return gelu(in[0]); }, {tgt::leaf(s, 2.0)}});
  check_case({"gelu tanh", [](auto& in) { return gelu(in[0], "tanh"); }, {tgt::leaf(s, 2.0)}});
  check_case({"softplus", [](auto& in) { return softplus(in[0], 2.0, 3.0); }, {tgt::leaf(s, 2.0)}});
  check_case({"leaky_relu", [](auto& in) { return leaky_relu(in[0], 0.1); }, {tgt::leaf(s)}});
  check_case({"elu", [](auto& in) { return elu(in[0], 0.7); }, {tgt::leaf(s)}});
  check_case({"celu", [](auto& in) { return celu(in[0], 0.5); }, {tgt::leaf(s)}});
  check_case({"hardtanh", [](auto& in) { return hardtanh(in[0], -0.5, 1.0); }, {tgt::leaf(s)}});
  check_case({"clamp", [](auto& in) { return clamp(in[0], -0.5, 0.7); }, {tgt::leaf(s)}});
  check_case({"glu", [](auto& in) { return glu(in[0], -1); }, {tgt::leaf({2, 4})}});
}

TEST_CASE("gradgradcheck: reductions over one, several and all dims") {
  manual_seed(3);
  const std::vector<Case> cases = {
      {"sum all", [](auto& in) { return sum(in[0] * in[0]); }, {tgt::leaf({2, 3})}},
      {"sum dims 0,2",
       [](auto& in) {
         return sum(in[0] * in[0], {0, 2});
       },
       {tgt::leaf({2, 3, 2})}},
      {"mean keepdim", [](auto& in) { return mean(exp(in[0]), {1}, true); }, {tgt::leaf({2, 3})}},
      {"var", [](auto& in) { return var(in[0], {1}); }, {tgt::leaf({3, 4})}},
      {"var dims 0,2",
       [](auto& in) {
         return var(in[0], {0, 2}, true, 0);
       },
       {tgt::leaf({2, 3, 2})}},
      {"max dim", [](auto& in) { return max(in[0] * in[0], {1}); }, {tgt::leaf({3, 4})}},
      {"min all", [](auto& in) { return min(exp(in[0])); }, {tgt::leaf({2, 3})}},
      {"cumsum", [](auto& in) { return cumsum(in[0] * in[0], 1); }, {tgt::leaf({2, 4})}},
      {"logsumexp", [](auto& in) { return logsumexp(in[0], {1}); }, {tgt::leaf({2, 4})}},
      {"std", [](auto& in) { return tg::std(in[0], {0}); }, {tgt::leaf({4, 2})}},
      {"prod dim", [](auto& in) { return prod(in[0], 1, true); }, {tgt::leaf({2, 4})}},
      {"prod all, one zero", [](auto& in) { return prod(in[0]); }, {with_zero({2, 3})}},
      {"prod dim 0, a zero in the line",
       [](auto& in) { return prod(in[0], 0); },
       {with_zero({3, 2})}},
      {"cummax", [](auto& in) { return cummax(in[0] * in[0], 1).values; }, {tgt::leaf({2, 4})}},
      {"cumprod", [](auto& in) { return cumprod(in[0], 1); }, {tgt::leaf({2, 4})}},
      {"cumprod, a zero in the line",
       [](auto& in) { return cumprod(in[0], 0); },
       {with_zero({4, 2})}},
      {"cumprod, two zeros in a line",
       [](auto& in) { return cumprod(in[0] * in[1], 1); },
       {tgt::leaf({1, 5}), tensor(std::vector<double>{1.5, 0, -0.7, 0, 2}, {1, 5})}},
      {"logcumsumexp", [](auto& in) { return logcumsumexp(in[0] * 3.0, 1); }, {tgt::leaf({2, 5})}},
      {"cummin", [](auto& in) { return cummin(exp(in[0]), 0).values; }, {tgt::leaf({3, 2})}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("gradgradcheck: matmul in every rank combination, linear") {
  manual_seed(4);
  const std::vector<Case> cases = {
      {"mm", [](auto& in) { return matmul(in[0], in[1]); }, {tgt::leaf({2, 3}), tgt::leaf({3, 2})}},
      {"batched broadcast",
       [](auto& in) { return matmul(in[0], in[1]); },
       {tgt::leaf({2, 2, 3}), tgt::leaf({3, 2})}},
      {"vector-matrix",
       [](auto& in) { return matmul(in[0], in[1]); },
       {tgt::leaf({3}), tgt::leaf({2, 3, 2})}},
      {"matrix-vector",
       [](auto& in) { return matmul(in[0], in[1]); },
       {tgt::leaf({2, 3}), tgt::leaf({3})}},
      {"dot", [](auto& in) { return matmul(in[0], in[1]); }, {tgt::leaf({3}), tgt::leaf({3})}},
      {"transposed input",
       [](auto& in) { return matmul(in[0].t(), tanh(in[1])); },
       {tgt::leaf({3, 2}), tgt::leaf({3, 2})}},
      {"linear",
       [](auto& in) { return tanh(linear(in[0], in[1], in[2])); },
       {tgt::leaf({2, 2, 3}), tgt::leaf({4, 3}), tgt::leaf({4})}},
      {"linear no bias",
       [](auto& in) { return linear(in[0], in[1]) * in[0].sum(); },
       {tgt::leaf({2, 3}), tgt::leaf({2, 3})}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("gradgradcheck: views, joins and gathers") {
  manual_seed(5);
  auto sq = [](const Tensor& t) { return t * t; };
  const std::vector<Case> cases = {
      {"reshape",
       [=](auto& in) {
         return sq(reshape(in[0], {3, 2}));
       },
       {tgt::leaf({2, 3})}},
      {"permute",
       [=](auto& in) {
         return sq(permute(in[0], {2, 0, 1}));
       },
       {tgt::leaf({2, 3, 2})}},
      {"expand",
       [=](auto& in) {
         return sq(in[0].expand({3, 2, 4}));
       },
       {tgt::leaf({2, 1})}},
      {"narrow", [=](auto& in) { return sq(narrow(in[0], 1, 1, 2)); }, {tgt::leaf({2, 4})}},
      {"slice step", [=](auto& in) { return sq(slice(in[0], 1, 0, 4, 2)); }, {tgt::leaf({2, 4})}},
      {"select", [=](auto& in) { return sq(select(in[0], 0, 1)); }, {tgt::leaf({3, 2})}},
      {"index_select",
       [=](auto& in) {
         return sq(index_select(in[0], 0, tensor(std::vector<int64_t>{2, 0, 2})));
       },
       {tgt::leaf({3, 2})}},
      {"cat",
       [=](auto& in) {
         return sq(cat({in[0], in[1]}, 1));
       },
       {tgt::leaf({2, 1}), tgt::leaf({2, 3})}},
      {"stack",
       [=](auto& in) {
         return sq(stack({in[0], in[1]}, 0));
       },
       {tgt::leaf({3}), tgt::leaf({3})}},
      {"gather",
       [=](auto& in) {
         return sq(gather(in[0], 1, tensor(std::vector<int64_t>{0, 2, 1, 1}, {2, 2})));
       },
       {tgt::leaf({2, 3})}},
      {"scatter_add",
       [=](auto& in) {
         return sq(scatter_add(in[0], 1, tensor(std::vector<int64_t>{0, 2, 0, 0}, {2, 2}), in[1]));
       },
       {tgt::leaf({2, 3}), tgt::leaf({2, 2})}},
      {"tril", [=](auto& in) { return sq(tril(in[0], 0)); }, {tgt::leaf({3, 3})}},
      {"scatter (overwrite)",
       [=](auto& in) {
         return sq(scatter(in[0], 1, tensor(std::vector<int64_t>{0, 2, 0, 1}, {2, 2}), in[1]));
       },
       {tgt::leaf({2, 3}), tgt::leaf({2, 2})}},
      {"scatter_reduce sum, mean, amax",
       [=](auto& in) {
         const Tensor i = tensor(std::vector<int64_t>{0, 2, 0, 0}, {2, 2});
         return sq(scatter_reduce(in[0], 1, i, in[1], "sum") +
                   scatter_reduce(in[0], 1, i, in[1], "mean", false) +
                   scatter_reduce(in[0], 1, i, in[1], "amax"));
       },
       {tgt::leaf({2, 3}), tgt::leaf({2, 2})}},
      {"scatter_reduce prod, with and without self",
       [=](auto& in) {
         const Tensor i = tensor(std::vector<int64_t>{0, 2, 0, 0}, {2, 2});
         return scatter_reduce(in[0], 1, i, in[1], "prod") +
                scatter_reduce(in[0], 1, i, in[1], "prod", false);
       },
       {tgt::leaf({2, 3}), tgt::leaf({2, 2})}},
      {"non-contiguous input",
       [=](auto& in) { return sq(in[0]).sum({0}); },
       {tgt::leaf({3, 2}).t().detach().requires_grad_()}},
      {"contiguous and clone",
       [=](auto& in) { return sq(in[0].t().contiguous().clone()); },
       {tgt::leaf({2, 3})}},
      {"flip roll repeat",
       [=](auto& in) {
         return sq(repeat(roll(flip(in[0], {1}), {1}, {0}), {2, 1}));
       },
       {tgt::leaf({2, 3})}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("gradgradcheck: masks and softmax") {
  manual_seed(6);
  Tensor mask = tensor(std::vector<double>{1, 0, 0, 1, 0, 1}, {2, 3}) > 0.5;
  const std::vector<Case> cases = {
      {"where",
       [=](auto& in) { return where(mask, in[0] * in[1], exp(in[1])); },
       {tgt::leaf({2, 3}), tgt::leaf({3})}},
      {"masked_fill",
       [=](auto& in) { return exp(masked_fill(in[0] * in[0], mask, 0.5)); },
       {tgt::leaf({2, 3})}},
      {"softmax", [](auto& in) { return softmax(in[0], 1); }, {tgt::leaf({2, 4})}},
      {"softmax dim 0", [](auto& in) { return softmax(in[0] * 2.0, 0); }, {tgt::leaf({3, 2})}},
      {"log_softmax", [](auto& in) { return log_softmax(in[0], -1); }, {tgt::leaf({2, 4})}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("gradgradcheck: norms, losses, embedding, dropout, rotary") {
  manual_seed(7);
  const Tensor t = tensor(std::vector<int64_t>{2, 0, 1});
  const Tensor t_ign = tensor(std::vector<int64_t>{2, -100, 1});
  const Tensor t_sp = tensor(std::vector<int64_t>{0, 2, 1, 1}, {2, 2});  // (N, d1) targets
  const Tensor probs = softmax(randn({3, 4}, kFloat64), 1);
  const Tensor ids = tensor(std::vector<int64_t>{1, 3, 0, 3}, {2, 2});
  const Tensor cls_w = tensor(std::vector<double>{0.5, 1.0, 2.0, 1.5});
  auto ce = [](Reduction r, double smooth = 0.0, Tensor w = Tensor()) {
    CrossEntropyOptions o;
    o.reduction = r;
    o.label_smoothing = smooth;
    o.weight = w;
    return o;
  };
  // rotary tables for T 3, R/2 = 2
  Tensor ang = reshape(arange(6.0, kFloat64), {3, 2}) * 0.3;
  const Tensor cs = cos(ang), sn = sin(ang);
  const std::vector<Case> cases = {
      {"layer_norm",
       [](auto& in) { return layer_norm(in[0], {4}, in[1], in[2]); },
       {tgt::leaf({3, 4}), tgt::leaf({4}), tgt::leaf({4})}},
      {"layer_norm 2 dims, no affine",
       [](auto& in) {
         return layer_norm(in[0], {2, 3});
       },
       {tgt::leaf({2, 2, 3})}},
      {"rms_norm",
       [](auto& in) { return rms_norm(in[0], {4}, in[1], 1e-6); },
       {tgt::leaf({3, 4}), tgt::leaf({4})}},
      {"cross_entropy mean",
       [=](auto& in) { return cross_entropy(in[0], t, ce(Reduction::Mean)); },
       {tgt::leaf({3, 4})}},
      {"cross_entropy ignore, smoothing, sum",
       [=](auto& in) { return cross_entropy(in[0], t_ign, ce(Reduction::Sum, 0.1)); },
       {tgt::leaf({3, 4})}},
      {"cross_entropy (N, C, d) none",
       [=](auto& in) { return cross_entropy(in[0], t_sp, ce(Reduction::None)); },
       {tgt::leaf({2, 3, 2})}},
      {"cross_entropy class weights",
       [=](auto& in) { return cross_entropy(in[0], t, ce(Reduction::Mean, 0.0, cls_w)); },
       {tgt::leaf({3, 4})}},
      {"cross_entropy probabilities",
       [=](auto& in) { return cross_entropy(in[0], probs, ce(Reduction::Mean)); },
       {tgt::leaf({3, 4})}},
      {"mse, bce with logits, kl_div",
       [=](auto& in) {
         return mse_loss(in[0], in[1]) + binary_cross_entropy_with_logits(in[0], probs) +
                kl_div(log_softmax(in[0], 1), probs);
       },
       {tgt::leaf({3, 4}), tgt::leaf({3, 4})}},
      {"nll_loss, cosine_similarity, normalize",
       [=](auto& in) {
         return nll_loss(log_softmax(in[0], 1), t) + cosine_similarity(in[0], in[1]).sum() +
                normalize(in[1]).pow(3.0).sum();
       },
       {tgt::leaf({3, 4}), tgt::leaf({3, 4})}},
      {"embedding", [=](auto& in) { return tanh(embedding(ids, in[0])); }, {tgt::leaf({4, 3})}},
      // a padding row that is looked up gets no gradient by design, so numerically it is not the
      // derivative: the padding index here is a row the ids do not use
      {"embedding padding_idx",
       [=](auto& in) { return embedding(ids, in[0], 2) * in[1]; },
       {tgt::leaf({4, 3}), tgt::leaf({2, 2, 3})}},
      {"dropout (reseeded: the same mask each call)",
       [](auto& in) {
         manual_seed(42);
         return dropout(in[0] * in[0], 0.4);
       },
       {tgt::leaf({3, 4})}},
      {"apply_rotary",
       [=](auto& in) { return apply_rotary(in[0], cs, sn) * in[0]; },
       {tgt::leaf({2, 3, 4})}},
      {"logaddexp, fmod, copysign, lerp",
       [](auto& in) {
         return logaddexp(in[0], in[1]) * fmod(in[0], 0.7) + copysign(in[0], in[1]) * in[1] +
                lerp(in[0], in[1], sigmoid(in[0]));
       },
       {tgt::leaf({5}), tgt::leaf({5})}},
      {"in-place on a non-leaf and through a view",
       [](auto& in) {
         Tensor y = in[0] * 1.0;
         y.mul_(in[1]);
         Tensor row = y.select(0, 1);
         row.add_(in[1].select(0, 0) * in[1].select(0, 0));
         return y * y;
       },
       {tgt::leaf({2, 3}), tgt::leaf({2, 3})}},
      {"einsum",
       [](auto& in) {
         return einsum("ij,jk->ik", {in[0], tanh(in[1])});
       },
       {tgt::leaf({2, 3}), tgt::leaf({3, 2})}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("gradgradcheck: an MLP with a cross-entropy loss, fast mode at a larger size") {
  manual_seed(8);
  const Tensor target = tensor(std::vector<int64_t>{1, 0, 2, 2, 1, 0});
  Case c{"mlp",
         [=](auto& in) {
           Tensor h = gelu(layer_norm(linear(in[0], in[1], in[2]), {8}));
           return cross_entropy(linear(h, in[3]), target);
         },
         {tgt::leaf({6, 5}), tgt::leaf({8, 5}, 0.5), tgt::leaf({8}), tgt::leaf({3, 8}, 0.5)}};
  check_case(c);
  GradcheckOptions fast;
  fast.mode = GradcheckMode::Fast;
  GradcheckReport r = gradgradcheck(c.fn, c.inputs, Tensor(), fast);
  INFO(r.str());
  REQUIRE(r.fast_mode);
  REQUIRE(r.passed);
}

TEST_CASE("gradgradcheck catches a wrong second derivative") {
  // A user op whose create_graph formula is wrong (2x instead of 3x² for x³): the first-order
  // check passes, gradgradcheck fails.
  auto cube = [](const Tensor& x) {
    Tensor y = Tensor::empty(x.shape(), kFloat64);
    for (int64_t i = 0; i < x.numel(); ++i) y.data<double>()[i] = std::pow(x.data<double>()[i], 3);
    RecordInfo info;
    Saved sx = info.save(x);
    record("bad_cube", y, {x}, info.differentiable(), [sx](const Tensor& g) -> std::vector<Tensor> {
      const Tensor xd = sx.get().detach();
      if (creating_graph()) return {g * sx.get() * 2.0 + g * (xd * xd * 3.0 - xd * 2.0)};
      return {g * xd * xd * 3.0};
    });
    return y;
  };
  manual_seed(9);
  Tensor x = tgt::leaf({4});
  REQUIRE(gradcheck([&](auto& in) { return cube(in[0]); }, {x}).passed);
  REQUIRE_FALSE(gradgradcheck([&](auto& in) { return cube(in[0]); }, {x}).passed);
}
