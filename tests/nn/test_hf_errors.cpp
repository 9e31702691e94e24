// tests/nn/test_hf_errors.cpp — every refusal of nn/hf's model folders, each with its message:
// configuration (model_type, rope_scaling, fields that change the math), tensors (missing,
// unexpected, mis-shaped, truncated file, header pointing past the end, a sharded index that
// disagrees with its shards), and that a refused load leaves the model as it was.
#include "fixtures.hpp"
#include "helpers.hpp"
#include "nn/hf/gpt2.hpp"
#include "nn/hf/llama.hpp"
#include "nn/hf/weights.hpp"

#include <filesystem>
#include <fstream>

using namespace tg;
namespace hf = tg::nn::hf;
namespace fs = std::filesystem;

namespace {

std::string fixture_folder(const std::string& name) {
  return std::string(TG_FIXTURES) + "/hf/" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A fresh copy of a fixture folder in the temp directory.
std::string copy_of(const std::string& name, const std::string& tag) {
  const fs::path p = fs::temp_directory_path() / ("tg_test_hf_err_" + tag);
  fs::remove_all(p);
  fs::copy(fixture_folder(name), p);
  return p.string();
}

// The copy's config.json with `from` replaced by `to` (once).
std::string with_config(const std::string& tag, const std::string& from, const std::string& to,
                        const std::string& name = "llama") {
  const std::string dir = copy_of(name, tag);
  std::string text = slurp(dir + "/config.json");
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  spit(dir + "/config.json", text.replace(at, from.size(), to));
  return dir;
}

// The copy of llama with its tensors edited.
template <typename Edit>
std::string with_tensors(const std::string& tag, Edit edit) {
  const std::string dir = copy_of("llama", tag);
  nn::StateDict sd = nn::load_safetensors(dir + "/model.safetensors").tensors;
  edit(sd);
  nn::save_safetensors(dir + "/model.safetensors", sd);
  return dir;
}

}  // namespace

TEST_CASE("hf errors: configurations that are not implemented are refused by name") {
  REQUIRE_ERROR(hf::from_pretrained(with_config("bert", "\"llama\"", "\"bert\"")),
                "\"model_type\" = \"bert\" is not supported (tapegrad reads gpt2, llama");
  REQUIRE_ERROR(hf::from_pretrained(with_config("rope", "\"rope_scaling\": null",
                                                "\"rope_scaling\": {\"type\": \"linear\", "
                                                "\"factor\": 2.0}")),
                "\"rope_scaling\" type \"linear\" is not supported");
  REQUIRE_ERROR(hf::from_pretrained(with_config("rope3", "\"rope_scaling\": null",
                                                "\"rope_scaling\": {\"rope_type\": \"llama3\"}")),
                "type \"llama3\" is not supported");
  REQUIRE_ERROR(hf::from_pretrained(with_config("act", "\"silu\"", "\"gelu\"")),
                "\"hidden_act\" = \"gelu\" is not supported");
  REQUIRE_ERROR(
      hf::from_pretrained(with_config("hd", "\"mlp_bias\"", "\"head_dim\": 8, \"mlp_bias\"")),
      "\"head_dim\" = 8 is not supported");
  REQUIRE_ERROR(hf::from_pretrained(with_config("gpt2idx", "\"n_inner\"",
                                                "\"scale_attn_by_inverse_layer_idx\": true, "
                                                "\"n_inner\"",
                                                "gpt2")),
                "\"scale_attn_by_inverse_layer_idx\" = true is not supported");
  REQUIRE_ERROR(hf::from_pretrained(with_config("gpt2act", "\"gelu_new\"", "\"relu\"", "gpt2")),
                "\"activation_function\" = \"relu\" is not supported");
  REQUIRE_ERROR(hf::GPT2LMHeadModel::from_pretrained(fixture_folder("llama")),
                "has model_type \"llama\", not gpt2");
  REQUIRE_ERROR(hf::from_pretrained(fs::temp_directory_path().string() + "/tg_no_such_model"),
                "config.json (is ");
}

TEST_CASE("hf errors: missing, unexpected and mis-shaped tensors are named with their file") {
  const std::string miss =
      with_tensors("miss", [](nn::StateDict& sd) { sd.erase("model.norm.weight"); });
  REQUIRE_ERROR(hf::from_pretrained(miss), "missing tensor \"model.norm.weight\" (8)");
  const std::string extra = with_tensors("extra", [](nn::StateDict& sd) {
    sd.insert("model.layers.2.mlp.up_proj.weight", zeros({12, 8}));
  });
  REQUIRE_ERROR(hf::from_pretrained(extra),
                "model.safetensors: unexpected tensor \"model.layers.2.mlp.up_proj.weight\"");
  const std::string shape = with_tensors("shape", [](nn::StateDict& sd) {
    sd.insert("model.layers.1.self_attn.k_proj.weight", zeros({8, 8}));
  });
  REQUIRE_ERROR(hf::from_pretrained(shape),
                "tensor \"model.layers.1.self_attn.k_proj.weight\" is (8,8) but the model's "
                "\"model.layers.1.self_attn.k_proj.weight\" is (4,8)");
  const std::string ints = with_tensors(
      "int", [](nn::StateDict& sd) { sd.insert("model.norm.weight", zeros({8}, kInt64)); });
  REQUIRE_ERROR(hf::from_pretrained(ints), "tensor \"model.norm.weight\" is I64, not a floating");
  const std::string none = copy_of("llama", "none");
  fs::remove(none + "/model.safetensors");
  REQUIRE_ERROR(hf::from_pretrained(none), "holds neither model.safetensors nor");
}

TEST_CASE("hf errors: truncated files and headers pointing past the end are refused") {
  const std::string cut = copy_of("llama", "cut");
  std::string bytes = slurp(cut + "/model.safetensors");
  spit(cut + "/model.safetensors", bytes.substr(0, bytes.size() - 16));
  REQUIRE_ERROR(hf::from_pretrained(cut), "go past the end of the data section");
  const std::string past = copy_of("llama", "past");
  bytes[2] = '\x10';  // header length (about 1 MB) beyond the file, under the 100 MB limit
  spit(past + "/model.safetensors", bytes);
  REQUIRE_ERROR(hf::from_pretrained(past), "goes beyond the end of the file");
  const std::string empty = copy_of("llama", "empty");
  spit(empty + "/model.safetensors", "");
  REQUIRE_ERROR(hf::from_pretrained(empty), "too short for the 8-byte header length");
}

TEST_CASE("hf errors: a sharded index must agree with its shards") {
  const std::string dir = copy_of("llama_f16_sharded", "index");
  std::string idx = slurp(dir + "/model.safetensors.index.json");
  const std::string one = "model-00001-of-00002", two = "model-00002-of-00002";
  // lm_head.weight lives in shard 1; the edited index claims shard 2.
  const size_t at = idx.find("\"lm_head.weight\": \"" + one);
  REQUIRE(at != std::string::npos);
  spit(dir + "/model.safetensors.index.json", std::string(idx).replace(at + 19, one.size(), two));
  REQUIRE_ERROR(hf::from_pretrained(dir), "lists it in model-00002-of-00002.safetensors");
  const std::string extra = copy_of("llama_f16_sharded", "index_extra");
  const std::string wm = "\"weight_map\": {";
  spit(extra + "/model.safetensors.index.json",
       std::string(idx).replace(idx.find(wm), wm.size(),
                                wm + "\"model.extra\": \"" + one + ".safetensors\", "));
  REQUIRE_ERROR(hf::from_pretrained(extra),
                "model.safetensors.index.json but that shard does not hold it");
  const std::string gone = copy_of("llama_f16_sharded", "index_gone");
  fs::remove(gone + "/model-00002-of-00002.safetensors");
  REQUIRE_ERROR(hf::from_pretrained(gone), "cannot open");
}

TEST_CASE("hf errors: a refused load changes no parameter") {
  auto model = hf::LlamaForCausalLM::from_pretrained(fixture_folder("llama"));
  const nn::StateDict before = model->state_dict();
  std::vector<std::vector<float>> values;
  for (const auto& [k, t] : before) values.push_back(t.to_vector<float>());
  // Every tensor doubled but one mis-shaped: the good ones must not land either.
  const std::string dir = with_tensors("partial", [](nn::StateDict& sd) {
    nn::StateDict out;
    for (const auto& [k, t] : sd) out.insert(k, mul(t, 2.0));
    out.insert("model.norm.weight", zeros({9}));
    sd = out;
  });
  hf::SafetensorsFolder files(dir);
  hf::NameMap map;
  REQUIRE_ERROR(hf::load_into(*model, files, map), "1 problem(s), nothing loaded");
  size_t i = 0;
  for (const auto& [k, t] : model->state_dict()) CHECK(t.to_vector<float>() == values[i++]);
}
