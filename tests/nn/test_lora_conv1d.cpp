// tests/nn/test_lora_conv1d.cpp — LoRA over Hugging Face's Conv1D (GPT-2's c_attn / c_proj /
// c_fc, weight (in, out)): PEFT's fan_in_fan_out forward, gradients, merge and an SGD step
// against PyTorch (tests/fixtures/lora/conv1d, tools/make_lora_fixtures.py), and apply_lora /
// save_adapter / load_adapter / merge_and_unload on a small GPT2LMHeadModel with PEFT's names.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "autograd/io.hpp"
#include "nn/checkpoint.hpp"
#include "nn/hf/gpt2.hpp"
#include "nn/lora.hpp"
#include "nn/optim.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

using namespace tg;

namespace {

nn::hf::GPT2Config tiny_gpt2() {
  nn::hf::GPT2Config c;
  c.vocab_size = 40;
  c.n_positions = 16;
  c.n_embd = 12;
  c.n_layer = 2;
  c.n_head = 3;
  c.resid_pdrop = c.embd_pdrop = c.attn_pdrop = 0;
  return c;
}

Tensor ids_2x5() { return tensor(std::vector<int64_t>{1, 5, 9, 2, 7, 3, 3, 0, 11, 39}, {2, 5}); }

}  // namespace

TEST_CASE("LoRA over a Conv1D matches PEFT's fan_in_fan_out forward, gradients, merge and SGD",
          "[lora][parity]") {
  tgt::Fixture f("lora/conv1d");
  const int64_t in = std::stoll(f.meta("in")), out_f = std::stoll(f.meta("out"));
  auto conv = std::make_shared<nn::hf::Conv1D>(out_f, in);
  conv->to(kFloat64);
  auto l = std::make_shared<nn::LoRALinear>(conv, std::stoll(f.meta("r")),
                                            std::stod(f.meta("lora_alpha")));
  REQUIRE(l->fan_in_fan_out);
  REQUIRE(l->lora_A->weight.shape() == Shape{2, in});
  REQUIRE(l->lora_B->weight.shape() == Shape{out_f, 2});
  {
    NoGradGuard ng;
    conv->weight.copy_(f.tensor("W"));
    conv->bias.copy_(f.tensor("b"));
    l->lora_A->weight.copy_(f.tensor("A"));
    l->lora_B->weight.copy_(f.tensor("B"));
  }
  Tensor x = f.tensor("x").requires_grad_();
  Tensor y = l->forward(x);
  tgt::require_close(y, f.tensor("out"), 1e-12, 1e-12, "conv1d: out");
  y.backward(f.tensor("dout"));
  tgt::require_close(x.grad(), f.tensor("dx"), 1e-12, 1e-12, "conv1d: dx");
  tgt::require_close(l->lora_A->weight.grad(), f.tensor("dA"), 1e-12, 1e-12, "conv1d: dA");
  tgt::require_close(l->lora_B->weight.grad(), f.tensor("dB"), 1e-12, 1e-12, "conv1d: dB");
  REQUIRE_FALSE(conv->weight.grad().defined());
  REQUIRE_FALSE(conv->bias.grad().defined());
  // The Conv1D's own member call carries the branch too (GPT2Attention calls c_attn->forward).
  tgt::require_close(conv->forward(f.tensor("x")), f.tensor("out"), 1e-12, 1e-12, "via base");

  const Tensor W0 = conv->weight.clone();
  l->merge();
  REQUIRE(l->base_weight().shape() == Shape{in, out_f});
  tgt::require_close(conv->weight, f.tensor("merged_W"), 1e-12, 1e-12, "conv1d: merged W");
  tgt::require_close(l->forward(f.tensor("x")), f.tensor("out"), 1e-12, 1e-12, "merged out");
  l->unmerge();
  tgt::require_close(conv->weight, W0, 1e-14, 1e-14, "conv1d: unmerged W");

  const Tensor W1 = conv->weight.clone();
  nn::SGD opt(nn::trainable_parameters(*l), nn::SGDOptions{0.1});
  REQUIRE(opt.param_groups()[0].params.size() == 2);
  opt.step();
  tgt::require_close(l->lora_A->weight, f.tensor("A_sgd"), 1e-12, 1e-12, "A after SGD");
  tgt::require_close(l->lora_B->weight, f.tensor("B_sgd"), 1e-12, 1e-12, "B after SGD");
  tgt::require_close(conv->weight, W1, 0, 0, "W untouched by the step");
}

TEST_CASE("apply_lora on GPT-2's c_attn: PEFT's paths, adapter round trip and merge_and_unload",
          "[lora][adapter]") {
  manual_seed(11);
  auto model = std::make_shared<nn::hf::GPT2LMHeadModel>(tiny_gpt2());
  model->eval();
  nn::LoraConfig c;
  c.r = 4;
  c.lora_alpha = 8;
  c.target_modules = {"c_attn"};
  c.fan_in_fan_out = true;
  const auto paths = nn::apply_lora(*model, c);
  REQUIRE(paths ==
          std::vector<std::string>{"transformer.h.0.attn.c_attn", "transformer.h.1.attn.c_attn"});
  REQUIRE(nn::trainable_parameters(*model).size() == 4);
  NoGradGuard ng;
  const Tensor ids = ids_2x5();
  const Tensor base = model->forward(ids).detach().clone();
  for (auto& [p, l] : nn::lora_layers(*model))
    l->lora_B->weight.copy_(mul(randn(l->lora_B->weight.shape()), 0.2));
  const Tensor adapted = model->forward(ids).detach().clone();
  REQUIRE(max(abs(sub(adapted, base))).item<float>() > 1e-3f);  // the branch reaches the logits

  tgt::TempDir dir("lora_conv1d");
  nn::save_adapter(dir.path, *model, c);
  const nn::SafetensorsFile file = nn::load_safetensors(dir.path + "/adapter_model.safetensors");
  REQUIRE(file.tensors.size() == 4);
  REQUIRE(file.tensors.at("base_model.model.transformer.h.1.attn.c_attn.lora_A.weight").shape() ==
          Shape{4, 12});
  REQUIRE(file.tensors.at("base_model.model.transformer.h.1.attn.c_attn.lora_B.weight").shape() ==
          Shape{36, 4});
  std::ifstream cfg(dir.path + "/adapter_config.json");
  REQUIRE(nlohmann::json::parse(cfg)["fan_in_fan_out"] == true);

  manual_seed(11);  // the same base weights, no LoRA yet
  auto fresh = std::make_shared<nn::hf::GPT2LMHeadModel>(tiny_gpt2());
  fresh->eval();
  REQUIRE(nn::load_adapter(dir.path, *fresh).fan_in_fan_out);
  tgt::require_close(fresh->forward(ids), adapted, 0, 0, "reloaded adapter");

  REQUIRE(nn::merge_and_unload(*fresh).size() == 2);
  REQUIRE(nn::lora_layers(*fresh).empty());
  REQUIRE(std::dynamic_pointer_cast<nn::hf::Conv1D>(
              fresh->get_submodule("transformer.h.0.attn.c_attn")) != nullptr);
  tgt::require_close(fresh->forward(ids), adapted, 1e-5, 1e-6, "merged GPT-2");
}
