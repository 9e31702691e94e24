// examples/text_classification/bpe.hpp — a byte-pair-encoding subword tokenizer of our own:
// trained on the training split's text, saved to / loaded from JSON beside the checkpoint.
//
// Pre-tokenization: ASCII letters are lowercased; text is split on whitespace; each
// whitespace-separated chunk is split into runs of word characters (ASCII letters and digits,
// and every non-ASCII character) and single punctuation characters. The first piece of every
// chunk starts with the word marker "▁" (U+2581, SentencePiece's convention), so decode() can put
// the spaces back: decode(encode(s)) == the lowercased, whitespace-squeezed s whenever every
// character of s was seen in training.
// Training: the alphabet is every character seen at least min_char_count times (most frequent
// first); then merges are learned from word counts, each time merging the most frequent adjacent
// pair, with pair counts updated incrementally (only the words containing the merged pair are
// revisited) and a lazy max-heap, so a corpus of a few MB trains in seconds.
// Ids: 0 = <pad>, 1 = <unk> (characters outside the alphabet), then the alphabet, then merges.
// Deliberately not here: batching and padding (train.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tgx::cls {

class Bpe {
 public:
  static constexpr int64_t kPad = 0, kUnk = 1;
  static constexpr const char* kMarker = "\xE2\x96\x81";  // "▁"

  struct Options {
    int64_t vocab_size = 6000;    // including <pad>, <unk> and the alphabet
    int64_t min_char_count = 2;   // rarer characters become <unk>
    int64_t max_word_chars = 40;  // longer pieces (encoded blobs) are not used to learn merges
  };

  // Trains on texts (valid UTF-8). Throws tg::Error when vocab_size is too small.
  static Bpe train(const std::vector<std::string>& texts, const Options& opts);

  // The pieces encode() splits text into (marker included), in order.
  static std::vector<std::string> pretokenize(const std::string& text);

  // Token ids of text, at most max_len of them (max_len < 0: all).
  std::vector<int64_t> encode(const std::string& text, int64_t max_len = -1) const;
  // At most max_len ids: the whole text when it fits, else its first max_len - tail tokens and
  // its last `tail` (head + tail truncation: an email's end, with its unsubscribe lines, says
  // as much as its start). tail 0 is encode(text, max_len).
  std::vector<int64_t> encode_head_tail(const std::string& text, int64_t max_len,
                                        int64_t tail) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  const std::string& token(int64_t id) const;  // "<pad>", "<unk>", "▁the", ...
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  int64_t num_merges() const { return static_cast<int64_t>(merges_.size()); }

  // JSON {"format": "tapegrad-bpe/1", "vocab": [...], "merges": [[a, b, merged], ...]}, written
  // atomically. load() throws UserError naming the file for anything malformed.
  void save(const std::string& path) const;
  std::string serialize() const;    // what save() writes
  std::string fingerprint() const;  // 16 hex digits of a hash of the vocabulary and merges
  static Bpe load(const std::string& path);
  bool operator==(const Bpe& o) const { return vocab_ == o.vocab_ && merges_ == o.merges_; }

 private:
  struct Merge {
    int64_t a, b, merged;
    bool operator==(const Merge& o) const { return a == o.a && b == o.b && merged == o.merged; }
  };
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<Merge> merges_;
  std::unordered_map<uint64_t, int64_t> rank_;  // pair key -> index into merges_
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;  // piece -> ids

  int64_t add_token(const std::string& s);
  void add_merge(int64_t a, int64_t b);
  std::vector<int64_t> encode_piece(const std::string& piece) const;
  static uint64_t key(int64_t a, int64_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
  }
};

}  // namespace tgx::cls
