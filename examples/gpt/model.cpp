// examples/gpt/model.cpp — Gpt and GptConfig (see model.hpp).
#include "gpt/model.hpp"

#include "autograd/activation_checkpoint.hpp"
#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "common/config_json.hpp"
#include "nn/init.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tgx::gpt {

nlohmann::json GptConfig::to_json() const {
  return {{"vocab_size", vocab_size},
          {"block", block},
          {"d_model", d_model},
          {"layers", layers},
          {"heads", heads},
          {"ff", ff},
          {"window", window},
          {"dropout", dropout},
          {"tie_weights", tie_weights},
          {"arch", arch},
          {"kv_heads", kv_heads}};
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
  // Runs saved before arch existed are GPTs.
  if (j.contains("arch")) {
    if (!j["arch"].is_string())
      throw UserError(fmt::format("{}: model config 'arch' is not a string", what));
    c.arch = j["arch"].get<std::string>();
    c.kv_heads = config_int(j, "kv_heads", what);
  }
  return c;
}

std::string GptConfig::diff(const GptConfig& o) const {
  return config_differences(to_json(), o.to_json());
}

int64_t GptConfig::max_block() const { return is_llama() ? Gpt::kMaxPositions : kMaxBlock; }

void GptConfig::validate_options(const std::string& saved) const {
  // From the command line the message names the option; from a saved run, its file and field,
  // since the user passed no such option.
  const std::string where = saved.empty() ? "" : saved + ": saved model config ";
  auto name = [&](const char* field, const char* opt) {
    return saved.empty() ? std::string(opt) : fmt::format("'{}'", field);
  };
  auto in_range = [&](int64_t v, int64_t lo, int64_t hi, const char* field, const char* opt,
                      const std::string& note = "") {
    if (v < lo || v > hi)
      throw UserError(fmt::format("{}{} {}: must be in [{}, {}]{}", where, name(field, opt), v, lo,
                                  hi, note.empty() ? "" : " (" + note + ")"));
  };
  if (arch != "gpt" && arch != "llama")
    throw UserError(
        fmt::format("{}{} {}: must be gpt or llama", where, name("arch", "--arch"), arch));
  in_range(block, 1, max_block(), "block", "--block",
           is_llama() ? name("arch", "--arch") + " llama: the rotary table's positions" : "");
  in_range(d_model, 1, kMaxDModel, "d_model", "--d-model");
  in_range(layers, 1, kMaxLayers, "layers", "--layers");
  in_range(heads, 1, kMaxHeads, "heads", "--heads");
  in_range(ff, 1, kMaxFF, "ff", "--ff");
  in_range(kv_heads, 0, heads, "kv_heads", "--kv-heads", "0: " + name("heads", "--heads"));
  if (kv_heads > 0 && !is_llama())
    throw UserError(fmt::format("{}{}: only with {} llama", where, name("kv_heads", "--kv-heads"),
                                name("arch", "--arch")));
  in_range(window, 0, block, "window", "--window",
           "0: full causal attention; at most " + name("block", "--block"));
  if (!(dropout >= 0 && dropout < 1))
    throw UserError(
        fmt::format("{}{} {}: must be in [0, 1)", where, name("dropout", "--dropout"), dropout));
  auto divisible = [&](int64_t v, const char* field, const char* opt, int64_t by,
                       const char* by_field, const char* by_opt) {
    if (by > 0 && v % by != 0)
      throw UserError(fmt::format("{}{} {} must be divisible by {} {}", where, name(field, opt), v,
                                  name(by_field, by_opt), by));
  };
  divisible(d_model, "d_model", "--d-model", heads, "heads", "--heads");
  divisible(heads, "heads", "--heads", kv_heads, "kv_heads", "--kv-heads");
  if (is_llama() && (d_model / heads) % 2 != 0)
    throw UserError(
        fmt::format("{}{} llama: the head size {} / {} = {} must be even (rotary embeddings "
                    "rotate pairs)",
                    where, name("arch", "--arch"), name("d_model", "--d-model"),
                    name("heads", "--heads"), d_model / heads));
}

void GptConfig::validate(const std::string& saved) const {
  validate_options(saved);
  if (vocab_size < 2)
    throw UserError(saved.empty()
                        ? fmt::format("the vocabulary has {} characters; need >= 2", vocab_size)
                        : fmt::format("{}: saved model config 'vocab_size' {}: must be "
                                      ">= 2",
                                      saved, vocab_size));
}

tg::AttentionMask GptConfig::attention_mask() const {
  tg::AttentionMask m = tg::AttentionMask::causal();
  // llama reads sequences past block too (rotary positions): then the last block keys
  const int64_t w = window > 0 ? window : (is_llama() ? block : 0);
  return w > 0 ? m & tg::AttentionMask::hf_sliding_window(w) : m;
}

