// tests/ops/test_half_norm.cpp — layer_norm and rms_norm on bfloat16 and float16, forward and
// backward, against PyTorch 1.13 (tests/fixtures/half_rows/norm_*, from
// tools/make_half_fixtures_rows.py): rows of D = 1, 15, 16, 17 and 1027, weight and bias of the
// input's dtype, and the mixed case (bfloat16 input, float32 weight and bias).
// We keep the statistics (mean, rstd) in float64 and the weight / bias gradient sums in float64
// and round each result once. PyTorch 1.13 does worse: its bfloat16 LayerNorm keeps mean/rstd and
// sums dweight / dbias in bfloat16, and it RAISES on the mixed pair ("expected scalar type
// BFloat16 but found Float", also under autocast after a Linear): we accept it, and check it
// against PyTorch's float32 result (out and dx rounded once to bfloat16, dweight / dbias float32).
// Tolerances (tests/ops/half_rows.hpp: ulps at the reference value plus a floor, a fraction of the
// tensor's largest magnitude, since x - mean and dx subtract terms of that size):
//   against PyTorch's float32 result rounded once: 1 ulp + 2^-16 of the largest; dweight / dbias of
//     the mixed case (float32): 1 float32 ulp + 2^-16 of the largest (our float64 statistics and
//     sums against PyTorch's float32 ones);
//   against PyTorch's bfloat16 LayerNorm: 2 ulps + 2^-8 of the largest (its bfloat16 statistics and
//     gradient sums: one bfloat16 rounding of the largest term).
// D = 1 and 2 are left out: the output is exactly ±w + b and dx exactly 0 there, and float32's
// rounding noise in the reference is no reference.
// RMSNorm: PyTorch 1.13 has none; the reference is its float32 formula rounded once.
#include "half_rows.hpp"

using namespace tg;

namespace {
void check_layer_norm(tgt::Fixture& f, DType t, int64_t D) {
  const bool bf = t == kBFloat16;
  const std::string s = bf ? "" : "16";
  INFO(f.path() << " layer_norm " << dtype_name(t));
  Tensor x = f.tensor("x" + s).to(t).requires_grad_();
  Tensor w = f.tensor("w" + s).to(t).requires_grad_();
  Tensor b = f.tensor("b" + s).to(t).requires_grad_();
  Tensor y = layer_norm(x, {D}, w, b, 1e-5);
  REQUIRE(y.dtype() == t);
  y.backward(f.tensor("dout" + s).to(t));
  REQUIRE((x.grad().dtype() == t && w.grad().dtype() == t && b.grad().dtype() == t));
  tgt::check_refs(f, "ln", y, x.grad(), t, tgt::kFloor);
  const std::string ref = bf ? "r_" : "h_";
  tgt::require_ulps("dw vs float32 rounded once", w.grad(), f.tensor(ref + "ln_dw"), t, 1,
                    tgt::kFloor);
  tgt::require_ulps("db vs float32 rounded once", b.grad(), f.tensor(ref + "ln_db"), t, 1,
                    tgt::kFloor);
  if (!bf) return;
  tgt::require_ulps("dw vs PyTorch bf16", w.grad(), f.tensor("bf_ln_dw"), t, 2, tgt::kTorchFloor);
  tgt::require_ulps("db vs PyTorch bf16", b.grad(), f.tensor("bf_ln_db"), t, 2, tgt::kTorchFloor);
}

void check_mixed(tgt::Fixture& f, int64_t D) {
  INFO(f.path() << " layer_norm bf16 input, float32 weight and bias");
  Tensor x = f.tensor("x").to(kBFloat16).requires_grad_();
  Tensor w = f.tensor("wf").requires_grad_(), b = f.tensor("bf").requires_grad_();
  Tensor y = layer_norm(x, {D}, w, b, 1e-5);
  REQUIRE(y.dtype() == kBFloat16);
  y.backward(f.tensor("dout").to(kBFloat16));
  REQUIRE((x.grad().dtype() == kBFloat16 && w.grad().dtype() == kFloat32 &&
           b.grad().dtype() == kFloat32));
  tgt::require_ulps("out", y, f.tensor("m_ln"), kBFloat16, 1, tgt::kFloor);
  tgt::require_ulps("dx", x.grad(), f.tensor("m_ln_dx"), kBFloat16, 1, tgt::kFloor);
  tgt::require_ulps("dw (float32)", w.grad(), f.tensor("m_ln_dw"), kFloat32, 1, tgt::kFloor);
  tgt::require_ulps("db (float32)", b.grad(), f.tensor("m_ln_db"), kFloat32, 1, tgt::kFloor);
}

void check_rms_norm(tgt::Fixture& f, DType t, int64_t D) {
  const bool bf = t == kBFloat16;
  const std::string s = bf ? "" : "16", ref = bf ? "r_" : "h_";
  INFO(f.path() << " rms_norm " << dtype_name(t));
  Tensor x = f.tensor("x" + s).to(t).requires_grad_();
  Tensor w = f.tensor("w" + s).to(t).requires_grad_();
  Tensor y = rms_norm(x, {D}, w, 1e-6);
  REQUIRE(y.dtype() == t);
  y.backward(f.tensor("dout" + s).to(t));
  tgt::require_ulps("out", y, f.tensor(ref + "rms"), t, 1, tgt::kFloor);
  tgt::require_ulps("dx", x.grad(), f.tensor(ref + "rms_dx"), t, 1, tgt::kFloor);
  tgt::require_ulps("dw", w.grad(), f.tensor(ref + "rms_dw"), t, 1, tgt::kFloor);
}
}  // namespace

TEST_CASE("half layer_norm and rms_norm: bf16 and f16 rows of every tail length match PyTorch") {
  const auto cases = tgt::half_cases("norm_D");
  REQUIRE(cases.size() == 5);
  for (const std::string& id : cases) {
    tgt::Fixture f(id);
    const int64_t D = f.tensor("w").numel();
    for (DType t : {kBFloat16, kFloat16}) {
      check_layer_norm(f, t, D);
      check_rms_norm(f, t, D);
    }
    check_mixed(f, D);
  }
}

TEST_CASE(
    "half layer_norm: mixed weights are float32 or the input's dtype, or reduced with a float32 "
    "input") {
  const Tensor x = randn({2, 4}).to(kBFloat16);
  REQUIRE_ERROR(layer_norm(x, {4}, ones({4}, kFloat64)), "layer_norm");
  REQUIRE_ERROR(layer_norm(x, {4}, ones({4}).to(kFloat16)), "layer_norm");
  // A float32 input with reduced parameters (weight-only reduced precision) is float32
  // (tests/ops/test_matmul_mixed.cpp checks its values); float64 with them stays refused.
  CHECK(layer_norm(randn({2, 4}), {4}, ones({4}).to(kBFloat16)).dtype() == kFloat32);
  REQUIRE_ERROR(layer_norm(randn({2, 4}, kFloat64), {4}, ones({4}).to(kBFloat16)), "layer_norm");
  // rms_norm's default eps is the input dtype's epsilon, as torch.nn.functional.rms_norm
  const Tensor xr = (randn({3, 8}) * 0.01).to(kBFloat16);
  const Tensor want = rms_norm(xr.to(kFloat32), {8}, Tensor(), finfo(kBFloat16).eps);
  tgt::require_ulps("rms_norm default eps", rms_norm(xr, {8}), want, kBFloat16, 1);
}
