// tests/ops/test_losses.cpp — the losses of ops/loss/composed.cpp beyond their PyTorch fixtures
// (test_parity.cpp's [losses]): float64 gradchecks of each, the edge cases PyTorch defines (log
// clamped at −100, the logits form's gradient at 0, a zero row under normalize, every target
// ignored), and errors naming the op, the shapes and the allowed values; PyTorch's corners
// (kl_div's targets at 0, below 0, NaN; cosine_similarity broadcast along its dim; 0-dim inputs)
// against tests/fixtures/loss_corner (tools/make_reduce_fixtures.py).
#include "fixture_case.hpp"
#include "helpers.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace tg;

TEST_CASE("losses gradcheck in float64", "[losses]") {
  manual_seed(12);
  using V = std::vector<Tensor>;
  Tensor x = tgt::leaf({3, 4}), t = tgt::leaf({3, 4});
  tgt::check_grad([](const V& in) { return mse_loss(in[0], in[1]); }, {x, t}, "mse_loss");
  tgt::check_grad([](const V& in) { return l1_loss(in[0], in[1], Reduction::Sum); }, {x, t},
                  "l1_loss");
  tgt::check_grad([](const V& in) { return smooth_l1_loss(in[0], in[1], Reduction::None, 0.3); },
                  {x, t}, "smooth_l1_loss");
  tgt::check_grad([](const V& in) { return huber_loss(in[0], in[1], Reduction::Mean, 0.4); },
                  {x, t}, "huber_loss");
  Tensor p = sigmoid(randn({3, 4}, kFloat64)).detach().requires_grad_();
  Tensor tp = rand({3, 4}, kFloat64).requires_grad_();
  tgt::check_grad([](const V& in) { return binary_cross_entropy(in[0], in[1]); }, {p, tp},
                  "binary_cross_entropy");
  Tensor pw = add(rand({4}, kFloat64), 0.5);
  tgt::check_grad(
      [pw](const V& in) { return binary_cross_entropy_with_logits(in[0], in[1], Tensor(), pw); },
      {x, tp}, "binary_cross_entropy_with_logits pos_weight");
  Tensor lp = tgt::leaf({5, 3});
  Tensor tn = tensor(std::vector<int64_t>{0, 2, -100, 1, 2}, {5});
  Tensor w = tensor(std::vector<double>{0.5, 1.0, 2.0}, {3});
  tgt::check_grad([tn, w](const V& in) { return nll_loss(in[0], tn, w); }, {lp}, "nll_loss");
  Tensor q = log_softmax(randn({3, 4}, kFloat64), 1).detach().requires_grad_();
  Tensor pt = softmax(randn({3, 4}, kFloat64), 1).detach().requires_grad_();
  tgt::check_grad([](const V& in) { return kl_div(in[0], in[1], Reduction::BatchMean); }, {q, pt},
                  "kl_div batchmean");
  tgt::check_grad([](const V& in) { return kl_div(in[0], in[1], Reduction::Sum, true); }, {q, q},
                  "kl_div log_target");
  Tensor a = tgt::leaf({3, 5}), b = tgt::leaf({3, 5});
  tgt::check_grad([](const V& in) { return cosine_similarity(in[0], in[1], 1); }, {a, b},
                  "cosine_similarity");
  tgt::check_grad([](const V& in) { return normalize(in[0], 2.0, 1); }, {a}, "normalize p 2");
  tgt::check_grad([](const V& in) { return normalize(in[0], 1.5, 0); }, {a}, "normalize p 1.5");
}