Gpt::Gpt(const GptConfig& c) : tg::nn::Module("Gpt"), cfg(c) {
  cfg.validate();
  tok_emb =
      register_module("tok_emb", std::make_shared<tg::nn::Embedding>(cfg.vocab_size, cfg.d_model));
  if (cfg.is_llama()) {
    tg::nn::LlamaDecoderLayerOptions o;
    o.intermediate_size = cfg.ff;
    o.dropout = cfg.dropout;
    o.rms_norm_eps = 1e-5;
    o.attention.num_kv_heads = cfg.kv_heads_or_heads();
    o.attention.max_positions = kMaxPositions;
    o.attention.structure = cfg.attention_mask();
    layers = register_module("layers", std::make_shared<tg::nn::ModuleList>());
    for (int64_t i = 0; i < cfg.layers; ++i)
      layers->push_back(std::make_shared<tg::nn::LlamaDecoderLayer>(cfg.d_model, cfg.heads, o));
    norm = register_module("norm", std::make_shared<tg::nn::RMSNorm>(cfg.d_model, 1e-5));
  } else {
    init_gpt_blocks();
  }
  if (!cfg.tie_weights)
    lm_head = register_module(
        "lm_head", std::make_shared<tg::nn::Linear>(cfg.d_model, cfg.vocab_size, /*bias=*/false));
  // GPT-2's initialisation (nanoGPT's _init_weights and its c_proj rule).
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(cfg.layers));
  for (auto& [name, p] : named_parameters()) {
    const bool residual_proj = name.find("out_proj.weight") != std::string::npos ||
                               name.find("linear2.weight") != std::string::npos ||
                               name.find("o_proj.weight") != std::string::npos ||
                               name.find("down_proj.weight") != std::string::npos;
    if (name.find("norm") != std::string::npos) continue;  // norms keep 1 (and 0)
    if (p.dim() >= 2)
      tg::nn::init::normal_(p, 0.0, residual_proj ? proj_std : 0.02);
    else
      tg::nn::init::zeros_(p);
  }
}

void Gpt::init_gpt_blocks() {
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
}

const tg::Tensor& Gpt::head_weight() const {
  return cfg.tie_weights ? tok_emb->weight : lm_head->weight;
}

tg::Tensor Gpt::forward(const tg::Tensor& ids) {
  const int64_t limit = cfg.is_llama() ? kMaxPositions : cfg.block;
  if (ids.dim() != 2 || ids.size(1) < 1 || ids.size(1) > limit)
    throw tg::Error(fmt::format("Gpt: ids {} must be (B, T) with 1 <= T <= {} ({})",
                                tg::shape_str(ids.shape()), limit,
                                cfg.is_llama() ? "the rotary positions" : "block"));
  if (cfg.is_llama()) {
    tg::Tensor x = tok_emb->forward(ids);  // (B, T, C)
    for (const auto& l : *layers) {
      auto layer = std::static_pointer_cast<tg::nn::LlamaDecoderLayer>(l);
      x = checkpoint_activations && tg::grad_enabled()
              ? tg::checkpoint(
                    [layer](const std::vector<tg::Tensor>& in) { return layer->forward(in[0]); },
                    {x})
              : layer->forward(x);
    }
    return tg::linear(norm->forward(x), head_weight());  // (B, T, V)
  }
  tg::Tensor x = drop->forward(pos_emb->forward(tok_emb->forward(ids)));  // (B, T, C)
  blocks->checkpoint_activations = checkpoint_activations;
  x = blocks->forward(x);               // (B, T, C)
  return tg::linear(x, head_weight());  // (B, T, V)
}

std::vector<tg::nn::KVCache> Gpt::make_caches() const {
  // llama: a rolling window of the keys a query reads past block (its window, or block)
  const int64_t keys = cfg.window > 0 ? cfg.window : cfg.block;
  return std::vector<tg::nn::KVCache>(
      static_cast<size_t>(cfg.layers),
      cfg.is_llama() ? tg::nn::KVCache(keys, true) : tg::nn::KVCache(cfg.block));
}

tg::Tensor Gpt::forward(const tg::Tensor& ids, std::vector<tg::nn::KVCache>& caches) {
  if (caches.size() != static_cast<size_t>(cfg.layers))
    throw tg::Error(
        fmt::format("Gpt: {} caches for {} layers (make_caches)", caches.size(), cfg.layers));
  const int64_t start = caches.front().position(), T = ids.dim() == 2 ? ids.size(1) : 0;
  const int64_t limit = cfg.is_llama() ? kMaxPositions : cfg.block;
  if (ids.dim() != 2 || T < 1 || start + T > limit)
    throw tg::Error(
        fmt::format("Gpt: ids {} after {} cached positions must be (B, T) with T >= 1 "
                    "and at most {} positions in all",
                    tg::shape_str(ids.shape()), start, limit));
  tg::NoGradGuard ng;
  tg::Tensor x = tok_emb->forward(ids);  // (B, T, C)
  if (cfg.is_llama()) {
    for (size_t i = 0; i < caches.size(); ++i)
      x = layers->at<tg::nn::LlamaDecoderLayer>(i)->forward(x, &caches[i]);
    return tg::linear(norm->forward(x), head_weight());
  }
  x = drop->forward(x + tg::narrow(pos_emb->weight, 0, start, T));  // positions start..start+T-1
  tg::nn::EncoderForwardOptions f;
  f.kv_caches = &caches;
  return tg::linear(blocks->forward(x, f), head_weight());
}

}  // namespace tgx::gpt
