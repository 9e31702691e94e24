// tests/nn/test_lora_adapter.cpp — PEFT adapter folders: an adapter written the way PEFT's
// save_pretrained writes one (tests/fixtures/lora/peft_adapter, tools/make_lora_fixtures.py)
// loads into a Llama layer and gives PyTorch's output; save_adapter's file names, metadata and
// config fields; a round trip that restores the outputs bit for bit; every refusal (missing,
// unexpected and mis-shaped keys, a mismatched pair, unsupported PEFT options, a wrong r) names
// what is wrong and leaves the model untouched.
#include "fixtures.hpp"
#include "helpers.hpp"
#include "test_lora_helpers.hpp"

#include "autograd/io.hpp"
#include "nn/checkpoint.hpp"
#include "nn/llama.hpp"
#include "nn/lora.hpp"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tg;
namespace fs = std::filesystem;

namespace {

const std::string kPeft = std::string(TG_FIXTURES) + "/lora/peft_adapter";

struct TempDir : tgt::TempDir {
  TempDir() : tgt::TempDir("lora") {}
};

using tgt::read_bytes;

// Copies a folder's two files into dir (or edits dir's own), the config edited by `edit` (a JSON
// patch in place).
void copy_adapter(const std::string& from, const TempDir& dir,
                  const std::function<void(nlohmann::json&)>& edit = {}) {
  if (fs::path(from) != fs::path(dir.path))
    fs::copy_file(from + "/adapter_model.safetensors", dir / "adapter_model.safetensors",
                  fs::copy_options::overwrite_existing);
  auto j = nlohmann::json::parse(read_bytes(from + "/adapter_config.json"));
  if (edit) edit(j);
  write_file_atomic(dir / "adapter_config.json", j.dump(2));
}

}  // namespace

TEST_CASE("load_adapter reads a folder in PEFT's layout and gives PyTorch's output",
          "[lora][adapter][parity]") {
  tgt::Fixture f("lora/llama");
  auto layer = tgt::lora_fixture_layer(f);
  const nn::LoraConfig c = nn::load_adapter(kPeft, *layer);
  REQUIRE(c.r == 2);
  REQUIRE(c.lora_alpha == 4);
  REQUIRE(c.lora_dropout == 0.05);
  REQUIRE(c.target_modules == std::vector<std::string>{"v_proj", "q_proj"});
  REQUIRE(c.task_type == "CAUSAL_LM");
  REQUIRE(c.base_model_name_or_path == "tiny-llama");
  REQUIRE(nn::lora_layers(*layer).size() == 2);
  layer->eval();  // the config's dropout 0.05 acts in training only
  Tensor out = layer->forward(f.tensor("x"));
  tgt::require_close(out, f.tensor("out"), 1e-12, 1e-12, "out with the PEFT adapter");
  // Loading again into the wrapped model replaces the weights in place.
  NoGradGuard ng;
  for (auto& [p, l] : nn::lora_layers(*layer)) l->lora_B->weight.zero_();
  nn::load_adapter(kPeft, *layer);
  REQUIRE(nn::lora_layers(*layer).size() == 2);
  tgt::require_close(layer->forward(f.tensor("x")), f.tensor("out"), 1e-12, 1e-12, "reloaded");
  // The float64 file into a float32 model: converted on load.
  auto f32 = tgt::lora_fixture_layer(f);
  f32->to(kFloat32);
  nn::load_adapter(kPeft, *f32);
  f32->eval();
  REQUIRE(nn::lora_layers(*f32).front().second->lora_A->weight.dtype() == kFloat32);
  tgt::require_close(f32->forward(f.tensor("x").to(kFloat32)), f.tensor("out"), 1e-5, 1e-5,
                     "float32 model");
}

namespace {
// Two float32 Llama layers (E 16, 4 heads) in a ModuleList, and their forward.
std::shared_ptr<nn::ModuleList> two_layers() {
  auto m = std::make_shared<nn::ModuleList>();
  for (int i = 0; i < 2; ++i) m->push_back(std::make_shared<nn::LlamaDecoderLayer>(16, 4));
  return m;
}
Tensor run(const nn::ModuleList& m, const Tensor& x) {
  return m.at<nn::LlamaDecoderLayer>(1)->forward(m.at<nn::LlamaDecoderLayer>(0)->forward(x));
}
nn::LoraConfig two_layer_config() {
  nn::LoraConfig c = tgt::qv_config(4, 8);
  c.lora_dropout = 0.1;
  c.base_model_name_or_path = "HuggingFaceTB/SmolLM-135M";
  return c;
}
}  // namespace

