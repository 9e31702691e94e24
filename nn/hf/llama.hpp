// nn/hf/llama.hpp — Hugging Face's LlamaForCausalLM (and Mistral / Qwen2, the same block), with its
// module and parameter names, so a model folder's tensors map one to one:
//   model.embed_tokens (V, C); model.layers.N: nn::LlamaDecoderLayer (self_attn.{q,k,v,o}_proj,
//   mlp.{gate,up,down}_proj, input_layernorm, post_attention_layernorm); model.norm; lm_head
//   (tied to embed_tokens when tie_word_embeddings: then not in files)
// The decoder layer is nn/llama.hpp's: RMSNorm (rms_norm_eps), rotary embeddings in Hugging Face's
// half-split convention (rotate_half: feature i pairs with i + hs/2) with base rope_theta over
// max_position_embeddings positions, grouped-query attention from num_key_value_heads, SwiGLU.
// Files may carry the rotary tables of older exports (rotary_emb.inv_freq): skipped.
// Deliberately not here: scaled rotary variants (LlamaConfig refuses rope_scaling).
#pragma once

#include "nn/hf/config.hpp"
#include "nn/hf/pretrained.hpp"
#include "nn/layers.hpp"
#include "nn/llama.hpp"

namespace tg::nn::hf {

class LlamaModel : public Module {
 public:
  explicit LlamaModel(const LlamaConfig& config, const BuildHook& hook = {});
  // ids (B, T) -> hidden states (B, T, C) after norm.
  Tensor forward(const Tensor& input_ids, std::vector<KVCache>* caches = nullptr);
  LlamaConfig config;
  std::shared_ptr<Embedding> embed_tokens;
  std::shared_ptr<ModuleList> layers;  // of nn::LlamaDecoderLayer
  std::shared_ptr<RMSNorm> norm;
  // Set: the embedding's rows are cast to it (weight-only reduced precision: bf16 parameters,
  // float32 activations); unset: the activations keep the parameters' dtype.
  std::optional<DType> compute_dtype;
};

class LlamaForCausalLM : public PreTrainedModel {
 public:
  explicit LlamaForCausalLM(LlamaConfig config, const BuildHook& hook = {});
  static std::shared_ptr<LlamaForCausalLM> from_pretrained(const std::string& folder,
                                                           DType dtype = kFloat32);
  static std::shared_ptr<LlamaForCausalLM> from_pretrained(const std::string& folder,
                                                           const PretrainedOptions& options);
  Tensor forward(const Tensor& input_ids, std::vector<KVCache>* caches = nullptr) override;
  int64_t num_layers() const override { return config.num_hidden_layers; }
  int64_t max_positions() const override { return config.max_position_embeddings; }
  int64_t vocab_size() const override { return config.vocab_size; }
  std::string config_json(const std::string& dtype) const override;
  std::vector<std::string> tied_names() const override;

  LlamaConfig config;
  std::shared_ptr<LlamaModel> model;
  std::shared_ptr<Linear> lm_head;
};

}  // namespace tg::nn::hf
