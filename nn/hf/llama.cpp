// nn/hf/llama.cpp — LlamaForCausalLM (see llama.hpp).
#include "nn/hf/llama.hpp"

#include "nn/hf/weights.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

namespace tg::nn::hf {

namespace {
LlamaDecoderLayerOptions layer_options(const LlamaConfig& c) {
  LlamaDecoderLayerOptions o;
  o.intermediate_size = c.intermediate_size;
  o.rms_norm_eps = c.rms_norm_eps;
  o.mlp_bias = c.mlp_bias;
  o.attention.num_kv_heads = c.num_key_value_heads;
  o.attention.rope_theta = c.rope_theta;
  o.attention.max_positions = c.max_position_embeddings;
  o.attention.bias = c.attention_bias;
  if (c.model_type == "qwen2") o.attention.o_proj_bias = false;
  o.attention.attention_dropout = c.attention_dropout;
  if (c.sliding_window > 0)
    o.attention.structure =
        AttentionMask::causal() & AttentionMask::hf_sliding_window(c.sliding_window);
  return o;
}
// Every layer's rotary tables are the same (one base, one length): `to` uses `from`'s module,
// member and registry alike (Hugging Face's one LlamaModel.rotary_emb), and its own tables, in
// float32 and float64 for every position, are freed.
void share_rotary(LlamaDecoderLayer& from, LlamaDecoderLayer& to) {
  to.self_attn->rotary_emb = from.self_attn->rotary_emb;
  to.set_submodule("self_attn.rotary_emb", from.self_attn->rotary_emb);
}

}  // namespace

LlamaModel::LlamaModel(const LlamaConfig& c, const BuildHook& hook)
    : Module("LlamaModel"), config(c) {
  auto built = [&](const std::shared_ptr<Module>& m, const std::string& prefix,
                   bool repeated = false) {
    if (hook) hook(*m, prefix, repeated);
    return m;
  };
  embed_tokens =
      register_module("embed_tokens", std::make_shared<Embedding>(c.vocab_size, c.hidden_size));
  built(embed_tokens, "embed_tokens.");
  layers = register_module("layers", std::make_shared<ModuleList>());
  const LlamaDecoderLayerOptions o = layer_options(c);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    auto layer = std::make_shared<LlamaDecoderLayer>(c.hidden_size, c.num_attention_heads, o);
    if (i > 0) share_rotary(*layers->at<LlamaDecoderLayer>(0), *layer);
    layers->push_back(built(layer, fmt::format("layers.{}.", i), true));
  }
  norm = register_module("norm", std::make_shared<RMSNorm>(c.hidden_size, c.rms_norm_eps));
  built(norm, "norm.");
}

Tensor LlamaModel::forward(const Tensor& ids, std::vector<KVCache>* caches) {
  const int64_t start = caches && !caches->empty() ? caches->front().position() : 0;
  if (!ids.defined() || ids.dim() != 2 || ids.dtype() != kInt64 || ids.size(1) < 1 ||
      start + ids.size(1) > config.max_position_embeddings)
    throw Error(
        fmt::format("LlamaModel: input_ids {} after {} cached positions must be int64 "
                    "(B, T), T >= 1, at most max_position_embeddings = {} in all",
                    ids.defined() ? shape_str(ids.shape()) : "undefined", start,
                    config.max_position_embeddings));
  if (caches && static_cast<int64_t>(caches->size()) != config.num_hidden_layers)
    throw Error(fmt::format("LlamaModel: {} caches for {} layers", caches->size(),
                            config.num_hidden_layers));
  Tensor x = embed_tokens->forward(ids);
  if (compute_dtype && x.dtype() != *compute_dtype) x = x.to(*compute_dtype);
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->at<LlamaDecoderLayer>(i)->forward(x, caches ? &(*caches)[i] : nullptr);
  return norm->forward(x);
}

LlamaForCausalLM::LlamaForCausalLM(LlamaConfig c, const BuildHook& hook)
    : PreTrainedModel("LlamaForCausalLM"), config(std::move(c)) {
  BuildHook inner;
  if (hook) inner = [&](Module& m, const std::string& p, bool r) { hook(m, "model." + p, r); };
  model = register_module("model", std::make_shared<LlamaModel>(config, inner));
  if (config.tie_word_embeddings) {
    lm_head = register_module("lm_head", lm_head_tied_to(model->embed_tokens->weight));
  } else {
    lm_head = register_module(
        "lm_head", std::make_shared<Linear>(config.hidden_size, config.vocab_size, false));
    if (hook) hook(*lm_head, "lm_head.", false);
  }
}

Tensor LlamaForCausalLM::forward(const Tensor& ids, std::vector<KVCache>* caches) {
  return lm_head->forward(model->forward(ids, caches));
}

std::string LlamaForCausalLM::config_json(const std::string& dtype) const {
  return config_json_for_save(config, dtype);
}

std::vector<std::string> LlamaForCausalLM::tied_names() const {
  if (config.tie_word_embeddings) return {"lm_head.weight"};
  return {};
}

std::shared_ptr<LlamaForCausalLM> LlamaForCausalLM::from_pretrained(const std::string& folder,
                                                                    DType dtype) {
  return from_pretrained(folder, PretrainedOptions{dtype, std::nullopt});
}

std::shared_ptr<LlamaForCausalLM> LlamaForCausalLM::from_pretrained(const std::string& folder,
                                                                    const PretrainedOptions& o) {
  const std::optional<DType> compute = weight_only_compute(o, "LlamaForCausalLM::from_pretrained");
  const std::string what = folder + "/config.json";
  const std::string text = read_config_text(folder);
  const std::string type = config_model_type(text, what);
  if (type == "gpt2")
    throw Error(fmt::format("LlamaForCausalLM::from_pretrained: {} has model_type \"gpt2\"", what));
  const LlamaConfig config = parse_llama_config(text, what);
  SafetensorsFolder files(folder);  // mapped and validated before the model is built
  NameMap map;
  if (config.tie_word_embeddings) map.tied = {"lm_head.weight"};
  map.to_module = [](const std::string& n) -> std::string {
    const std::string inv = "rotary_emb.inv_freq";  // older exports' rotary tables
    if (n.size() >= inv.size() && n.compare(n.size() - inv.size(), inv.size(), inv) == 0) return "";
    return n;
  };
  auto m = build_and_load<LlamaForCausalLM>(
      files, map, o.dtype,
      [&](const BuildHook& hook) { return std::make_shared<LlamaForCausalLM>(config, hook); },
      compute.has_value());
  m->model->compute_dtype = compute;
  return m;
}

}  // namespace tg::nn::hf
