// tests/nn/test_linear_autocast.cpp — nn::Linear under autocast: a bfloat16 input against the
// float32 master weights runs (autocast casts both for linear, as PyTorch's nn.Linear under
// torch.autocast does), gives a bfloat16 output and float32 weight gradients equal to the product
// of the bfloat16-rounded operands; outside autocast the dtype mismatch still throws, naming both.
// A pre-norm TransformerEncoderLayer (its attention's out_proj receives the bfloat16 attention
// output) trains a step under autocast. Not here: the op-level decisions
// (tests/ops/test_autocast*).
#include "helpers.hpp"

#include "nn/layers.hpp"
#include "nn/transformer.hpp"
#include "ops/autocast/autocast.hpp"

using namespace tg;

TEST_CASE("nn::Linear under bf16 autocast takes a bfloat16 input against float32 weights",
          "[autocast]") {
  manual_seed(3);
  nn::Linear lin(8, 4);
  const Tensor x = randn({5, 8}).to(kBFloat16);
  // Outside autocast: the mismatch is an error that names both dtypes.
  REQUIRE_THROWS_MATCHES(
      lin.forward(x), Error,
      tgt::ErrorContains("Linear(8, 4): input (5,8) is bfloat16 but weight is float32"));
  Tensor y;
  {
    AutocastGuard guard(kBFloat16);
    y = lin.forward(x);
  }
  REQUIRE(y.dtype() == kBFloat16);
  y.to(kFloat32).sum().backward();
  REQUIRE(lin.weight.grad().dtype() == kFloat32);
  REQUIRE(lin.bias.grad().dtype() == kFloat32);
  // d(sum y)/dW[o][i] = Σ_rows x[r][i]: exact in float32 for bfloat16 x (5 terms of 8 bits),
  // rounded to bfloat16 by the GEMM's output: compare to bfloat16 rounding.
  const Tensor want = x.to(kFloat32).sum({0}).unsqueeze(0).expand({4, 8}).contiguous();
  tgt::require_close(lin.weight.grad(), want, 1e-2, 1e-2);
  // The forward against the float32 product of the rounded operands, to bfloat16 rounding.
  const Tensor ref = matmul(x.to(kFloat32), lin.weight.detach().to(kBFloat16).to(kFloat32).t()) +
                     lin.bias.detach().to(kBFloat16).to(kFloat32);
  tgt::require_close(y.to(kFloat32), ref, 2e-2, 1e-2);
}

TEST_CASE("nn::TransformerEncoderLayer (norm_first) trains a step under bf16 autocast",
          "[autocast]") {
  manual_seed(4);
  nn::TransformerLayerOptions lo;
  lo.dim_feedforward = 32;
  lo.dropout = 0.0;
  lo.batch_first = true;
  lo.norm_first = true;
  nn::TransformerEncoderLayer layer(16, 2, lo);
  const Tensor x = randn({2, 6, 16});
  Tensor y;
  {
    AutocastGuard guard(kBFloat16);
    y = layer.forward(x);
  }
  REQUIRE(y.dtype() == kFloat32);  // the residual stream: float32 + bfloat16 promotes
  y.sum().backward();
  for (const Tensor& p : layer.parameters()) {
    REQUIRE(p.grad().defined());
    REQUIRE(p.grad().dtype() == kFloat32);
  }
}
