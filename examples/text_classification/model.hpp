// examples/text_classification/model.hpp — the Transformer-encoder text classifier and its
// configuration (stored in checkpoint metadata so a checkpoint is only ever loaded into the
// model, vocabulary and classes it was trained with).
//
//   ids (B, T) int64, pad (B, T) bool (True = padding)
//   x = tok_emb(ids) + pos_emb[:T]                       (B, T, C)
//   x = TransformerEncoder(pre-norm layers, final LayerNorm)(x, key_padding_mask = pad)
//   pooled = Σ_t x[:, t]·keep[:, t] / Σ_t keep[:, t]      (B, C)  masked mean over real tokens
//   logits = head(dropout(pooled))                       (B, NC)
// Deliberately not here: tokenization (bpe.hpp), the training loop (train.hpp).
#pragma once

#include "nn/layers.hpp"
#include "nn/transformer.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace tgx::cls {

struct ModelConfig {
  int64_t vocab_size = 0;
  int64_t num_classes = 0;
  int64_t max_len = 128;
  int64_t tail = 0;  // of max_len, tokens taken from the text's end (head + tail truncation)
  int64_t d_model = 64;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t ff = 256;
  double dropout = 0.1;

  nlohmann::json to_json() const;
  // Throws UserError naming `what` when a field is missing or malformed.
  static ModelConfig from_json(const nlohmann::json& j, const std::string& what);
  // "d_model 64 vs 32, layers 2 vs 1" for every field that differs; "" when equal.
  std::string diff(const ModelConfig& other) const;
  // UserError for values the model cannot be built with (names the option).
  void validate() const;
};

class TextClassifier : public tg::nn::Module {
 public:
  explicit TextClassifier(const ModelConfig& cfg);
  // ids (B, T) int64 with T <= max_len, pad (B, T) bool -> logits (B, num_classes).
  tg::Tensor forward(const tg::Tensor& ids, const tg::Tensor& pad);
  // Keeps each layer's per-head attention weights (B, NH, T, T) from the next forwards.
  void keep_attention(bool on) { encoder->set_need_weights(on, /*average_attn_weights=*/false); }
  std::vector<tg::Tensor> attention() const { return encoder->last_self_attn_weights(); }

  ModelConfig cfg;
  std::shared_ptr<tg::nn::Embedding> tok_emb;
  std::shared_ptr<tg::nn::LearnedPositionalEmbedding> pos_emb;
  std::shared_ptr<tg::nn::Dropout> drop;
  std::shared_ptr<tg::nn::TransformerEncoder> encoder;
  std::shared_ptr<tg::nn::Linear> head;
};

}  // namespace tgx::cls
