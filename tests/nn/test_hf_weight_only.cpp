// tests/nn/test_hf_weight_only.cpp — from_pretrained(folder, {kBFloat16, kFloat32}): weight-only
// reduced precision (nn/hf/pretrained.hpp). A BF16 folder's tensors become bfloat16 parameters
// mapped in place (storage owned by the file's mapping, never copied), the activations, the KV
// cache and the logits float32: the logits equal the float32 model's (the file converted) to
// float32 rounding, 1e-5 relative, for both families; generation through the cache agrees with
// the uncached one; gradients reach the bf16 parameters in their dtype; other dtype pairs are
// refused by name.
#include "fixtures.hpp"
#include "helpers.hpp"
#include "nn/hf/gpt2.hpp"
#include "nn/hf/llama.hpp"
#include "ops/ops.hpp"

#include <filesystem>
#include <map>

using namespace tg;
namespace hf = tg::nn::hf;

namespace {

std::string folder(const std::string& name) { return std::string(TG_FIXTURES) + "/hf/" + name; }

const hf::PretrainedOptions kWeightOnly{kBFloat16, kFloat32};

// max |a - b| <= rel · max |b|, a and b float32.
void require_rel(const Tensor& a, const Tensor& b, double rel, const std::string& what) {
  REQUIRE(a.dtype() == kFloat32);
  REQUIRE(a.shape() == b.shape());
  const double scale = max(abs(b)).item<double>();
  const double err = max(abs(a - b)).item<double>();
  INFO(what << ": max |diff| " << err << " of max |ref| " << scale);
  REQUIRE(err <= rel * scale);
}

// A BF16 GPT-2 folder, written from the committed F32 one (each weight rounded to bfloat16);
// each test case its own (ctest runs them in parallel).
std::string gpt2_bf16_folder(const std::string& tag) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tg_test_hf_weight_only_gpt2_" + tag)).string();
  std::filesystem::remove_all(dir);
  hf::from_pretrained(folder("gpt2"), kBFloat16)->save_pretrained(dir);
  return dir;
}

}  // namespace

TEST_CASE("hf weight-only: a BF16 Llama folder maps bf16 parameters and gives float32 logits") {
  tgt::Fixture f("hf/llama_bf16");
  auto model = hf::LlamaForCausalLM::from_pretrained(folder("llama_bf16"), kWeightOnly);
  model->eval();
  REQUIRE(model->model->compute_dtype == kFloat32);
  // Every parameter is the file's bytes: bfloat16, its storage the mapping's (no copy, not an
  // allocator block), the embedding (and the lm_head tied to it) included.
  int mapped = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    REQUIRE(p.dtype() == kBFloat16);
    CHECK(p.impl()->storage->owner != nullptr);
    ++mapped;
  }
  CHECK(mapped == static_cast<int>(model->state_dict().size()) - 1);  // lm_head.weight is tied
  CHECK(model->lm_head->weight.same(model->model->embed_tokens->weight));
  const Tensor logits = model->forward(f.tensor("ids"));
  REQUIRE(logits.dtype() == kFloat32);
  // The reference converts the weights to float32: the same float32 math, up to summation order.
  require_rel(logits, f.tensor("logits32"), 1e-5, "vs the PyTorch reference");
  auto f32 = hf::LlamaForCausalLM::from_pretrained(folder("llama_bf16"));
  f32->eval();
  require_rel(logits, f32->forward(f.tensor("ids")), 1e-5, "vs the float32 model");
}

TEST_CASE("hf weight-only: a BF16 GPT-2 folder gives the float32 model's logits") {
  const std::string dir = gpt2_bf16_folder("logits");
  tgt::Fixture f("hf/gpt2");
  auto model = hf::from_pretrained(dir, kWeightOnly);
  model->eval();
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    REQUIRE(p.dtype() == kBFloat16);
    CHECK(p.impl()->storage->owner != nullptr);
  }
  auto f32 = hf::from_pretrained(dir);  // the same BF16 file converted to float32 parameters
  f32->eval();
  const Tensor logits = model->forward(f.tensor("ids"));
  require_rel(logits, f32->forward(f.tensor("ids")), 1e-5, "gpt2 vs the float32 model");
  std::filesystem::remove_all(dir);
}

