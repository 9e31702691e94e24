// examples/translation/decode.cpp — greedy and beam-search decoding.
#include "translation/decode.hpp"

#include "autograd/tape.hpp"
#include "ops/ops.hpp"
#include "translation/vocab.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tgx::translation {

using tg::Tensor;

Tensor pad_batch(const std::vector<std::vector<int64_t>>& seqs) {
  size_t L = 1;
  for (const auto& s : seqs) L = std::max(L, s.size());
  std::vector<int64_t> flat(seqs.size() * L, Vocab::kPad);
  for (size_t b = 0; b < seqs.size(); ++b) std::copy(seqs[b].begin(), seqs[b].end(), &flat[b * L]);
  return tg::tensor(flat, {static_cast<int64_t>(seqs.size()), static_cast<int64_t>(L)});
}

namespace {

// log-softmax of the last position of each row: logits (B, T, V) -> B rows of V. Logits of a
// bf16 / f16 decode (under --precision's autocast) are read in float32.
std::vector<std::vector<double>> last_logprobs(const Tensor& logits) {
  int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2);
  const Tensor f32 = logits.to(tg::kFloat32);  // the same tensor when float32 already
  const float* p = f32.data<float>();
  std::vector<std::vector<double>> out(static_cast<size_t>(B), std::vector<double>(V));
  for (int64_t b = 0; b < B; ++b) {
    const float* row = p + (b * T + T - 1) * V;
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(row[v]));
    for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - mx);
    double lse = mx + std::log(sum);
    for (int64_t v = 0; v < V; ++v) out[b][v] = row[v] - lse;
  }
  return out;
}

double normalised(double logprob, size_t length, double penalty) {
  return logprob / std::pow(static_cast<double>(std::max<size_t>(length, 1)), penalty);
}

struct Beam {
  std::vector<int64_t> ids;  // <bos> first
  double logprob = 0;
};

// A sentence is done once it has K finished hypotheses and none of its alive beams, scored at
// its current length, beats the best finished one (Hugging Face's early_stopping=False rule).
// Stopping at K finished alone loses the right answer when wrong short hypotheses finish while
// the right, longer one is still growing. Alive and finished-this-step lengths are equal, so
// with K = 1 this stops exactly where greedy decoding does.
bool done_searching(const std::vector<Hypothesis>& finished, const std::vector<Beam>& alive,
                    size_t K, double penalty) {
  if (finished.size() < K) return false;
  double best = -std::numeric_limits<double>::infinity();
  for (const Hypothesis& h : finished) best = std::max(best, h.score);
  for (const Beam& b : alive)
    if (normalised(b.logprob, b.ids.size() - 1, penalty) > best) return false;
  return true;
}

// One sentence's beam step: its alive beams (log-probabilities lp[r0 + k] of beam k's next token)
// extended by their K best candidates; <eos> among the K best finishes a hypothesis instead.
std::vector<Beam> extend(const std::vector<Beam>& alive, const std::vector<std::vector<double>>& lp,
                         size_t r0, size_t K, double length_penalty,
                         std::vector<Hypothesis>& finished) {
  struct Cand {
    double logprob;
    size_t beam;
    int64_t token;
  };
  std::vector<Cand> cands;
  for (size_t k = 0; k < alive.size(); ++k)
    for (size_t v = 0; v < lp[r0 + k].size(); ++v)
      cands.push_back({alive[k].logprob + lp[r0 + k][v], k, static_cast<int64_t>(v)});
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Cand& a, const Cand& b) { return a.logprob > b.logprob; });
  std::vector<Beam> next;
  for (size_t c = 0; c < cands.size() && next.size() < K; ++c) {
    const Cand& cd = cands[c];
    const Beam& from = alive[cd.beam];
    if (cd.token == Vocab::kEos) {
      if (c < K) {
        Hypothesis h{{from.ids.begin() + 1, from.ids.end()}, cd.logprob, 0};
        h.score = normalised(h.logprob, h.ids.size() + 1, length_penalty);
        finished.push_back(h);
      }
      continue;
    }
    if (cd.token == Vocab::kPad || cd.token == Vocab::kBos) continue;
    Beam nb = from;
    nb.ids.push_back(cd.token);
    nb.logprob = cd.logprob;
    next.push_back(std::move(nb));
  }
  return next;
}

}  // namespace

