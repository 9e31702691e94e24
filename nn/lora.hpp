// nn/lora.hpp — LoRA (Hu et al. 2021) with Hugging Face PEFT's semantics and names: LoRALinear
// wraps a frozen nn::Linear or Hugging Face Conv1D (GPT-2's projections), apply_lora puts it in
// place of the Linear layers a LoraConfig targets, and save_adapter / load_adapter read and write
// PEFT's adapter folders.
//
//   y = base_layer(x) + lora_B(lora_A(lora_dropout(x))) · scaling        x (..., in) -> (..., out)
//   lora_A.weight (r, in) ~ kaiming_uniform(a = √5) (nn.Linear's weight init), lora_B.weight
//   (out, r) = 0, so a wrapped model's output is unchanged until B is trained.
//   scaling = lora_alpha / r, or lora_alpha / √r with use_rslora (rank-stabilised LoRA).
//   Dropout acts on the input of the LoRA branch only; the base sees x itself.
//   merge(): base weight += scaling · B·A and the branch is skipped; unmerge() subtracts it back
//   (equal to float rounding, not bit for bit).
//
// Names. In the model's state dict a wrapped layer "…q_proj" holds "q_proj.base_layer.weight"
// (and .bias), "q_proj.lora_A.weight", "q_proj.lora_B.weight" (PEFT's, without its adapter name
// "default": one adapter per layer here). The adapter file names them
// "base_model.model.<path>.lora_A.weight" / "…lora_B.weight", <path> being the layer's dotted
// path in the model given to save_adapter (so a Hugging Face model whose modules carry HF's names
// writes keys PEFT reads).
//
// How the branch reaches the model's forward: layers such as LlamaAttention call their Linear
// through a typed member (q_proj->forward), which a registry swap cannot reach. LoRALinear
// therefore adds its branch through a forward output hook on the base Linear (Module::
// register_forward_output_hook), removed by its destructor: the parent's member (the base) and
// the registry's entry (the LoRALinear, whose forward is the base's) both give base + branch,
// once. Calling base_layer directly also includes the branch while the LoRALinear lives.
//
// Targets (PEFT's check_target_module_exists): a list entry matches a module whose dotted path
// equals it or ends with "." + it ("q_proj" matches "layers.0.self_attn.q_proj"); a regex
// (target_modules_regex) must match the whole path (std::regex ECMAScript, which agrees with
// Python's re on the usual patterns). A matching module that is not a Linear or Conv1D is
// refused, as PEFT
// refuses unsupported layers.
//
// GPT-2: Hugging Face stores c_attn / c_proj / c_fc as Conv1D (nn::hf::Conv1D) with weights
// (in, out), and PEFT wraps them with fan_in_fan_out = True. That flag only transposes the merged
// delta to the Conv1D layout (PEFT's get_delta_weight: transpose(B @ A, fan_in_fan_out)):
// lora_A stays (r, in) and lora_B (out, r), in the model and in the adapter file. A LoRALinear
// over a Conv1D has fan_in_fan_out true and merges (B·A)ᵀ·scaling into the (in, out) weight;
// apply_lora sets it from the layer's type (PEFT warns and sets it too); the config's flag is
// written and read back for PEFT.
//
// Deliberately not here: several adapters per layer, DoRA, LoRA on Embedding or Conv2d layers,
// bias "all" / "lora_only", rank_pattern / alpha_pattern / layers_to_transform /
// modules_to_save (refused by name when an adapter_config.json asks for them).
#pragma once

#include "nn/layers.hpp"
#include "nn/module.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tg::nn::hf {
class Conv1D;
}

