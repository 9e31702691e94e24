// examples/text_classification/bpe.cpp — BPE training with incremental pair counts, encoding,
// decoding and the JSON file. See bpe.hpp.
#include "text_classification/bpe.hpp"

#include "autograd/io.hpp"
#include "autograd/tensor.hpp"
#include "common/cli.hpp"
#include "common/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <queue>

namespace tgx::cls {
namespace {

bool is_word_byte(unsigned char c) { return c >= 0x80 || std::isalnum(c); }

// Working state of training: unique words as symbol sequences, pair counts, where each pair is.
struct Trainer {
  std::vector<std::vector<int64_t>> words;
  std::vector<int64_t> freq;
  std::unordered_map<uint64_t, int64_t> count;
  std::unordered_map<uint64_t, std::vector<int32_t>> where;
  std::priority_queue<std::pair<int64_t, uint64_t>> heap;  // (count, pair key), lazily updated
  std::vector<int64_t> stamp;  // last merge that visited each word (dedupes `where`)

  static uint64_t key(int64_t a, int64_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
  }
  // Adds (sign = +1) or removes (-1) word w's pairs; pairs with <unk> are never merged.
  void count_word(size_t w, int sign, std::vector<uint64_t>* touched) {
    const auto& s = words[w];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (s[i] == Bpe::kUnk || s[i + 1] == Bpe::kUnk) continue;
      uint64_t k = key(s[i], s[i + 1]);
      count[k] += sign * freq[w];
      if (sign > 0) where[k].push_back(static_cast<int32_t>(w));
      if (touched) touched->push_back(k);
    }
  }
  void merge_in_word(size_t w, int64_t a, int64_t b, int64_t merged) {
    auto& s = words[w];
    std::vector<int64_t> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
        out.push_back(merged);
        ++i;
      } else {
        out.push_back(s[i]);
      }
    }
    s = std::move(out);
  }
  // Merges pair k everywhere it occurs, updating counts of the affected words only.
  void apply(uint64_t k, int64_t merged, int64_t merge_index) {
    int64_t a = static_cast<int64_t>(k >> 32), b = static_cast<int64_t>(k & 0xFFFFFFFFu);
    std::vector<int32_t> ws = std::move(where[k]);
    where.erase(k);
    std::vector<uint64_t> touched;
    for (int32_t w : ws) {
      if (stamp[w] == merge_index) continue;
      stamp[w] = merge_index;
      count_word(w, -1, nullptr);
      merge_in_word(w, a, b, merged);
      count_word(w, +1, &touched);
    }
    count.erase(k);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (uint64_t t : touched) heap.push({count[t], t});
  }
  // The most frequent live pair, or false when no pair occurs twice.
  bool best(uint64_t* k) {
    while (!heap.empty()) {
      auto [c, key] = heap.top();
      auto it = count.find(key);
      if (it == count.end() || it->second != c) {
        heap.pop();  // stale entry
        continue;
      }
      if (c < 2) return false;
      *k = key;
      return true;
    }
    return false;
  }
};

}  // namespace

std::vector<std::string> Bpe::pretokenize(const std::string& text_in) {
  std::string text = to_lower_ascii(text_in);
  std::vector<std::string> out;
  size_t i = 0, n = text.size();
  while (i < n) {
    while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    bool first = true;
    while (i < n && !std::isspace(static_cast<unsigned char>(text[i]))) {
      size_t j = i;
      if (is_word_byte(static_cast<unsigned char>(text[i]))) {
        while (j < n && is_word_byte(static_cast<unsigned char>(text[j]))) ++j;
      } else {
        j = i + 1;
      }
      out.push_back((first ? std::string(kMarker) : std::string()) + text.substr(i, j - i));
      first = false;
      i = j;
    }
  }
  return out;
}

int64_t Bpe::add_token(const std::string& s) {
  auto [it, fresh] = ids_.emplace(s, static_cast<int64_t>(vocab_.size()));
  if (fresh) vocab_.push_back(s);
  return it->second;
}

void Bpe::add_merge(int64_t a, int64_t b) {
  int64_t merged = add_token(vocab_[a] + vocab_[b]);
  rank_[key(a, b)] = static_cast<int64_t>(merges_.size());
  merges_.push_back({a, b, merged});
}

