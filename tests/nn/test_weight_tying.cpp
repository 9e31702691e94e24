// tests/nn/test_weight_tying.cpp — assigning a layer's parameter member re-registers it
// (PyTorch's setattr): nanoGPT's `wte->weight = lm_head->weight` ties the embedding and the head,
// parameters() holds the shared tensor once, both uses train it, a checkpoint keeps it tied;
// assigning a non-leaf is refused, an undefined member is left out.
#include "helpers.hpp"

#include "nn/checkpoint.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"

#include <filesystem>
#include <memory>
#include <unistd.h>

using namespace tg;

namespace {
// ids (B, T) -> logits (B, T, V) through wte (V, C) and lm_head (V, C), V = 5, C = 3.
struct TinyLm : nn::Module {
  std::shared_ptr<nn::Embedding> wte;
  std::shared_ptr<nn::Linear> lm_head;
  explicit TinyLm(bool tie) : Module("TinyLm") {
    wte = register_module("wte", std::make_shared<nn::Embedding>(5, 3));
    lm_head = register_module("lm_head", std::make_shared<nn::Linear>(3, 5, false));
    if (tie) wte->weight = lm_head->weight;  // the literal PyTorch line
  }
  Tensor forward(const Tensor& ids) { return lm_head->forward(wte->forward(ids)); }
};
Tensor ids() { return tensor(std::vector<int64_t>{0, 3, 3, 1, 4, 2}, {2, 3}); }
// A fixed weighting of the logits, so that the loss reaches every element.
Tensor loss_of(const Tensor& logits) {
  return sum(mul(logits, reshape(arange(30, kFloat32), {2, 3, 5})));
}
}  // namespace

TEST_CASE("tied weights: parameters() holds the shared tensor once, state_dict both names",
          "[module][tying]") {
  manual_seed(4);
  TinyLm untied(false), tied(true);
  REQUIRE(untied.parameters().size() == 2);
  REQUIRE(untied.num_parameters() == 30);
  REQUIRE(tied.parameters().size() == 1);
  REQUIRE(tied.parameters()[0].same(tied.lm_head->weight));
  REQUIRE(tied.named_parameters()[0].first == "wte.weight");  // its first name, like PyTorch
  REQUIRE(tied.num_parameters() == 15);
  REQUIRE(tied.wte->parameters()[0].same(tied.lm_head->weight));
  const nn::StateDict sd = tied.state_dict();
  REQUIRE(sd.keys() == std::vector<std::string>{"wte.weight", "lm_head.weight"});
  REQUIRE(sd.at("wte.weight").data_ptr() == sd.at("lm_head.weight").data_ptr());
  REQUIRE(tied.summary().find("Total parameters: 15 (trainable 15)") != std::string::npos);
}

TEST_CASE("tied weights: the gradient sums both uses and one step moves both", "[module][tying]") {
  manual_seed(4);
  TinyLm tied(true);
  const Tensor w0 = tied.lm_head->weight.detach().clone();
  // Reference: the same weight as two separate leaves; the tied gradient is their sum.
  Tensor a = w0.clone().requires_grad_(), b = w0.clone().requires_grad_();
  loss_of(linear(embedding(ids(), a), b)).backward();
  const std::vector<float> want = add(a.grad(), b.grad()).to_vector<float>();

  nn::SGD opt(tied.parameters(), {0.5});
  loss_of(tied.forward(ids())).backward();
  tgt::require_close(tied.lm_head->weight.grad(), tensor(want, {5, 3}), 1e-4, 1e-6);
  REQUIRE(tied.wte->weight.grad().same(tied.lm_head->weight.grad()));
  opt.step();
  const Tensor expect = sub(w0, mul(tensor(want, {5, 3}), 0.5));
  tgt::require_close(tied.wte->weight, expect, 1e-4, 1e-6);
  tgt::require_close(tied.lm_head->weight, expect, 1e-4, 1e-6);
}

TEST_CASE("tied weights: a checkpoint round trip keeps them tied", "[module][tying][checkpoint]") {
  namespace fs = std::filesystem;
  const std::string dir =
      (fs::temp_directory_path() / fmt::format("tg_tying_{}", ::getpid())).string();
  manual_seed(4);
  TinyLm saved(true);
  nn::SGD opt(saved.parameters(), {0.5});
  loss_of(saved.forward(ids())).backward();
  opt.step();
  nn::save_checkpoint(dir, saved, opt, nullptr, 1);

  manual_seed(9);  // other initial values
  TinyLm loaded(true);
  nn::SGD opt2(loaded.parameters(), {0.5});
  nn::load_checkpoint(dir, loaded, opt2, nullptr);
  fs::remove_all(dir);
  REQUIRE(loaded.wte->weight.same(loaded.lm_head->weight));
  REQUIRE(loaded.lm_head->weight.to_vector<float>() == saved.lm_head->weight.to_vector<float>());
  // Still one tensor: a step after loading moves both uses.
  loss_of(loaded.forward(ids())).backward();
  opt2.step();
  REQUIRE(loaded.wte->weight.to_vector<float>() == loaded.lm_head->weight.to_vector<float>());
  REQUIRE(loaded.parameters().size() == 1);
}

TEST_CASE("an assigned member must be a leaf and an undefined one is left out", "[module][tying]") {
  auto lin = std::make_shared<nn::Linear>(3, 2);
  REQUIRE(lin->parameters().size() == 2);
  const Tensor old = lin->weight;
  lin->weight = mul(old, 2.0);  // a non-leaf: not a parameter (PyTorch raises a TypeError)
  REQUIRE_ERROR(
      lin->parameters(),
      "Linear.parameters: \"weight\" must be a floating leaf tensor, got float32 non-leaf");
  lin->weight = old;
  lin->bias = Tensor();  // PyTorch's `lin.bias = None`
  REQUIRE(lin->parameters().size() == 1);
  REQUIRE(lin->state_dict().keys() == std::vector<std::string>{"weight"});
}
