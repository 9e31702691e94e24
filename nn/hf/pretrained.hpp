// nn/hf/pretrained.hpp — what every Hugging Face causal language model here shares
// (transformers' PreTrainedModel + GenerationMixin): forward(input_ids) -> logits, with an
// optional KV cache per layer; generate() through that cache (or without it, for comparison);
// save_pretrained(folder) writing config.json and model.safetensors in the layout
// from_pretrained reads (tied weights left out, as Hugging Face writes them); and
// from_pretrained(folder), which reads config.json's model_type and builds the family.
//
//   auto model = tg::nn::hf::from_pretrained("SmolLM-135M");   // GPT2LMHeadModel or
//   LlamaForCausalLM model->eval(); tg::nn::hf::GenerationOptions opts;  opts.temperature = 0.8;
//   opts.top_k = 40; Tensor ids = model->generate(prompt_ids, 64, opts);
//   model->save_pretrained("finetuned");
// Deliberately not here: tokenizers (nn/tokenizer), the families (gpt2.hpp, llama.hpp).
#pragma once

#include "nn/kv_cache.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tg::nn::hf {

// The families' constructors call it with each block as soon as it is built, the block's
// state_dict prefix ("model.layers.3.") and whether it is one of the model's repeated blocks
// (decoder layers: the next one's placeholder parameters reuse its memory); from_pretrained
// loads the block there.
using BuildHook = std::function<void(Module& block, const std::string& prefix, bool repeated)>;

struct GenerationOptions {
  double temperature = 0;  // 0: greedy (argmax); else softmax(logits / temperature)
  int64_t top_k = 0;       // > 0: sample among the k most likely tokens only
  uint64_t seed = 0;       // the sampler's own generator (tg's global one is not touched)
  bool use_cache = true;   // false: rerun the whole sequence for every token (the reference)
  // Stop once every row has produced it; a row that has is padded with it meanwhile.
  std::optional<int64_t> eos_token_id;
};

// A bias-free Linear(C, V) whose weight is `embedding` (V, C), tied; built without a (V, C)
// placeholder of its own (which the tie would only free).
std::shared_ptr<Linear> lm_head_tied_to(const Tensor& embedding);

class PreTrainedModel : public Module {
 public:
  using Module::Module;
  // input_ids int64 (B, T) -> logits (B, T, V). With caches (one per layer, filled by earlier
  // calls), positions start at the caches' position and attend to every cached one.
  virtual Tensor forward(const Tensor& input_ids, std::vector<KVCache>* caches = nullptr) = 0;
  virtual int64_t num_layers() const = 0;
  virtual int64_t max_positions() const = 0;
  virtual int64_t vocab_size() const = 0;
  // The config.json to write, its torch_dtype `dtype`.
  virtual std::string config_json(const std::string& dtype) const = 0;
  // state_dict names that save_pretrained leaves out (a tied lm_head.weight).
  virtual std::vector<std::string> tied_names() const = 0;

  // input_ids (B, T) -> (B, T + n), n <= max_new_tokens (fewer when every row reached eos).
  // Runs under NoGradGuard in the current train/eval mode (call eval() first for dropout off).
  Tensor generate(const Tensor& input_ids, int64_t max_new_tokens,
                  const GenerationOptions& options = {});
  // folder/config.json and folder/model.safetensors (in the parameters' dtype), each written
  // atomically; the folder is created. Existing files are refused unless
  // overwrite.
  void save_pretrained(const std::string& folder, bool overwrite = false) const;
};

// from_pretrained's dtypes (Hugging Face's torch_dtype, and the dtype the model computes in):
//   {kFloat32} / {kFloat64}       parameters and activations in that dtype (to train);
//   {kBFloat16} / {kFloat16}      the file's dtype mapped in place, every op in that dtype;
//   {kBFloat16, kFloat32}         weight-only reduced precision: parameters bfloat16 (a BF16 file
//   ({kFloat16, kFloat32})        mapped in place, no copy), activations, KV cache and logits
//                                 float32, each product float32 arithmetic on the weights
//                                 (ops/matmul/mixed.hpp): float32 logits at the file's size.
struct PretrainedOptions {
  DType dtype = kFloat32;              // the parameters'
  std::optional<DType> compute_dtype;  // the activations'; unset: dtype
};

// Builds the model config.json describes and loads the folder's weights into it (see
// weights.hpp: memory-mapped, strict, all-or-nothing). dtype: the parameters' (float32 or
// float64 to train, the file's BF16 / F16 to run it mapped in place: a file of that dtype is not
// copied).
std::shared_ptr<PreTrainedModel> from_pretrained(const std::string& folder, DType dtype = kFloat32);
std::shared_ptr<PreTrainedModel> from_pretrained(const std::string& folder,
                                                 const PretrainedOptions& options);
// The options' compute dtype, or a tg::Error naming both dtypes and the supported pairs.
std::optional<DType> weight_only_compute(const PretrainedOptions& options, const char* who);

}  // namespace tg::nn::hf
