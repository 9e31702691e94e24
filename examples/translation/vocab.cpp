// examples/translation/vocab.cpp — Vocab: building, encoding, decoding and its JSON form.
#include "translation/vocab.hpp"

#include "autograd/tensor.hpp"
#include "common/cli.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace tgx::translation {

namespace {
const char* const kSpecials[] = {"<pad>", "<bos>", "<eos>"};
}

Vocab::Vocab() {
  for (const char* s : kSpecials) add(s);
}

void Vocab::add(const std::string& token) {
  if (index_.count(token)) return;
  index_[token] = size();
  tokens_.push_back(token);
}

Vocab Vocab::build(const std::vector<std::vector<std::string>>& seqs) {
  std::set<std::string> all;
  for (const auto& s : seqs) all.insert(s.begin(), s.end());
  Vocab v;
  for (const std::string& t : all) v.add(t);
  return v;
}

int64_t Vocab::id(const std::string& token) const {
  auto it = index_.find(token);
  return it == index_.end() ? -1 : it->second;
}

const std::string& Vocab::token(int64_t id) const {
  if (id < 0 || id >= size())
    throw tg::Error(fmt::format("Vocab::token: id {} out of range [0, {})", id, size()));
  return tokens_[static_cast<size_t>(id)];
}

std::vector<int64_t> Vocab::encode(const std::vector<std::string>& tokens,
                                   const std::string& what) const {
  std::vector<int64_t> ids;
  std::vector<std::string> unknown;
  for (const std::string& t : tokens) {
    int64_t i = id(t);
    if (i < 0 || i <= kEos) {  // specials are not text
      if (std::find(unknown.begin(), unknown.end(), t) == unknown.end()) unknown.push_back(t);
      continue;
    }
    ids.push_back(i);
  }
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& u : unknown) list += (list.empty() ? "'" : ", '") + u + "'";
    throw UserError(fmt::format("{}: unknown tokens: {} (the vocabulary has {} tokens)", what, list,
                                size() - 3));
  }
  return ids;
}

std::vector<std::string> Vocab::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> out;
  for (int64_t i : ids) {
    if (i == kEos) break;
    if (i == kPad || i == kBos) continue;
    out.push_back(token(i));
  }
  return out;
}

std::string Vocab::to_json() const { return nlohmann::json(tokens_).dump(); }

Vocab Vocab::from_json(const std::string& text, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a vocabulary (invalid JSON: {})", what, e.what()));
  }
  if (!j.is_array() || j.size() < 3)
    throw UserError(fmt::format("{}: not a vocabulary (expected a JSON array of tokens)", what));
  Vocab v;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string())
      throw UserError(fmt::format("{}: vocabulary entry {} is not a string", what, i));
    std::string t = j[i].get<std::string>();
    if (i < 3 ? t != kSpecials[i] : v.id(t) >= 0)
      throw UserError(
          fmt::format("{}: vocabulary entry {} '{}' is misplaced or repeated", what, i, t));
    v.add(t);
  }
  return v;
}

}  // namespace tgx::translation
