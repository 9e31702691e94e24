// examples/translation/vocab.hpp — a token vocabulary with the three specials every sequence
// uses (<pad> 0, <bos> 1, <eos> 2), encoding that names every unknown token, decoding that
// stops at <eos>, and a JSON form saved beside checkpoints.
//
// Not here: tokenisation (numbers.hpp for words, tgx::utf8_chars for characters).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tgx::translation {

class Vocab {
 public:
  static constexpr int64_t kPad = 0, kBos = 1, kEos = 2;

  Vocab();  // the specials only
  // Specials, then every distinct token of seqs in sorted order (the same data gives the same
  // ids on every run).
  static Vocab build(const std::vector<std::vector<std::string>>& seqs);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t id(const std::string& token) const;  // -1 when unknown
  const std::string& token(int64_t id) const;  // throws tg::Error when out of range
  const std::vector<std::string>& tokens() const { return tokens_; }

  // Token ids (no <bos>/<eos>). Throws UserError "<what>: unknown tokens: 'x', 'y' (…)" naming
  // every distinct unknown token.
  std::vector<int64_t> encode(const std::vector<std::string>& tokens,
                              const std::string& what) const;
  // Tokens up to the first <eos>; <pad> and <bos> are skipped.
  std::vector<std::string> decode(const std::vector<int64_t>& ids) const;

  std::string to_json() const;  // a JSON array of the tokens in id order
  // Throws UserError naming `what` when the text is not such an array (or lacks the specials).
  static Vocab from_json(const std::string& text, const std::string& what);
  bool operator==(const Vocab& o) const { return tokens_ == o.tokens_; }
  bool operator!=(const Vocab& o) const { return !(*this == o); }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> index_;
  void add(const std::string& token);
};

}  // namespace tgx::translation
