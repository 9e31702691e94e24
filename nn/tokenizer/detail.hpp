// nn/tokenizer/detail.hpp — the pieces tg::nn::Tokenizer is built from (not installed): UTF-8
// helpers and GPT-2's byte-to-unicode map (unicode.cpp), the PCRE2 splitter (pretokenize.cpp),
// the BPE model (bpe.cpp), the loaded pipeline State (load.cpp reads it from the files,
// tokenizer.cpp runs it). Deliberately not here: anything a user of the tokenizer calls.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tg::nn::tokenizer_detail {

// ---- unicode.cpp ------------------------------------------------------------------------------
bool is_valid_utf8(std::string_view s);
// Invalid sequences become U+FFFD, one per maximal subpart (the WHATWG / TextDecoder rule).
std::string to_valid_utf8(std::string_view s);
void append_utf8(std::string& out, uint32_t cp);
// The code point starting at s[i] of valid UTF-8; advances i past it.
uint32_t next_code_point(std::string_view s, size_t& i);
// GPT-2's bytes_to_unicode: byte -> the UTF-8 of its printable stand-in, and back (-1: none).
const std::array<std::string, 256>& byte_to_unicode();
int unicode_to_byte(uint32_t cp);
// A byte-level token ("Ġthe") to its raw bytes (" the"); false when a char has no byte.
bool byte_level_to_raw(std::string_view token, std::string& raw);
// JavaScript's \s (what String.prototype.trim removes).
bool is_js_space(uint32_t cp);

// ---- pretokenize.cpp --------------------------------------------------------------------------
// A regex split with Hugging Face's "Isolated" behaviour: every match and every gap between
// matches becomes a piece, in order. PCRE2 with UTF + UCP, JIT-compiled; the pattern is first
// rewritten the way the JavaScript references read it (see tokenizer.hpp).
class Regex {
 public:
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_, where_;
  void* code_ = nullptr;  // pcre2_code_8*
};
std::string js_compatible_pattern(const std::string& pattern);
extern const char* const kGpt2Pattern;

// ---- bpe.cpp ----------------------------------------------------------------------------------
// (left id, right id) -> (rank, merged id): open addressing, the merge loop's hot lookup.
class PairTable {
 public:
  void assign(uint64_t key, std::pair<int32_t, int32_t> value);
  const std::pair<int32_t, int32_t>* find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  size_t slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  std::vector<uint64_t> keys_;
  std::vector<std::pair<int32_t, int32_t>> values_;
  size_t mask_ = 0, size_ = 0;
  int shift_ = 64;
};

// ---- bpe.cpp (the model)
// ------------------------------------------------------------------------------ Hugging Face's BPE
// model: merges by rank, lowest first, ties to the leftmost pair.
struct Bpe {
  std::unordered_map<std::string, int32_t> vocab;  // the model's tokens (added ones not here)
  PairTable merges;                                // (left, right) -> rank, merged id
  bool byte_level = false;     // pieces are raw bytes mapped through byte_to_unicode
  bool byte_fallback = false;  // unknown chars become <0xNN> tokens
  bool ignore_merges = false;  // a piece that is a whole token is that token
  bool fuse_unk = false;
  bool word_starts = false;  // SentencePiece: words between "▁" runs merge independently
  int32_t unk_id = -1;
  std::array<int32_t, 256> byte_ids{};             // byte-level: each byte's char; fallback: <0xNN>
  std::unordered_map<uint32_t, int32_t> char_ids;  // one-code-point tokens (SentencePiece)
  std::unordered_map<std::string, int32_t> raw_vocab;  // byte-level: raw bytes -> id

  void add_merge(const std::string& left, const std::string& right, int32_t rank,
                 const std::string& where);
  void finish(const std::string& where);  // builds byte_ids / char_ids / raw_vocab
  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const;

 private:
  void merge(std::vector<int32_t>& ids) const;
  void encode_chars(std::string_view word, std::vector<int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<int64_t>& out) const;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

// ---- the pipeline (load.cpp fills it, tokenizer.cpp runs it) ----------------------------------
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, lstrip = false, rstrip = false;
};
struct NormStep {  // Prepend (a) or Replace a -> b
  bool prepend = false;
  std::string a, b;
};
struct PreStep {  // Split by regex, or ByteLevel (regex: GPT-2's when use_regex)
  std::unique_ptr<Regex> regex;
  bool byte_level = false, add_prefix_space = false;
};
struct DecodeStep {
  enum Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip } kind = kFuse;
  std::string a, b;  // Replace a -> b; Strip: a is the content
  int start = 0, stop = 0;
};
struct State {
  std::string source;  // the file(s) it came from, for messages
  Bpe model;
  std::vector<std::string> id_to_token;  // model and added tokens
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> added_ids;
  std::vector<char> is_special;                    // by id
  std::array<std::vector<int32_t>, 256> by_first;  // added tokens by first byte, longest first
  std::vector<NormStep> normalizer;
  std::vector<PreStep> pre_tokenizer;
  std::vector<int64_t> prefix_ids, suffix_ids;  // TemplateProcessing's single sequence
  std::vector<DecodeStep> decoder;
  std::vector<std::string> raw_tokens;  // byte-level decode: each id's raw bytes
  std::optional<int64_t> bos, eos, pad, unk;
  bool split_special = false;
};

// ---- load.cpp ---------------------------------------------------------------------------------
std::unique_ptr<State> load_tokenizer_json(const std::string& path);
std::unique_ptr<State> load_vocab_merges(const std::string& vocab_json,
                                         const std::string& merges_txt);
void apply_tokenizer_config(State& s, const std::string& tokenizer_config_json);

}  // namespace tg::nn::tokenizer_detail