Bpe Bpe::train(const std::vector<std::string>& texts, const Options& opts) {
  std::unordered_map<std::string, int64_t> word_count;
  for (const std::string& t : texts)
    for (std::string& p : pretokenize(t)) ++word_count[std::move(p)];
  std::map<std::string, int64_t> char_count;
  std::vector<std::pair<std::string, int64_t>> words(word_count.begin(), word_count.end());
  std::sort(words.begin(), words.end());  // a fixed order: the same corpus gives the same merges
  for (const auto& [w, c] : words)
    for (const std::string& ch : utf8_chars(w)) char_count[ch] += c;
  std::vector<std::pair<int64_t, std::string>> chars;
  for (const auto& [ch, c] : char_count)
    if (c >= opts.min_char_count || ch == kMarker) chars.push_back({-c, ch});
  std::sort(chars.begin(), chars.end());
  if (opts.vocab_size < 3)
    throw tg::Error(fmt::format("Bpe::train: vocab_size {} is too small", opts.vocab_size));

  Bpe bpe;
  bpe.add_token("<pad>");
  bpe.add_token("<unk>");
  for (const auto& [c, ch] : chars) {
    if (bpe.vocab_size() >= opts.vocab_size) break;
    bpe.add_token(ch);
  }
  Trainer tr;
  for (const auto& [w, c] : words) {
    std::vector<std::string> cs = utf8_chars(w);
    if (static_cast<int64_t>(cs.size()) > opts.max_word_chars || cs.size() < 2) continue;
    std::vector<int64_t> syms;
    for (const std::string& ch : cs) {
      auto it = bpe.ids_.find(ch);
      syms.push_back(it == bpe.ids_.end() ? kUnk : it->second);
    }
    tr.words.push_back(std::move(syms));
    tr.freq.push_back(c);
  }
  tr.stamp.assign(tr.words.size(), -1);
  for (size_t w = 0; w < tr.words.size(); ++w) tr.count_word(w, +1, nullptr);
  for (const auto& [k, c] : tr.count) tr.heap.push({c, k});
  uint64_t k = 0;
  while (bpe.vocab_size() < opts.vocab_size && tr.best(&k)) {
    int64_t a = static_cast<int64_t>(k >> 32), b = static_cast<int64_t>(k & 0xFFFFFFFFu);
    bpe.add_merge(a, b);
    tr.apply(k, bpe.merges_.back().merged, static_cast<int64_t>(bpe.merges_.size()));
  }
  return bpe;
}

std::vector<int64_t> Bpe::encode_piece(const std::string& piece) const {
  auto hit = cache_.find(piece);
  if (hit != cache_.end()) return hit->second;
  std::vector<int64_t> s;
  for (const std::string& ch : utf8_chars(piece)) {
    auto it = ids_.find(ch);
    s.push_back(it == ids_.end() ? kUnk : it->second);
  }
  while (s.size() > 1) {  // apply the earliest-learned merge present, everywhere, until none
    int64_t best = -1;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      auto it = rank_.find(key(s[i], s[i + 1]));
      if (it != rank_.end() && (best < 0 || it->second < best)) best = it->second;
    }
    if (best < 0) break;
    const Merge& m = merges_[best];
    std::vector<int64_t> out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i + 1 < s.size() && s[i] == m.a && s[i + 1] == m.b) {
        out.push_back(m.merged);
        ++i;
      } else {
        out.push_back(s[i]);
      }
    }
    s = std::move(out);
  }
  if (cache_.size() < 200000) cache_.emplace(piece, s);
  return s;
}

namespace {
// A "word" longer than kMaxPiece bytes (a base64 blob, a 50 MB line of one letter) is cut there
// (at a UTF-8 boundary): merging is quadratic in the piece length, and no real word is that long.
constexpr size_t kMaxPiece = 1024;
std::string capped(const std::string& p) {
  if (p.size() <= kMaxPiece) return p;
  size_t cut = kMaxPiece;
  while (cut > 0 && (static_cast<unsigned char>(p[cut]) & 0xC0) == 0x80) --cut;
  return p.substr(0, cut);
}
}  // namespace