std::vector<Hypothesis> greedy_decode(Seq2Seq& model, const std::vector<std::vector<int64_t>>& src,
                                      int64_t max_len) {
  tg::NoGradGuard no_grad;
  Tensor s = pad_batch(src), pad = Seq2Seq::padding_mask(s);
  Tensor memory = model.encode(s, pad);
  size_t B = src.size();
  std::vector<std::vector<int64_t>> prefix(B, std::vector<int64_t>{Vocab::kBos});
  std::vector<Hypothesis> out(B);
  std::vector<bool> done(B, false);
  for (int64_t t = 0; t < max_len; ++t) {
    auto lp = last_logprobs(model.decode(pad_batch(prefix), memory, pad));
    bool all_done = true;
    for (size_t b = 0; b < B; ++b) {
      // <pad> and <bos> are never generated (beam search skips them too).
      int64_t best =
          done[b] ? Vocab::kPad
                  : std::max_element(lp[b].begin() + Vocab::kEos, lp[b].end()) - lp[b].begin();
      prefix[b].push_back(best);  // finished rows carry <pad>, which changes nothing else
      if (done[b]) continue;
      out[b].logprob += lp[b][static_cast<size_t>(best)];
      if (best == Vocab::kEos) {
        done[b] = true;
      } else {
        out[b].ids.push_back(best);
        all_done = false;
      }
    }
    if (all_done) break;
  }
  for (size_t b = 0; b < B; ++b)
    out[b].score = normalised(out[b].logprob, out[b].ids.size() + (done[b] ? 1 : 0), 1.0);
  return out;
}

std::vector<Hypothesis> beam_decode(Seq2Seq& model, const std::vector<std::vector<int64_t>>& src,
                                    int64_t beam, int64_t max_len, double length_penalty) {
  tg::NoGradGuard no_grad;
  size_t K = static_cast<size_t>(std::max<int64_t>(beam, 1)), N = src.size();
  Tensor s = pad_batch(src), pad = Seq2Seq::padding_mask(s);
  Tensor memory = model.encode(s, pad);
  std::vector<std::vector<Beam>> alive(N, std::vector<Beam>{Beam{{Vocab::kBos}, 0.0}});
  std::vector<std::vector<Hypothesis>> finished(N);
  for (int64_t t = 0; t < max_len; ++t) {
    // Every alive beam of every sentence is one row of the batch.
    std::vector<int64_t> row_sentence;
    std::vector<std::vector<int64_t>> rows;
    for (size_t n = 0; n < N; ++n)
      for (const Beam& b : alive[n]) {
        row_sentence.push_back(static_cast<int64_t>(n));
        rows.push_back(b.ids);
      }
    if (rows.empty()) break;
    Tensor idx = tg::tensor(row_sentence);
    auto lp = last_logprobs(model.decode(pad_batch(rows), tg::index_select(memory, 0, idx),
                                         tg::index_select(pad, 0, idx)));
    size_t r = 0;
    for (size_t n = 0; n < N; ++n) {
      std::vector<Beam> next = extend(alive[n], lp, r, K, length_penalty, finished[n]);
      r += alive[n].size();
      alive[n] = done_searching(finished[n], next, K, length_penalty) ? std::vector<Beam>{}
                                                                      : std::move(next);
    }
  }
  std::vector<Hypothesis> out(N);
  for (size_t n = 0; n < N; ++n) {
    for (const Beam& b : alive[n]) {  // ran out of length: unfinished hypotheses compete too
      Hypothesis h{{b.ids.begin() + 1, b.ids.end()}, b.logprob, 0};
      h.score = normalised(h.logprob, h.ids.size(), length_penalty);
      finished[n].push_back(h);
    }
    auto best = std::max_element(
        finished[n].begin(), finished[n].end(),
        [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    if (best != finished[n].end()) out[n] = *best;
  }
  return out;
}

}  // namespace tgx::translation
