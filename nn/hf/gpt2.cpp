// nn/hf/gpt2.cpp — GPT2LMHeadModel and its parts (see gpt2.hpp).
#include "nn/hf/gpt2.hpp"

#include "nn/hf/weights.hpp"
#include "nn/init.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cstring>

namespace tg::nn::hf {

Conv1D::Conv1D(int64_t nf, int64_t nx) : TensorModule("Conv1D"), in_features(nx), out_features(nf) {
  if (nf <= 0 || nx <= 0)
    throw Error(fmt::format("Conv1D: nf {} and nx {} must be positive", nf, nx));
  weight = zeros({nx, nf});
  init::normal_(weight, 0, 0.02);
  register_parameter("weight", &weight);
  bias = zeros({nf});
  register_parameter("bias", &bias);
}

std::string Conv1D::extra_repr() const {
  return fmt::format("nf={}, nx={}", out_features, in_features);
}

Tensor Conv1D::forward(const Tensor& x) {
  if (!x.defined() || x.dim() < 1 || x.size(-1) != in_features)
    throw Error(fmt::format("Conv1D(nf={}, nx={}): input {} must have last dim {}", out_features,
                            in_features, x.defined() ? shape_str(x.shape()) : "undefined",
                            in_features));
  return hooked({x}, add(matmul(x, weight), bias));
}

GPT2Attention::GPT2Attention(const GPT2Config& c)
    : Module("GPT2Attention"),
      embed_dim(c.n_embd),
      num_heads(c.n_head),
      head_dim(c.n_embd / c.n_head),
      attn_pdrop(c.attn_pdrop) {
  c_attn = register_module("c_attn", std::make_shared<Conv1D>(3 * c.n_embd, c.n_embd));
  c_proj = register_module("c_proj", std::make_shared<Conv1D>(c.n_embd, c.n_embd));
  resid_dropout = register_module("resid_dropout", std::make_shared<Dropout>(c.resid_pdrop));
}

Tensor GPT2Attention::forward(const Tensor& x, KVCache* cache) {
  if (!x.defined() || x.dim() != 3 || x.size(2) != embed_dim)
    throw Error(fmt::format("GPT2Attention: x {} must be (B, T, C = {})",
                            x.defined() ? shape_str(x.shape()) : "undefined", embed_dim));
  const int64_t B = x.size(0), T = x.size(1), C = embed_dim, NH = num_heads, hs = head_dim;
  Tensor qkv = c_attn->forward(x);  // (B, T, 3C): q, k, v side by side, each (NH, hs) heads last
  Tensor q = reshape(narrow(qkv, 2, 0, C), {B, T, NH, hs});
  Tensor k = reshape(narrow(qkv, 2, C, C), {B, T, NH, hs});
  Tensor v = reshape(narrow(qkv, 2, 2 * C, C), {B, T, NH, hs});
  AttentionMask mask = AttentionMask::causal();
  if (cache) {  // the queries are the last T of the cached positions
    std::tie(k, v) = cache->append(k, v, *this, AttentionMask::causal());
    mask = mask.aligned(CausalAlign::BottomRight);
  }
  SDPAOptions so;
  so.heads_last = true;
  so.dropout_p = attn_pdrop;
  so.training = is_training();
  Tensor o = scaled_dot_product_attention(q, k, v, mask, so).output;  // (B, T, NH, hs)
  return resid_dropout->forward(c_proj->forward(reshape(o, {B, T, C})));
}

GPT2MLP::GPT2MLP(const GPT2Config& c) : TensorModule("GPT2MLP") {
  const int64_t inner = c.n_inner ? c.n_inner : 4 * c.n_embd;
  approximate = c.activation_function == "gelu" ? "none" : "tanh";
  c_fc = register_module("c_fc", std::make_shared<Conv1D>(inner, c.n_embd));
  c_proj = register_module("c_proj", std::make_shared<Conv1D>(c.n_embd, inner));
  dropout = register_module("dropout", std::make_shared<Dropout>(c.resid_pdrop));
}

Tensor GPT2MLP::forward(const Tensor& x) {
  return dropout->forward(c_proj->forward(gelu(c_fc->forward(x), approximate)));
}

GPT2Block::GPT2Block(const GPT2Config& c) : Module("GPT2Block") {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(c.n_embd, c.layer_norm_epsilon));
  attn = register_module("attn", std::make_shared<GPT2Attention>(c));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(c.n_embd, c.layer_norm_epsilon));
  mlp = register_module("mlp", std::make_shared<GPT2MLP>(c));
}

Tensor GPT2Block::forward(const Tensor& x, KVCache* cache) {
  Tensor h = add(x, attn->forward(ln_1->forward(x), cache));
  return add(h, mlp->forward(ln_2->forward(h)));
}