TEST_CASE("save_adapter writes PEFT's tensor names, metadata and config fields",
          "[lora][adapter]") {
  manual_seed(71);
  auto model = two_layers();
  nn::LoraConfig c = two_layer_config();
  nn::apply_lora(*model, c);
  TempDir dir;
  nn::save_adapter(dir / "adapter", *model, c);
  nn::SafetensorsFile file = nn::load_safetensors(dir / "adapter/adapter_model.safetensors");
  std::vector<std::string> want;
  for (const char* layer : {"0", "1"})
    for (const char* proj : {"q_proj", "v_proj"})
      for (const char* ab : {"lora_A", "lora_B"})
        want.push_back(fmt::format("base_model.model.{}.self_attn.{}.{}.weight", layer, proj, ab));
  REQUIRE(file.tensors.keys() == want);
  REQUIRE(file.tensors.at(want[0]).shape() == Shape{4, 16});
  REQUIRE(file.tensors.at(want[7]).shape() == Shape{16, 4});
  REQUIRE(file.metadata.at("format") == "pt");
  const auto j = nlohmann::json::parse(read_bytes(dir / "adapter/adapter_config.json"));
  REQUIRE(j.at("peft_type") == "LORA");
  REQUIRE(j.at("r") == 4);
  REQUIRE(j.at("lora_alpha") == 8.0);
  REQUIRE(j.at("lora_dropout") == 0.1);
  REQUIRE(j.at("target_modules") == nlohmann::json{"q_proj", "v_proj"});
  REQUIRE(j.at("bias") == "none");
  REQUIRE(j.at("task_type") == "CAUSAL_LM");
  REQUIRE(j.at("inference_mode") == true);
  REQUIRE(j.at("fan_in_fan_out") == false);
  REQUIRE(j.at("use_rslora") == false);
  REQUIRE(j.at("use_dora") == false);
  REQUIRE(j.at("base_model_name_or_path") == "HuggingFaceTB/SmolLM-135M");
  // GPT-2's fan_in_fan_out flag travels in the config and changes no name or shape.
  c.fan_in_fan_out = true;
  nn::save_adapter(dir / "gpt2", *model, c);
  REQUIRE(nn::read_adapter_config(dir / "gpt2/adapter_config.json").fan_in_fan_out);
  REQUIRE(nn::load_safetensors(dir / "gpt2/adapter_model.safetensors").tensors.keys() == want);
}

TEST_CASE("save_adapter then load_adapter into a fresh model restores the outputs bit for bit",
          "[lora][adapter]") {
  manual_seed(72);
  auto model = two_layers();
  nn::StateDict base;
  for (const auto& [k, t] : model->state_dict()) base.insert(k, t.clone());
  const nn::LoraConfig c = two_layer_config();
  nn::apply_lora(*model, c);
  NoGradGuard ng;
  for (auto& [p, l] : nn::lora_layers(*model))
    l->lora_B->weight.copy_(randn(l->lora_B->weight.shape()));
  model->eval();
  Tensor x = randn({2, 3, 16});
  const Tensor want = run(*model, x);
  TempDir dir;
  nn::save_adapter(dir.path, *model, c);
  manual_seed(999);  // other base weights and LoRA draws, then the saved ones loaded over them
  auto fresh = two_layers();
  fresh->load_state_dict(base);
  const nn::LoraConfig back = nn::load_adapter(dir.path, *fresh);
  REQUIRE(back.r == 4);
  REQUIRE(back.lora_dropout == 0.1);
  REQUIRE(back.base_model_name_or_path == c.base_model_name_or_path);
  fresh->eval();
  tgt::require_close(run(*fresh, x), want, 0, 0, "round trip");
  REQUIRE(nn::trainable_parameters(*fresh).size() == 8);
}

