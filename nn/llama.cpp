// nn/llama.cpp — LlamaAttention and LlamaDecoderLayer (see llama.hpp).
#include "nn/llama.hpp"

#include "nn/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tg::nn {

LlamaAttention::LlamaAttention(int64_t E, int64_t NH, LlamaAttentionOptions opts)
    : Module("LlamaAttention"), hidden_size(E), num_heads(NH), options(std::move(opts)) {
  if (E <= 0 || NH <= 0 || E % NH != 0)
    throw Error(fmt::format(
        "LlamaAttention: hidden_size {} must be a positive multiple of num_heads {}", E, NH));
  head_dim = E / NH;
  num_kv_heads = resolve_num_kv_heads("LlamaAttention", options.num_kv_heads, NH);
  if (head_dim % 2 != 0)
    throw Error(
        fmt::format("LlamaAttention: head_dim {} (hidden_size {} / num_heads {}) must be "
                    "even for rotary embeddings",
                    head_dim, E, NH));
  if (!(options.attention_dropout >= 0 && options.attention_dropout < 1))
    throw Error(fmt::format("LlamaAttention: attention_dropout must be in [0, 1), got {}",
                            options.attention_dropout));
  const int64_t KV = num_kv_heads * head_dim;
  q_proj = register_module("q_proj", std::make_shared<Linear>(E, E, options.bias));
  k_proj = register_module("k_proj", std::make_shared<Linear>(E, KV, options.bias));
  v_proj = register_module("v_proj", std::make_shared<Linear>(E, KV, options.bias));
  o_proj = register_module(
      "o_proj", std::make_shared<Linear>(E, E, options.o_proj_bias.value_or(options.bias)));
  rotary_emb = register_module(
      "rotary_emb",
      std::make_shared<RotaryEmbedding>(head_dim, options.max_positions, options.rope_theta));
}

std::string LlamaAttention::extra_repr() const {
  std::string s = fmt::format("hidden_size={}, num_heads={}, num_kv_heads={}, head_dim={}",
                              hidden_size, num_heads, num_kv_heads, head_dim);
  if (!options.structure.is_none()) s += ", structure=" + options.structure.name();
  return s;
}

Tensor LlamaAttention::forward(const Tensor& x, KVCache* cache) {
  if (!x.defined() || x.dim() != 3 || x.size(2) != hidden_size)
    throw Error(fmt::format("LlamaAttention: x {} must be (B, T, hidden_size = {})",
                            x.defined() ? shape_str(x.shape()) : "undefined", hidden_size));
  const int64_t B = x.size(0), T = x.size(1), start = cache ? cache->position() : 0;
  if (start + T > options.max_positions)
    throw Error(
        fmt::format("LlamaAttention: positions {}..{} exceed max_positions {} (the rotary "
                    "table); build the model with a larger max_positions",
                    start, start + T - 1, options.max_positions));
  // Heads last, q (B, T, NH, hs) and k, v (B, T, NKV, hs): views of the projections, q and k
  // rotated at their positions.
  const int64_t NH = num_heads, NKV = num_kv_heads, hs = head_dim;
  Tensor q = rotary_emb->forward(reshape(q_proj->forward(x), {B, T, NH, hs}), start, 1);
  Tensor k = rotary_emb->forward(reshape(k_proj->forward(x), {B, T, NKV, hs}), start, 1);
  Tensor v = reshape(v_proj->forward(x), {B, T, NKV, hs});
  AttentionMask mask = options.structure;
  if (cache) {  // the queries are the last T of the cached positions
    std::tie(k, v) = cache->append(k, v, *this, options.structure);
    mask = mask.aligned(CausalAlign::BottomRight);
  }
  SDPAOptions so;
  so.heads_last = true;
  so.enable_gqa = NKV != NH;
  so.dropout_p = options.attention_dropout;
  so.training = is_training();
  Tensor o = scaled_dot_product_attention(q, k, v, mask, so).output;  // (B, T, NH, hs)
  return o_proj->forward(reshape(o, {B, T, hidden_size}));
}

namespace {
// Llama's default SwiGLU width: 2/3 of 4E, rounded up to a multiple of 8.
int64_t default_intermediate(int64_t E) { return (8 * E / 3 + 7) / 8 * 8; }
}  // namespace

LlamaDecoderLayer::LlamaDecoderLayer(int64_t E, int64_t NH, LlamaDecoderLayerOptions opts)
    : Module("LlamaDecoderLayer"), hidden_size(E), num_heads(NH), options(std::move(opts)) {
  if (options.intermediate_size < 0)
    throw Error(
        fmt::format("LlamaDecoderLayer: intermediate_size must be >= 0 (0: default), got {}",
                    options.intermediate_size));
  if (options.intermediate_size == 0) options.intermediate_size = default_intermediate(E);
  if (!(options.dropout >= 0 && options.dropout < 1))
    throw Error(
        fmt::format("LlamaDecoderLayer: dropout must be in [0, 1), got {}", options.dropout));
  self_attn =
      register_module("self_attn", std::make_shared<LlamaAttention>(E, NH, options.attention));
  mlp = register_module("mlp",
                        std::make_shared<SwiGLU>(E, options.intermediate_size, options.mlp_bias));
  input_layernorm =
      register_module("input_layernorm", std::make_shared<RMSNorm>(E, options.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm",
                                             std::make_shared<RMSNorm>(E, options.rms_norm_eps));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
}

std::string LlamaDecoderLayer::extra_repr() const {
  return fmt::format("hidden_size={}, num_heads={}, intermediate_size={}", hidden_size, num_heads,
                     options.intermediate_size);
}

Tensor LlamaDecoderLayer::forward(const Tensor& x, KVCache* cache) {
  Tensor h = add(x, dropout->forward(self_attn->forward(input_layernorm->forward(x), cache)));
  return add(h, dropout->forward(mlp->forward(post_attention_layernorm->forward(h))));
}

}  // namespace tg::nn