TEST_CASE("losses at PyTorch's edge cases", "[losses]") {
  // binary_cross_entropy: each log clamped at -100, so p = 0 or 1 gives a finite loss
  Tensor p = tensor(std::vector<double>{0.0, 1.0}, {2});
  Tensor t = tensor(std::vector<double>{1.0, 0.0}, {2});
  tgt::require_close(binary_cross_entropy(p, t, Tensor(), Reduction::None), {100.0, 100.0}, 0, 0);
  // the logits form is smooth at 0: gradient sigmoid(0) - t, and exact for large |x|
  Tensor x = tensor(std::vector<double>{0.0, 0.0, 200.0, -200.0}, {4}).requires_grad_();
  Tensor tt = tensor(std::vector<double>{0.0, 1.0, 0.0, 1.0}, {4});
  Tensor l = binary_cross_entropy_with_logits(x, tt, Tensor(), Tensor(), Reduction::None);
  tgt::require_close(l, {std::log(2.0), std::log(2.0), 200.0, 200.0}, 1e-15, 1e-15);
  sum(l).backward();
  tgt::require_close(x.grad(), {0.5, -0.5, 1.0, -1.0}, 1e-15, 0);
  // normalize: a zero row stays 0 with a finite gradient (1/eps per element, as PyTorch)
  Tensor z = zeros({2, 3}, kFloat64).requires_grad_();
  Tensor n = normalize(z);
  tgt::require_close(n, std::vector<double>(6, 0.0), 0, 0);
  sum(n).backward();
  for (double g : z.grad().to_vector<double>()) CHECK(g == 1e12);
  // nll_loss mean with every target ignored: 0/0 = NaN, as PyTorch
  Tensor all_ignored = nll_loss(zeros({2, 3}), tensor(std::vector<int64_t>{-100, -100}, {2}));
  CHECK(std::isnan(all_ignored.item<float>()));
}

TEST_CASE("losses refuse bad input, naming the op, the shapes and the allowed values", "[losses]") {
  Tensor x = zeros({2, 3});
  REQUIRE_ERROR(mse_loss(x, zeros({4})), "mse_loss: shapes (2,3) and (4) cannot be broadcast");
  REQUIRE_ERROR(binary_cross_entropy(full({2, 3}, 1.5), x),
                "binary_cross_entropy: all elements of input (2,3) should be between 0 and 1");
  REQUIRE_ERROR(binary_cross_entropy(x, zeros({3})),
                "binary_cross_entropy: target (3) must have the shape of input (2,3)");
  REQUIRE_ERROR(nll_loss(x, tensor(std::vector<int64_t>{0, 3}, {2})),
                "nll_loss: target (2) has a class outside [0, 3) that is not ignore_index -100");
  REQUIRE_ERROR(nll_loss(x, tensor(std::vector<int64_t>{0, 1, 2}, {3})),
                "nll_loss: input (2,3) and target (3): expected input (N, C)");
  REQUIRE_ERROR(nll_loss(x, zeros({2})), "nll_loss: target (2) must be int64 class indices");
  REQUIRE_ERROR(nll_loss(x, tensor(std::vector<int64_t>{0, 1}, {2}), zeros({2})),
                "nll_loss: weight (2) must be (3)");
  REQUIRE_ERROR(mse_loss(x, x, Reduction::BatchMean),
                "mse_loss: reduction batchmean is kl_div's alone");
  REQUIRE_ERROR(smooth_l1_loss(x, x, Reduction::Mean, -1.0),
                "smooth_l1_loss: beta must be >= 0, got -1");
  REQUIRE_ERROR(huber_loss(x, x, Reduction::Mean, 0.0), "huber_loss: delta must be > 0, got 0");
  REQUIRE_ERROR(normalize(x, 2.0, 2),
                "normalize: dim 2 out of range for input (2,3): expected [-2, 1]");
  REQUIRE_ERROR(cosine_similarity(x, x, 5), "cosine_similarity: dim 5 out of range");
  REQUIRE_ERROR(cross_entropy(x, tensor(std::vector<int64_t>{0, 1}, {2}),
                              CrossEntropyOptions{Reduction::BatchMean, -100, 0.0, Tensor()}),
                "cross_entropy: reduction batchmean is kl_div's alone");
}

