// bench/nanogpt.cpp — the training step of nanoGPT's CPU recipe shape (its README's
// shakespeare_char run on a laptop: 4 layers, C 128, 4 heads, T 64, B 12, dropout 0, bias-free,
// the head tied to the token embedding, vocabulary 65), written as a nanoGPT port would write it
// in tapegrad: bias-free LayerNorm (layer_norm with no bias), one c_attn projection fed to the
// packed fused SDPA with the causal structure, c_proj, an exact-GELU MLP (4C), a final LayerNorm;
// cross_entropy over the (B·T, 65) logits against random targets; AdamW (lr 1e-3, betas
// (0.9, 0.99), weight decay 0.1 on the matrices and embeddings, 0 on the norms: nanoGPT's
// configure_optimizers) after clip_grad_norm_(1.0). bench_torch.py's twin is nanoGPT's model.py
// on PyTorch 1.13 (its attention falls back to the masked-softmax form there).
#include "bench/harness.hpp"

namespace tgbench {

namespace {
constexpr int64_t kV = 65, kB = 12, kT = 64, kC = 128, kNH = 4, kL = 4;

struct NoBiasLayerNorm : tg::nn::Module {
  tg::Tensor weight;
  NoBiasLayerNorm() : Module("LayerNorm") {
    weight = tg::ones({kC});
    register_parameter("weight", &weight);
  }
  tg::Tensor forward(const tg::Tensor& x) { return tg::layer_norm(x, {kC}, weight, tg::Tensor()); }
};

struct Block : tg::nn::Module {
  std::shared_ptr<NoBiasLayerNorm> ln_1, ln_2;
  std::shared_ptr<tg::nn::Linear> c_attn, attn_proj, c_fc, mlp_proj;
  Block() : Module("Block") {
    ln_1 = register_module("ln_1", std::make_shared<NoBiasLayerNorm>());
    c_attn = register_module("c_attn", std::make_shared<tg::nn::Linear>(kC, 3 * kC, false));
    attn_proj = register_module("attn_proj", std::make_shared<tg::nn::Linear>(kC, kC, false));
    ln_2 = register_module("ln_2", std::make_shared<NoBiasLayerNorm>());
    c_fc = register_module("c_fc", std::make_shared<tg::nn::Linear>(kC, 4 * kC, false));
    mlp_proj = register_module("mlp_proj", std::make_shared<tg::nn::Linear>(4 * kC, kC, false));
  }
  tg::Tensor forward(const tg::Tensor& x) {  // (B, T, C)
    const int64_t B = x.size(0), T = x.size(1);
    tg::Tensor qkv = c_attn->forward(ln_1->forward(x)).reshape({B, T, 3, kNH, kC / kNH});
    tg::Tensor y = tg::scaled_dot_product_attention_packed(qkv, tg::AttentionMask::causal()).output;
    tg::Tensor h = tg::add(x, attn_proj->forward(y.reshape({B, T, kC})));
    return tg::add(h, mlp_proj->forward(tg::gelu(c_fc->forward(ln_2->forward(h)))));
  }
};

struct NanoGPT : tg::nn::Module {
  std::shared_ptr<tg::nn::Embedding> wte, wpe;
  std::vector<std::shared_ptr<Block>> h;
  std::shared_ptr<NoBiasLayerNorm> ln_f;
  std::shared_ptr<tg::nn::Linear> lm_head;
  tg::Tensor positions = tg::arange(kT, tg::kInt64);
  NanoGPT() : Module("NanoGPT") {
    wte = register_module("wte", std::make_shared<tg::nn::Embedding>(kV, kC));
    wpe = register_module("wpe", std::make_shared<tg::nn::Embedding>(kT, kC));
    for (int64_t l = 0; l < kL; ++l)
      h.push_back(register_module(fmt::format("h{}", l), std::make_shared<Block>()));
    ln_f = register_module("ln_f", std::make_shared<NoBiasLayerNorm>());
    lm_head = register_module("lm_head", std::make_shared<tg::nn::Linear>(kC, kV, false));
    wte->weight = lm_head->weight;  // nanoGPT's weight tying
  }
  tg::Tensor forward(const tg::Tensor& idx) {  // (B, T) int64 -> logits (B, T, V)
    tg::Tensor x = tg::add(wte->forward(idx), wpe->forward(positions));
    for (auto& b : h) x = b->forward(x);
    return lm_head->forward(ln_f->forward(x));
  }
};
}  // namespace

TrainRig make_nanogpt_rig() {
  auto m = std::make_shared<NanoGPT>();
  std::vector<tg::Tensor> decay, no_decay;
  for (const tg::Tensor& p : m->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  tg::nn::AdamWOptions ao(1e-3);
  ao.betas = {0.9, 0.99};
  ao.weight_decay = 0.1;
  TrainRig r;
  r.model = m;
  r.opt = std::make_unique<tg::nn::AdamW>(
      std::vector<tg::nn::ParamGroup>{tg::nn::ParamGroup(decay),
                                      tg::nn::ParamGroup(no_decay, {{"weight_decay", 0.0}})},
      ao);
  r.max_grad_norm = 1.0;
  tg::Tensor idx = tg::randint(0, kV, {kB, kT});
  tg::Tensor targets = tg::randint(0, kV, {kB * kT});
  r.loss = [m, idx, targets] {
    return tg::cross_entropy(m->forward(idx).reshape({kB * kT, kV}), targets);
  };
  return r;
}

void bench_nanogpt(const Options& o) {
  TrainRig r = make_nanogpt_rig();
  fmt::print("# train {}: {} parameters, first loss {:.4f}\n", r.model->type_name(),
             r.model->num_parameters(), r.loss().item<float>());
  std::vector<double> s = interleaved({[&] { r.step(); }}, o.budget * 3, 3);
  emit("train.nanogpt.tg", s[0] * 1e3, "ms");
}

}  // namespace tgbench