namespace tg::nn {

// PEFT's LoraConfig (the fields tapegrad acts on, and those it writes to adapter_config.json).
struct LoraConfig {
  int64_t r = 8;
  double lora_alpha = 8;
  double lora_dropout = 0;
  std::vector<std::string> target_modules;  // path suffixes: "q_proj", "self_attn.v_proj"
  std::string target_modules_regex;         // used instead of the list when non-empty
  std::string bias = "none";                // the only value supported
  bool use_rslora = false;
  bool fan_in_fan_out = false;  // GPT-2's Conv1D layout flag; see the header comment
  std::string task_type = "CAUSAL_LM";
  std::string base_model_name_or_path;
  // Checks r > 0, lora_alpha > 0, 0 <= lora_dropout < 1, bias "none", some target; throws
  // naming `where` and the field.
  void validate(const std::string& where) const;
  // Whether a module's dotted path is targeted (PEFT's matching rule above).
  bool matches(const std::string& path) const;
  std::string targets_str() const;  // the patterns, for messages
};

class LoRALinear : public TensorModule {
 public:
  // Freezes base_layer's parameters (requires_grad false) and creates A and B in the base
  // weight's dtype and device.
  LoRALinear(std::shared_ptr<Linear> base_layer, int64_t r, double lora_alpha = 8,
             double lora_dropout = 0, bool use_rslora = false);
  // The same over a Hugging Face Conv1D (weight (in, out)): fan_in_fan_out true.
  LoRALinear(std::shared_ptr<hf::Conv1D> base_layer, int64_t r, double lora_alpha = 8,
             double lora_dropout = 0, bool use_rslora = false);
  ~LoRALinear() override;
  Tensor forward(const Tensor& x) override;  // base_layer(x), which the hook extends
  std::string extra_repr() const override;

  // (dropout(x) · Aᵀ · Bᵀ) · scaling, x (..., in) -> (..., out): the branch alone.
  Tensor lora_delta(const Tensor& x);
  // scaling · B · A (out, in), transposed to (in, out) when fan_in_fan_out: what merge() adds
  // to the base weight (PEFT's get_delta_weight).
  Tensor get_delta_weight() const;
  // The base layer's weight ((out, in) for a Linear, (in, out) for a Conv1D) and bias.
  Tensor& base_weight() const;
  Tensor& base_bias() const;
  void merge();    // no-op when merged (PEFT warns and does nothing)
  void unmerge();  // no-op when not merged
  bool merged() const { return merged_; }

  int64_t r, in_features, out_features;
  double lora_alpha, scaling;
  bool use_rslora;
  bool fan_in_fan_out;                       // the base is a Conv1D
  std::shared_ptr<TensorModule> base_layer;  // a Linear or an hf::Conv1D
  std::shared_ptr<Linear> lora_A, lora_B;
  std::shared_ptr<Dropout> lora_dropout;

 private:
  LoRALinear(std::shared_ptr<TensorModule> base, int64_t in, int64_t out, bool fan_in_fan_out,
             int64_t r, double lora_alpha, double lora_dropout, bool use_rslora);
  bool merged_ = false;
  int hook_id_ = -1;
};

// Wraps every Linear (or Conv1D) whose path the config targets in a LoRALinear (set in the parent's
// registry), freezes every parameter of the model that is not a lora_A / lora_B weight, and
// returns the wrapped paths in traversal order. Throws naming the patterns when nothing matches,
// and naming the path and type when a match is not a Linear or is already wrapped; on a throw
// the model is unchanged.
std::vector<std::string> apply_lora(Module& model, const LoraConfig& config);

// The LoRALinear layers of a model, with their paths, in traversal order.
std::vector<std::pair<std::string, std::shared_ptr<LoRALinear>>> lora_layers(Module& model);

// The parameters that require grad (what an optimizer gets after apply_lora).
std::vector<Tensor> trainable_parameters(const Module& model);

// PEFT's merge_and_unload: merges every LoRALinear and puts its base Linear back in the
// registry, so state dicts carry the original names again; returns the paths.
std::vector<std::string> merge_and_unload(Module& model);

// Writes folder/adapter_model.safetensors (the LoRA weights under PEFT's keys, metadata
// format "pt") and folder/adapter_config.json (PEFT's fields, inference_mode true as PEFT's
// save_pretrained writes it), each atomically; creates the folder. The model's LoRA layers must
// agree with config's r, lora_alpha and use_rslora.
void save_adapter(const std::string& folder, Module& model, const LoraConfig& config);

// Reads an adapter folder: the config (refusing what tapegrad does not implement, by field
// name), then every key and shape of the weights against the layers the config targets in the
// model (missing, unexpected and mis-shaped keys all named in one error) before changing
// anything; then applies LoRA when the model has none (apply_lora) and copies the weights
// (converted to the model's dtype). Returns the config read.
LoraConfig load_adapter(const std::string& folder, Module& model);
LoraConfig read_adapter_config(const std::string& path);  // folder/adapter_config.json

}  // namespace tg::nn
