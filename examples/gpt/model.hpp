// examples/gpt/model.hpp — the character-level GPT (nanoGPT's shape with tapegrad's PyTorch-named
// modules) and its configuration, stored in checkpoint metadata so a checkpoint only ever loads
// into the model and vocabulary it was trained with.
//
//   ids (B, T) int64, T <= block
//   x = drop(tok_emb(ids) + pos_emb[:T])                                (B, T, C)
//   x = TransformerEncoder(L pre-norm GELU layers, causal self-attention,
//                          final LayerNorm)(x)                           (B, T, C)
//   logits = x · Wᵀ, W = lm_head.weight, or tok_emb.weight with tie_weights  (B, T, V)
// Self-attention is causal (key j <= query i) as an AttentionMask structure; with window W > 0
// also a sliding window of W keys (i - W < j <= i), computed in O(T·W) so long blocks stay cheap.
// Initialisation is GPT-2's: N(0, 0.02) for embeddings and matrices, N(0, 0.02/√(2L)) for the
// projections into the residual stream (attention out_proj, feed-forward linear2), biases 0.
// Deliberately not here: sampling (sample.hpp), training (train.hpp).
#pragma once

#include "nn/layers.hpp"
#include "nn/transformer.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace tgx::gpt {

struct GptConfig {
  int64_t vocab_size = 0;
  int64_t block = 32;  // context length T (positions)
  int64_t d_model = 128;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t ff = 512;    // feed-forward width (4·d_model unless --ff)
  int64_t window = 0;  // 0: full causal attention; W > 0: the last W keys
  double dropout = 0.0;
  bool tie_weights = false;

  nlohmann::json to_json() const;
  // UserError naming `what` when a field is missing or malformed.
  static GptConfig from_json(const nlohmann::json& j, const std::string& what);
  // "d_model 64 vs 128, layers 2 vs 4" for every field that differs; "" when equal.
  std::string diff(const GptConfig& other) const;
  // UserError for values the model cannot be built with, naming the option.
  void validate() const;
  tg::AttentionMask attention_mask() const;
};

class Gpt : public tg::nn::Module {
 public:
  explicit Gpt(const GptConfig& cfg);
  // ids (B, T) int64 with 1 <= T <= block -> logits (B, T, V).
  tg::Tensor forward(const tg::Tensor& ids);
  // The LM head's weight (V, C): lm_head's, or the token embedding's when tied.
  const tg::Tensor& head_weight() const;

  GptConfig cfg;
  std::shared_ptr<tg::nn::Embedding> tok_emb;
  std::shared_ptr<tg::nn::LearnedPositionalEmbedding> pos_emb;
  std::shared_ptr<tg::nn::Dropout> drop;
  std::shared_ptr<tg::nn::TransformerEncoder> blocks;  // blocks.norm is the final LayerNorm
  std::shared_ptr<tg::nn::Linear> lm_head;             // null with tie_weights
};

}  // namespace tgx::gpt
