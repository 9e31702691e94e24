// nn/attention.hpp — MultiheadAttention with PyTorch's semantics, defaults, parameter names and
// initialisation (so a PyTorch state dict loads without renaming), plus local, blocked and
// causal variants as options of the same module, and the seed articles' simpler layout.
//
// Layouts: query (T, B, E) or (B, T, E) with batch_first, key/value (S, B, kdim/vdim); unbatched
// (T, E). Masks follow nn.MultiheadAttention exactly: attn_mask (T, S) or (B·NH, T, S), bool True
// = NOT allowed or float added to the scores; key_padding_mask (B, S) (or (S) unbatched), bool
// True = padding (a float one is added). Weights: (B, T, S) averaged over heads, or
// (B, NH, T, S) per head. Unlike PyTorch, a fully masked row gives output 0 and weight 0, never
// NaN (pytorch issue 41508).
// Deliberately not here: the attention kernel itself (ops/attention/sdpa.cpp, ops/attention/cpu/fused.cpp).
#pragma once

#include "nn/kv_cache.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "ops/attention/attention.hpp"

#include <memory>
#include <utility>

namespace tg::nn {

// The key/value heads of a grouped-query attention module: num_kv_heads -1 means num_heads, else
// it must be a positive divisor of num_heads; any other value throws, naming `module`, the value
// and the allowed ones (MultiheadAttention, LlamaAttention).
int64_t resolve_num_kv_heads(const char* module, int64_t num_kv_heads, int64_t num_heads);

struct MultiheadAttentionOptions {
  double dropout = 0.0;
  bool bias = true;
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  int64_t kdim = -1;  // -1: embed_dim
  int64_t vdim = -1;  // -1: embed_dim
  bool batch_first = false;
  // Our extension: a structural mask applied in every forward (causal, local(left, right),
  // blocked(W)), computed in O(T·W) — the LocalMultiheadAttention users build by subclassing
  // PyTorch's, without the dense T×S mask.
  AttentionMask structure;
  // Grouped-/multi-query attention: this many key/value heads (-1: num_heads), dividing
  // num_heads; query head h reads key/value head h / (num_heads / num_kv_heads), in place
  // (SDPAOptions::enable_gqa). The key and value projections shrink to num_kv_heads·head_dim rows:
  // in_proj_weight (E + 2·kv_dim, E), or k_proj_weight (kv_dim, kdim), v_proj_weight (kv_dim,
  // vdim); bias_k, bias_v (1, 1, kv_dim).
  int64_t num_kv_heads = -1;
};

struct MHAForwardOptions {
  Tensor key_padding_mask;  // (B, S) / (S): bool True = padding, or float (added)
  bool need_weights = true;
  Tensor attn_mask;  // (T, S) or (B·NH, T, S): bool True = blocked, or float
  bool average_attn_weights = true;
  // PyTorch 2's hint that attn_mask is causal; here, without an attn_mask, it applies a causal
  // (top-left) mask.
  bool is_causal = false;
  // Incremental decoding (our extension): self-attention (one tensor as query, key and value)
  // appends this call's projected keys and values to the cache and attends to every cached
  // position, the structure (and is_causal) aligned bottom-right: the queries are the last T
  // positions. No attn_mask or key_padding_mask, add_bias_kv or add_zero_attn with it. One cache
  // per layer; a rolling one must cover the structure's window (KVCache::append).
  KVCache* kv_cache = nullptr;
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions opts = {});
  // Returns (output, weights); weights are undefined when need_weights is false.
  // Every op it records names the caller's line as its site.
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const MHAForwardOptions& f = {}, Site site = Site::here());
  // PyTorch's positional order: forward(query, key, value, key_padding_mask, need_weights,
  // attn_mask, average_attn_weights, is_causal).
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask, bool need_weights = true,
                                    const Tensor& attn_mask = Tensor(),
                                    bool average_attn_weights = true, bool is_causal = false,
                                    Site site = Site::here());
  std::string extra_repr() const override;

  int64_t embed_dim, num_heads, head_dim, kdim, vdim;
  int64_t num_kv_heads, kv_dim;  // kv_dim = num_kv_heads · head_dim (embed_dim without grouping)
  MultiheadAttentionOptions options;
  bool same_embed;  // kdim == vdim == embed_dim: one packed in_proj_weight
  // Packed (3E, E) when same_embed, else q_proj_weight (E, E), k_proj_weight (E, kdim),
  // v_proj_weight (E, vdim). in_proj_bias (3E) when bias; bias_k, bias_v (1, 1, E) with
  // add_bias_kv. With num_kv_heads < num_heads the key and value parts have kv_dim rows.
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v;
  std::shared_ptr<Linear> out_proj;
};

// T5's learned relative-position bias (Hugging Face's T5Attention.relative_attention_bias, an
// Embedding(num_buckets, num_heads): weight (num_buckets, num_heads) ~ N(0, 1)). mask() is the
// AttentionMask part that adds weight[bucket(j - i'), h] to head h's scores in the fused kernel
// (AttentionMask::relative_bias), differentiable w.r.t. weight; intersect it with the structure:
//   sdpa(q, k, v, AttentionMask::causal() & bias.mask(), ...)
class RelativePositionBias : public Module {
 public:
  RelativePositionBias(int64_t num_heads, int64_t num_buckets = 32, int64_t max_distance = 128,
                       bool bidirectional = true);
  AttentionMask mask() const;
  std::string extra_repr() const override;
  int64_t num_heads, num_buckets, max_distance;
  bool bidirectional;
  Tensor weight;
};

// The seed articles' MultiHeadAttention(d_model, n_heads): four Linear layers W_q, W_k, W_v, W_o
// (with bias), batch-first (B, T, C) inputs and the seed's mask convention (mask == 0 blocked,
// broadcastable to (B, NH, T, S)). forward returns (output, weights (B, NH, T, S)).
class SeedMultiHeadAttention : public Module {
 public:
  SeedMultiHeadAttention(int64_t d_model, int64_t n_heads, AttentionMask structure = {});
  std::pair<Tensor, Tensor> forward(const Tensor& Q, const Tensor& K, const Tensor& V,
                                    const Tensor& mask = Tensor());
  std::string extra_repr() const override;
  int64_t d_model, n_heads, d_k;
  AttentionMask structure;
  std::shared_ptr<Linear> W_q, W_k, W_v, W_o;
};

}  // namespace tg::nn
