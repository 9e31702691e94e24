// nn/hf/gpt2.hpp — GPT-2 as Hugging Face's GPT2LMHeadModel, with its module and parameter names,
// so a model folder's tensors map one to one:
//   transformer.wte (V, C), transformer.wpe (n_positions, C)
//   transformer.h.N: ln_1, attn.c_attn (C -> 3C), attn.c_proj, ln_2, mlp.c_fc (C -> n_inner),
//                    mlp.c_proj; transformer.ln_f; lm_head (tied to wte: not in files)
//   x = wte(ids) + wpe(positions); x += attn(ln_1(x)); x += mlp(ln_2(x)); logits = lm_head(ln_f(x))
//   attn: causal SDPA over NH heads of hs = C / NH (heads last, no copies); mlp: c_proj(gelu(c_fc))
// The projections are Hugging Face's Conv1D, whose weight is stored (in, out) — the transpose of
// Linear's — and computed as x·W + b: files map into the parameters as they are, with no
// transposed copy either way (LoRA on these layers is PEFT's fan_in_fan_out case).
// Files of GPT2Model (no "transformer." prefix, as the original gpt2 upload) load too; the
// causal-mask buffers attn.bias and attn.masked_bias that old files carry are skipped.
// Deliberately not here: the cross attention and layer-index scaling GPT2Config refuses.
#pragma once

#include "nn/hf/config.hpp"
#include "nn/hf/pretrained.hpp"
#include "nn/layers.hpp"

namespace tg::nn::hf {

// Hugging Face's Conv1D(nf, nx): y = x·W + b, W (nx = in, nf = out), b (out).
class Conv1D : public TensorModule {
 public:
  Conv1D(int64_t out_features, int64_t in_features);  // Hugging Face's argument order (nf, nx)
  Tensor forward(const Tensor& x) override;           // (..., in) -> (..., out)
  std::string extra_repr() const override;
  int64_t in_features, out_features;
  Tensor weight, bias;  // (in, out), (out); weight ~ N(0, 0.02), bias 0 (Hugging Face's init)
};

class GPT2Attention : public Module {
 public:
  GPT2Attention(const GPT2Config& config);
  Tensor forward(const Tensor& x, KVCache* cache = nullptr);  // (B, T, C) -> (B, T, C)
  int64_t embed_dim, num_heads, head_dim;
  double attn_pdrop;
  std::shared_ptr<Conv1D> c_attn, c_proj;
  std::shared_ptr<Dropout> resid_dropout;
};

class GPT2MLP : public TensorModule {
 public:
  GPT2MLP(const GPT2Config& config);
  Tensor forward(const Tensor& x) override;
  std::string approximate;  // "tanh" (gelu_new) or "none" (gelu)
  std::shared_ptr<Conv1D> c_fc, c_proj;
  std::shared_ptr<Dropout> dropout;
};

class GPT2Block : public Module {
 public:
  GPT2Block(const GPT2Config& config);
  Tensor forward(const Tensor& x, KVCache* cache = nullptr);
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<GPT2Attention> attn;
  std::shared_ptr<GPT2MLP> mlp;
};

class GPT2Model : public Module {
 public:
  explicit GPT2Model(const GPT2Config& config, const BuildHook& hook = {});
  // ids (B, T) -> hidden states (B, T, C) after ln_f.
  Tensor forward(const Tensor& input_ids, std::vector<KVCache>* caches = nullptr);
  GPT2Config config;
  std::shared_ptr<Embedding> wte, wpe;
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<ModuleList> h;
  std::shared_ptr<LayerNorm> ln_f;
  // Set: the embeddings' rows are cast to it before they are added (weight-only reduced
  // precision: bf16 parameters, float32 activations); unset: the parameters' dtype.
  std::optional<DType> compute_dtype;
};

class GPT2LMHeadModel : public PreTrainedModel {
 public:
  explicit GPT2LMHeadModel(GPT2Config config, const BuildHook& hook = {});
  static std::shared_ptr<GPT2LMHeadModel> from_pretrained(const std::string& folder,
                                                          DType dtype = kFloat32);
  static std::shared_ptr<GPT2LMHeadModel> from_pretrained(const std::string& folder,
                                                          const PretrainedOptions& options);
  Tensor forward(const Tensor& input_ids, std::vector<KVCache>* caches = nullptr) override;
  int64_t num_layers() const override { return config.n_layer; }
  int64_t max_positions() const override { return config.n_positions; }
  int64_t vocab_size() const override { return config.vocab_size; }
  std::string config_json(const std::string& dtype) const override;
  std::vector<std::string> tied_names() const override;

  GPT2Config config;
  std::shared_ptr<GPT2Model> transformer;
  std::shared_ptr<Linear> lm_head;  // weight tied to transformer.wte.weight (unless the config
                                    // says tie_word_embeddings: false)
};

}  // namespace tg::nn::hf
