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

constexpr size_t kCacheLimit = 1 << 17;  // words kept; cleared when full
constexpr size_t kCacheWordBytes = 256;  // longer pieces are not cached

}  // namespace

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
  merges[pair_key(a, b)] = {rank, ab};  // a repeated merge keeps its last rank, as HF's map
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
    auto it = merges.find(pair_key(a, b));
    if (it == merges.end()) return;
    heap.push_back({it->second.first, pos, a, b});
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
    ids[p] = merges.find(pair_key(c.left, c.right))->second.second;
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
void Bpe::encode_chars(std::string_view piece, std::vector<int64_t>& out) const {
  thread_local std::vector<int32_t> ids;
  ids.clear();
  for (size_t i = 0; i < piece.size();) {
    const size_t at = i;
    auto it = char_ids.find(next_code_point(piece, i));
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
    next_code_point(piece, end);
    bool bytes = byte_fallback;
    for (size_t k = at; bytes && k < end; ++k)
      bytes = byte_ids[static_cast<unsigned char>(piece[k])] >= 0;
    if (bytes) {
      for (size_t k = at; k < end; ++k)
        out.push_back(byte_ids[static_cast<unsigned char>(piece[k])]);
      last_unk = false;
    } else if (unk_id >= 0) {
      if (!(fuse_unk && last_unk)) out.push_back(unk_id);
      last_unk = true;
    } else {
      throw Error(
          fmt::format("Tokenizer: \"{}\" is not in the vocabulary and the model has no "
                      "unk_token nor byte fallback",
                      std::string(piece.substr(at, end - at))));
    }
  }
}

void Bpe::encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
  if (piece.empty()) return;
  if (!byte_level) return encode_chars(piece, out);
  const bool cacheable = piece.size() <= kCacheWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(std::string(piece));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  auto whole = ignore_merges ? raw_vocab.find(std::string(piece)) : raw_vocab.end();
  if (whole != raw_vocab.end()) {
    ids.push_back(whole->second);
  } else {
    ids.reserve(piece.size());
    for (char ch : piece) ids.push_back(byte_ids[static_cast<unsigned char>(ch)]);
    merge(ids);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(std::string(piece), std::move(ids));
  }
}

}  // namespace tg::nn::tokenizer_detail
