// tests/ops/test_half_loss.cpp — cross_entropy on bfloat16 and float16 logits, forward and
// backward, against PyTorch 1.13 (tests/fixtures/half_rows/ce_*, from
// tools/make_half_fixtures_rows.py): C = 1, 15, 16, 17, 1027 classes (vector bodies and every
// tail), reductions none and mean, and rows holding -inf, NaN and logits up to 3e38 / 6e4.
// Like plain F.cross_entropy in PyTorch 1.13, bfloat16 logits give a bfloat16 loss (autocast casts
// the logits to float32 before it: nn/amp's business, not this op's). We load each row as float32,
// keep the log-sum-exp and the loss in float64 and round once.
// Tolerances (tests/ops/half_rows.hpp: ulps at the reference value plus a floor, a fraction of the
// tensor's largest magnitude):
//   against PyTorch's float32 result rounded once: the loss 1 ulp (our float64 loss reaches the
//     reduced type through float32), dlogits 1 ulp + 2^-16 of the largest (float32 exp in
//     another order; dlogits subtracts the target's 1 from its probability);
//   against PyTorch's bfloat16 kernels (log_softmax rounded to bfloat16, then nll_loss, and a
//     backward reading those rounded log-probabilities): 2 ulps + 2^-8 of the largest.
// A row with many equal maxima keeps log(count) in lse = max + log Σ only while max is below
// about 1e13 (lse is float64, as for float32 logits), so the special case's tied maxima are 1e4.
#include "half_rows.hpp"

using namespace tg;

namespace {
void check_case(const std::string& id, DType t) {
  tgt::Fixture f(id);
  const bool bf = t == kBFloat16;
  const std::string s = bf ? "" : "16";
  const Tensor target = f.tensor("target").to(kInt64);
  for (bool mean : {false, true}) {
    INFO(id << " " << dtype_name(t) << (mean ? " mean" : " none"));
    const std::string op = mean ? "cem" : "ce";
    Tensor x = f.tensor("x" + s).to(t).requires_grad_();
    CrossEntropyOptions o;
    o.reduction = mean ? Reduction::Mean : Reduction::None;
    Tensor loss = cross_entropy(x, target, o);
    REQUIRE(loss.dtype() == t);
    loss.backward(mean ? ones({}).to(t) : f.tensor("dout" + s).to(t));
    REQUIRE(x.grad().dtype() == t);
    tgt::check_refs(f, op, loss, x.grad(), t, 0);
  }
}
}  // namespace

TEST_CASE("half cross_entropy: bf16 and f16 logits of every tail length match PyTorch") {
  const auto cases = tgt::half_cases("ce_C");
  REQUIRE(cases.size() == 5);
  for (const std::string& id : cases)
    for (DType t : {kBFloat16, kFloat16}) check_case(id, t);
}

TEST_CASE("half cross_entropy: -inf, NaN and huge logits in bf16 and f16 match PyTorch") {
  for (DType t : {kBFloat16, kFloat16}) {
    tgt::Fixture f("half_rows/ce_special");
    const bool bf = t == kBFloat16;
    const std::string s = bf ? "" : "16", ref = bf ? "r_" : "h_";
    INFO(dtype_name(t));
    Tensor x = f.tensor("x" + s).to(t).requires_grad_();
    CrossEntropyOptions o;
    o.reduction = Reduction::None;
    Tensor loss = cross_entropy(x, f.tensor("target").to(kInt64), o);
    loss.backward(f.tensor("dout" + s).to(t));
    tgt::require_ulps("loss", loss, f.tensor(ref + "ce"), t, 1);
    tgt::require_ulps("dx", x.grad(), f.tensor(ref + "ce_dx"), t, 1, tgt::kFloor);
    if (bf)
      tgt::require_ulps("loss vs PyTorch bf16", loss, f.tensor("bf_ce"), t, 2, tgt::kTorchFloor);
  }
}

TEST_CASE("half cross_entropy: (N, C, d) logits gather strided rows like float32") {
  // The strided rows of (N, C, d1) logits are loaded at their stride: the result is the float32
  // op's on the loaded values, rounded once (loss: float64 -> float32 -> bf16, the same path).
  manual_seed(11);
  for (DType t : {kBFloat16, kFloat16}) {
    const Tensor x32 = (randn({3, 17, 5}) * 3).to(t).to(kFloat32);
    const Tensor target = randint(0, 17, {3, 5});
    CrossEntropyOptions o;
    o.reduction = Reduction::None;
    Tensor x = x32.to(t).requires_grad_();
    Tensor loss = cross_entropy(x, target, o);
    Tensor x32l = x32.clone().requires_grad_();
    Tensor loss32 = cross_entropy(x32l, target, o);
    REQUIRE(loss.to(kFloat32).to_vector<float>() == loss32.to(t).to(kFloat32).to_vector<float>());
    const Tensor g32 = randn({3, 5}).to(t).to(kFloat32);
    loss.backward(g32.to(t));
    loss32.backward(g32);
    REQUIRE(x.grad().to(kFloat32).to_vector<float>() ==
            x32l.grad().to(t).to(kFloat32).to_vector<float>());
  }
}
