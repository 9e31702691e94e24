// nn/hf/config.hpp — a Hugging Face model folder's config.json as typed configurations:
// GPT2Config (model_type "gpt2") and LlamaConfig (model_type "llama", and "mistral" / "qwen2",
// whose blocks are Llama's: Mistral adds a sliding window, Qwen2 biases q, k and v). Field names
// and defaults are the transformers library's.
// Parsing refuses, naming the field and the file: another model_type, a rope_scaling (no scaled
// rotary here), an activation other than the model's own, and every field that changes the
// math and is not implemented (GPT-2's scale_attn_by_inverse_layer_idx, cross attention; a
// head_dim other than hidden_size / num_attention_heads; Qwen2's sliding window). Fields that
// change nothing computed here (token ids, torch_dtype, dropout in eval) are kept in `json`,
// the file's own text, which save_pretrained writes back.
// Deliberately not here: the modules (gpt2.hpp, llama.hpp) and the weights (weights.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tg::nn::hf {

struct GPT2Config {
  int64_t vocab_size = 50257, n_positions = 1024, n_embd = 768, n_layer = 12, n_head = 12;
  int64_t n_inner = 0;                           // 0 (null in the file): 4·n_embd
  std::string activation_function = "gelu_new";  // gelu_new (tanh) or gelu (erf)
  double layer_norm_epsilon = 1e-5;
  double resid_pdrop = 0.1, embd_pdrop = 0.1, attn_pdrop = 0.1;
  bool tie_word_embeddings = true;
  std::string json;  // the whole config.json as read (save_pretrained writes it back)
};

struct LlamaConfig {
  std::string model_type = "llama";  // llama, mistral or qwen2
  int64_t vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008;
  int64_t num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 32;
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6, rope_theta = 10000, attention_dropout = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k, v and o (qwen2: q, k, v only, always)
  bool mlp_bias = false;
  int64_t sliding_window = 0;  // mistral: keys per query (0: none)
  std::string json;
};

// The model_type of a config.json's text; `what` names the file in errors.
std::string config_model_type(const std::string& json, const std::string& what);
GPT2Config parse_gpt2_config(const std::string& json, const std::string& what);
LlamaConfig parse_llama_config(const std::string& json, const std::string& what);
// folder/config.json's text (throws naming the path when it cannot be read).
std::string read_config_text(const std::string& folder);
// The config's text for a save: `json` with torch_dtype set to `dtype` ("float32"), or a fresh
// config.json from the fields when `json` is empty (a model built in code).
std::string config_json_for_save(const GPT2Config& c, const std::string& dtype);
std::string config_json_for_save(const LlamaConfig& c, const std::string& dtype);

}  // namespace tg::nn::hf
