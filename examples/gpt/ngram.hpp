// examples/gpt/ngram.hpp — the baseline the GPT has to beat: an interpolated Kneser-Ney character
// n-gram model (Chen & Goodman 1998, "interpolated KN"), fitted on the training split only.
//
// With h the last n-1 characters and c_n the level-n counts (the raw counts at the top level N,
// continuation counts below it: c_n(g) = the number of distinct characters seen before g):
//   P_n(w | h) = max(c_n(hw) - D_n, 0) / c_n(h·) + D_n · N1+(h·) / c_n(h·) · P_{n-1}(w | h[1:])
//   P_n(w | h) = P_{n-1}(w | h[1:])               when the context h was never seen
//   P_0(w)     = 1 / V                            (every character of the vocabulary, <unk> too)
// c_n(h·) sums c_n(hw) over w and N1+(h·) counts the w with c_n(hw) > 0. Each level's discount is
// D_n = n1 / (n1 + 2·n2) from its counts of counts (n1 n-grams counted once, n2 twice), or a
// fixed one (Options::discount). Nothing is tuned on held-out text. Positions with fewer than
// N-1 characters before them (the start of a text) use the shorter context h they have.
// Deliberately not here: the vocabulary (data.hpp); smoothing variants (modified KN, ...).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tgx::gpt {

class KneserNey {
 public:
  struct Options {
    int64_t order = 5;     // N: the longest n-gram, N-1 characters of context
    double discount = -1;  // in (0, 1): one discount for every level; otherwise estimated
  };
  // ids: the training text as vocabulary ids in [0, vocab). UserError when the order is < 1 or
  // the packed n-gram keys would not fit 64 bits (vocab^order > 2^64).
  KneserNey(const std::vector<int64_t>& ids, int64_t vocab, Options opts);
  KneserNey(const std::vector<int64_t>& ids, int64_t vocab) : KneserNey(ids, vocab, Options()) {}

  // P(w | context), the last min(len, N-1) ids of context[0:len] being used.
  double prob(const int64_t* context, int64_t len, int64_t w) const;
  // Mean -log P over ids[from:] (the whole text: every id predicted from the up to N-1 ids
  // before it).
  double nats_per_char(const std::vector<int64_t>& ids, int64_t from = 0) const;
  // Mean -log P of windows: for every window, ids[s+1 .. s+len] predicted from what precedes it
  // inside the window (like the GPT sees it).
  double nats_per_char_windows(const std::vector<int64_t>& ids, const std::vector<int64_t>& starts,
                               int64_t len) const;

  int64_t order() const { return order_; }
  double discount(int64_t n) const { return disc_[static_cast<size_t>(n)]; }  // n in [1, N]

 private:
  struct Context {
    uint64_t total = 0, types = 0;
  };
  struct Level {
    std::unordered_map<uint64_t, uint64_t> counts;   // n-gram key -> c_n
    std::unordered_map<uint64_t, Context> contexts;  // (n-1)-gram key -> c_n(h·), N1+(h·)
  };
  uint64_t key(const int64_t* ids, int64_t n) const;
  int64_t order_, vocab_;
  std::vector<Level> levels_;  // [1, N]; levels_[0] unused
  std::vector<double> disc_;
};

}  // namespace tgx::gpt
