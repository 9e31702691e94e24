// nn/lora.cpp — LoRALinear, apply_lora / merge_and_unload, and PEFT adapter folders (see
// nn/lora.hpp for the formulas, the names and what is deliberately left out).
#include "nn/lora.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"
#include "nn/checkpoint.hpp"
#include "nn/hf/gpt2.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <unordered_set>

namespace tg::nn {

// ---- LoraConfig ---------------------------------------------------------------------------------

void LoraConfig::validate(const std::string& where) const {
  auto bad = [&](const std::string& what) {
    throw Error(fmt::format("{}: LoraConfig {}", where, what));
  };
  if (r <= 0) bad(fmt::format("r must be positive, got {}", r));
  if (!(lora_alpha > 0)) bad(fmt::format("lora_alpha must be positive, got {}", lora_alpha));
  if (!(lora_dropout >= 0 && lora_dropout < 1))
    bad(fmt::format("lora_dropout must be in [0, 1), got {}", lora_dropout));
  if (bias != "none") bad(fmt::format("bias \"{}\" is not supported (only \"none\")", bias));
  if (target_modules.empty() && target_modules_regex.empty())
    bad("target_modules is empty: name the layers to adapt (e.g. q_proj, v_proj)");
  for (const std::string& t : target_modules)
    if (t.empty()) bad("target_modules holds an empty name");
  if (!target_modules_regex.empty()) {
    try {
      std::regex re(target_modules_regex);
    } catch (const std::regex_error& e) {
      bad(fmt::format("target_modules regex \"{}\" is invalid: {}", target_modules_regex,
                      e.what()));
    }
  }
}

bool LoraConfig::matches(const std::string& path) const {
  if (!target_modules_regex.empty())
    return std::regex_match(path, std::regex(target_modules_regex));
  for (const std::string& t : target_modules) {
    if (path == t) return true;
    if (path.size() > t.size() && path.compare(path.size() - t.size(), t.size(), t) == 0 &&
        path[path.size() - t.size() - 1] == '.')
      return true;
  }
  return false;
}

std::string LoraConfig::targets_str() const {
  if (!target_modules_regex.empty()) return fmt::format("regex \"{}\"", target_modules_regex);
  return fmt::format("[{}]", fmt::join(target_modules, ", "));
}

// ---- LoRALinear ---------------------------------------------------------------------------------

LoRALinear::LoRALinear(std::shared_ptr<Linear> base, int64_t rank, double alpha, double dropout_p,
                       bool rslora)
    : LoRALinear(base, base ? base->in_features : 0, base ? base->out_features : 0, false, rank,
                 alpha, dropout_p, rslora) {}

LoRALinear::LoRALinear(std::shared_ptr<hf::Conv1D> base, int64_t rank, double alpha,
                       double dropout_p, bool rslora)
    : LoRALinear(base, base ? base->in_features : 0, base ? base->out_features : 0, true, rank,
                 alpha, dropout_p, rslora) {}

LoRALinear::LoRALinear(std::shared_ptr<TensorModule> base, int64_t in, int64_t out, bool fifo,
                       int64_t rank, double alpha, double dropout_p, bool rslora)
    : TensorModule("LoRALinear"),
      r(rank),
      in_features(in),
      out_features(out),
      lora_alpha(alpha),
      use_rslora(rslora),
      fan_in_fan_out(fifo) {
  if (!base) throw Error("LoRALinear: base_layer is null");
  const std::string label =
      fmt::format("LoRALinear({}({}, {}), r={})", base->type_name(), in, out, rank);
  if (rank <= 0) throw Error(fmt::format("{}: r must be positive", label));
  if (!(alpha > 0)) throw Error(fmt::format("{}: lora_alpha {} must be positive", label, alpha));
  if (!(dropout_p >= 0 && dropout_p < 1))
    throw Error(fmt::format("{}: lora_dropout {} must be in [0, 1)", label, dropout_p));
  scaling = rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / rank;
  for (Tensor& p : base->parameters()) p.requires_grad_(false);
  base_layer = register_module("base_layer", std::move(base));
  lora_dropout = register_module("lora_dropout", std::make_shared<Dropout>(dropout_p));
  auto make = [&](int64_t i, int64_t o) {
    auto lin = std::make_shared<Linear>(i, o, /*bias=*/false);  // kaiming_uniform(a = √5)
    lin->to(base_weight().dtype()).to(base_weight().device());
    return lin;
  };
  lora_A = register_module("lora_A", make(in_features, rank));
  lora_B = register_module("lora_B", make(rank, out_features));
  {
    NoGradGuard ng;
    zero_(lora_B->weight);
  }
  // The branch rides on the base's output (see the header): parents that call the base through
  // a typed member get it too. Removed in the destructor, so `this` outlives every call.
  hook_id_ = base_layer->register_forward_output_hook(
      [this](Module&, const std::vector<Tensor>& inputs, const Tensor& out) {
        return merged_ ? out : add(out, lora_delta(inputs.at(0)));
      });
}

Tensor& LoRALinear::base_weight() const {
  if (fan_in_fan_out) return static_cast<hf::Conv1D&>(*base_layer).weight;
  return static_cast<Linear&>(*base_layer).weight;
}

Tensor& LoRALinear::base_bias() const {
  if (fan_in_fan_out) return static_cast<hf::Conv1D&>(*base_layer).bias;
  return static_cast<Linear&>(*base_layer).bias;
}

LoRALinear::~LoRALinear() {
  if (hook_id_ >= 0) base_layer->remove_forward_hook(hook_id_);
}

Tensor LoRALinear::forward(const Tensor& x) { return hooked({x}, base_layer->forward(x)); }

Tensor LoRALinear::lora_delta(const Tensor& x) {
  const Tensor h = lora_dropout->p > 0 ? lora_dropout->forward(x) : x;  // p 0: PEFT's Identity
  // The scale goes on B (out, r) rather than on the (..., out) result: one pass fewer over the
  // activations, forward and backward; equal to PEFT's (B·(A·x))·scaling up to rounding.
  return linear(lora_A->forward(h), mul(lora_B->weight, scaling));
}

Tensor LoRALinear::get_delta_weight() const {
  NoGradGuard ng;
  Tensor d = mul(matmul(lora_B->weight.detach(), lora_A->weight.detach()), scaling);  // (out, in)
  return fan_in_fan_out ? transpose(d, 0, 1).contiguous() : d;
}

void LoRALinear::merge() {
  if (merged_) return;
  NoGradGuard ng;
  add_(base_weight(), get_delta_weight());
  merged_ = true;
}

void LoRALinear::unmerge() {
  if (!merged_) return;
  NoGradGuard ng;
  sub_(base_weight(), get_delta_weight());
  merged_ = false;
}

std::string LoRALinear::extra_repr() const {
  return fmt::format(
      "in_features={}, out_features={}, r={}, lora_alpha={}, scaling={}, {}merged={}", in_features,
      out_features, r, lora_alpha, scaling, fan_in_fan_out ? "fan_in_fan_out=True, " : "",
      merged_ ? "True" : "False");
}

// ---- applying to a model ------------------------------------------------------------------------

namespace {

// A targeted layer: a Linear, or a Conv1D (fan_in_fan_out) when `conv1d` is set.
struct Target {
  std::string path;
  std::shared_ptr<Linear> linear;
  std::shared_ptr<hf::Conv1D> conv1d;
  int64_t in_features() const { return conv1d ? conv1d->in_features : linear->in_features; }
  int64_t out_features() const { return conv1d ? conv1d->out_features : linear->out_features; }
};

// The Linear layers the config targets, outside existing LoRA layers; throws when one is not a
// Linear, is already wrapped, or when there is none.
std::vector<Target> find_targets(Module& model, const LoraConfig& config, const char* where) {
  std::vector<Target> out;
  std::vector<std::string> inside;  // paths of LoRALinear layers: their children are not targets
  for (const auto& [path, m] : model.named_modules()) {
    if (path.empty()) continue;
    bool skip = false;
    for (const std::string& p : inside) skip = skip || path.rfind(p + ".", 0) == 0;
    if (skip) continue;
    const bool is_lora = std::dynamic_pointer_cast<LoRALinear>(m) != nullptr;
    if (is_lora) inside.push_back(path);
    if (!config.matches(path)) continue;
    if (is_lora)
      throw Error(fmt::format("{}: \"{}\" already has a LoRA adapter (one adapter per layer)",
                              where, path));
    auto lin = std::dynamic_pointer_cast<Linear>(m);
    auto conv = std::dynamic_pointer_cast<hf::Conv1D>(m);
    if (!lin && !conv)
      throw Error(fmt::format(
          "{}: target {} matches \"{}\", a {}; only Linear layers and Conv1D are supported", where,
          config.targets_str(), path, m->type_name()));
    out.push_back({path, lin, conv});
  }
  if (out.empty())
    throw Error(
        fmt::format("{}: target modules {} not found in the model (no module path equals "
                    "or ends with one of them)",
                    where, config.targets_str()));
  return out;
}

std::vector<std::string> wrap_targets(Module& model, const LoraConfig& config,
                                      const std::vector<Target>& targets) {
  std::unordered_set<const TensorImpl*> keep;  // existing adapters stay trainable
  for (const auto& [p, l] : lora_layers(model)) {
    keep.insert(l->lora_A->weight.impl());
    keep.insert(l->lora_B->weight.impl());
  }
  for (Tensor& p : model.parameters())
    if (!keep.count(p.impl())) p.requires_grad_(false);
  std::vector<std::string> paths;
  for (const Target& t : targets) {
    auto wrapped = t.conv1d ? std::make_shared<LoRALinear>(t.conv1d, config.r, config.lora_alpha,
                                                           config.lora_dropout, config.use_rslora)
                            : std::make_shared<LoRALinear>(t.linear, config.r, config.lora_alpha,
                                                           config.lora_dropout, config.use_rslora);
    model.set_submodule(t.path, wrapped);
    paths.push_back(t.path);
  }
  return paths;
}

}  // namespace

std::vector<std::string> apply_lora(Module& model, const LoraConfig& config) {
  config.validate("apply_lora");
  return wrap_targets(model, config, find_targets(model, config, "apply_lora"));
}

std::vector<std::pair<std::string, std::shared_ptr<LoRALinear>>> lora_layers(Module& model) {
  std::vector<std::pair<std::string, std::shared_ptr<LoRALinear>>> out;
  for (const auto& [path, m] : model.named_modules())
    if (auto l = std::dynamic_pointer_cast<LoRALinear>(m)) out.emplace_back(path, l);
  return out;
}

std::vector<Tensor> trainable_parameters(const Module& model) {
  std::vector<Tensor> out;
  for (const Tensor& p : model.parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

std::vector<std::string> merge_and_unload(Module& model) {
  std::vector<std::string> paths;
  for (const auto& [path, l] : lora_layers(model)) {
    if (path.empty())
      throw Error("merge_and_unload: the model itself is a LoRALinear; use its base_layer");
    l->merge();
    model.set_submodule(path, l->base_layer);
    paths.push_back(path);
  }
  return paths;
}

// ---- adapter folders ----------------------------------------------------------------------------

namespace {

using json = nlohmann::json;
constexpr const char* kKeyPrefix = "base_model.model.";
constexpr const char* kConfigMeta = "tapegrad.adapter_config";

std::string weights_path(const std::string& folder) {
  return (std::filesystem::path(folder) / "adapter_model.safetensors").string();
}
std::string config_path(const std::string& folder) {
  return (std::filesystem::path(folder) / "adapter_config.json").string();
}

json to_json(const LoraConfig& c) {
  json j;  // an ordered map: keys sorted, as PEFT's json.dumps(sort_keys=True)
  j["alpha_pattern"] = json::object();
  j["auto_mapping"] = nullptr;
  j["base_model_name_or_path"] = c.base_model_name_or_path;
  j["bias"] = c.bias;
  j["fan_in_fan_out"] = c.fan_in_fan_out;
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  j["layers_pattern"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["lora_alpha"] = c.lora_alpha;
  j["lora_dropout"] = c.lora_dropout;
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = c.r;
  j["rank_pattern"] = json::object();
  j["revision"] = nullptr;
  if (c.target_modules_regex.empty())
    j["target_modules"] = c.target_modules;
  else
    j["target_modules"] = c.target_modules_regex;
  j["task_type"] = c.task_type;
  j["use_dora"] = false;
  j["use_rslora"] = c.use_rslora;
  return j;
}

// What decides the weights' names, shapes and scale: stored in the weights file's metadata, so
// load_adapter refuses a weights file and a config that were not saved together.
std::string weights_signature(const LoraConfig& c) {
  json j = to_json(c);
  return json{{"lora_alpha", j["lora_alpha"]},
              {"r", j["r"]},
              {"target_modules", j["target_modules"]},
              {"use_rslora", j["use_rslora"]}}
      .dump();
}

// Refuses the PEFT options tapegrad does not implement, naming the field.
void refuse_unsupported(const json& j, const std::string& where) {
  auto set = [&](const char* k) {
    return j.contains(k) && !j[k].is_null() && !(j[k].is_boolean() && !j[k].get<bool>()) &&
           !((j[k].is_object() || j[k].is_array() || j[k].is_string()) && j[k].empty());
  };
  for (const char* k :
       {"use_dora", "lora_bias", "rank_pattern", "alpha_pattern", "layers_to_transform",
        "modules_to_save", "exclude_modules", "target_parameters", "layer_replication"})
    if (set(k))
      throw Error(fmt::format("{}: \"{}\" = {} is not supported by tapegrad's LoRA", where, k,
                              j[k].dump()));
}

template <typename T>
T field(const json& j, const char* key, const std::string& where, std::optional<T> fallback = {}) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    throw Error(fmt::format("{}: missing field \"{}\"", where, key));
  }
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    throw Error(fmt::format("{}: field \"{}\" = {} has the wrong type", where, key, j[key].dump()));
  }
}

LoraConfig from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(fmt::format("{}: the config must be a JSON object", where));
  const auto type = field<std::string>(j, "peft_type", where);
  if (type != "LORA") throw Error(fmt::format("{}: peft_type \"{}\" is not LORA", where, type));
  refuse_unsupported(j, where);
  LoraConfig c;
  c.r = field<int64_t>(j, "r", where);
  c.lora_alpha = field<double>(j, "lora_alpha", where);
  c.lora_dropout = field<double>(j, "lora_dropout", where, 0.0);
  c.bias = field<std::string>(j, "bias", where, std::string("none"));
  c.use_rslora = field<bool>(j, "use_rslora", where, false);
  c.fan_in_fan_out = field<bool>(j, "fan_in_fan_out", where, false);
  c.task_type = field<std::string>(j, "task_type", where, std::string());
  c.base_model_name_or_path =
      field<std::string>(j, "base_model_name_or_path", where, std::string());
  if (j.contains("target_modules") && j["target_modules"].is_string())
    c.target_modules_regex = j["target_modules"].get<std::string>();
  else
    c.target_modules = field<std::vector<std::string>>(j, "target_modules", where);
  c.validate(where);
  return c;
}

std::string read_text(const std::string& path, const char* where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open {}", where, path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Expected {
  std::string key;
  Shape shape;
  Tensor dest;  // undefined until the layers exist
};

}  // namespace

