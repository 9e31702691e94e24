// examples/translation/model.cpp — Seq2Seq and its config (JSON form, comparison, checks).
#include "translation/model.hpp"

#include "common/cli.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"
#include "translation/vocab.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tgx::translation {

using tg::Tensor;

std::string ModelConfig::to_json() const {
  nlohmann::json j = {{"dataset", dataset},       {"src_vocab", src_vocab},
                      {"tgt_vocab", tgt_vocab},   {"d_model", d_model},
                      {"heads", heads},           {"enc_layers", enc_layers},
                      {"dec_layers", dec_layers}, {"ff", ff},
                      {"max_len", max_len},       {"dropout", dropout}};
  return j.dump();
}

ModelConfig ModelConfig::from_json(const std::string& text, const std::string& what) {
  ModelConfig c;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    c.dataset = j.at("dataset").get<std::string>();
    c.src_vocab = j.at("src_vocab").get<int64_t>();
    c.tgt_vocab = j.at("tgt_vocab").get<int64_t>();
    c.d_model = j.at("d_model").get<int64_t>();
    c.heads = j.at("heads").get<int64_t>();
    c.enc_layers = j.at("enc_layers").get<int64_t>();
    c.dec_layers = j.at("dec_layers").get<int64_t>();
    c.ff = j.at("ff").get<int64_t>();
    c.max_len = j.at("max_len").get<int64_t>();
    c.dropout = j.at("dropout").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a translation model config ({})", what, e.what()));
  }
  return c;
}

std::string ModelConfig::differences(const ModelConfig& o) const {
  std::string out;
  auto cmp = [&](const char* name, const auto& a, const auto& b) {
    if (a != b) out += fmt::format("{}{} {} vs {}", out.empty() ? "" : ", ", name, a, b);
  };
  cmp("dataset", dataset, o.dataset);
  cmp("source vocabulary size", src_vocab, o.src_vocab);
  cmp("target vocabulary size", tgt_vocab, o.tgt_vocab);
  cmp("d_model", d_model, o.d_model);
  cmp("heads", heads, o.heads);
  cmp("encoder layers", enc_layers, o.enc_layers);
  cmp("decoder layers", dec_layers, o.dec_layers);
  cmp("ff", ff, o.ff);
  cmp("max_len", max_len, o.max_len);
  cmp("dropout", dropout, o.dropout);
  return out;
}

void ModelConfig::validate() const {
  auto positive = [](int64_t v, const char* opt) {
    if (v < 1) throw UserError(fmt::format("{} must be at least 1 (got {})", opt, v));
  };
  positive(d_model, "--d-model");
  positive(heads, "--heads");
  positive(enc_layers, "--layers");
  positive(dec_layers, "--layers");
  positive(ff, "--ff");
  if (d_model % heads != 0)
    throw UserError(fmt::format("--d-model {} must be divisible by --heads {}", d_model, heads));
  if (d_model % 2 != 0)
    throw UserError(fmt::format("--d-model {} must be even (sinusoidal positions)", d_model));
  if (!(dropout >= 0 && dropout < 1))
    throw UserError(fmt::format("--dropout must be in [0, 1) (got {})", dropout));
}

Seq2Seq::Seq2Seq(const ModelConfig& c) : Module("Seq2Seq"), cfg(c) {
  cfg.validate();
  src_embed = register_module(
      "src_embed", std::make_shared<tg::nn::Embedding>(cfg.src_vocab, cfg.d_model, Vocab::kPad));
  tgt_embed = register_module(
      "tgt_embed", std::make_shared<tg::nn::Embedding>(cfg.tgt_vocab, cfg.d_model, Vocab::kPad));
  pos = register_module("pos",
                        std::make_shared<tg::nn::PositionalEncoding>(cfg.d_model, cfg.max_len));
  tg::nn::TransformerOptions o;
  o.d_model = cfg.d_model;
  o.nhead = cfg.heads;
  o.num_encoder_layers = cfg.enc_layers;
  o.num_decoder_layers = cfg.dec_layers;
  o.dim_feedforward = cfg.ff;
  o.dropout = cfg.dropout;
  o.batch_first = true;
  o.norm_first = true;
  o.decoder_self_attn_structure = tg::AttentionMask::causal();
  transformer = register_module("transformer", std::make_shared<tg::nn::Transformer>(o));
  head = register_module("head", std::make_shared<tg::nn::Linear>(cfg.d_model, cfg.tgt_vocab));
}

Tensor Seq2Seq::padding_mask(const Tensor& ids) {
  return tg::eq(ids, tg::scalar_tensor(static_cast<double>(Vocab::kPad), tg::kInt64, ids.device()));
}

Tensor Seq2Seq::encode(const Tensor& src, const Tensor& src_pad) {
  // src (B, S) -> x (B, S, C)
  Tensor x = pos->forward(src_embed->forward(src));
  return transformer->encoder->forward(x, Tensor(), src_pad);
}

Tensor Seq2Seq::decode(const Tensor& tgt_in, const Tensor& memory, const Tensor& src_pad) {
  // tgt_in (B, T), memory (B, S, C) -> (B, T, V)
  Tensor y = pos->forward(tgt_embed->forward(tgt_in));
  y = transformer->decoder->forward(y, memory, Tensor(), Tensor(), Tensor(), src_pad);
  return head->forward(y);
}

Tensor Seq2Seq::forward(const Tensor& src, const Tensor& tgt_in) {
  Tensor src_pad = padding_mask(src);
  return decode(tgt_in, encode(src, src_pad), src_pad);
}

}  // namespace tgx::translation
