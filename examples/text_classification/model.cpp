// examples/text_classification/model.cpp — TextClassifier and ModelConfig (see model.hpp).
#include "text_classification/model.hpp"

#include "common/cli.hpp"
#include "common/config_json.hpp"
#include "nn/init.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

namespace tgx::cls {

nlohmann::json ModelConfig::to_json() const {
  return {{"vocab_size", vocab_size}, {"num_classes", num_classes},
          {"max_len", max_len},       {"tail", tail},
          {"d_model", d_model},       {"layers", layers},
          {"heads", heads},           {"ff", ff},
          {"dropout", dropout}};
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j, const std::string& what) {
  ModelConfig c;
  c.vocab_size = config_int(j, "vocab_size", what);
  c.num_classes = config_int(j, "num_classes", what);
  c.max_len = config_int(j, "max_len", what);
  c.d_model = config_int(j, "d_model", what);
  c.layers = config_int(j, "layers", what);
  c.heads = config_int(j, "heads", what);
  c.ff = config_int(j, "ff", what);
  if (j.contains("tail"))
    c.tail = config_int(j, "tail", what);  // runs saved before --tail have none
  if (!j.contains("dropout") || !j["dropout"].is_number())
    throw UserError(fmt::format("{}: model config lacks number field 'dropout'", what));
  c.dropout = j["dropout"].get<double>();
  return c;
}

std::string ModelConfig::diff(const ModelConfig& o) const {
  return config_differences(to_json(), o.to_json());
}

void ModelConfig::validate() const {
  auto positive = [](int64_t v, const char* opt) {
    if (v < 1) throw UserError(fmt::format("{} {}: must be at least 1", opt, v));
  };
  positive(max_len, "--max-len");
  positive(d_model, "--d-model");
  positive(layers, "--layers");
  positive(heads, "--heads");
  positive(ff, "--ff");
  if (tail < 0 || tail >= max_len)
    throw UserError(fmt::format("--tail {}: must be in [0, {}] (below --max-len {})", tail,
                                max_len - 1, max_len));
  if (d_model % heads != 0)
    throw UserError(fmt::format("--d-model {} must be divisible by --heads {}", d_model, heads));
  if (!(dropout >= 0 && dropout < 1))
    throw UserError(fmt::format("--dropout {}: must be in [0, 1)", dropout));
  if (vocab_size < 3 || num_classes < 2)
    throw UserError(
        fmt::format("model needs a vocabulary of >= 3 tokens and >= 2 classes (have "
                    "{} tokens, {} classes)",
                    vocab_size, num_classes));
}

TextClassifier::TextClassifier(const ModelConfig& c) : tg::nn::Module("TextClassifier"), cfg(c) {
  cfg.validate();
  tok_emb = register_module(
      "tok_emb", std::make_shared<tg::nn::Embedding>(cfg.vocab_size, cfg.d_model, /*pad=*/0));
  pos_emb = register_module(
      "pos_emb", std::make_shared<tg::nn::LearnedPositionalEmbedding>(cfg.max_len, cfg.d_model));
  // GPT-2's small init for the tables (N(0, 1) would dwarf the residual branches).
  tg::nn::init::normal_(tok_emb->weight, 0.0, 0.02);
  tg::nn::init::normal_(pos_emb->weight, 0.0, 0.02);
  float* w = tok_emb->weight.data<float>();
  for (int64_t i = 0; i < cfg.d_model; ++i) w[i] = 0.0f;  // the <pad> row stays zero
  drop = register_module("drop", std::make_shared<tg::nn::Dropout>(cfg.dropout));
  tg::nn::TransformerLayerOptions o;
  o.dim_feedforward = cfg.ff;
  o.dropout = cfg.dropout;
  o.activation = "gelu";
  o.batch_first = true;
  o.norm_first = true;
  tg::nn::TransformerEncoderLayer layer(cfg.d_model, cfg.heads, o);
  encoder = register_module("encoder",
                            std::make_shared<tg::nn::TransformerEncoder>(
                                layer, cfg.layers, std::make_shared<tg::nn::LayerNorm>(cfg.d_model),
                                tg::nn::LayerClone::Fresh));
  head = register_module("head", std::make_shared<tg::nn::Linear>(cfg.d_model, cfg.num_classes));
}

tg::Tensor TextClassifier::forward(const tg::Tensor& ids, const tg::Tensor& pad) {
  if (ids.dim() != 2 || pad.shape() != ids.shape() || ids.size(1) > cfg.max_len)
    throw tg::Error(fmt::format("TextClassifier: ids {} and pad {} must be (B, T) with T <= {}",
                                tg::shape_str(ids.shape()), tg::shape_str(pad.shape()),
                                cfg.max_len));
  const int64_t B = ids.size(0), T = ids.size(1);
  tg::Tensor x = drop->forward(pos_emb->forward(tok_emb->forward(ids)));  // (B, T, C)
  x = encoder->forward(x, tg::Tensor(), pad);                             // (B, T, C)
  std::vector<float> keep(B * T), inv(B);
  const tg::Tensor pad_host = pad.device() == tg::kCPU ? pad : pad.cpu();
  const bool* p = pad_host.data<bool>();
  for (int64_t b = 0; b < B; ++b) {
    int64_t n = 0;
    for (int64_t t = 0; t < T; ++t) n += (keep[b * T + t] = p[b * T + t] ? 0.0f : 1.0f) > 0;
    inv[b] = 1.0f / static_cast<float>(n > 0 ? n : 1);
  }
  tg::Tensor k = tg::tensor(keep, {B, T, 1}).to(x.device());
  tg::Tensor pooled = tg::sum(x * k, {1}) * tg::tensor(inv, {B, 1}).to(x.device());  // (B, C)
  return head->forward(drop->forward(pooled));
}

}  // namespace tgx::cls
