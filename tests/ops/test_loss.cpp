// tests/ops/test_loss.cpp — cross_entropy: hand-computed values for every reduction,
// ignore_index, label smoothing, the all-ignored mean, gradchecks w.r.t. logits in every layout,
// float32 agreement and errors.
#include "helpers.hpp"

#include <algorithm>
#include <cmath>

using namespace tg;

namespace {
Tensor ce(const Tensor& x, const Tensor& t, Reduction r, int64_t ignore = -100, double ls = 0.0) {
  CrossEntropyOptions o;
  o.reduction = r;
  o.ignore_index = ignore;
  o.label_smoothing = ls;
  return cross_entropy(x, t, o);
}
const double kLse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));  // row [1, 2, 3]
}  // namespace

TEST_CASE("cross_entropy matches hand-computed values for every reduction", "[loss]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 0, 0, 0}, {2, 3});
  Tensor t = tensor(std::vector<int64_t>{2, 0}, {2});
  const double n0 = kLse0 - 3, n1 = std::log(3.0);
  tgt::require_close(ce(x, t, Reduction::None), {n0, n1}, 1e-15, 1e-14);
  tgt::require_close(ce(x, t, Reduction::Sum), {n0 + n1}, 1e-15, 1e-14);
  Tensor m = cross_entropy(x, t);
  REQUIRE(m.dim() == 0);
  tgt::require_close(m, {(n0 + n1) / 2}, 1e-15, 1e-14);
  // Label smoothing: (1-ε)·nll + ε/C·Σ_c(lse - x_c).
  const double s0 = 0.9 * n0 + 0.1 / 3 * (3 * kLse0 - 6), s1 = 0.9 * n1 + 0.1 * n1;
  tgt::require_close(ce(x, t, Reduction::None, -100, 0.1), {s0, s1}, 1e-15, 1e-14);
  // ignore_index: the ignored row gives 0 and leaves the mean's denominator.
  Tensor ti = tensor(std::vector<int64_t>{2, -100}, {2});
  tgt::require_close(ce(x, ti, Reduction::None), {n0, 0}, 1e-15, 1e-14);
  tgt::require_close(ce(x, ti, Reduction::Mean), {n0}, 1e-15, 1e-14);
  tgt::require_close(ce(x, ti, Reduction::Mean, -100, 0.1), {0.9 * n0 + 0.1 / 3 * (3 * kLse0 - 6)},
                     1e-15, 1e-14);
  // An in-range ignore_index is ignored too.
  tgt::require_close(ce(x, t, Reduction::Mean, 0), {n0}, 1e-15, 1e-14);
  // 1-D logits (C) with a 0-dim target: one sample.
  tgt::require_close(cross_entropy(tensor(std::vector<double>{1, 2, 3}), scalar_tensor(2, kInt64)),
                     {n0}, 1e-15, 1e-14);
}

TEST_CASE("cross_entropy backward is softmax minus the target distribution", "[loss]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 0, 0, 0}, {2, 3}).requires_grad_();
  Tensor t = tensor(std::vector<int64_t>{2, 0}, {2});
  cross_entropy(x, t).backward();
  std::vector<double> p0 = {std::exp(1 - kLse0), std::exp(2 - kLse0), std::exp(3 - kLse0)};
  tgt::require_close(x.grad(),
                     {p0[0] / 2, p0[1] / 2, (p0[2] - 1) / 2, (1.0 / 3 - 1) / 2, 1.0 / 6, 1.0 / 6},
                     1e-15, 1e-13);
  x.reset_grad();
  // Smoothing ε = 0.3, sum: target distribution (ε/C, ε/C, 1-ε+ε/C); the ignored row gets 0.
  ce(x, tensor(std::vector<int64_t>{2, 7}, {2}), Reduction::Sum, 7, 0.3).backward();
  tgt::require_close(x.grad(), {p0[0] - 0.1, p0[1] - 0.1, p0[2] - 0.8, 0, 0, 0}, 1e-15, 1e-13);
}

TEST_CASE("cross_entropy with every target ignored: mean NaN with zero gradient, sum 0", "[loss]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 0, 0, 0}, {2, 3}).requires_grad_();
  Tensor t = tensor(std::vector<int64_t>{-100, -100}, {2});
  Tensor m = cross_entropy(x, t);
  REQUIRE(std::isnan(m.item<double>()));
  m.backward();
  tgt::require_close(x.grad(), {0, 0, 0, 0, 0, 0}, 0, 0);
  tgt::require_close(ce(x, t, Reduction::Sum, -100, 0.2), std::vector<double>{0}, 0, 0);
}

