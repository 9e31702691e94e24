// tests/nn/test_lora_helpers.hpp — what test_lora.cpp and test_lora_adapter.cpp share: a small
// Llama decoder layer, the one of tests/fixtures/lora/llama with its base weights, and the
// q_proj / v_proj LoraConfig.
#pragma once

#include "fixtures.hpp"

#include "autograd/tape.hpp"
#include "nn/llama.hpp"
#include "nn/lora.hpp"

#include <memory>

namespace tgt {

// A float32 Llama decoder layer (E, NH query / NKV key-value heads, SwiGLU `hidden`).
inline std::shared_ptr<tg::nn::LlamaDecoderLayer> small_llama(int64_t E = 8, int64_t NH = 4,
                                                              int64_t NKV = 2,
                                                              int64_t hidden = 12) {
  tg::nn::LlamaDecoderLayerOptions o;
  o.intermediate_size = hidden;
  o.attention.num_kv_heads = NKV;
  return std::make_shared<tg::nn::LlamaDecoderLayer>(E, NH, o);
}

// The fixture's layer (E 8, 4 / 2 heads, SwiGLU 12) in float64 with its base weights.
inline std::shared_ptr<tg::nn::LlamaDecoderLayer> lora_fixture_layer(const Fixture& f) {
  auto l = small_llama();
  l->to(tg::kFloat64);
  tg::NoGradGuard ng;
  auto& a = *l->self_attn;
  for (auto [lin, key] : {std::pair{a.q_proj, "wq"},
                          {a.k_proj, "wk"},
                          {a.v_proj, "wv"},
                          {a.o_proj, "wo"},
                          {l->mlp->gate_proj, "wg"},
                          {l->mlp->up_proj, "wu"},
                          {l->mlp->down_proj, "wd"}})
    lin->weight.copy_(f.tensor(key));
  l->input_layernorm->weight.copy_(f.tensor("n1"));
  l->post_attention_layernorm->weight.copy_(f.tensor("n2"));
  return l;
}

inline tg::nn::LoraConfig qv_config(int64_t r = 2, double alpha = 4) {
  tg::nn::LoraConfig c;
  c.r = r;
  c.lora_alpha = alpha;
  c.target_modules = {"q_proj", "v_proj"};
  return c;
}

}  // namespace tgt
