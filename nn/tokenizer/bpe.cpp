// nn/tokenizer/bpe.cpp — the BPE model: a piece starts as one symbol per byte (byte-level) or per
// code point (SentencePiece style), and the pair of lowest merge rank is merged until none is
// left, ties going to the leftmost pair (Hugging Face's and transformers.js' order; OpenAI's
// merge-all-occurrences loop gives the same result). A heap over a linked list keeps a piece of
// n symbols O(n log n): Llama-2's files have no pre-tokenizer, so a whole text is one piece.
// Deliberately not here: splitting text into pieces (pretokenize.cpp), added tokens.
#include "nn/tokenizer/detail.hpp"

#include "autograd/tensor.hpp"  // tg::Error

#include <fmt/format.h>

#include <algorithm>

namespace tg::nn::tokenizer_detail {

namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Candidate {
  int32_t rank, pos, left, right;
  bool operator<(const Candidate& o) const {  // std heap is a max-heap: invert
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

constexpr const char* kWordMark = "\u2581";  // SentencePiece's "▁" (3 bytes of UTF-8)
constexpr size_t kCacheLimit = 1 << 17;      // words kept; cleared when full
constexpr size_t kCacheWordBytes = 256;      // longer pieces are not cached

}  // namespace

void PairTable::assign(uint64_t key, std::pair<int32_t, int32_t> value) {
  if (2 * (size_ + 1) > keys_.size()) {  // grow to keep the load at most one half
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<std::pair<int32_t, int32_t>> old_values = std::move(values_);
    const size_t n = std::max<size_t>(64, 2 * old_keys.size());
    keys_.assign(n, kEmpty);
    values_.assign(n, {0, 0});
    mask_ = n - 1;
    shift_ = 64 - __builtin_ctzll(n);
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != kEmpty) assign(old_keys[i], old_values[i]);
  }
  size_t i = slot(key);
  while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask_;
  if (keys_[i] == kEmpty) ++size_;
  keys_[i] = key;
  values_[i] = value;
}

void Bpe::add_merge(const std::string& left, const std::string& right, int32_t rank,
                    const std::string& where) {
  auto find = [&](const std::string& t) {
    auto it = vocab.find(t);
    if (it == vocab.end())
      throw Error(
          fmt::format("Tokenizer: {}: merge {} of \"{} {}\": \"{}\" is not in the vocabulary",
                      where, rank, left, right, t));
    return it->second;
  };
  const int32_t a = find(left), b = find(right), ab = find(left + right);
  merges.assign(pair_key(a, b), {rank, ab});  // a repeated merge keeps its last rank, as HF's map
}

void Bpe::finish(const std::string& where) {
  byte_ids.fill(-1);
  if (byte_level) {
    const auto& map = byte_to_unicode();
    for (int b = 0; b < 256; ++b) {
      auto it = vocab.find(map[static_cast<size_t>(b)]);
      if (it == vocab.end())
        throw Error(
            fmt::format("Tokenizer: {}: byte-level vocabulary lacks the token \"{}\" of "
                        "byte 0x{:02X}",
                        where, map[static_cast<size_t>(b)], b));
      byte_ids[static_cast<size_t>(b)] = it->second;
    }
    std::string raw;
    for (const auto& [tok, id] : vocab)
      if (byte_level_to_raw(tok, raw)) raw_vocab.emplace(raw, id);
    return;
  }
  for (const auto& [tok, id] : vocab) {
    size_t i = 0;
    if (!tok.empty()) {
      const uint32_t cp = next_code_point(tok, i);
      if (i == tok.size()) char_ids.emplace(cp, id);
    }
  }
  word_starts = true;  // no token has "▁" after another char
  for (const auto& [tok, id] : vocab)
    for (size_t p = tok.find(kWordMark, 1); word_starts && p != std::string::npos;
         p = tok.find(kWordMark, p + 1))
      word_starts = p >= 3 && tok.compare(p - 3, 3, kWordMark) == 0;
  if (byte_fallback)
    for (int b = 0; b < 256; ++b) {
      auto it = vocab.find(fmt::format("<0x{:02X}>", b));
      if (it != vocab.end()) byte_ids[static_cast<size_t>(b)] = it->second;
    }
}

// Merges ids in place (negative ids are symbols outside the vocabulary: never merged).
void Bpe::merge(std::vector<int32_t>& ids) const {
  const int32_t n = static_cast<int32_t>(ids.size());
  if (n < 2) return;
  thread_local std::vector<int32_t> prev, next;
  thread_local std::vector<Candidate> heap;
  prev.resize(static_cast<size_t>(n));
  next.resize(static_cast<size_t>(n));
  heap.clear();
  auto push = [&](int32_t pos) {
    const int32_t q = next[static_cast<size_t>(pos)];
    if (q < 0) return;
    const int32_t a = ids[static_cast<size_t>(pos)], b = ids[static_cast<size_t>(q)];
    if (a < 0 || b < 0) return;
    const auto* m = merges.find(pair_key(a, b));
    if (m == nullptr) return;
    heap.push_back({m->first, pos, a, b});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate c = heap.back();
    heap.pop_back();
    const auto p = static_cast<size_t>(c.pos);
    const int32_t q = next[p];
    // Stale: the left symbol was merged away or changed, or its right neighbour did.
    if (ids[p] != c.left || q < 0 || ids[static_cast<size_t>(q)] != c.right) continue;
    ids[p] = merges.find(pair_key(c.left, c.right))->second;
    ids[static_cast<size_t>(q)] = -2;  // gone
    next[p] = next[static_cast<size_t>(q)];
    if (next[p] >= 0) prev[static_cast<size_t>(next[p])] = c.pos;
    if (prev[p] >= 0) push(prev[p]);
    push(c.pos);
  }
  int32_t w = 0;
  for (int32_t i = 0; i >= 0; i = next[static_cast<size_t>(i)])
    ids[static_cast<size_t>(w++)] = ids[static_cast<size_t>(i)];
  ids.resize(static_cast<size_t>(w));
}

// SentencePiece style: code points, merges, then byte fallback (or unk) for chars the
// vocabulary lacks. A char outside the vocabulary is kept as -(3 + its byte offset).
void Bpe::encode_chars(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  for (size_t i = 0; i < word.size();) {
    const size_t at = i;
    auto it = char_ids.find(next_code_point(word, i));
    ids.push_back(it != char_ids.end() ? it->second : -3 - static_cast<int32_t>(at));
  }
  merge(ids);
  bool last_unk = false;
  for (int32_t id : ids) {
    if (id >= 0) {
      out.push_back(id);
      last_unk = false;
      continue;
    }
    size_t at = static_cast<size_t>(-3 - id), end = at;
    next_code_point(word, end);
    bool bytes = byte_fallback;
    for (size_t k = at; bytes && k < end; ++k)
      bytes = byte_ids[static_cast<unsigned char>(word[k])] >= 0;
    if (bytes) {
      for (size_t k = at; k < end; ++k)
        out.push_back(byte_ids[static_cast<unsigned char>(word[k])]);
      last_unk = false;
    } else if (unk_id >= 0) {
      if (!(fuse_unk && last_unk)) out.push_back(unk_id);
      last_unk = true;
    } else {
      throw Error(
          fmt::format("Tokenizer: \"{}\" is not in the vocabulary and the model has no "
                      "unk_token nor byte fallback",
                      std::string(word.substr(at, end - at))));
    }
  }
}

// One word through the cache: byte-level bytes, or SentencePiece code points.
void Bpe::encode_word(std::string_view word, std::vector<int64_t>& out) const {
  const bool cacheable = word.size() <= kCacheWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word.data(), word.size());
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  if (!byte_level) {
    encode_chars(word, ids);
  } else if (auto whole = ignore_merges ? raw_vocab.find(std::string(word)) : raw_vocab.end();
             whole != raw_vocab.end()) {
    ids.push_back(whole->second);
  } else {
    ids.reserve(word.size());
    for (char ch : word) ids.push_back(byte_ids[static_cast<unsigned char>(ch)]);
    merge(ids);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(std::move(key), std::move(ids));
  }
}

// A SentencePiece piece is one whole text section; where no token holds "▁" after another char
// (finish() checks), no merge crosses the start of a "▁" run, so the words between are merged
// alone, through the cache, with the same result.
void Bpe::encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (piece.empty()) return;
  if (byte_level || !word_starts) return encode_word(piece, out);
  const std::string_view mark = kWordMark;
  size_t start = 0;
  for (size_t p = piece.find(mark, 1); p != std::string_view::npos; p = piece.find(mark, p + 1)) {
    if (p >= mark.size() && piece.compare(p - mark.size(), mark.size(), mark) == 0) continue;
    encode_word(piece.substr(start, p - start), out);
    start = p;
  }
  encode_word(piece.substr(start), out);
}

}  // namespace tg::nn::tokenizer_detail