LoraConfig read_adapter_config(const std::string& path) {
  const std::string where = fmt::format("read_adapter_config({})", path);
  json j;
  try {
    j = json::parse(read_text(path, "read_adapter_config"));
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{}: invalid JSON: {}", where, e.what()));
  }
  return from_json(j, where);
}

void save_adapter(const std::string& folder, Module& model, const LoraConfig& config) {
  const std::string where = fmt::format("save_adapter({})", folder);
  config.validate(where);
  StateDict weights;
  for (const auto& [path, l] : lora_layers(model)) {
    if (l->r != config.r || l->lora_alpha != config.lora_alpha ||
        l->use_rslora != config.use_rslora)
      throw Error(
          fmt::format("{}: layer \"{}\" has r={}, lora_alpha={}, use_rslora={} but the "
                      "config says r={}, lora_alpha={}, use_rslora={}",
                      where, path, l->r, l->lora_alpha, l->use_rslora, config.r, config.lora_alpha,
                      config.use_rslora));
    if (!config.matches(path))
      throw Error(fmt::format("{}: layer \"{}\" is not among the config's target modules {}", where,
                              path, config.targets_str()));
    weights.insert(kKeyPrefix + path + ".lora_A.weight", l->lora_A->weight.detach());
    weights.insert(kKeyPrefix + path + ".lora_B.weight", l->lora_B->weight.detach());
  }
  if (weights.empty()) throw Error(fmt::format("{}: the model has no LoRA layers", where));
  std::filesystem::create_directories(folder);
  save_safetensors(weights_path(folder), weights,
                   {{"format", "pt"}, {kConfigMeta, weights_signature(config)}});
  write_file_atomic(config_path(folder), to_json(config).dump(2) + "\n");
}

