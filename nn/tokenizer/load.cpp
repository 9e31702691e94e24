// nn/tokenizer/load.cpp — reads the files into the pipeline State: a Hugging Face tokenizer.json
// (model, added_tokens, normalizer, pre_tokenizer, post_processor, decoder), GPT-2's vocab.json +
// merges.txt, and the token names of a tokenizer_config.json. Every component this library does
// not run is refused by its type name. Deliberately not here: running the pipeline
// (tokenizer.cpp).
#include "nn/tokenizer/detail.hpp"

#include "autograd/tensor.hpp"  // tg::Error

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace tg::nn::tokenizer_detail {

using nlohmann::json;

static std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("Tokenizer: cannot open {} ({})", path, what));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

static json parse_json(const std::string& path, const char* what) {
  try {
    return json::parse(read_text_file(path, what));
  } catch (const json::exception& e) {
    throw Error(fmt::format("Tokenizer: {} is not valid JSON ({}): {}", path, what, e.what()));
  }
}

namespace {

[[noreturn]] void unsupported(const State& s, const std::string& part, const json& j) {
  throw Error(
      fmt::format("Tokenizer: {}: {} type {} is not supported (supported: see "
                  "nn/tokenizer/tokenizer.hpp)",
                  s.source, part, j.value("type", std::string("(none)"))));
}

std::string pattern_string(const State& s, const json& p, const char* part) {
  if (p.contains("String")) return p["String"].get<std::string>();
  throw Error(
      fmt::format("Tokenizer: {}: {} needs a String pattern, got {}", s.source, part, p.dump()));
}

void add_normalizer(State& s, const json& j) {
  const std::string type = j.value("type", "");
  if (type == "Sequence") {
    for (const json& n : j.at("normalizers")) add_normalizer(s, n);
  } else if (type == "Prepend") {
    s.normalizer.push_back({true, j.at("prepend").get<std::string>(), ""});
  } else if (type == "Replace") {
    s.normalizer.push_back({false, pattern_string(s, j.at("pattern"), "Replace normalizer"),
                            j.at("content").get<std::string>()});
  } else {
    unsupported(s, "normalizer", j);
  }
}

void add_pre_tokenizer(State& s, const json& j) {
  const std::string type = j.value("type", "");
  if (!s.pre_tokenizer.empty() && s.pre_tokenizer.back().byte_level)
    throw Error(fmt::format("Tokenizer: {}: pre_tokenizer {} after ByteLevel is not supported",
                            s.source, type));
  if (type == "Sequence") {
    for (const json& p : j.at("pretokenizers")) add_pre_tokenizer(s, p);
  } else if (type == "ByteLevel") {
    PreStep step;
    step.byte_level = true;
    step.add_prefix_space = j.value("add_prefix_space", false);
    if (step.add_prefix_space && !s.pre_tokenizer.empty())
      throw Error(
          fmt::format("Tokenizer: {}: ByteLevel add_prefix_space is supported as the "
                      "first pre_tokenizer only",
                      s.source));
    if (j.value("use_regex", true)) step.regex = std::make_unique<Regex>(kGpt2Pattern, s.source);
    s.pre_tokenizer.push_back(std::move(step));
  } else if (type == "Split") {
    const json& p = j.at("pattern");
    if (!p.contains("Regex") || j.value("behavior", "") != "Isolated" || j.value("invert", false))
      throw Error(
          fmt::format("Tokenizer: {}: Split pre_tokenizer supported with a Regex pattern, "
                      "behavior Isolated and invert false; got {}",
                      s.source, j.dump()));
    PreStep step;
    step.regex = std::make_unique<Regex>(p["Regex"].get<std::string>(), s.source);
    s.pre_tokenizer.push_back(std::move(step));
  } else {
    unsupported(s, "pre_tokenizer", j);
  }
}

void add_decoder(State& s, const json& j) {
  const std::string type = j.value("type", "");
  DecodeStep d;
  if (type == "Sequence") {
    for (const json& x : j.at("decoders")) add_decoder(s, x);
    return;
  } else if (type == "ByteLevel") {
    d.kind = DecodeStep::kByteLevel;
  } else if (type == "Replace") {
    d.kind = DecodeStep::kReplace;
    d.a = pattern_string(s, j.at("pattern"), "Replace decoder");
    d.b = j.at("content").get<std::string>();
  } else if (type == "ByteFallback") {
    d.kind = DecodeStep::kByteFallback;
  } else if (type == "Fuse") {
    d.kind = DecodeStep::kFuse;
  } else if (type == "Strip") {
    d.kind = DecodeStep::kStrip;
    d.a = j.at("content").get<std::string>();
    d.start = j.value("start", 0);
    d.stop = j.value("stop", 0);
  } else {
    unsupported(s, "decoder", j);
  }
  s.decoder.push_back(d);
}

void read_post_processor(State& s, const json& j) {
  const std::string type = j.value("type", "");
  if (type == "ByteLevel") return;  // offsets only: adds no token
  if (type != "TemplateProcessing") unsupported(s, "post_processor", j);
  auto* ids = &s.prefix_ids;
  for (const json& item : j.at("single")) {
    if (item.contains("Sequence")) {
      ids = &s.suffix_ids;
    } else {
      const std::string name = item.at("SpecialToken").at("id");
      const json& st = j.at("special_tokens").at(name);
      for (const json& id : st.at("ids")) ids->push_back(id.get<int64_t>());
    }
  }
}

void read_model(State& s, const json& m) {
  if (m.value("type", "") != "BPE")
    throw Error(fmt::format("Tokenizer: {}: unknown model type {} (supported: BPE)", s.source,
                            m.value("type", std::string("(none)"))));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
    if (m.contains(key) && !m[key].is_null() && m[key] != "")
      throw Error(fmt::format("Tokenizer: {}: BPE option {} = {} is not supported", s.source, key,
                              m[key].dump()));
  for (const auto& [tok, id] : m.at("vocab").items()) s.model.vocab.emplace(tok, id.get<int32_t>());
  s.model.byte_fallback = m.value("byte_fallback", false);
  s.model.ignore_merges = m.value("ignore_merges", false);
  s.model.fuse_unk = m.value("fuse_unk", false);
  if (m.contains("unk_token") && m["unk_token"].is_string()) {
    auto it = s.model.vocab.find(m["unk_token"].get<std::string>());
    if (it != s.model.vocab.end()) s.model.unk_id = it->second;
  }
  int32_t rank = 0;
  for (const json& mg : m.at("merges")) {
    std::string a, b;
    if (mg.is_array()) {
      a = mg.at(0).get<std::string>();
      b = mg.at(1).get<std::string>();
    } else {  // "a b" (older files): transformers.js keeps the first two space-separated parts
      const std::string line = mg.get<std::string>();
      const size_t sp = line.find(' ');
      a = line.substr(0, sp);
      b = sp == std::string::npos ? "" : line.substr(sp + 1, line.find(' ', sp + 1) - sp - 1);
    }
    s.model.add_merge(a, b, rank++, s.source);
  }
}

}  // namespace