GPT2Model::GPT2Model(const GPT2Config& c, const BuildHook& hook) : Module("GPT2Model"), config(c) {
  auto built = [&](const std::shared_ptr<Module>& m, const std::string& prefix,
                   bool repeated = false) {
    if (hook) hook(*m, prefix, repeated);
    return m;
  };
  wte = register_module("wte", std::make_shared<Embedding>(c.vocab_size, c.n_embd));
  built(wte, "wte.");
  wpe = register_module("wpe", std::make_shared<Embedding>(c.n_positions, c.n_embd));
  built(wpe, "wpe.");
  drop = register_module("drop", std::make_shared<Dropout>(c.embd_pdrop));
  h = register_module("h", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < c.n_layer; ++i)
    h->push_back(built(std::make_shared<GPT2Block>(c), fmt::format("h.{}.", i), true));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd, c.layer_norm_epsilon));
  built(ln_f, "ln_f.");
}

Tensor GPT2Model::forward(const Tensor& ids, std::vector<KVCache>* caches) {
  const int64_t start = caches && !caches->empty() ? caches->front().position() : 0;
  if (!ids.defined() || ids.dim() != 2 || ids.dtype() != kInt64 || ids.size(1) < 1 ||
      start + ids.size(1) > config.n_positions)
    throw Error(fmt::format(
        "GPT2Model: input_ids {} after {} cached positions must be int64 "
        "(B, T), T >= 1, at most n_positions = {} positions in all",
        ids.defined() ? shape_str(ids.shape()) : "undefined", start, config.n_positions));
  if (caches && static_cast<int64_t>(caches->size()) != config.n_layer)
    throw Error(fmt::format("GPT2Model: {} caches for {} layers", caches->size(), config.n_layer));
  const int64_t T = ids.size(1);
  Tensor tok = wte->forward(ids), pos = narrow(wpe->weight, 0, start, T);
  if (compute_dtype) {
    if (tok.dtype() != *compute_dtype) tok = tok.to(*compute_dtype);
    if (pos.dtype() != *compute_dtype) pos = pos.to(*compute_dtype);
  }
  Tensor x = drop->forward(add(tok, pos));
  for (size_t i = 0; i < h->size(); ++i)
    x = h->at<GPT2Block>(i)->forward(x, caches ? &(*caches)[i] : nullptr);
  return ln_f->forward(x);
}

GPT2LMHeadModel::GPT2LMHeadModel(GPT2Config c, const BuildHook& hook)
    : PreTrainedModel("GPT2LMHeadModel"), config(std::move(c)) {
  BuildHook inner;
  if (hook)
    inner = [&](Module& m, const std::string& p, bool r) { hook(m, "transformer." + p, r); };
  transformer = register_module("transformer", std::make_shared<GPT2Model>(config, inner));
  if (config.tie_word_embeddings) {  // as every published GPT-2
    lm_head = register_module("lm_head", lm_head_tied_to(transformer->wte->weight));
  } else {
    lm_head = register_module("lm_head",
                              std::make_shared<Linear>(config.n_embd, config.vocab_size, false));
    if (hook) hook(*lm_head, "lm_head.", false);
  }
}

Tensor GPT2LMHeadModel::forward(const Tensor& ids, std::vector<KVCache>* caches) {
  return lm_head->forward(transformer->forward(ids, caches));
}

std::string GPT2LMHeadModel::config_json(const std::string& dtype) const {
  return config_json_for_save(config, dtype);
}

std::vector<std::string> GPT2LMHeadModel::tied_names() const {
  if (config.tie_word_embeddings) return {"lm_head.weight"};
  return {};
}

std::shared_ptr<GPT2LMHeadModel> GPT2LMHeadModel::from_pretrained(const std::string& folder,
                                                                  DType dtype) {
  return from_pretrained(folder, PretrainedOptions{dtype, std::nullopt});
}

std::shared_ptr<GPT2LMHeadModel> GPT2LMHeadModel::from_pretrained(const std::string& folder,
                                                                  const PretrainedOptions& o) {
  const std::optional<DType> compute = weight_only_compute(o, "GPT2LMHeadModel::from_pretrained");
  const std::string what = folder + "/config.json";
  const std::string text = read_config_text(folder);
  const std::string type = config_model_type(text, what);
  if (type != "gpt2")
    throw Error(fmt::format("GPT2LMHeadModel::from_pretrained: {} has model_type \"{}\", not gpt2",
                            what, type));
  SafetensorsFolder files(folder);  // mapped and validated before the model is built
  const GPT2Config config = parse_gpt2_config(text, what);
  NameMap map;
  if (config.tie_word_embeddings) map.tied = {"lm_head.weight"};
  map.to_module = [](const std::string& n) -> std::string {
    auto ends = [&](const char* s) {
      const size_t k = std::strlen(s);
      return n.size() >= k && n.compare(n.size() - k, k, s) == 0;
    };
    if (ends(".attn.bias") || ends(".attn.masked_bias")) return "";  // causal-mask buffers
    if (n.rfind("transformer.", 0) == 0 || n.rfind("lm_head.", 0) == 0) return n;
    return "transformer." + n;  // a GPT2Model file
  };
  auto m = build_and_load<GPT2LMHeadModel>(
      files, map, o.dtype,
      [&](const BuildHook& hook) { return std::make_shared<GPT2LMHeadModel>(config, hook); },
      compute.has_value());
  m->transformer->compute_dtype = compute;
  return m;
}

}  // namespace tg::nn::hf
