// tests/nn/test_attention_mask_grad.cpp — nn::MultiheadAttention's float attn_mask and float
// key_padding_mask are differentiable (PyTorch: attn_mask.grad is dScores summed over the heads
// for a (T, S) mask): float64 gradchecks through the module, self- and cross-attention.
#include "helpers.hpp"

#include "nn/attention.hpp"

using namespace tg;

TEST_CASE("MultiheadAttention: a float attn_mask that requires grad gets its gradient",
          "[attention][mask_grad]") {
  manual_seed(21);
  const int64_t B = 2, T = 3, S = 4, E = 4, NH = 2;
  nn::MultiheadAttentionOptions o;
  o.batch_first = true;
  auto mha = std::make_shared<nn::MultiheadAttention>(E, NH, o);
  mha->to(kFloat64);
  Tensor x = tgt::leaf({B, T, E}), kv = tgt::leaf({B, S, E});
  for (const Shape& ms : {Shape{T, S}, Shape{B * NH, T, S}}) {
    Tensor am = tgt::leaf(ms);
    // cross-attention (key = value: the packed kv path)
    tgt::check_grad(
        [mha](const std::vector<Tensor>& in) {
          nn::MHAForwardOptions f;
          f.attn_mask = in[2];
          return mha->forward(in[0], in[1], in[1], f).first;
        },
        {x, kv, am}, "mha cross attn_mask " + shape_str(ms));
  }
  // self-attention (the packed qkv path) with a float key padding mask as well
  Tensor am = tgt::leaf({T, T}), kp = tgt::leaf({B, T});
  tgt::check_grad(
      [mha](const std::vector<Tensor>& in) {
        nn::MHAForwardOptions f;
        f.attn_mask = in[1];
        f.key_padding_mask = in[2];
        return mha->forward(in[0], in[0], in[0], f).first;
      },
      {x, am, kp}, "mha self attn_mask + float key_padding_mask");
}