// Ids, special flags and the first-byte index of the added tokens; the id -> token table.
static void finish_state(State& s) {
  s.model.byte_level = std::any_of(s.pre_tokenizer.begin(), s.pre_tokenizer.end(),
                                   [](const PreStep& p) { return p.byte_level; });
  s.model.finish(s.source);
  int64_t size = 0;
  for (const auto& [tok, id] : s.model.vocab) size = std::max<int64_t>(size, id + 1);
  for (const AddedToken& t : s.added) size = std::max<int64_t>(size, t.id + 1);
  s.id_to_token.assign(static_cast<size_t>(size), std::string());
  for (const auto& [tok, id] : s.model.vocab) s.id_to_token[static_cast<size_t>(id)] = tok;
  s.is_special.assign(static_cast<size_t>(size), 0);
  for (size_t i = 0; i < s.added.size(); ++i) {
    const AddedToken& t = s.added[i];
    s.id_to_token[static_cast<size_t>(t.id)] = t.content;
    s.added_ids[t.content] = t.id;
    if (t.special) s.is_special[static_cast<size_t>(t.id)] = 1;
    if (!t.content.empty())
      s.by_first[static_cast<unsigned char>(t.content[0])].push_back(static_cast<int32_t>(i));
  }
  for (auto& v : s.by_first)
    std::stable_sort(v.begin(), v.end(), [&](int32_t a, int32_t b) {
      return s.added[static_cast<size_t>(a)].content.size() >
             s.added[static_cast<size_t>(b)].content.size();
    });
  if (s.model.byte_level) {
    s.raw_tokens.assign(s.id_to_token.size(), std::string());
    for (size_t id = 0; id < s.id_to_token.size(); ++id)
      if (!byte_level_to_raw(s.id_to_token[id], s.raw_tokens[id]))
        s.raw_tokens[id] = s.id_to_token[id];
  }
}

