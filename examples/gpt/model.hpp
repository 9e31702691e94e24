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
//
// arch "llama" (nn/llama.hpp): no positional table, no biases; L LlamaDecoderLayers (RMSNorm,
// rotary grouped-query attention with kv_heads key/value heads, SwiGLU of width ff), a final
// RMSNorm, then the LM head:
//   x = tok_emb(ids); x = layers(x); logits = norm(x) · Wᵀ
// Incremental decoding (forward(ids, caches)): one KVCache per layer (make_caches). The GPT's
// learned positions end at `block`, so its cache holds `block` positions; llama's rotary
// positions do not, so it reads sequences longer than block (up to kMaxPositions) with a sliding
// window of block keys (or W), and its cache rolls: the cached logits equal the uncached
// forward's over the whole sequence.
// Initialisation is GPT-2's: N(0, 0.02) for embeddings and matrices, N(0, 0.02/√(2L)) for the
// projections into the residual stream (attention out_proj, feed-forward linear2), biases 0.
// Deliberately not here: sampling (sample.hpp), training (train.hpp).
#pragma once

#include "nn/kv_cache.hpp"
#include "nn/layers.hpp"
#include "nn/llama.hpp"
#include "nn/transformer.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

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
  std::string arch = "gpt";  // "gpt" or "llama"
  int64_t kv_heads = 0;      // llama: key/value heads (0: heads); must divide heads

  nlohmann::json to_json() const;
  // UserError naming `what` when a field is missing or malformed.
  static GptConfig from_json(const nlohmann::json& j, const std::string& what);
  // "d_model 64 vs 128, layers 2 vs 4" for every field that differs; "" when equal.
  std::string diff(const GptConfig& other) const;
  // The options' ranges, checked by validate for the command line and saved runs alike.
  static constexpr int64_t kMaxBlock = 65536, kMaxDModel = 8192, kMaxLayers = 128, kMaxHeads = 256,
                           kMaxFF = 65536;
  int64_t max_block() const;  // kMaxBlock; llama: Gpt::kMaxPositions (its rotary table)
  // UserError for values the model cannot be built with: naming the option (--block 9000), or,
  // for a config read from a saved run (`saved`: its file), that file and the field ('block').
  // validate_options skips the vocabulary (known only once the corpus is read).
  void validate_options(const std::string& saved = "") const;
  void validate(const std::string& saved = "") const;
  // The causal structure and the window: W keys with --window W; llama's, block keys without
  // one (a no-op up to block positions, the sliding window past them).
  tg::AttentionMask attention_mask() const;
  bool is_llama() const { return arch == "llama"; }
  int64_t kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
};

class Gpt : public tg::nn::Module {
 public:
  explicit Gpt(const GptConfig& cfg);
  // ids (B, T) int64 with 1 <= T <= block (llama: kMaxPositions) -> logits (B, T, V).
  tg::Tensor forward(const tg::Tensor& ids);
  // Incremental: ids (B, T) continue the positions the caches hold (one per layer, make_caches);
  // returns their logits (B, T, V). No tape (generation).
  tg::Tensor forward(const tg::Tensor& ids, std::vector<tg::nn::KVCache>& caches);
  std::vector<tg::nn::KVCache> make_caches() const;
  // llama: the rotary positions a sequence may reach (generation past block included).
  static constexpr int64_t kMaxPositions = 8192;
  // The LM head's weight (V, C): lm_head's, or the token embedding's when tied.
  const tg::Tensor& head_weight() const;

  GptConfig cfg;
  // --checkpoint: each block under tg::checkpoint while training (activations recomputed in
  // backward); not part of the config, so a run may resume with or without it.
  bool checkpoint_activations = false;
  std::shared_ptr<tg::nn::Embedding> tok_emb;
  std::shared_ptr<tg::nn::LearnedPositionalEmbedding> pos_emb;
  std::shared_ptr<tg::nn::Dropout> drop;
  std::shared_ptr<tg::nn::TransformerEncoder> blocks;  // blocks.norm is the final LayerNorm
  std::shared_ptr<tg::nn::Linear> lm_head;             // null with tie_weights
  // arch "llama" (pos_emb and blocks null): layers of LlamaDecoderLayer, the final RMSNorm.
  std::shared_ptr<tg::nn::ModuleList> layers;
  std::shared_ptr<tg::nn::RMSNorm> norm;

 private:
  void init_gpt_blocks();
};

}  // namespace tgx::gpt