TEST_CASE("cross_entropy gradcheck w.r.t. logits: reductions, ignore_index, smoothing, layouts",
          "[loss]") {
  manual_seed(61);
  struct Case {
    Shape x;
    std::vector<int64_t> t;
    Shape ts;
  };
  const std::vector<Case> cases = {
      {{4, 5}, {1, -100, 4, 0}, {4}},
      {{3, 4, 2}, {0, 3, -100, 2, 1, 1}, {3, 2}},              // (N, C, d)
      {{2, 3, 2, 2}, {0, 1, 2, 2, -100, 1, 0, 0}, {2, 2, 2}},  // (N, C, d1, d2)
      {{1, 1}, {0}, {1}},
      {{4}, {3}, {}},  // (C) with a 0-dim target
  };
  for (const Case& c : cases) {
    Tensor x = tgt::leaf(c.x, 2.0);
    for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      for (double ls : {0.0, 0.25}) {
        for (int64_t ignore : {int64_t(-100), int64_t(0)}) {
          std::vector<int64_t> tv = c.t;  // -100 marks the ignored positions
          for (int64_t& v : tv) v = v == -100 ? ignore : v;
          Tensor t = c.ts.empty() ? scalar_tensor(double(tv[0]), kInt64) : tensor(tv, c.ts);
          bool all_ignored =
              std::all_of(tv.begin(), tv.end(), [ignore](int64_t v) { return v == ignore; });
          if (all_ignored && r == Reduction::Mean) continue;  // NaN: tested above
          const std::string what =
              fmt::format("cross_entropy logits {} reduction {} smoothing {} ignore {}",
                          shape_str(c.x), static_cast<int>(r), ls, ignore);
          tgt::check_grad(
              [t, r, ls, ignore](const std::vector<Tensor>& in) {
                return ce(in[0], t, r, ignore, ls);
              },
              {x}, what);
        }
      }
    }
  }
}

TEST_CASE("cross_entropy float32 agrees with float64", "[loss]") {
  manual_seed(62);
  Tensor x = randn({6, 7, 3}, kFloat64);
  Tensor t = randint(0, 7, {6, 3});
  Tensor x32 = x.to(kFloat32).requires_grad_();
  Tensor x64 = x.detach().requires_grad_();
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    Tensor y32 = ce(x32, t, r, -100, 0.1), y64 = ce(x64, t, r, -100, 0.1);
    REQUIRE(y32.dtype() == kFloat32);
    tgt::require_close(y32, y64, 1e-5, 1e-5, "cross_entropy f32");
    y32.backward(ones(y32.shape()));
    y64.backward(ones(y64.shape(), kFloat64));
    tgt::require_close(x32.grad(), x64.grad(), 1e-6, 1e-5, "cross_entropy f32 grad");
    x32.reset_grad();
    x64.reset_grad();
  }
}

TEST_CASE("cross_entropy errors name the class, logits and target shapes", "[loss]") {
  Tensor x = zeros({2, 3});
  REQUIRE_ERROR(cross_entropy(x, tensor(std::vector<int64_t>{0, 3}, {2})),
                "cross_entropy: target class 3 at flat position 1 is out of range [0, 3) for "
                "logits (2,3) and target "
                "(2) (ignore_index -100)");
  REQUIRE_ERROR(cross_entropy(x, tensor(std::vector<int64_t>{-1, 0}, {2})),
                "target class -1 at flat position 0");
  REQUIRE_ERROR(cross_entropy(x, tensor(std::vector<int64_t>{0, 1, 2}, {3})),
                "cross_entropy: target (3) does not match logits (2,3): expected target (2)");
  REQUIRE_ERROR(cross_entropy(zeros({2, 3, 4}), zeros({2, 3}, kInt64)),
                "cross_entropy: target (2,3) does not match logits (2,3,4): expected target (2,4)");
  REQUIRE_ERROR(cross_entropy(x, zeros({2})),
                "cross_entropy: target (2) has dtype float32, expected int64");
  REQUIRE_ERROR(cross_entropy(zeros({2, 3}, kInt64), zeros({2}, kInt64)),
                "cross_entropy: logits (2,3) has dtype int64, expected float32 or float64");
  REQUIRE_ERROR(cross_entropy(scalar_tensor(1.0), zeros({}, kInt64)),
                "cross_entropy: logits () must be (N, C)");
  CrossEntropyOptions o;
  o.label_smoothing = 1.5;
  REQUIRE_ERROR(cross_entropy(x, zeros({2}, kInt64), o),
                "cross_entropy: label_smoothing must be in [0, 1], got 1.5");
}

TEST_CASE("empty inputs give empty results through every op of this family",
          "[loss][softmax][norm]") {
  Tensor x = zeros({0, 3}, kFloat64).requires_grad_();
  REQUIRE(softmax(x, 0).shape() == Shape{0, 3});
  REQUIRE(log_softmax(x, 1).shape() == Shape{0, 3});
  REQUIRE(layer_norm(x, {3}).shape() == Shape{0, 3});
  REQUIRE(dropout(x, 0.5).shape() == Shape{0, 3});
  REQUIRE(embedding(zeros({0}, kInt64), ones({4, 3})).shape() == Shape{0, 3});
  Tensor t = zeros({0}, kInt64);
  REQUIRE(std::isnan(cross_entropy(x, t).item<double>()));  // 0/0 like PyTorch
  Tensor s = ce(x, t, Reduction::Sum);
  tgt::require_close(s, std::vector<double>{0}, 0, 0);
  s.backward();
  REQUIRE(x.grad().shape() == Shape{0, 3});
}