// bos/eos/unk from names the files commonly use, when no tokenizer_config.json says otherwise.
static void guess_token_ids(State& s) {
  auto first = [&](std::initializer_list<const char*> names) -> std::optional<int64_t> {
    for (const char* n : names) {
      auto it = s.added_ids.find(n);
      if (it != s.added_ids.end()) return it->second;
    }
    return std::nullopt;
  };
  s.bos = !s.prefix_ids.empty() ? std::optional<int64_t>(s.prefix_ids.front())
                                : first({"<s>", "<|begin_of_text|>", "<|endoftext|>", "<bos>"});
  s.eos = first({"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>"});
  if (s.model.unk_id >= 0) s.unk = s.model.unk_id;
}

std::unique_ptr<State> load_tokenizer_json(const std::string& path) {
  const json j = parse_json(path, "a Hugging Face tokenizer.json");
  auto s = std::make_unique<State>();
  s->source = path;
  try {
    read_model(*s, j.at("model"));
    for (const json& t : j.value("added_tokens", json::array()))
      s->added.push_back({t.at("content").get<std::string>(), t.at("id").get<int32_t>(),
                          t.value("special", false), t.value("lstrip", false),
                          t.value("rstrip", false)});
    if (j.contains("normalizer") && !j["normalizer"].is_null()) add_normalizer(*s, j["normalizer"]);
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null())
      add_pre_tokenizer(*s, j["pre_tokenizer"]);
    if (j.contains("post_processor") && !j["post_processor"].is_null())
      read_post_processor(*s, j["post_processor"]);
    if (j.contains("decoder") && !j["decoder"].is_null()) add_decoder(*s, j["decoder"]);
  } catch (const json::exception& e) {
    throw Error(fmt::format("Tokenizer: {}: malformed tokenizer.json: {}", path, e.what()));
  }
  finish_state(*s);
  guess_token_ids(*s);
  return s;
}

std::unique_ptr<State> load_vocab_merges(const std::string& vocab_path,
                                         const std::string& merges_path) {
  const json vocab = parse_json(vocab_path, "GPT-2's vocab.json");
  auto s = std::make_unique<State>();
  s->source = vocab_path + " + " + merges_path;
  if (!vocab.is_object())
    throw Error(fmt::format("Tokenizer: {} must hold a JSON object of token -> id", vocab_path));
  for (const auto& [tok, id] : vocab.items()) {
    if (!id.is_number_integer())
      throw Error(
          fmt::format("Tokenizer: {}: the id of \"{}\" is not an integer", vocab_path, tok));
    s->model.vocab.emplace(tok, id.get<int32_t>());
  }
  std::istringstream lines(read_text_file(merges_path, "GPT-2's merges.txt"));
  std::string line;
  int32_t rank = 0;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    std::istringstream parts(line);
    std::string a, b;
    if (!(parts >> a >> b))
      throw Error(
          fmt::format("Tokenizer: {}: line \"{}\" is not a merge \"a b\"", merges_path, line));
    s->model.add_merge(a, b, rank++, merges_path);
  }
  PreStep step;
  step.byte_level = true;
  step.regex = std::make_unique<Regex>(kGpt2Pattern, s->source);
  s->pre_tokenizer.push_back(std::move(step));
  DecodeStep byte_level;
  byte_level.kind = DecodeStep::kByteLevel;
  s->decoder.push_back(byte_level);
  auto eot = s->model.vocab.find("<|endoftext|>");
  if (eot != s->model.vocab.end()) {
    s->added.push_back({eot->first, eot->second, true, false, false});
    s->bos = s->eos = s->unk = eot->second;
  }
  finish_state(*s);
  return s;
}

// tokenizer_config.json's bos/eos/pad/unk_token (a string or {"content": …}) override the guess.
void apply_tokenizer_config(State& s, const std::string& path) {
  const json c = parse_json(path, "tokenizer_config.json");
  auto id_of = [&](const char* key, std::optional<int64_t>& slot) {
    if (!c.contains(key) || c[key].is_null()) return;
    const std::string name =
        c[key].is_object() ? c[key].value("content", std::string()) : c[key].get<std::string>();
    auto it = s.added_ids.find(name);
    if (it != s.added_ids.end()) {
      slot = it->second;
      return;
    }
    auto v = s.model.vocab.find(name);
    if (v == s.model.vocab.end())
      throw Error(
          fmt::format("Tokenizer: {}: {} \"{}\" is not a token of {}", path, key, name, s.source));
    slot = v->second;
  };
  id_of("bos_token", s.bos);
  id_of("eos_token", s.eos);
  id_of("pad_token", s.pad);
  id_of("unk_token", s.unk);
}

}  // namespace tg::nn::tokenizer_detail
