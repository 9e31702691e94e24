// nn/llama.hpp — the decoder block of today's small transformers (Llama's shape, with Hugging
// Face's module and parameter names so state dicts map by name): pre-norm RMSNorm, grouped-query
// causal self-attention with rotary position embeddings and no biases, and a SwiGLU
// feed-forward.
//
//   h   = x + self_attn(input_layernorm(x))                   (B, T, E)
//   out = h + mlp(post_attention_layernorm(h))                mlp = SwiGLU (gate/up/down_proj)
//   self_attn: q = rope(q_proj(x)), k = rope(k_proj(x)), v = v_proj(x) (num_kv_heads ≤ NH heads),
//              o_proj(SDPA(q, k, v, structure, enable_gqa)), heads last throughout (no copies)
//
// Incremental decoding: forward(x, cache) appends this call's keys and values to the layer's
// KVCache and attends to every cached position; the rotary positions start at cache.position()
// and the structural mask is aligned bottom-right (queries are the last T positions), so the
// logits equal the uncached forward over the whole sequence. A sliding-window structure
// (AttentionMask::hf_sliding_window(W)) with a rolling cache of W positions generates
// indefinitely in O(W) per token; a narrower rolling cache, or a cache another layer filled, is
// refused (KVCache::append).
// Deliberately not here: the model around the blocks (examples/gpt, arch "llama").
#pragma once

#include "nn/kv_cache.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "ops/attention/attention.hpp"

#include <memory>
#include <optional>
#include <string>

namespace tg::nn {

struct LlamaAttentionOptions {
  int64_t num_kv_heads = -1;     // -1: num_heads; else a positive divisor of it
  double rope_theta = 10000;     // rotary base
  int64_t max_positions = 4096;  // rotary table rows: positions a sequence may reach
  bool bias = false;             // biases on the q, k, v and o projections
  // Unset: `bias`; else the o projection's own (Qwen2: q, k, v biased, o not).
  std::optional<bool> o_proj_bias;
  double attention_dropout = 0;
  AttentionMask structure = AttentionMask::causal();  // and e.g. & hf_sliding_window(W)
};

class LlamaAttention : public Module {
 public:
  LlamaAttention(int64_t hidden_size, int64_t num_heads, LlamaAttentionOptions opts = {});
  // x (B, T, hidden_size) -> (B, T, hidden_size); with a cache, positions start at
  // cache->position() and the keys are every cached one.
  Tensor forward(const Tensor& x, KVCache* cache = nullptr);
  std::string extra_repr() const override;

  // head_dim is the head size hs = hidden_size / num_heads (Hugging Face's attribute name).
  int64_t hidden_size, num_heads, num_kv_heads, head_dim;
  LlamaAttentionOptions options;
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<RotaryEmbedding> rotary_emb;
};

struct LlamaDecoderLayerOptions {
  int64_t intermediate_size = 0;  // SwiGLU hidden width; 0: the multiple of 8 nearest 8E/3
  std::optional<double> rms_norm_eps = 1e-6;
  double dropout = 0;     // residual dropout after attention and after the MLP (Llama: 0)
  bool mlp_bias = false;  // biases on gate_proj, up_proj and down_proj (Hugging Face's mlp_bias)
  LlamaAttentionOptions attention;
};

class LlamaDecoderLayer : public Module {
 public:
  LlamaDecoderLayer(int64_t hidden_size, int64_t num_heads, LlamaDecoderLayerOptions opts = {});
  Tensor forward(const Tensor& x, KVCache* cache = nullptr);
  std::string extra_repr() const override;

  int64_t hidden_size, num_heads;
  LlamaDecoderLayerOptions options;
  std::shared_ptr<RMSNorm> input_layernorm, post_attention_layernorm;
  std::shared_ptr<LlamaAttention> self_attn;
  std::shared_ptr<SwiGLU> mlp;
  std::shared_ptr<Dropout> dropout;
};

}  // namespace tg::nn
