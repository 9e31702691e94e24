// nn/hf/config.cpp — config.json parsing and writing (see config.hpp).
#include "nn/hf/config.hpp"

#include "autograd/tensor.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace tg::nn::hf {

namespace {

using json = nlohmann::json;

json parse(const std::string& text, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("from_pretrained: {}: not valid JSON: {}", what, e.what()));
  }
  if (!j.is_object())
    throw Error(fmt::format("from_pretrained: {}: config is a JSON {}, not an object", what,
                            j.type_name()));
  return j;
}

struct Reader {
  const json& j;
  const std::string& what;
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw Error(fmt::format("from_pretrained: {}: \"{}\" {}", what, key, msg));
  }
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  int64_t integer(const char* key, int64_t dflt, bool positive = true) const {
    if (!has(key)) return dflt;
    if (!j[key].is_number_integer()) fail(key, fmt::format("is {}, not an integer", j[key].dump()));
    const int64_t v = j[key].get<int64_t>();
    if (positive && v <= 0) fail(key, fmt::format("is {}, must be positive", v));
    return v;
  }
  double number(const char* key, double dflt) const {
    if (!has(key)) return dflt;
    if (!j[key].is_number()) fail(key, fmt::format("is {}, not a number", j[key].dump()));
    return j[key].get<double>();
  }
  bool boolean(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    if (!j[key].is_boolean()) fail(key, fmt::format("is {}, not true or false", j[key].dump()));
    return j[key].get<bool>();
  }
  std::string string(const char* key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    if (!j[key].is_string()) fail(key, fmt::format("is {}, not a string", j[key].dump()));
    return j[key].get<std::string>();
  }
  // A field whose only supported value is its default.
  void refuse_unless(const char* key, bool ok, const std::string& why) const {
    if (!ok) fail(key, fmt::format("= {} is not supported: {}", j[key].dump(), why));
  }
};

}  // namespace

std::string config_model_type(const std::string& text, const std::string& what) {
  json j = parse(text, what);
  Reader r{j, what};
  if (!r.has("model_type")) r.fail("model_type", "is missing (which architecture is this?)");
  const std::string t = r.string("model_type", "");
  if (t != "gpt2" && t != "llama" && t != "mistral" && t != "qwen2")
    r.fail("model_type", fmt::format("= \"{}\" is not supported (tapegrad reads gpt2, llama, "
                                     "mistral and qwen2)",
                                     t));
  return t;
}

GPT2Config parse_gpt2_config(const std::string& text, const std::string& what) {
  json j = parse(text, what);
  Reader r{j, what};
  GPT2Config c;
  c.json = text;
  c.vocab_size = r.integer("vocab_size", c.vocab_size);
  c.n_positions = r.integer("n_positions", c.n_positions);
  c.n_embd = r.integer("n_embd", c.n_embd);
  c.n_layer = r.integer("n_layer", c.n_layer);
  c.n_head = r.integer("n_head", c.n_head);
  c.n_inner = r.integer("n_inner", 0);
  c.activation_function = r.string("activation_function", c.activation_function);
  const auto& act = c.activation_function;
  r.refuse_unless("activation_function",
                  act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu",
                  "tapegrad's GPT-2 has gelu_new / gelu_pytorch_tanh (tanh) and gelu (erf)");
  c.layer_norm_epsilon = r.number("layer_norm_epsilon", c.layer_norm_epsilon);
  c.resid_pdrop = r.number("resid_pdrop", c.resid_pdrop);
  c.embd_pdrop = r.number("embd_pdrop", c.embd_pdrop);
  c.attn_pdrop = r.number("attn_pdrop", c.attn_pdrop);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
  r.refuse_unless("scale_attn_weights", r.boolean("scale_attn_weights", true),
                  "attention scores are always scaled by 1/sqrt(head size)");
  r.refuse_unless("scale_attn_by_inverse_layer_idx",
                  !r.boolean("scale_attn_by_inverse_layer_idx", false), "not implemented");
  r.refuse_unless("add_cross_attention", !r.boolean("add_cross_attention", false),
                  "GPT-2 here is a decoder without cross attention");
  if (c.n_embd % c.n_head != 0)
    r.fail("n_embd", fmt::format("= {} is not a multiple of n_head {}", c.n_embd, c.n_head));
  return c;
}

namespace {
void refuse_rope_scaling(const Reader& r) {
  if (!r.has("rope_scaling")) return;
  const json& s = r.j["rope_scaling"];
  std::string type = "?";
  for (const char* k : {"rope_type", "type"})
    if (s.is_object() && s.contains(k) && s[k].is_string()) type = s[k].get<std::string>();
  if (type == "default") return;  // plain rotary, as without the field
  r.fail("rope_scaling", fmt::format("type \"{}\" is not supported (tapegrad implements plain "
                                     "rotary embeddings only): {}",
                                     type, s.dump()));
}
}  // namespace