TEST_CASE("hf weight-only: generation through the float32 KV cache matches the uncached run") {
  for (const std::string name : {"llama_bf16", "gpt2"}) {
    INFO(name);
    const std::string dir = name == "gpt2" ? gpt2_bf16_folder("generate") : folder(name);
    tgt::Fixture f("hf/" + name);
    auto model = hf::from_pretrained(dir, kWeightOnly);
    model->eval();
    const Tensor ids = f.tensor("ids");
    // Step by step through the caches: each step's float32 logits are the uncached run's.
    NoGradGuard ng;
    std::vector<nn::KVCache> caches;
    for (int64_t i = 0; i < model->num_layers(); ++i) caches.emplace_back(ids.size(1) + 3);
    Tensor seq = ids, step = model->forward(ids, &caches);
    for (int i = 0; i < 3; ++i) {
      const Tensor next = argmax(select(step, 1, step.size(1) - 1), 1, true);  // (B, 1)
      seq = cat({seq, next}, 1);
      step = model->forward(next, &caches);
      REQUIRE(step.dtype() == kFloat32);
      const Tensor full = model->forward(seq);
      require_rel(select(step, 1, 0), select(full, 1, full.size(1) - 1), 1e-5, "cached step");
    }
    hf::GenerationOptions uncached;
    uncached.use_cache = false;
    const Tensor a = model->generate(ids, 6), b = model->generate(ids, 6, uncached);
    CHECK(a.to_vector<int64_t>() == b.to_vector<int64_t>());
    auto f32 = hf::from_pretrained(dir);
    f32->eval();
    CHECK(f32->generate(ids, 6).to_vector<int64_t>() == a.to_vector<int64_t>());
    if (name == "gpt2") std::filesystem::remove_all(dir);
  }
}

TEST_CASE("hf weight-only: gradients reach the bf16 parameters, rounded once from float32") {
  tgt::Fixture f("hf/llama_bf16");
  auto model = hf::from_pretrained(folder("llama_bf16"), kWeightOnly);
  auto f32 = hf::from_pretrained(folder("llama_bf16"));
  manual_seed(3);
  const Tensor dout = randn({2, 5, 32});  // logits (B, T, V)
  sum(mul(model->forward(f.tensor("ids")), dout)).backward();
  sum(mul(f32->forward(f.tensor("ids")), dout)).backward();
  std::map<std::string, Tensor> want;
  for (const auto& [name, p] : f32->named_parameters()) want[name] = p.grad();
  int checked = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().dtype() == kBFloat16);
    const Tensor g = p.grad().to(kFloat32), w = want.at(name);
    ++checked;
    // One bf16 rounding of float32 sums taken in another order: within 2^-7 of the largest.
    const double scale = max(abs(w)).item<double>();
    CHECK(max(abs(g - w)).item<double>() <= 0x1p-7 * scale);
  }
  CHECK(checked == static_cast<int>(want.size()));
}

TEST_CASE("hf weight-only: other dtype pairs are refused, naming both") {
  CHECK_THROWS_MATCHES(
      hf::from_pretrained(folder("llama_bf16"), hf::PretrainedOptions{kFloat32, kBFloat16}), Error,
      tgt::ErrorContains("LlamaForCausalLM::from_pretrained: dtype float32 with compute_dtype "
                         "bfloat16 is not supported"));
  CHECK_THROWS_MATCHES(
      hf::from_pretrained(folder("gpt2"), {kBFloat16, kFloat64}), Error,
      tgt::ErrorContains("GPT2LMHeadModel::from_pretrained: dtype bfloat16 with compute_dtype "
                         "float64"));
  // compute_dtype equal to dtype is the plain load.
  auto m = hf::from_pretrained(folder("llama_bf16"), hf::PretrainedOptions{kBFloat16, kBFloat16});
  CHECK(m->forward(tgt::Fixture("hf/llama_bf16").tensor("ids")).dtype() == kBFloat16);
}
