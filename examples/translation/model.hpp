// examples/translation/model.hpp — the encoder–decoder Transformer that translates: source and
// target token embeddings plus sinusoidal positions, tg::nn::Transformer (batch-first, pre-norm,
// causal decoder self-attention as a structural mask, cross-attention to the encoder memory with
// source padding masked) and a linear head to target-vocabulary logits.
//
// Not here: decoding strategies (decode.hpp) and training (train.hpp).
#pragma once

#include "nn/layers.hpp"
#include "nn/transformer.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace tgx::translation {

struct ModelConfig {
  std::string dataset = "numbers";
  int64_t src_vocab = 0, tgt_vocab = 0;
  int64_t d_model = 128, heads = 4, enc_layers = 2, dec_layers = 2, ff = 256;
  int64_t max_len = 128;  // longest source or target sequence (positions), <bos>/<eos> included
  double dropout = 0.0;

  std::string to_json() const;
  // Throws UserError naming `what` when the text is not a config this program wrote.
  static ModelConfig from_json(const std::string& text, const std::string& what);
  // "" when equal, else "d_model 64 vs 128, heads 2 vs 4" (this, other) for error messages.
  std::string differences(const ModelConfig& other) const;
  void validate() const;  // UserError naming the option (--d-model, --heads, ...)
};

class Seq2Seq : public tg::nn::Module {
 public:
  explicit Seq2Seq(const ModelConfig& cfg);

  // src (B, S) int64, <pad> = 0 -> memory (B, S, C). src_pad: (B, S) bool, True = padding.
  tg::Tensor encode(const tg::Tensor& src, const tg::Tensor& src_pad);
  // tgt_in (B, T) int64 starting with <bos>, memory (B, S, C) -> logits (B, T, V).
  tg::Tensor decode(const tg::Tensor& tgt_in, const tg::Tensor& memory, const tg::Tensor& src_pad);
  // Teacher forcing: encode + decode.
  tg::Tensor forward(const tg::Tensor& src, const tg::Tensor& tgt_in);
  // (B, S) bool, True where src is <pad>.
  static tg::Tensor padding_mask(const tg::Tensor& ids);

  ModelConfig cfg;
  std::shared_ptr<tg::nn::Embedding> src_embed, tgt_embed;
  std::shared_ptr<tg::nn::PositionalEncoding> pos;
  std::shared_ptr<tg::nn::Transformer> transformer;
  std::shared_ptr<tg::nn::Linear> head;
};

}  // namespace tgx::translation