namespace {

// The keys and shapes the adapter must hold: from the model's LoRA layers when it has some
// (they must agree with the config), else from the Linear layers the config targets.
std::vector<Expected> expected_keys(Module& model, const LoraConfig& c, const std::string& where) {
  std::vector<Expected> out;
  auto layers = lora_layers(model);
  for (const auto& [path, l] : layers) {
    if (l->r != c.r || l->lora_alpha != c.lora_alpha || l->use_rslora != c.use_rslora)
      throw Error(
          fmt::format("{}: the model's layer \"{}\" has r={}, lora_alpha={} but the "
                      "adapter has r={}, lora_alpha={}",
                      where, path, l->r, l->lora_alpha, c.r, c.lora_alpha));
    out.push_back(
        {kKeyPrefix + path + ".lora_A.weight", l->lora_A->weight.shape(), l->lora_A->weight});
    out.push_back(
        {kKeyPrefix + path + ".lora_B.weight", l->lora_B->weight.shape(), l->lora_B->weight});
  }
  if (!layers.empty()) return out;
  for (const Target& t : find_targets(model, c, where.c_str())) {
    out.push_back({kKeyPrefix + t.path + ".lora_A.weight", {c.r, t.in_features()}, {}});
    out.push_back({kKeyPrefix + t.path + ".lora_B.weight", {t.out_features(), c.r}, {}});
  }
  return out;
}

void check_weights(const SafetensorsFile& file, const std::vector<Expected>& want,
                   const LoraConfig& c, const std::string& where) {
  std::vector<std::string> problems, missing, unexpected;
  auto sig = file.metadata.find(kConfigMeta);
  if (sig != file.metadata.end() && sig->second != weights_signature(c))
    problems.push_back(
        fmt::format("the weights were saved with {} but adapter_config.json says "
                    "{}: the two files do not belong together",
                    sig->second, weights_signature(c)));
  std::unordered_set<std::string> wanted;
  for (const Expected& e : want) {
    wanted.insert(e.key);
    if (!file.tensors.contains(e.key)) {
      missing.push_back(e.key);
      continue;
    }
    const Tensor& t = file.tensors.at(e.key);
    if (t.shape() != e.shape)
      problems.push_back(fmt::format("{} is {} but the model needs {}", e.key, shape_str(t.shape()),
                                     shape_str(e.shape)));
    else if (!is_floating(t.dtype()))
      problems.push_back(fmt::format("{} is {}, not floating", e.key, dtype_name(t.dtype())));
  }
  for (const auto& [key, t] : file.tensors)
    if (!wanted.count(key)) unexpected.push_back(key);
  if (!unexpected.empty())
    problems.insert(problems.begin(), fmt::format("unexpected keys (no such LoRA layer in the "
                                                  "model): {}",
                                                  fmt::join(unexpected, ", ")));
  if (!missing.empty())
    problems.insert(problems.begin(), fmt::format("missing keys: {}", fmt::join(missing, ", ")));
  if (!problems.empty())
    throw Error(
        fmt::format("{}: {} error(s):\n  {}", where, problems.size(), fmt::join(problems, "\n  ")));
}

}  // namespace

LoraConfig load_adapter(const std::string& folder, Module& model) {
  const std::string where = fmt::format("load_adapter({})", folder);
  const LoraConfig config = read_adapter_config(config_path(folder));
  const SafetensorsFile file = load_safetensors(weights_path(folder));
  std::vector<Expected> want = expected_keys(model, config, where);
  check_weights(file, want, config, where);
  if (!want.front().dest.defined()) {  // no LoRA layers yet: wrap, then find them again
    apply_lora(model, config);
    want = expected_keys(model, config, where);
  }
  NoGradGuard ng;
  for (const Expected& e : want) copy_(e.dest, file.tensors.at(e.key));
  return config;
}

}  // namespace tg::nn