LlamaConfig parse_llama_config(const std::string& text, const std::string& what) {
  const std::string type = config_model_type(text, what);
  json j = parse(text, what);
  Reader r{j, what};
  LlamaConfig c;
  c.json = text;
  c.model_type = type;
  c.vocab_size = r.integer("vocab_size", c.vocab_size);
  c.hidden_size = r.integer("hidden_size", c.hidden_size);
  c.intermediate_size = r.integer("intermediate_size", c.intermediate_size);
  c.num_hidden_layers = r.integer("num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = r.integer("num_attention_heads", c.num_attention_heads);
  c.num_key_value_heads = r.integer("num_key_value_heads", c.num_attention_heads);
  c.max_position_embeddings = r.integer("max_position_embeddings", c.max_position_embeddings);
  c.rms_norm_eps = r.number("rms_norm_eps", c.rms_norm_eps);
  c.rope_theta = r.number("rope_theta", c.rope_theta);
  c.attention_dropout = r.number("attention_dropout", 0);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.attention_bias = type == "qwen2" || r.boolean("attention_bias", false);
  c.mlp_bias = r.boolean("mlp_bias", false);
  r.refuse_unless("hidden_act", r.string("hidden_act", "silu") == "silu",
                  "the SwiGLU here gates with silu");
  refuse_rope_scaling(r);
  if (c.hidden_size % c.num_attention_heads != 0)
    r.fail("hidden_size", fmt::format("= {} is not a multiple of num_attention_heads {}",
                                      c.hidden_size, c.num_attention_heads));
  if (r.has("head_dim"))
    r.refuse_unless("head_dim", r.integer("head_dim", 0) == c.hidden_size / c.num_attention_heads,
                    "head_dim must be hidden_size / num_attention_heads");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.fail("num_key_value_heads", fmt::format("= {} does not divide num_attention_heads {}",
                                              c.num_key_value_heads, c.num_attention_heads));
  if (type == "mistral") c.sliding_window = r.integer("sliding_window", 0);
  if (type == "qwen2")
    r.refuse_unless("use_sliding_window", !r.boolean("use_sliding_window", false),
                    "Qwen2's per-layer sliding window is not implemented");
  return c;
}

std::string read_config_text(const std::string& folder) {
  const std::string path = folder + "/config.json";
  std::ifstream in(path);
  if (!in)
    throw Error(
        fmt::format("from_pretrained: cannot read {} (is {} a model folder?)", path, folder));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {
std::string with_dtype(const std::string& text, json fresh, const std::string& dtype) {
  json j = text.empty() ? std::move(fresh) : json::parse(text);
  j["torch_dtype"] = dtype;
  return j.dump(2) + "\n";
}
}  // namespace

std::string config_json_for_save(const GPT2Config& c, const std::string& dtype) {
  json f = {{"architectures", {"GPT2LMHeadModel"}},
            {"model_type", "gpt2"},
            {"vocab_size", c.vocab_size},
            {"n_positions", c.n_positions},
            {"n_embd", c.n_embd},
            {"n_layer", c.n_layer},
            {"n_head", c.n_head},
            {"n_inner", c.n_inner ? json(c.n_inner) : json(nullptr)},
            {"activation_function", c.activation_function},
            {"layer_norm_epsilon", c.layer_norm_epsilon},
            {"resid_pdrop", c.resid_pdrop},
            {"embd_pdrop", c.embd_pdrop},
            {"attn_pdrop", c.attn_pdrop},
            {"tie_word_embeddings", c.tie_word_embeddings}};
  return with_dtype(c.json, std::move(f), dtype);
}

std::string config_json_for_save(const LlamaConfig& c, const std::string& dtype) {
  const char* arch = c.model_type == "mistral" ? "MistralForCausalLM"
                     : c.model_type == "qwen2" ? "Qwen2ForCausalLM"
                                               : "LlamaForCausalLM";
  json f = {{"architectures", {arch}},
            {"model_type", c.model_type},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"intermediate_size", c.intermediate_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"num_key_value_heads", c.num_key_value_heads},
            {"max_position_embeddings", c.max_position_embeddings},
            {"rms_norm_eps", c.rms_norm_eps},
            {"rope_theta", c.rope_theta},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"attention_bias", c.attention_bias},
            {"mlp_bias", c.mlp_bias}};
  if (c.sliding_window) f["sliding_window"] = c.sliding_window;
  return with_dtype(c.json, std::move(f), dtype);
}

}  // namespace tg::nn::hf