TEST_CASE("comparisons with a plain number", "[losses][elementwise]") {
  Tensor f = tensor(std::vector<float>{-1.0f, 0.0f, 0.5f, 2.0f}, {4});
  CHECK((f == 0.0).to_vector<bool>() == std::vector<bool>{false, true, false, false});
  CHECK((f > 0.5).to_vector<bool>() == std::vector<bool>{false, false, false, true});
  CHECK((0.5 <= f).to_vector<bool>() == std::vector<bool>{false, false, true, true});
  CHECK(ne(f, 2).to_vector<bool>() == std::vector<bool>{true, true, true, false});
  // int64 against a fraction compares in float64 (1 < 1.5), not against int64(1.5) = 1
  Tensor i = tensor(std::vector<int64_t>{1, 2}, {2});
  CHECK((i < 1.5).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK((i == 2).to_vector<bool>() == std::vector<bool>{false, true});
  Tensor bl = tensor(std::vector<bool>{true, false}, {2});
  CHECK((bl == 1).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK((bl == 2).to_vector<bool>() == std::vector<bool>{false, false});
}

TEST_CASE("kl_div follows PyTorch 1.13's xlogy(t, t) - t·x at zero, negative and NaN targets",
          "[losses]") {
  using V = std::vector<Tensor>;
  // t = 0: 0 (NaN if x is ±inf or NaN), d/dt NaN; t < 0 or NaN: NaN; d/dx = -t throughout
  tgt::require_fixture_case("loss_corner/kl_targets_none", {"x", "t"},
                            [](const V& in) { return kl_div(in[0], in[1], Reduction::None); });
  tgt::require_fixture_case("loss_corner/kl_targets_sum", {"x", "t"},
                            [](const V& in) { return kl_div(in[0], in[1], Reduction::Sum); });
  tgt::require_fixture_case("loss_corner/kl_log_target_none", {"x", "t"}, [](const V& in) {
    return kl_div(in[0], in[1], Reduction::None, true);
  });
  CHECK(std::isnan(kl_div(zeros({2}), full({2}, -0.5)).item<float>()));
}

TEST_CASE("cosine_similarity and normalize: 0-dim inputs and broadcasting along dim", "[losses]") {
  using V = std::vector<Tensor>;
  // both broadcast before reducing: a size-1 dim along dim counts once per element
  tgt::require_fixture_case("loss_corner/cosine_broadcast_dim1", {"x", "t"},
                            [](const V& in) { return cosine_similarity(in[0], in[1], 1); });
  tgt::require_fixture_case("loss_corner/cosine_broadcast_0d_dim0", {"x", "t"},
                            [](const V& in) { return cosine_similarity(in[0], in[1], 0); });
  // 0-dim: one vector of one element, dim 0 or -1 (PyTorch's range [-1, 0])
  tgt::require_fixture_case("loss_corner/cosine_0d_dimm1", {"x", "t"},
                            [](const V& in) { return cosine_similarity(in[0], in[1], -1); });
  // norms below eps (and a zero vector): PyTorch 1.13 clamps each norm to eps on its own
  tgt::require_fixture_case("loss_corner/cosine_tiny_norms", {"x", "t"},
                            [](const V& in) { return cosine_similarity(in[0], in[1], 1, 1e-8); });
  tgt::require_fixture_case("loss_corner/normalize_0d_dim0", {"x"},
                            [](const V& in) { return normalize(in[0], 2.0, 0); });
  tgt::require_fixture_case("loss_corner/normalize_0d_p3_dimm1", {"x"},
                            [](const V& in) { return normalize(in[0], 3.0, -1); });
  const Tensor s = scalar_tensor(2.0);
  REQUIRE_ERROR(cosine_similarity(s, s),  // the default dim 1, as PyTorch refuses it
                "cosine_similarity: dim 1 out of range for x1 () and x2 (): expected [-1, 0]");
  REQUIRE_ERROR(normalize(s, 2.0, -2),
                "normalize: dim -2 out of range for input (): expected [-1, 0]");
}

TEST_CASE("0-dim inputs to nll_loss and cross_entropy are refused before a shape is read",
          "[losses]") {
  const Tensor x = scalar_tensor(1.0), t = scalar_tensor(0, kInt64);
  const std::string nll = "nll_loss: input () has 0 dims, expected 1 or more";
  REQUIRE_ERROR(nll_loss(x, t), nll);
  REQUIRE_ERROR(nll_loss(x, t, ones({1})), nll);
  REQUIRE_ERROR(nll_loss(x, t, Tensor(), -100, Reduction::None), nll);
  const std::string ce =
      "cross_entropy: logits () must be (N, C), (N, C, d1, ...) or (C) (target ())";
  REQUIRE_ERROR(cross_entropy(x, t), ce);
  REQUIRE_ERROR(cross_entropy(x, t, CrossEntropyOptions{Reduction::Mean, -100, 0.0, ones({1})}),
                ce);
  REQUIRE_ERROR(cross_entropy(x, scalar_tensor(1.0)), ce);  // probability targets
  // (C) logits with a 0-dim target are one sample, as PyTorch
  const Tensor lp = tensor(std::vector<double>{-1.0, -2.0}, {2});
  CHECK(nll_loss(lp, t).item<double>() == 1.0);
  // the other losses take 0-dim pairs as PyTorch does
  CHECK(mse_loss(x, scalar_tensor(0.5)).item<float>() == 0.25f);
  CHECK(huber_loss(x, scalar_tensor(0.5)).item<float>() == 0.125f);
  const Tensor p = scalar_tensor(0.3, kFloat64), one = scalar_tensor(1.0, kFloat64);
  CHECK(binary_cross_entropy(p, one).item<double>() == Approx(-std::log(0.3)));
  CHECK(binary_cross_entropy_with_logits(p, one, Tensor(), scalar_tensor(2.0, kFloat64))
            .item<double>() == Approx(2 * std::log1p(std::exp(-0.3))));
  CHECK(kl_div(scalar_tensor(-1.0), scalar_tensor(0.5), Reduction::BatchMean).item<float>() ==
        Approx(0.5 * (std::log(0.5) + 1.0)));
}

TEST_CASE("binary cross-entropy weights must broadcast to the input's shape", "[losses]") {
  const Tensor x = full({2, 3}, 0.25), t = full({2, 3}, 1.0);
  const std::string bce = "binary_cross_entropy", bcel = "binary_cross_entropy_with_logits";
  for (const Shape& ws : {Shape{4}, Shape{2}, Shape{3, 2}, Shape{1, 2, 3}, Shape{2, 2, 3}}) {
    const Tensor w = ones(ws);
    const std::string what = " " + shape_str(ws) + " does not broadcast to input (2,3)";
    REQUIRE_ERROR(binary_cross_entropy(x, t, w), bce + ": weight" + what);
    REQUIRE_ERROR(binary_cross_entropy_with_logits(x, t, w, Tensor()), bcel + ": weight" + what);
    REQUIRE_ERROR(binary_cross_entropy_with_logits(x, t, Tensor(), w),
                  bcel + ": pos_weight" + what);
  }
  REQUIRE_ERROR(binary_cross_entropy(x, t, ones({3}, kFloat64)),
                "binary_cross_entropy: input (2,3) is float32 but weight (3) is float64");
  REQUIRE_ERROR(binary_cross_entropy_with_logits(x, t, Tensor(), ones({3}, kInt64)),
                "binary_cross_entropy_with_logits: pos_weight (3) has dtype int64");
  // shapes that broadcast to input's: weight 2 on every element doubles the loss
  const double one = binary_cross_entropy(x, t).item<float>();
  for (const Shape& ws : {Shape{}, Shape{3}, Shape{2, 1}, Shape{1, 3}, Shape{2, 3}})
    CHECK(binary_cross_entropy(x, t, full(ws, 2.0)).item<float>() == Approx(2 * one));
}
