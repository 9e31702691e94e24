// tests/ops/test_half_rotary.cpp — apply_rotary on bfloat16 and float16 x, forward and backward,
// against PyTorch 1.13 (tests/fixtures/half_rows/rotary_*, from tools/make_half_fixtures_rows.py:
// Hugging Face's rotate_half form, D = 16, 34, 64). The tables may be float32 (as
// nn::RotaryEmbedding keeps them) or of x's dtype; we turn each pair in float32 and round once.
// Tolerances, in ulps of the reduced type (tests/ops/half_rows.hpp):
//   float32 tables against PyTorch's float32 result rounded once: 1 ulp + 2^-16 of the largest
//     (FMA contraction and the order of the two products differ in float32 ulps, and the two
//     products may cancel);
//   bfloat16 tables against PyTorch's composed bfloat16 form, which rounds x·cos, rotate(x)·sin
//     and their sum separately: its products carry half an ulp each of their own size, so where
//     the two terms cancel the result can be several of its own ulps away: we allow 1 ulp of
//     the larger product's magnitude, plus 1 of the result.
#include "half_rows.hpp"

using namespace tg;

namespace {
// |got - want| <= ulp(want) + ulp(max(|x·cos|, |rotate(x)·sin|)) in bfloat16, per element.
void require_vs_composed(const Tensor& got, const Tensor& want, const Tensor& scale) {
  const std::vector<float> g = got.to(kFloat32).to_vector<float>(), w = want.to_vector<float>(),
                           sc = scale.to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double allow = tgt::ulp_of(w[i], kBFloat16) + tgt::ulp_of(sc[i], kBFloat16);
    worst = std::max(worst, std::fabs(double(g[i]) - w[i]) / allow);
  }
  INFO("vs PyTorch's bf16 composed form: " << worst << " of the allowance");
  CHECK(worst <= 1);
}
}  // namespace

TEST_CASE("half rotary: bf16 and f16 x with float32 or reduced tables match PyTorch") {
  const auto cases = tgt::half_cases("rotary_D");
  REQUIRE(cases.size() == 3);
  for (const std::string& id : cases) {
    tgt::Fixture f(id);
    const Tensor cos = f.tensor("cos"), sin = f.tensor("sin");
    for (DType t : {kBFloat16, kFloat16}) {
      const bool bf = t == kBFloat16;
      const std::string s = bf ? "" : "16", ref = bf ? "r_" : "h_";
      INFO(id << " " << dtype_name(t) << " float32 tables");
      Tensor x = f.tensor("x" + s).to(t).requires_grad_();
      Tensor y = apply_rotary(x, cos, sin);
      REQUIRE(y.dtype() == t);
      y.backward(f.tensor("dout" + s).to(t));
      REQUIRE(x.grad().dtype() == t);
      tgt::require_ulps("out", y, f.tensor(ref + "rot"), t, 1, tgt::kFloor);
      tgt::require_ulps("dx", x.grad(), f.tensor(ref + "rot_dx"), t, 1, tgt::kFloor);
    }
    INFO(id << " bf16 x and bf16 tables against PyTorch's bf16 composed form");
    Tensor x = f.tensor("x").to(kBFloat16).requires_grad_();
    const Tensor cb = f.tensor("cos_bf").to(kBFloat16), sb = f.tensor("sin_bf").to(kBFloat16);
    Tensor y = apply_rotary(x, cb, sb);
    y.backward(f.tensor("dout").to(kBFloat16));
    // the larger product's magnitude per element: |x|·max(|cos|, |sin|) over the pair, bounded
    // by the pair's norm
    const Tensor x32 = f.tensor("x"), d32 = f.tensor("dout");
    const int64_t D = x32.size(-1), h = D / 2;
    auto pair_norm = [&](const Tensor& v) {
      const Tensor a = narrow(v, -1, 0, h), b = narrow(v, -1, h, h);
      const Tensor n = sqrt(add(mul(a, a), mul(b, b)));
      return cat({n, n}, -1);
    };
    require_vs_composed(y, f.tensor("bf_rot"), pair_norm(x32));
    require_vs_composed(x.grad(), f.tensor("bf_rot_dx"), pair_norm(d32));
  }
}

TEST_CASE("half rotary: tables must be float32 or x's dtype") {
  const Tensor x = randn({2, 3, 4}).to(kBFloat16);
  REQUIRE_ERROR(apply_rotary(x, ones({3, 2}, kFloat64), ones({3, 2}, kFloat64)), "apply_rotary");
  REQUIRE_ERROR(apply_rotary(randn({2, 3, 4}), ones({3, 2}).to(kBFloat16), ones({3, 2})),
                "apply_rotary");
}
