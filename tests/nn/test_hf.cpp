// tests/nn/test_hf.cpp — Hugging Face model folders (nn/hf): GPT-2 and Llama-family logits and
// gradients against tools/hf_reference.py (PyTorch 1.13) in float32 and float64, BF16 / F16 files
// converted bit for bit, a sharded folder, zero-copy mapping, save -> load round trips, and
// generation through the KV cache, Mistral's sliding window, SkipInitGuard. The refusals are in
// test_hf_errors.cpp.
#include "fixtures.hpp"
#include "helpers.hpp"
#include "nn/hf/gpt2.hpp"
#include "nn/hf/llama.hpp"
#include "nn/hf/weights.hpp"
#include "nn/init.hpp"
#include "ops/ops.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace tg;
namespace hf = tg::nn::hf;

namespace {

std::string folder(const std::string& name) { return std::string(TG_FIXTURES) + "/hf/" + name; }

std::string scratch(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("tg_test_hf_" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

// The model's logits on the fixture's ids match the reference's; in float64 its gradients of
// sum(logits · dout) match every parameter's reference gradient.
void check_family(const std::string& name, DType dtype) {
  INFO(name << " in " << dtype_name(dtype));
  tgt::Fixture f("hf/" + name);
  auto model = hf::from_pretrained(folder(name), dtype);
  model->eval();
  Tensor logits = model->forward(f.tensor("ids"));
  if (dtype == kFloat32) {
    tgt::require_close(logits, f.tensor("logits32"), 1e-5, 1e-5, name + " logits32");
    tgt::require_close(logits, f.tensor("logits64"), 1e-5, 1e-5, name + " logits vs float64");
    sum(mul(logits, f.tensor("dout").to(kFloat32))).backward();
    for (const auto& [pname, p] : model->named_parameters())
      tgt::require_close(p.grad(), f.tensor("d." + pname), 1e-4, 1e-4, "float32 d." + pname);
    return;
  }
  tgt::require_close(logits, f.tensor("logits64"), 1e-12, 1e-10, name + " logits64");
  sum(mul(logits, f.tensor("dout"))).backward();
  int checked = 0;
  for (const auto& [pname, p] : model->named_parameters()) {
    REQUIRE(p.grad().defined());
    tgt::require_close(p.grad(), f.tensor("d." + pname), 1e-11, 1e-9, "d." + pname);
    ++checked;
  }
  CHECK(checked == static_cast<int>(model->named_parameters().size()));
}

}  // namespace

TEST_CASE("hf: GPT-2 logits and gradients match the PyTorch reference in float32 and float64") {
  check_family("gpt2", kFloat32);
  check_family("gpt2", kFloat64);
}

TEST_CASE("hf: Llama (grouped-query, untied) logits and gradients match the reference") {
  check_family("llama", kFloat32);
  check_family("llama", kFloat64);
}

TEST_CASE("hf: Qwen2 (q, k, v biases, o without) logits match the reference") {
  tgt::Fixture f("hf/qwen2");
  auto model = hf::LlamaForCausalLM::from_pretrained(folder("qwen2"));
  model->eval();
  CHECK(model->model->layers->at<nn::LlamaDecoderLayer>(0)->self_attn->q_proj->bias.defined());
  CHECK(!model->model->layers->at<nn::LlamaDecoderLayer>(0)->self_attn->o_proj->bias.defined());
  tgt::require_close(model->forward(f.tensor("ids")), f.tensor("logits32"), 1e-5, 1e-5, "qwen2");
}

TEST_CASE("hf: BF16 (tied) and F16 (sharded) files load bit for bit as PyTorch converts them") {
  for (const std::string name : {"llama_bf16", "llama_f16_sharded"}) {
    INFO(name);
    tgt::Fixture f("hf/" + name);
    auto model = hf::LlamaForCausalLM::from_pretrained(folder(name));
    model->eval();
    const nn::StateDict sd = model->state_dict();
    int compared = 0;
    for (const auto& [key, t] : f.tensors()) {
      if (key.rfind("w.", 0) != 0) continue;
      const Tensor want = t, got = sd.at(key.substr(2));
      REQUIRE(got.dtype() == kFloat32);
      REQUIRE(got.shape() == want.shape());
      const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
      CHECK(std::memcmp(g.data(), w.data(), g.size() * sizeof(float)) == 0);
      ++compared;
    }
    CHECK(compared == static_cast<int>(sd.size()) - (name == "llama_bf16" ? 1 : 0));
    tgt::require_close(model->forward(f.tensor("ids")), f.tensor("logits32"), 1e-5, 1e-5, name);
  }
  auto tied = hf::LlamaForCausalLM::from_pretrained(folder("llama_bf16"));
  CHECK(tied->lm_head->weight.same(tied->model->embed_tokens->weight));
}

TEST_CASE("hf: an F32 file is mapped, not copied, and in-place writes never reach the file") {
  const std::string dir = scratch("mapped");
  std::filesystem::copy(folder("llama"), dir);
  const auto before = std::filesystem::file_size(dir + "/model.safetensors");
  std::string bytes_before;
  {
    std::ifstream in(dir + "/model.safetensors", std::ios::binary);
    bytes_before.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    auto model = hf::LlamaForCausalLM::from_pretrained(dir);
    // A decoder layer's weights lie inside the mapping of the file (storage owned by the
    // mapping, not an allocator block); the blocks built once (embeddings, final norm, lm_head)
    // are copied into their placeholders, whose memory the allocator would otherwise keep.
    Tensor w = model->model->layers->at<nn::LlamaDecoderLayer>(1)->self_attn->q_proj->weight;
    REQUIRE(w.impl()->storage->owner != nullptr);
    CHECK(model->model->embed_tokens->weight.impl()->storage->owner == nullptr);
    CHECK(model->lm_head->weight.impl()->storage->owner == nullptr);
    NoGradGuard ng;
    w.mul_(2.0);  // copy on write: the page is the process's own from here
    CHECK(w.to_vector<float>()[0] != 0);
  }
  std::ifstream in(dir + "/model.safetensors", std::ios::binary);
  std::string bytes_after(std::istreambuf_iterator<char>(in), {});
  CHECK(std::filesystem::file_size(dir + "/model.safetensors") == before);
  CHECK(bytes_after == bytes_before);
  std::filesystem::remove_all(dir);
}

TEST_CASE("hf: save_pretrained -> from_pretrained round trips bit for bit in the same layout") {
  for (const std::string name : {"gpt2", "llama", "llama_bf16", "llama_f16_sharded"}) {
    INFO(name);
    auto a = hf::from_pretrained(folder(name));
    const std::string dir = scratch("save_" + name);
    a->save_pretrained(dir);
    // Hugging Face's layout: tied lm_head.weight left out; GPT-2 under "transformer.".
    nn::SafetensorsFile file = nn::load_safetensors(dir + "/model.safetensors");
    CHECK(file.tensors.contains("lm_head.weight") ==
          (name == "llama" || name == "llama_f16_sharded"));
    if (name == "gpt2") CHECK(file.tensors.contains("transformer.h.1.attn.c_attn.weight"));
    CHECK(file.metadata.at("format") == "pt");
    auto b = hf::from_pretrained(dir);
    const nn::StateDict sa = a->state_dict(), sb = b->state_dict();
    REQUIRE(sa.keys() == sb.keys());
    for (const auto& [k, t] : sa) {
      const std::vector<float> x = t.to_vector<float>(), y = sb.at(k).to_vector<float>();
      CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
    }
    REQUIRE_ERROR(a->save_pretrained(dir), "exists (pass overwrite = true");
    a->save_pretrained(dir, true);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("hf: GPT-2 Conv1D weights keep Hugging Face's (in, out) layout") {
  auto m = hf::GPT2LMHeadModel::from_pretrained(folder("gpt2"));
  auto blk = m->transformer->h->at<hf::GPT2Block>(0);
  CHECK(blk->attn->c_attn->weight.shape() == Shape{8, 24});
  CHECK(blk->mlp->c_fc->weight.shape() == Shape{8, 32});
  CHECK(blk->mlp->c_proj->weight.shape() == Shape{32, 8});
  CHECK(m->lm_head->weight.same(m->transformer->wte->weight));
}

TEST_CASE("hf: generation with the KV cache equals the uncached argmax continuation") {
  for (const std::string name : {"gpt2", "llama", "qwen2"}) {
    INFO(name);
    auto model = hf::from_pretrained(folder(name));
    model->eval();
    tgt::Fixture f("hf/" + name);
    Tensor ids = f.tensor("ids");
    hf::GenerationOptions cached, uncached;
    uncached.use_cache = false;
    Tensor a = model->generate(ids, 10, cached), b = model->generate(ids, 10, uncached);
    REQUIRE(a.shape() == Shape{2, 15});
    CHECK(a.to_vector<int64_t>() == b.to_vector<int64_t>());
    // The uncached continuation is the argmax of the full forward at every step.
    Tensor logits = model->forward(narrow(b, 1, 0, 14));
    Tensor want = argmax(narrow(logits, 1, 4, 10), -1);
    CHECK(want.to_vector<int64_t>() == narrow(b, 1, 5, 10).contiguous().to_vector<int64_t>());
    // Sampling is seeded: the same seed gives the same tokens, with or without the cache.
    hf::GenerationOptions s1;
    s1.temperature = 0.8;
    s1.top_k = 5;
    s1.seed = 7;
    hf::GenerationOptions s2 = s1;
    s2.use_cache = false;
    CHECK(model->generate(ids, 6, s1).to_vector<int64_t>() ==
          model->generate(ids, 6, s2).to_vector<int64_t>());
  }
}

TEST_CASE("hf: Mistral's sliding window limits the keys each query reads") {
  // The llama fixture as model_type mistral: a window as long as the sequence changes nothing;
  // a window of 2 keys leaves the first two positions alone and changes the later ones.
  auto with_window = [](int64_t w) {
    const std::string dir = scratch("mistral_" + std::to_string(w));
    std::filesystem::copy(folder("llama"), dir);
    std::ifstream in(dir + "/config.json");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    text.replace(text.find("\"llama\""), 7,
                 "\"mistral\", \"sliding_window\": " + std::to_string(w));
    std::ofstream(dir + "/config.json") << text;
    auto m = hf::LlamaForCausalLM::from_pretrained(dir);
    m->eval();
    return m;
  };
  tgt::Fixture f("hf/llama");
  const Tensor ids = f.tensor("ids"), want = f.tensor("logits32");
  auto wide = with_window(5), narrow2 = with_window(2);
  CHECK(wide->config.model_type == "mistral");
  tgt::require_close(wide->forward(ids), want, 1e-5, 1e-5, "mistral, window 5");
  Tensor got = narrow2->forward(ids);
  tgt::require_close(narrow(got, 1, 0, 2), narrow(want, 1, 0, 2), 1e-5, 1e-5, "first two");
  CHECK(max(abs(sub(narrow(got, 1, 2, 3), narrow(want, 1, 2, 3)))).item<double>() > 1e-3);
  hf::GenerationOptions uncached;
  uncached.use_cache = false;
  CHECK(narrow2->generate(ids, 6).to_vector<int64_t>() ==
        narrow2->generate(ids, 6, uncached).to_vector<int64_t>());
}

TEST_CASE("hf: SkipInitGuard leaves parameters unfilled and draws nothing, then restores") {
  manual_seed(3);
  const double first = randn({1}).item<double>();
  manual_seed(3);
  {
    nn::init::SkipInitGuard skip;
    nn::Linear lin(4, 3);
    CHECK(lin.weight.to_vector<float>() == std::vector<float>(12, 0.0f));
    CHECK(nn::init::is_init_skipped());
  }
  CHECK(!nn::init::is_init_skipped());
  CHECK(randn({1}).item<double>() == first);  // the guard consumed no random numbers
  nn::Linear lin(4, 3);
  CHECK(abs(lin.weight).sum().item<double>() > 0);
}

TEST_CASE("hf: generation stops at eos, padding finished rows with it") {
  auto model = hf::from_pretrained(folder("gpt2"));
  model->eval();
  const Tensor ids = tgt::Fixture("hf/gpt2").tensor("ids");  // (2, 5)
  const std::vector<int64_t> free = model->generate(ids, 6).to_vector<int64_t>();
  hf::GenerationOptions o;
  o.eos_token_id = free[5];  // row 0's first new token
  const std::vector<int64_t> got = model->generate(ids, 6, o).to_vector<int64_t>();
  const int64_t n = static_cast<int64_t>(got.size()) / 2;  // all 11 unless row 1 met eos too
  for (int64_t t = 5; t < n; ++t) CHECK(got[t] == free[5]);
  bool row1_hit = false;
  for (int64_t t = 5; t < n; ++t) {
    if (!row1_hit) CHECK(got[n + t] == free[11 + t]);
    row1_hit = row1_hit || free[11 + t] == free[5];
  }
}

TEST_CASE("hf: an untied GPT-2 (tie_word_embeddings false) saves and loads its lm_head") {
  hf::GPT2Config c;
  c.vocab_size = 16;
  c.n_positions = 8;
  c.n_embd = 8;
  c.n_layer = 1;
  c.n_head = 2;
  c.tie_word_embeddings = false;
  manual_seed(5);
  hf::GPT2LMHeadModel a(c);
  a.eval();
  CHECK(!a.lm_head->weight.same(a.transformer->wte->weight));
  const std::string dir = scratch("gpt2_untied");
  a.save_pretrained(dir);
  CHECK(nn::load_safetensors(dir + "/model.safetensors").tensors.contains("lm_head.weight"));
  auto b = hf::GPT2LMHeadModel::from_pretrained(dir);
  b->eval();
  CHECK(!b->config.tie_word_embeddings);
  const Tensor ids = randint(0, 16, {1, 6});
  const std::vector<float> x = a.forward(ids).to_vector<float>(),
                           y = b->forward(ids).to_vector<float>();
  CHECK(x == y);
  std::filesystem::remove_all(dir);
}

TEST_CASE("hf: reading a tensor into memory never drops the pages of one handed out mapped") {
  // Tensors of several pages each: read_into drops whole pages of what it copied.
  const std::string dir = scratch("pages");
  std::filesystem::create_directories(dir);
  manual_seed(9);
  nn::StateDict sd;
  sd.insert("a", randn({1024, 8}));
  sd.insert("b", randn({1024, 8}));
  nn::save_safetensors(dir + "/model.safetensors", sd);
  hf::SafetensorsFolder files(dir);
  Tensor mapped = files.tensor("a", kFloat32);
  REQUIRE(mapped.impl()->storage->owner != nullptr);
  {
    NoGradGuard ng;
    mapped.mul_(2.0);  // the mapping's private copies of the pages now hold the doubled values
  }
  const std::vector<float> doubled = mapped.to_vector<float>();
  Tensor dst = zeros({1024, 8});
  files.read_into("a", dst);  // the folder shares the mapping: it reads what is there now
  CHECK(dst.to_vector<float>() == doubled);
  CHECK(mapped.to_vector<float>() == doubled);  // its pages were not dropped back to the file's
  Tensor other = zeros({1024, 8});  // "b" was never lent: its pages may go, its values stay
  files.read_into("b", other);
  CHECK(other.to_vector<float>() == sd.at("b").to_vector<float>());
  CHECK(files.tensor("b", kFloat32).to_vector<float>() == sd.at("b").to_vector<float>());
  std::filesystem::remove_all(dir);
}

TEST_CASE("hf: a BF16 folder loads as bfloat16 parameters mapped in place, and runs in bfloat16") {
  tgt::Fixture f("hf/llama_bf16");
  auto model = hf::LlamaForCausalLM::from_pretrained(folder("llama_bf16"), kBFloat16);
  model->eval();
  for (const auto& [key, t] : model->state_dict()) {
    INFO(key);
    REQUIRE(t.dtype() == kBFloat16);
  }
  // The decoder layers' weights are the file's bytes (no copy), the same values PyTorch read.
  Tensor w = model->model->layers->at<nn::LlamaDecoderLayer>(1)->self_attn->q_proj->weight;
  CHECK(w.impl()->storage->owner != nullptr);
  const std::string key = "w.model.layers.1.self_attn.q_proj.weight";
  REQUIRE(f.has(key));
  CHECK(w.to(kFloat32).to_vector<float>() == f.tensor(key).to_vector<float>());
  // Every op in bfloat16, float32 inside each, rounded at each op's output: the logits follow
  // the float32 model's to within 4 bf16 ulps of the largest logit (measured: under 2; each of
  // the two layers' outputs is rounded several times on the way).
  const Tensor logits = model->forward(f.tensor("ids"));
  REQUIRE(logits.dtype() == kBFloat16);
  const Tensor want = f.tensor("logits32");
  const double scale = max(abs(want)).item<double>();
  const double err = max(abs(logits.to(kFloat32) - want)).item<double>();
  INFO("max |diff| " << err << " of max |logit| " << scale);
  const double ulp = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(scale))) - 7);
  CHECK(err <= 4 * ulp);
}

TEST_CASE("hf: a bfloat16 model saves back as a BF16 folder that loads bit for bit") {
  const std::string dir = scratch("bf16_save");
  std::filesystem::remove_all(dir);
  auto a = hf::from_pretrained(folder("llama_bf16"), kBFloat16);
  a->save_pretrained(dir);
  const std::string config = tgt::read_bytes(dir + "/config.json");
  CHECK(config.find("\"torch_dtype\": \"bfloat16\"") != std::string::npos);
  auto b = hf::from_pretrained(dir, kBFloat16);
  const nn::StateDict sa = a->state_dict(), sb = b->state_dict();
  REQUIRE(sa.size() == sb.size());
  for (const auto& [key, t] : sa) {
    INFO(key);
    const Tensor u = sb.at(key);
    REQUIRE(u.dtype() == kBFloat16);
    REQUIRE(std::memcmp(t.contiguous().data_ptr(), u.contiguous().data_ptr(), t.numel() * 2) == 0);
  }
  std::filesystem::remove_all(dir);
}