std::vector<int64_t> Bpe::encode_head_tail(const std::string& text, int64_t max_len,
                                           int64_t tail) const {
  std::vector<int64_t> ids = encode(text, max_len + 1);
  if (tail <= 0 || static_cast<int64_t>(ids.size()) <= max_len) {
    if (static_cast<int64_t>(ids.size()) > max_len) ids.resize(static_cast<size_t>(max_len));
    return ids;
  }
  ids.resize(static_cast<size_t>(max_len - tail));
  // The tail: the last pieces of a suffix window (its first piece may be cut, so it is dropped
  // unless the window is the whole text).
  size_t window = std::max<size_t>(4096, 64 * static_cast<size_t>(tail));
  size_t start = text.size() > window ? text.size() - window : 0;
  while (start > 0 && start < text.size() &&
         (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
    ++start;
  std::vector<std::string> pieces = pretokenize(text.substr(start));
  if (start > 0 && !pieces.empty()) pieces.erase(pieces.begin());
  std::vector<int64_t> back;
  for (size_t i = pieces.size(); i-- > 0 && static_cast<int64_t>(back.size()) < tail;) {
    std::vector<int64_t> p = encode_piece(capped(pieces[i]));
    back.insert(back.begin(), p.begin(), p.end());
  }
  if (static_cast<int64_t>(back.size()) > tail) back.erase(back.begin(), back.end() - tail);
  ids.insert(ids.end(), back.begin(), back.end());
  return ids;
}

std::vector<int64_t> Bpe::encode(const std::string& text, int64_t max_len) const {
  auto encode_pieces = [&](const std::vector<std::string>& pieces) {
    std::vector<int64_t> ids;
    for (const std::string& p : pieces) {
      for (int64_t id : encode_piece(capped(p))) {
        if (max_len >= 0 && static_cast<int64_t>(ids.size()) >= max_len) return ids;
        ids.push_back(id);
      }
    }
    return ids;
  };
  if (max_len < 0) return encode_pieces(pretokenize(text));
  // Only the first max_len tokens are wanted: pretokenize a prefix (growing until it yields
  // them), not a 50 MB line. The prefix's last piece may be cut, so it is left out unless the
  // prefix is the whole text; the pieces before it are those of the whole text.
  size_t window = std::max<size_t>(4096, 64 * static_cast<size_t>(max_len));
  for (;;) {
    const bool whole = window >= text.size();
    size_t cut = std::min(window, text.size());
    while (!whole && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    std::vector<std::string> pieces = pretokenize(whole ? text : text.substr(0, cut));
    // A cut last piece is left out unless it already exceeds the cap (then cut or not, it
    // encodes the same).
    if (!whole && !pieces.empty() && pieces.back().size() <= kMaxPiece) pieces.pop_back();
    std::vector<int64_t> ids = encode_pieces(pieces);
    if (whole || static_cast<int64_t>(ids.size()) >= max_len) return ids;
    window *= 2;
  }
}

const std::string& Bpe::token(int64_t id) const {
  if (id < 0 || id >= vocab_size())
    throw tg::Error(fmt::format("Bpe::token: id {} out of range [0, {})", id, vocab_size()));
  return vocab_[id];
}

std::string Bpe::decode(const std::vector<int64_t>& ids) const {
  std::string s;
  for (int64_t id : ids)
    if (id != kPad) s += token(id);
  std::string out;
  const std::string marker = kMarker;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, marker.size(), marker) == 0) {
      if (!out.empty()) out += ' ';
      i += marker.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string Bpe::serialize() const {
  nlohmann::json j;
  j["format"] = "tapegrad-bpe/1";
  j["vocab"] = vocab_;
  nlohmann::json merges = nlohmann::json::array();
  for (const Merge& m : merges_) merges.push_back({m.a, m.b, m.merged});
  j["merges"] = merges;
  return j.dump() + "\n";
}

void Bpe::save(const std::string& path) const { tg::write_file_atomic(path, serialize()); }

std::string Bpe::fingerprint() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the serialised vocabulary and merges
  for (unsigned char c : serialize()) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

Bpe Bpe::load(const std::string& path) {
  std::string text = read_file(path);
  auto bad = [&](const std::string& why) {
    return UserError(
        fmt::format("{}: not a tokenizer file written by this program ({})", path, why));
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw bad("not valid JSON");
  if (j.value("format", "") != "tapegrad-bpe/1") throw bad("format is not tapegrad-bpe/1");
  if (!j.contains("vocab") || !j["vocab"].is_array() || !j.contains("merges") ||
      !j["merges"].is_array())
    throw bad("vocab and merges must be arrays");
  Bpe bpe;
  for (const auto& t : j["vocab"]) {
    if (!t.is_string()) throw bad("a vocab entry is not a string");
    if (bpe.add_token(t.get<std::string>()) != bpe.vocab_size() - 1) throw bad("duplicate token");
  }
  if (bpe.vocab_size() < 2 || bpe.vocab_[0] != "<pad>" || bpe.vocab_[1] != "<unk>")
    throw bad("the vocab must start with <pad>, <unk>");
  for (const auto& m : j["merges"]) {
    if (!m.is_array() || m.size() != 3) throw bad("a merge is not [a, b, merged]");
    if (!m[0].is_number_integer() || !m[1].is_number_integer() || !m[2].is_number_integer())
      throw bad("a merge holds a non-integer");
    int64_t a = m[0].get<int64_t>(), b = m[1].get<int64_t>(), c = m[2].get<int64_t>();
    int64_t v = bpe.vocab_size();
    if (a < 0 || a >= v || b < 0 || b >= v || c < 0 || c >= v ||
        bpe.vocab_[c] != bpe.vocab_[a] + bpe.vocab_[b])
      throw bad(fmt::format("merge [{}, {}, {}] does not match the vocab", a, b, c));
    bpe.rank_[key(a, b)] = static_cast<int64_t>(bpe.merges_.size());
    bpe.merges_.push_back({a, b, c});
  }
  return bpe;
}

}  // namespace tgx::cls