TEST_CASE("load_adapter refuses what does not fit, naming it, and changes nothing",
          "[lora][adapter]") {
  tgt::Fixture f("lora/llama");
  auto layer = tgt::lora_fixture_layer(f);
  const auto keys = layer->state_dict().keys();
  auto untouched = [&] {
    REQUIRE(layer->state_dict().keys() == keys);
    REQUIRE(nn::lora_layers(*layer).empty());
  };
  TempDir dir;
  SECTION("unsupported PEFT options are refused by field name") {
    for (auto [field, value] : {std::pair<std::string, nlohmann::json>{"use_dora", true},
                                {"rank_pattern", {{"q_proj", 4}}},
                                {"layers_to_transform", {0}},
                                {"modules_to_save", {"lm_head"}},
                                {"bias", "all"},
                                {"peft_type", "IA3"}}) {
      copy_adapter(kPeft, dir, [&](nlohmann::json& j) { j[field] = value; });
      INFO(field);
      REQUIRE_ERROR(nn::load_adapter(dir.path, *layer), field);
      untouched();
    }
    copy_adapter(kPeft, dir, [](nlohmann::json& j) { j.erase("r"); });
    REQUIRE_ERROR(nn::load_adapter(dir.path, *layer), "missing field \"r\"");
    copy_adapter(kPeft, dir, [](nlohmann::json& j) { j["r"] = "two"; });
    REQUIRE_ERROR(nn::load_adapter(dir.path, *layer), "field \"r\" = \"two\" has the wrong type");
    write_file_atomic(dir / "adapter_config.json", "{\"r\": ");
    REQUIRE_ERROR(nn::load_adapter(dir.path, *layer), "invalid JSON");
    untouched();
  }
  SECTION("missing, unexpected and mis-shaped keys, all in one error") {
    nn::SafetensorsFile file = nn::load_safetensors(kPeft + "/adapter_model.safetensors");
    nn::StateDict w = file.tensors;
    w.erase("base_model.model.self_attn.v_proj.lora_B.weight");
    w.insert("base_model.model.self_attn.k_proj.lora_A.weight", zeros({2, 8}, kFloat64));
    w.insert("base_model.model.self_attn.q_proj.lora_A.weight", zeros({3, 8}, kFloat64));
    copy_adapter(kPeft, dir);
    nn::save_safetensors(dir / "adapter_model.safetensors", w, {{"format", "pt"}});
    REQUIRE_ERROR(nn::load_adapter(dir.path, *layer),
                  "3 error(s):\n  missing keys: base_model.model.self_attn.v_proj.lora_B.weight\n"
                  "  unexpected keys (no such LoRA layer in the model): "
                  "base_model.model.self_attn.k_proj.lora_A.weight\n"
                  "  base_model.model.self_attn.q_proj.lora_A.weight is (3,8) but the model "
                  "needs (2,8)");
    untouched();
  }
  SECTION("a config the model has no target for") {
    copy_adapter(kPeft, dir, [](nlohmann::json& j) { j["target_modules"] = {"c_attn"}; });
    REQUIRE_ERROR(nn::load_adapter(dir.path, *layer), "target modules [c_attn] not found");
    untouched();
  }
  SECTION("a weights file and a config not saved together") {
    auto wrapped = tgt::lora_fixture_layer(f);
    nn::apply_lora(*wrapped, tgt::qv_config());
    nn::save_adapter(dir.path, *wrapped, tgt::qv_config());
    const std::string saved_config = read_bytes(dir / "adapter_config.json");
    copy_adapter(dir.path, dir, [](nlohmann::json& j) { j["lora_alpha"] = 6; });
    REQUIRE_ERROR(nn::load_adapter(dir.path, *layer), "the two files do not belong together");
    untouched();
    // A model wrapped with another r is refused before its weights are touched.
    auto r4 = tgt::lora_fixture_layer(f);
    nn::apply_lora(*r4, tgt::qv_config(4, 4));
    write_file_atomic(dir / "adapter_config.json", saved_config);
    REQUIRE_ERROR(nn::load_adapter(dir.path, *r4),
                  "the model's layer \"self_attn.q_proj\" has r=4, lora_alpha=4 but the adapter "
                  "has r=2, lora_alpha=4");
  }
}

TEST_CASE("save_adapter checks the model against the config before writing", "[lora][adapter]") {
  tgt::Fixture f("lora/llama");
  auto layer = tgt::lora_fixture_layer(f);
  TempDir dir;
  REQUIRE_ERROR(nn::save_adapter(dir.path, *layer, tgt::qv_config()),
                "the model has no LoRA layers");
  nn::apply_lora(*layer, tgt::qv_config());
  REQUIRE_ERROR(nn::save_adapter(dir.path, *layer, tgt::qv_config(8)),
                "layer \"self_attn.q_proj\" has r=2, lora_alpha=4, use_rslora=false but the "
                "config says r=8");
  nn::LoraConfig q_only = tgt::qv_config();
  q_only.target_modules = {"q_proj"};
  REQUIRE_ERROR(nn::save_adapter(dir.path, *layer, q_only),
                "layer \"self_attn.v_proj\" is not among the config's target modules [q_proj]");
  REQUIRE_FALSE(fs::exists(dir / "adapter_model.safetensors"));
}
