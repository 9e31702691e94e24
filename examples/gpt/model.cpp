// examples/gpt/model.cpp — Gpt and GptConfig (see model.hpp).
#include "gpt/model.hpp"

#include "common/cli.hpp"
#include "common/config_json.hpp"
#include "nn/init.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tgx::gpt {

nlohmann::json GptConfig::to_json() const {
  return {{"vocab_size", vocab_size}, {"block", block},     {"d_model", d_model},
          {"layers", layers},         {"heads", heads},     {"ff", ff},
          {"window", window},         {"dropout", dropout}, {"tie_weights", tie_weights}};
}

GptConfig GptConfig::from_json(const nlohmann::json& j, const std::string& what) {
  GptConfig c;
  c.vocab_size = config_int(j, "vocab_size", what);
  c.block = config_int(j, "block", what);
  c.d_model = config_int(j, "d_model", what);
  c.layers = config_int(j, "layers", what);
  c.heads = config_int(j, "heads", what);
  c.ff = config_int(j, "ff", what);
  c.window = config_int(j, "window", what);
  if (!j.contains("dropout") || !j["dropout"].is_number() || !j.contains("tie_weights") ||
      !j["tie_weights"].is_boolean())
    throw UserError(fmt::format("{}: model config lacks 'dropout' or 'tie_weights'", what));
  c.dropout = j["dropout"].get<double>();
  c.tie_weights = j["tie_weights"].get<bool>();
  return c;
}

std::string GptConfig::diff(const GptConfig& o) const {
  return config_differences(to_json(), o.to_json());
}

void GptConfig::validate() const {
  auto at_least = [](int64_t v, int64_t lo, const char* opt) {
    if (v < lo) throw UserError(fmt::format("{} {}: must be >= {}", opt, v, lo));
  };
  at_least(block, 1, "--block");
  at_least(d_model, 1, "--d-model");
  at_least(layers, 1, "--layers");
  at_least(heads, 1, "--heads");
  at_least(ff, 1, "--ff");
  at_least(window, 0, "--window");
  if (d_model % heads != 0)
    throw UserError(fmt::format("--d-model {} must be divisible by --heads {}", d_model, heads));
  if (!(dropout >= 0 && dropout < 1))
    throw UserError(fmt::format("--dropout {}: must be in [0, 1)", dropout));
  if (vocab_size < 2)
    throw UserError(fmt::format("the vocabulary has {} characters; need >= 2", vocab_size));
}

tg::AttentionMask GptConfig::attention_mask() const {
  tg::AttentionMask m = tg::AttentionMask::causal();
  return window > 0 ? m & tg::AttentionMask::hf_sliding_window(window) : m;
}

Gpt::Gpt(const GptConfig& c) : tg::nn::Module("Gpt"), cfg(c) {
  cfg.validate();
  tok_emb =
      register_module("tok_emb", std::make_shared<tg::nn::Embedding>(cfg.vocab_size, cfg.d_model));
  pos_emb = register_module(
      "pos_emb", std::make_shared<tg::nn::LearnedPositionalEmbedding>(cfg.block, cfg.d_model));
  drop = register_module("drop", std::make_shared<tg::nn::Dropout>(cfg.dropout));
  tg::nn::TransformerLayerOptions o;
  o.dim_feedforward = cfg.ff;
  o.dropout = cfg.dropout;
  o.activation = "gelu";
  o.batch_first = true;
  o.norm_first = true;
  o.self_attn_structure = cfg.attention_mask();
  tg::nn::TransformerEncoderLayer layer(cfg.d_model, cfg.heads, o);
  blocks = register_module("blocks",
                           std::make_shared<tg::nn::TransformerEncoder>(
                               layer, cfg.layers, std::make_shared<tg::nn::LayerNorm>(cfg.d_model),
                               tg::nn::LayerClone::Fresh));
  if (!cfg.tie_weights)
    lm_head = register_module(
        "lm_head", std::make_shared<tg::nn::Linear>(cfg.d_model, cfg.vocab_size, /*bias=*/false));
  // GPT-2's initialisation (nanoGPT's _init_weights and its c_proj rule).
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(cfg.layers));
  for (auto& [name, p] : named_parameters()) {
    const bool residual_proj = name.find("out_proj.weight") != std::string::npos ||
                               name.find("linear2.weight") != std::string::npos;
    if (name.find("norm") != std::string::npos) continue;  // LayerNorms keep 1 and 0
    if (p.dim() >= 2)
      tg::nn::init::normal_(p, 0.0, residual_proj ? proj_std : 0.02);
    else
      tg::nn::init::zeros_(p);
  }
}

const tg::Tensor& Gpt::head_weight() const {
  return cfg.tie_weights ? tok_emb->weight : lm_head->weight;
}

tg::Tensor Gpt::forward(const tg::Tensor& ids) {
  if (ids.dim() != 2 || ids.size(1) < 1 || ids.size(1) > cfg.block)
    throw tg::Error(fmt::format("Gpt: ids {} must be (B, T) with 1 <= T <= block {}",
                                tg::shape_str(ids.shape()), cfg.block));
  tg::Tensor x = drop->forward(pos_emb->forward(tok_emb->forward(ids)));  // (B, T, C)
  x = blocks->forward(x);                                                 // (B, T, C)
  return tg::linear(x, head_weight());                                    // (B, T, V)
}

}  // namespace tgx::gpt
