// nn/tokenizer/tokenizer.cpp — tg::nn::Tokenizer (see tokenizer.hpp): runs the loaded pipeline.
// encode: repair invalid UTF-8 -> cut out added tokens (longest match) -> per section: normalise,
// pre-tokenize, BPE -> the post-processor's template. decode: ids -> tokens -> the decoder steps
// of the file (ByteLevel; Replace, ByteFallback, Fuse, Strip) -> one string.
// Deliberately not here: reading the files (load.cpp), the merge loop (bpe.cpp).
#include "nn/tokenizer/tokenizer.hpp"

#include "nn/tokenizer/detail.hpp"

#include "autograd/tensor.hpp"  // tg::Error

#include <fmt/format.h>

#include <filesystem>

namespace tg::nn {

using namespace tokenizer_detail;

namespace {

struct Section {
  std::string_view text;
  int32_t added = -1;  // index into State::added, or -1 for text
};

void split_added(const State& s, std::string_view text, std::vector<Section>& out) {
  size_t start = 0, i = 0;
  while (i < text.size()) {
    int32_t hit = -1;
    for (int32_t k : s.by_first[static_cast<unsigned char>(text[i])]) {
      const std::string& c = s.added[static_cast<size_t>(k)].content;
      if (text.compare(i, c.size(), c) == 0) {
        hit = k;
        break;
      }
    }
    if (hit < 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    const size_t n = s.added[static_cast<size_t>(hit)].content.size();
    out.push_back({text.substr(i, n), hit});
    i += n;
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
}

std::string_view trim_js_space(std::string_view t, bool front) {
  while (!t.empty()) {
    size_t at = 0;
    if (!front) {
      at = t.size() - 1;
      while (at > 0 && (static_cast<unsigned char>(t[at]) & 0xC0) == 0x80) --at;
    }
    size_t end = at;
    if (!is_js_space(next_code_point(t, end))) break;
    t = front ? t.substr(end) : t.substr(0, at);
  }
  return t;
}

// Added tokens with lstrip / rstrip swallow the white space beside them (transformers.js).
void strip_around_added(const State& s, std::vector<Section>& sections) {
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].added < 0) continue;
    const AddedToken& t = s.added[static_cast<size_t>(sections[i].added)];
    if (t.lstrip && i > 0) sections[i - 1].text = trim_js_space(sections[i - 1].text, false);
    if (t.rstrip && i + 1 < sections.size())
      sections[i + 1].text = trim_js_space(sections[i + 1].text, true);
  }
}

void replace_all(std::string& t, const std::string& from, const std::string& to) {
  if (from.empty() || t.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(t.size() + t.size() / 4);
  size_t pos = 0;
  for (size_t at; (at = t.find(from, pos)) != std::string::npos; pos = at + from.size()) {
    out.append(t, pos, at - pos);
    out += to;
  }
  out.append(t, pos, std::string::npos);
  t.swap(out);
}

void encode_section(const State& s, std::string_view section, std::vector<int64_t>& ids) {
  std::string text(section);
  for (const NormStep& n : s.normalizer) {
    if (n.prepend) {
      text.insert(0, n.a);
    } else {
      replace_all(text, n.a, n.b);
    }
  }
  if (text.empty()) return;
  std::vector<std::string_view> pieces{text}, next;
  for (const PreStep& p : s.pre_tokenizer) {
    if (p.add_prefix_space && text[0] != ' ') {  // load.cpp allows it on the first step only
      text.insert(0, " ");
      pieces = {text};
    }
    if (!p.regex) continue;
    next.clear();
    for (std::string_view piece : pieces) p.regex->split(piece, next);
    pieces.swap(next);
  }
  for (std::string_view piece : pieces) s.model.encode_piece(piece, ids);
}

// ---- decoder steps ----------------------------------------------------------------------------

void decode_byte_level(const State& s, std::vector<std::string>& toks) {
  std::vector<std::string> out;
  std::string bytes, raw;
  auto flush = [&] {
    if (!bytes.empty()) out.push_back(to_valid_utf8(bytes));
    bytes.clear();
  };
  for (std::string& t : toks) {
    if (s.added_ids.count(t) != 0) {
      flush();
      out.push_back(std::move(t));
    } else if (byte_level_to_raw(t, raw)) {
      bytes += raw;
    } else {
      bytes += t;
    }
  }
  flush();
  toks.swap(out);
}

bool byte_token(const std::string& t, unsigned char& b) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  const int hi = hex(t[3]), lo = hex(t[4]);
  if (hi < 0 || lo < 0) return false;
  b = static_cast<unsigned char>(hi * 16 + lo);
  return true;
}

void decode_byte_fallback(std::vector<std::string>& toks) {
  std::vector<std::string> out;
  std::string bytes;
  for (std::string& t : toks) {
    unsigned char b = 0;
    if (byte_token(t, b)) {
      bytes += static_cast<char>(b);
      continue;
    }
    if (!bytes.empty()) out.push_back(to_valid_utf8(bytes));
    bytes.clear();
    out.push_back(std::move(t));
  }
  if (!bytes.empty()) out.push_back(to_valid_utf8(bytes));
  toks.swap(out);
}

void decode_strip(const DecodeStep& d, std::vector<std::string>& toks) {
  const std::string& c = d.a;
  for (std::string& t : toks) {
    size_t b = 0, e = t.size();
    for (int k = 0; k < d.start && !c.empty() && t.compare(b, c.size(), c) == 0; ++k) b += c.size();
    for (int k = 0;
         k < d.stop && !c.empty() && e >= b + c.size() && t.compare(e - c.size(), c.size(), c) == 0;
         ++k)
      e -= c.size();
    t = t.substr(b, e - b);
  }
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<State> state) : s_(std::move(state)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_file(const std::string& tokenizer_json) {
  return Tokenizer(load_tokenizer_json(tokenizer_json));
}

Tokenizer Tokenizer::from_vocab_merges(const std::string& vocab_json,
                                       const std::string& merges_txt) {
  return Tokenizer(load_vocab_merges(vocab_json, merges_txt));
}

Tokenizer Tokenizer::from_pretrained(const std::string& folder) {
  namespace fs = std::filesystem;
  const fs::path dir(folder);
  if (!fs::is_directory(dir))
    throw Error(fmt::format("Tokenizer::from_pretrained: {} is not a folder", folder));
  std::unique_ptr<State> s;
  if (fs::exists(dir / "tokenizer.json")) {
    s = load_tokenizer_json((dir / "tokenizer.json").string());
  } else if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt")) {
    s = load_vocab_merges((dir / "vocab.json").string(), (dir / "merges.txt").string());
  } else {
    throw Error(
        fmt::format("Tokenizer::from_pretrained: {} has neither tokenizer.json nor "
                    "vocab.json + merges.txt",
                    folder));
  }
  if (fs::exists(dir / "tokenizer_config.json"))
    apply_tokenizer_config(*s, (dir / "tokenizer_config.json").string());
  return Tokenizer(std::move(s));
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_special_tokens) const {
  const State& s = *s_;
  std::string repaired;
  std::string_view t = text;
  if (!is_valid_utf8(t)) {
    repaired = to_valid_utf8(t);
    t = repaired;
  }
  std::vector<Section> sections;
  if (s.split_special) {
    sections.push_back({t, -1});
  } else {
    split_added(s, t, sections);
    strip_around_added(s, sections);
  }
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = s.prefix_ids;
  for (const Section& sec : sections) {
    if (sec.added >= 0) {
      ids.push_back(s.added[static_cast<size_t>(sec.added)].id);
    } else if (!sec.text.empty()) {
      encode_section(s, sec.text, ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), s.suffix_ids.begin(), s.suffix_ids.end());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  const State& s = *s_;
  std::vector<std::string> toks;
  toks.reserve(ids.size());
  for (int64_t id : ids) {
    const std::string& t = s.id_to_token.at(static_cast<size_t>(id_to_token_checked(id)));
    if (skip_special_tokens && s.is_special[static_cast<size_t>(id)]) continue;
    toks.push_back(t);
  }
  for (const DecodeStep& d : s.decoder) {
    switch (d.kind) {
      case DecodeStep::kByteLevel:
        decode_byte_level(s, toks);
        break;
      case DecodeStep::kByteFallback:
        decode_byte_fallback(toks);
        break;
      case DecodeStep::kReplace:
        for (std::string& t : toks) replace_all(t, d.a, d.b);
        break;
      case DecodeStep::kFuse: {
        std::string all;
        for (const std::string& t : toks) all += t;
        toks.assign(1, std::move(all));
        break;
      }
      case DecodeStep::kStrip:
        decode_strip(d, toks);
        break;
    }
  }
  std::string out;  // without a decoder Hugging Face joins the tokens with spaces
  for (size_t i = 0; i < toks.size(); ++i) out += (i > 0 && s.decoder.empty() ? " " : "") + toks[i];
  return out;
}

std::optional<int64_t> Tokenizer::token_to_id(const std::string& token) const {
  auto a = s_->added_ids.find(token);
  if (a != s_->added_ids.end()) return a->second;
  auto v = s_->model.vocab.find(token);
  if (v != s_->model.vocab.end()) return v->second;
  return std::nullopt;
}

std::string Tokenizer::id_to_token(int64_t id) const {
  return s_->id_to_token[static_cast<size_t>(id_to_token_checked(id))];
}

int64_t Tokenizer::id_to_token_checked(int64_t id) const {
  if (id < 0 || id >= vocab_size())
    throw Error(fmt::format("Tokenizer ({}): id {} is outside the vocabulary [0, {})", s_->source,
                            id, vocab_size()));
  return id;
}

int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(s_->id_to_token.size()); }
std::optional<int64_t> Tokenizer::bos_token_id() const { return s_->bos; }
std::optional<int64_t> Tokenizer::eos_token_id() const { return s_->eos; }
std::optional<int64_t> Tokenizer::pad_token_id() const { return s_->pad; }
std::optional<int64_t> Tokenizer::unk_token_id() const { return s_->unk; }
void Tokenizer::set_split_special_tokens(bool split) { s_->split_special = split; }
bool Tokenizer::split_special_tokens() const { return s_->split_special; }

}  // namespace tg::nn
