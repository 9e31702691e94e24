// tests/nn/test_lora.cpp — nn::LoRALinear and apply_lora: PEFT's forward, gradients, merge and
// one SGD step against PyTorch (tests/fixtures/lora, tools/make_lora_fixtures.py), PEFT's
// initialisation (the wrapped output unchanged), a float64 gradcheck, a Llama decoder layer with
// LoRA on q_proj / v_proj against PyTorch, merge / unmerge in float32 on a real layer, target
// patterns and their errors, freezing and an optimizer step, dropout on the branch only, and the
// Module helpers LoRA relies on (get_submodule, set_submodule, forward output hooks).
// Adapter folders are tested in test_lora_adapter.cpp.
#include "fixtures.hpp"
#include "helpers.hpp"
#include "test_lora_helpers.hpp"

#include "nn/llama.hpp"
#include "nn/lora.hpp"
#include "nn/optim.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

using namespace tg;

namespace {

// A float64 Linear with the fixture's W (and b) wrapped in a LoRALinear holding its A and B.
std::shared_ptr<nn::LoRALinear> fixture_lora(const tgt::Fixture& f) {
  const bool bias = f.meta("bias") == "1";
  auto lin =
      std::make_shared<nn::Linear>(std::stoll(f.meta("in")), std::stoll(f.meta("out")), bias);
  lin->to(kFloat64);
  auto l = std::make_shared<nn::LoRALinear>(lin, std::stoll(f.meta("r")),
                                            std::stod(f.meta("lora_alpha")), 0.0,
                                            f.meta("use_rslora") == "1");
  NoGradGuard ng;
  lin->weight.copy_(f.tensor("W"));
  if (bias) lin->bias.copy_(f.tensor("b"));
  l->lora_A->weight.copy_(f.tensor("A"));
  l->lora_B->weight.copy_(f.tensor("B"));
  return l;
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST_CASE("LoRALinear matches PEFT's forward, gradients, merge and an SGD step", "[lora][parity]") {
  for (const std::string name : {"linear", "rslora"}) {
    tgt::Fixture f("lora/" + name);
    auto l = fixture_lora(f);
    const double r = std::stod(f.meta("r")), alpha = std::stod(f.meta("lora_alpha"));
    REQUIRE(l->scaling == (name == "rslora" ? alpha / std::sqrt(r) : alpha / r));
    Tensor x = f.tensor("x").requires_grad_();
    Tensor out = l->forward(x);
    tgt::require_close(out, f.tensor("out"), 1e-12, 1e-12, name + ": out");
    out.backward(f.tensor("dout"));
    tgt::require_close(x.grad(), f.tensor("dx"), 1e-12, 1e-12, name + ": dx");
    tgt::require_close(l->lora_A->weight.grad(), f.tensor("dA"), 1e-12, 1e-12, name + ": dA");
    tgt::require_close(l->lora_B->weight.grad(), f.tensor("dB"), 1e-12, 1e-12, name + ": dB");
    REQUIRE_FALSE(l->base_weight().requires_grad());
    REQUIRE_FALSE(l->base_weight().grad().defined());  // the frozen base gets no gradient
    if (l->base_bias().defined()) REQUIRE_FALSE(l->base_bias().grad().defined());

    const Tensor W0 = l->base_weight().clone();
    l->merge();
    REQUIRE(l->merged());
    tgt::require_close(l->base_weight(), f.tensor("merged_W"), 1e-12, 1e-12,
                       name + ": merged W");
    tgt::require_close(l->forward(f.tensor("x")), f.tensor("out"), 1e-12, 1e-12,
                       name + ": merged out");
    l->merge();  // a second merge does nothing (PEFT's warning)
    tgt::require_close(l->base_weight(), f.tensor("merged_W"), 1e-12, 1e-12, name + ": twice");
    l->unmerge();
    REQUIRE_FALSE(l->merged());
    tgt::require_close(l->base_weight(), W0, 1e-14, 1e-14, name + ": unmerged W");

    const Tensor W1 = l->base_weight().clone();
    nn::SGD opt(nn::trainable_parameters(*l), nn::SGDOptions{0.1});
    REQUIRE(opt.param_groups()[0].params.size() == 2);
    opt.step();
    tgt::require_close(l->lora_A->weight, f.tensor("A_sgd"), 1e-12, 1e-12, name + ": A after SGD");
    tgt::require_close(l->lora_B->weight, f.tensor("B_sgd"), 1e-12, 1e-12, name + ": B after SGD");
    tgt::require_close(l->base_weight(), W1, 0, 0, name + ": W untouched by the step");
  }
}

TEST_CASE("LoRALinear: PEFT's initialisation leaves the wrapped output unchanged", "[lora]") {
  manual_seed(7);
  auto lin = std::make_shared<nn::Linear>(256, 48);
  Tensor x = randn({3, 5, 256});
  const Tensor before = lin->forward(x).detach();
  auto l = std::make_shared<nn::LoRALinear>(lin, 8, 16);
  REQUIRE(l->lora_A->weight.shape() == Shape{8, 256});
  REQUIRE(l->lora_B->weight.shape() == Shape{48, 8});
  REQUIRE(l->scaling == 2.0);
  for (float b : values(l->lora_B->weight)) REQUIRE(b == 0.0f);
  // kaiming_uniform(a = √5) on (r, in): U(±1/√in), standard deviation bound/√3.
  const double bound = 1.0 / std::sqrt(256.0);
  double sum2 = 0;
  for (float a : values(l->lora_A->weight)) {
    REQUIRE(std::fabs(a) <= bound);
    sum2 += double(a) * a;
  }
  const double sd = std::sqrt(sum2 / (8 * 256)), want = bound / std::sqrt(3.0);
  INFO("std " << sd << " want " << want);
  REQUIRE(std::fabs(sd - want) < 0.05 * want);  // 2048 draws: the sample sd is within ~2%
  tgt::require_close(l->forward(x), before, 0, 0, "wrapped output at init");
  tgt::require_close(lin->forward(x), before, 0, 0, "the base called directly");
  REQUIRE(l->repr() ==
          "LoRALinear(in_features=256, out_features=48, r=8, lora_alpha=16, scaling=2, "
          "merged=False)");
}

TEST_CASE("LoRALinear: float64 gradcheck of the input, A and B", "[lora]") {
  manual_seed(11);
  auto lin = std::make_shared<nn::Linear>(5, 4);
  lin->to(kFloat64);
  auto l = std::make_shared<nn::LoRALinear>(lin, 3, 5.0);
  {
    NoGradGuard ng;
    l->lora_B->weight.copy_(randn({4, 3}, kFloat64));
  }
  Tensor x = tgt::leaf({2, 3, 5});
  tgt::check_grad([&](const std::vector<Tensor>& in) { return l->forward(in[0]); },
                  {x, l->lora_A->weight, l->lora_B->weight}, "LoRALinear(5, 4, r=3)");
}

TEST_CASE("apply_lora on a Llama decoder layer matches PyTorch (q_proj, v_proj)",
          "[lora][parity]") {
  tgt::Fixture f("lora/llama");
  auto layer = tgt::lora_fixture_layer(f);
  const nn::LoraConfig c = tgt::qv_config();
  REQUIRE(nn::apply_lora(*layer, c) ==
          std::vector<std::string>{"self_attn.q_proj", "self_attn.v_proj"});
  auto q = std::dynamic_pointer_cast<nn::LoRALinear>(layer->get_submodule("self_attn.q_proj"));
  auto v = std::dynamic_pointer_cast<nn::LoRALinear>(layer->get_submodule("self_attn.v_proj"));
  REQUIRE(q);
  REQUIRE(v);
  REQUIRE(q->base_layer == layer->self_attn->q_proj);  // the typed member is the base
  {
    NoGradGuard ng;
    q->lora_A->weight.copy_(f.tensor("Aq"));
    q->lora_B->weight.copy_(f.tensor("Bq"));
    v->lora_A->weight.copy_(f.tensor("Av"));
    v->lora_B->weight.copy_(f.tensor("Bv"));
  }
  Tensor x = f.tensor("x").requires_grad_();
  Tensor out = layer->forward(x);
  tgt::require_close(out, f.tensor("out"), 1e-12, 1e-12, "out");
  out.backward(f.tensor("dout"));
  tgt::require_close(x.grad(), f.tensor("dx"), 1e-12, 1e-12, "dx");
  for (auto [w, key] : {std::pair{q->lora_A->weight, "dAq"},
                        {q->lora_B->weight, "dBq"},
                        {v->lora_A->weight, "dAv"},
                        {v->lora_B->weight, "dBv"}})
    tgt::require_close(w.grad(), f.tensor(key), 1e-12, 1e-12, key);
  int frozen = 0;
  for (const auto& [name, p] : layer->named_parameters()) {
    const bool lora = name.find(".lora_") != std::string::npos;
    INFO(name);
    REQUIRE(p.requires_grad() == lora);
    REQUIRE(p.grad().defined() == lora);
    frozen += !lora;
  }
  REQUIRE(frozen == 9);
  REQUIRE(nn::trainable_parameters(*layer).size() == 4);
  const auto keys = layer->state_dict().keys();
  for (const char* k : {"self_attn.q_proj.base_layer.weight", "self_attn.q_proj.lora_A.weight",
                        "self_attn.q_proj.lora_B.weight", "self_attn.v_proj.lora_A.weight",
                        "self_attn.k_proj.weight"})
    REQUIRE(std::find(keys.begin(), keys.end(), k) != keys.end());
}

TEST_CASE("LoRA merge / unmerge on a float32 Llama layer: the outputs agree to float rounding",
          "[lora]") {
  manual_seed(21);
  auto layer = tgt::small_llama(64, 4, 2, 96);
  nn::LoraConfig c;
  c.r = 8;
  c.lora_alpha = 16;
  c.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  REQUIRE(nn::apply_lora(*layer, c).size() == 7);
  Tensor x = randn({2, 16, 64});
  NoGradGuard ng;
  const auto base_out = layer->forward(x).to_vector<float>();  // B = 0: the base alone
  std::vector<Tensor> bases;
  for (auto& [p, l] : nn::lora_layers(*layer)) {
    l->lora_B->weight.copy_(mul(randn(l->lora_B->weight.shape()), 0.05));
    bases.push_back(l->base_weight().clone());
  }
  const auto unmerged = layer->forward(x).to_vector<float>();
  for (auto& [p, l] : nn::lora_layers(*layer)) l->merge();
  for (auto& [p, l] : nn::lora_layers(*layer)) l->merge();  // merging twice changes nothing
  const auto merged = layer->forward(x).to_vector<float>();
  for (auto& [p, l] : nn::lora_layers(*layer)) l->unmerge();
  const auto back = layer->forward(x).to_vector<float>();
  auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
    return m;
  };
  double scale = 0;
  for (float u : unmerged) scale = std::max(scale, std::fabs(double(u)));
  const double d_merge = max_diff(merged, unmerged), d_back = max_diff(back, unmerged),
               branch = max_diff(unmerged, base_out);
  // x·(W + s·B·A)ᵀ and x·Wᵀ + s·(x·Aᵀ)·Bᵀ differ by float32 rounding only: of the merged weight
  // and of each dot product (2^-24 relative per term, over 64..96 terms), carried through
  // attention and SwiGLU. The bound is 64 float32 ulps (64 · 2^-24) of the output's scale, a
  // few times the worst case observed; the branch's own contribution is far above it, so a
  // lost branch cannot pass.
  const double tol = 64 * std::ldexp(1.0, -24) * scale;
  INFO("max |merged - unmerged| " << d_merge << ", after unmerge " << d_back << ", branch "
                                  << branch << ", output scale " << scale << ", tol " << tol);
  REQUIRE(d_merge <= tol);
  REQUIRE(d_back <= tol);
  REQUIRE(branch > 1000 * tol);
  // W + d - d is W to one rounding of the sum (|W + d| · 2^-24 each element).
  size_t i = 0;
  for (auto& [p, l] : nn::lora_layers(*layer))
    tgt::require_close(l->base_weight(), bases[i++], 1e-7, 1e-6, p + ": unmerged weight");
}

TEST_CASE("apply_lora: PEFT's target matching, freezing, and errors that name the patterns",
          "[lora]") {
  manual_seed(31);
  auto make = [] {
    auto list = std::make_shared<nn::ModuleList>();
    for (int i = 0; i < 2; ++i) list->push_back(tgt::small_llama());
    return list;
  };
  auto model = make();
  nn::LoraConfig c;
  c.target_modules = {"self_attn.q_proj", "down_proj"};  // a suffix of components, or a name
  REQUIRE(nn::apply_lora(*model, c) ==
          std::vector<std::string>{"0.self_attn.q_proj", "0.mlp.down_proj", "1.self_attn.q_proj",
                                   "1.mlp.down_proj"});
  REQUIRE(nn::lora_layers(*model).size() == 4);
  REQUIRE(nn::trainable_parameters(*model).size() == 8);
  REQUIRE(model->num_parameters(true) == 2 * (8 * 8 + 8 * 8 + 12 * 8 + 8 * 8));

  nn::LoraConfig re;  // a regex must match the whole path
  re.target_modules_regex = R"(1\.self_attn\.(k|o)_proj)";
  auto model2 = make();
  REQUIRE(nn::apply_lora(*model2, re) ==
          std::vector<std::string>{"1.self_attn.k_proj", "1.self_attn.o_proj"});
  re.target_modules_regex = "self_attn.k_proj";  // not the whole path: no match
  REQUIRE_ERROR(nn::apply_lora(*make(), re), "target modules regex \"self_attn.k_proj\" not found");

  // Errors leave the model as it was.
  auto fresh = make();
  const auto keys = fresh->state_dict().keys();
  nn::LoraConfig bad;
  bad.target_modules = {"query", "value"};
  REQUIRE_ERROR(nn::apply_lora(*fresh, bad),
                "apply_lora: target modules [query, value] not found in the model");
  bad.target_modules = {"q_proj", "mlp"};
  REQUIRE_ERROR(nn::apply_lora(*fresh, bad),
                "target [q_proj, mlp] matches \"0.mlp\", a SwiGLU; only Linear layers");
  bad.target_modules = {"q_proj"};
  bad.r = 0;
  REQUIRE_ERROR(nn::apply_lora(*fresh, bad), "apply_lora: LoraConfig r must be positive, got 0");
  bad.r = 4;
  bad.bias = "all";
  REQUIRE_ERROR(nn::apply_lora(*fresh, bad), "bias \"all\" is not supported");
  bad.bias = "none";
  bad.lora_dropout = 1;
  REQUIRE_ERROR(nn::apply_lora(*fresh, bad), "lora_dropout must be in [0, 1), got 1");
  REQUIRE(fresh->state_dict().keys() == keys);
  for (const Tensor& p : fresh->parameters()) REQUIRE(p.requires_grad());
  REQUIRE_ERROR(nn::apply_lora(*model, c), "\"0.self_attn.q_proj\" already has a LoRA adapter");
}

TEST_CASE("apply_lora: an optimizer step changes only A and B", "[lora]") {
  manual_seed(41);
  auto layer = tgt::small_llama();
  nn::LoraConfig c;
  c.target_modules = {"q_proj", "v_proj"};
  nn::apply_lora(*layer, c);
  nn::StateDict before;
  for (const auto& [k, t] : layer->state_dict()) before.insert(k, t.clone());
  nn::AdamW opt(nn::trainable_parameters(*layer), nn::AdamWOptions(1e-2));
  Tensor x = randn({2, 5, 8});
  for (int step = 0; step < 2; ++step) {  // A's gradient is zero until B has moved
    opt.zero_grad();
    layer->forward(x).pow(2).mean().backward();
    opt.step();
  }
  for (const auto& [k, t] : layer->state_dict()) {
    INFO(k);
    const bool lora = k.find(".lora_") != std::string::npos;
    const auto a = t.to_vector<float>(), b = before.at(k).to_vector<float>();
    REQUIRE((a != b) == lora);
  }
}

TEST_CASE("LoRALinear: dropout acts on the branch's input only", "[lora]") {
  manual_seed(51);
  auto lin = std::make_shared<nn::Linear>(32, 16);
  auto l = std::make_shared<nn::LoRALinear>(lin, 4, 8, 0.5);
  Tensor x = randn({4, 32});
  NoGradGuard ng;
  const Tensor base = lin->forward(x);  // B = 0: dropout cannot show
  l->lora_B->weight.copy_(randn({16, 4}));
  l->train();
  const auto t1 = l->forward(x).to_vector<float>(), t2 = l->forward(x).to_vector<float>();
  l->eval();
  const Tensor e = l->forward(x);
  const Tensor want = add(linear(x, lin->weight, lin->bias),
                          mul(linear(linear(x, l->lora_A->weight), l->lora_B->weight), 2.0));
  tgt::require_close(e, want, 1e-6, 1e-5, "eval: no dropout");
  REQUIRE(t1 != t2);  // training: a fresh mask each call
  REQUIRE(t1 != e.to_vector<float>());
  l->train();
  l->lora_B->weight.zero_();
  tgt::require_close(l->forward(x), base, 0, 0, "training with B = 0: the base is not dropped");
}

TEST_CASE("merge_and_unload puts the merged base layers back under their own names", "[lora]") {
  manual_seed(61);
  auto layer = tgt::small_llama();
  nn::LoraConfig c;
  c.target_modules = {"q_proj", "v_proj"};
  const auto names = layer->state_dict().keys();
  nn::apply_lora(*layer, c);
  Tensor x = randn({1, 4, 8});
  NoGradGuard ng;
  for (auto& [p, l] : nn::lora_layers(*layer))
    l->lora_B->weight.copy_(randn(l->lora_B->weight.shape()));
  const Tensor with = layer->forward(x);
  REQUIRE(nn::merge_and_unload(*layer) ==
          std::vector<std::string>{"self_attn.q_proj", "self_attn.v_proj"});
  REQUIRE(layer->state_dict().keys() == names);
  REQUIRE(nn::lora_layers(*layer).empty());
  REQUIRE(std::dynamic_pointer_cast<nn::Linear>(layer->get_submodule("self_attn.q_proj")) ==
          layer->self_attn->q_proj);
  tgt::require_close(layer->forward(x), with, 1e-5, 1e-4, "merged and unloaded");
}

TEST_CASE("Module: get_submodule, set_submodule and forward output hooks", "[lora][module]") {
  nn::Sequential seq{std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::Tanh>()};
  REQUIRE(seq.get_submodule("").get() == &seq);
  REQUIRE(seq.get_submodule("1")->type_name() == "Tanh");
  REQUIRE_ERROR(seq.get_submodule("0.weight"),
                "Sequential.get_submodule(\"0.weight\"): 0 has no submodule \"weight\"");
  REQUIRE_ERROR(seq.get_submodule("2"), "Sequential has no submodule \"2\"");
  REQUIRE_ERROR(seq.set_submodule("5", std::make_shared<nn::ReLU>()), "no submodule \"5\"");
  REQUIRE_ERROR(seq.set_submodule("", std::make_shared<nn::ReLU>()), "must name a descendant");
  seq.set_submodule("1", std::make_shared<nn::ReLU>());
  REQUIRE(seq.named_children()[1].second->type_name() == "ReLU");

  nn::Linear lin(2, 2);
  Tensor x = ones({1, 2});
  NoGradGuard ng;
  const auto plain = lin.forward(x).to_vector<float>();
  std::vector<float> seen;
  int obs = lin.register_forward_hook([&](nn::Module&, const std::vector<Tensor>&,
                                          const Tensor& out) { seen = out.to_vector<float>(); });
  int add1 = lin.register_forward_output_hook(
      [](nn::Module&, const std::vector<Tensor>& in, const Tensor& out) {
        REQUIRE(in.size() == 1);
        return add(out, 1.0);
      });
  int obs2 = lin.register_forward_hook([&](nn::Module&, const std::vector<Tensor>&,
                                           const Tensor& out) { seen = out.to_vector<float>(); });
  const auto hooked = lin.forward(x).to_vector<float>();
  REQUIRE(hooked == std::vector<float>{plain[0] + 1, plain[1] + 1});
  REQUIRE(seen == hooked);  // a hook after the output hook sees the replaced output
  lin.remove_forward_hook(add1);
  lin.remove_forward_hook(obs2);
  lin.forward(x);
  REQUIRE(seen == plain);
  lin.remove_forward_hook(obs);
  REQUIRE_ERROR(lin.register_forward_output_hook(nullptr), "empty function");
}
