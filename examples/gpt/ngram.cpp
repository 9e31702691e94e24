// examples/gpt/ngram.cpp — counting and scoring of the Kneser-Ney baseline (see ngram.hpp).
#include "gpt/ngram.hpp"

#include "common/cli.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tgx::gpt {

uint64_t KneserNey::key(const int64_t* ids, int64_t n) const {
  uint64_t k = 0;
  for (int64_t i = 0; i < n; ++i)
    k = k * static_cast<uint64_t>(vocab_) + static_cast<uint64_t>(ids[i]);
  return k;
}

KneserNey::KneserNey(const std::vector<int64_t>& ids, int64_t vocab, Options o)
    : order_(o.order), vocab_(vocab) {
  if (order_ < 1 || order_ > 16)
    throw UserError(fmt::format("n-gram order {}: must be in [1, 16]", order_));
  if (vocab_ < 1) throw UserError("n-gram model: the vocabulary is empty");
  if (static_cast<double>(order_) * std::log2(static_cast<double>(vocab_)) >= 64)
    throw UserError(fmt::format("n-gram order {} with a vocabulary of {}: keys do not fit 64 bits",
                                order_, vocab_));
  const int64_t N = order_, L = static_cast<int64_t>(ids.size());
  levels_.resize(static_cast<size_t>(N + 1));
  disc_.assign(static_cast<size_t>(N + 1), 0.0);
  // Top level: raw counts.
  for (int64_t i = 0; i + N <= L; ++i) ++levels_[N].counts[key(ids.data() + i, N)];
  // The text's first n-grams have no character before them: the lower levels count them as if
  // one had been seen (like a start symbol), so each n-gram of the text is counted somewhere.
  for (int64_t n = N - 1; n >= 1; --n) {
    const uint64_t mod = [&] {
      uint64_t m = 1;
      for (int64_t i = 0; i < n; ++i) m *= static_cast<uint64_t>(vocab_);
      return m;
    }();
    auto& cur = levels_[n].counts;
    for (const auto& [k, c] : levels_[n + 1].counts) ++cur[k % mod];  // distinct left extensions
    if (L >= n) ++cur[key(ids.data(), n)];                            // the text's first n-gram
  }
  for (int64_t n = 1; n <= N; ++n) {
    Level& lv = levels_[n];
    uint64_t n1 = 0, n2 = 0;
    for (const auto& [k, c] : lv.counts) {
      Context& ctx = lv.contexts[k / static_cast<uint64_t>(vocab_)];  // drops the last id
      ctx.total += c;
      ++ctx.types;
      n1 += c == 1;
      n2 += c == 2;
    }
    double d = o.discount > 0 && o.discount < 1 ? o.discount
               : n1 + 2 * n2 > 0 ? static_cast<double>(n1) / static_cast<double>(n1 + 2 * n2)
                                 : 0.75;
    if (!(d > 0 && d < 1)) d = 0.75;  // too few counts to estimate it
    disc_[static_cast<size_t>(n)] = d;
  }
}

double KneserNey::prob(const int64_t* context, int64_t len, int64_t w) const {
  const int64_t h = std::min<int64_t>(len, order_ - 1);  // context characters used
  const int64_t* hp = context + len - h;
  double p = 1.0 / static_cast<double>(vocab_);  // P_0
  // From the unigram level up to the longest context: P_n built from P_{n-1}.
  for (int64_t n = 1; n <= h + 1; ++n) {
    const Level& lv = levels_[static_cast<size_t>(n)];
    const int64_t* ctx = hp + (h - (n - 1));  // the last n-1 context characters
    auto it = lv.contexts.find(key(ctx, n - 1));
    if (it == lv.contexts.end() || it->second.total == 0) continue;  // unseen context: P_{n-1}
    const double total = static_cast<double>(it->second.total), D = disc_[static_cast<size_t>(n)];
    uint64_t k = key(ctx, n - 1) * static_cast<uint64_t>(vocab_) + static_cast<uint64_t>(w);
    auto c = lv.counts.find(k);
    const double cnt = c == lv.counts.end() ? 0.0 : static_cast<double>(c->second);
    p = std::max(cnt - D, 0.0) / total + D * static_cast<double>(it->second.types) / total * p;
  }
  return p;
}

double KneserNey::nats_per_char(const std::vector<int64_t>& ids, int64_t from) const {
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = std::max<int64_t>(from, 0); i < static_cast<int64_t>(ids.size()); ++i, ++n)
    sum -= std::log(prob(ids.data(), i, ids[static_cast<size_t>(i)]));
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

double KneserNey::nats_per_char_windows(const std::vector<int64_t>& ids,
                                        const std::vector<int64_t>& starts, int64_t len) const {
  double sum = 0;
  int64_t n = 0;
  for (int64_t s : starts)
    for (int64_t t = 1; t <= len; ++t, ++n)
      sum -= std::log(prob(ids.data() + s, t, ids[static_cast<size_t>(s + t)]));
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

}  // namespace tgx::gpt
