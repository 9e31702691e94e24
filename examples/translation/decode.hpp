// examples/translation/decode.hpp — turning id sequences into padded batches, and the two
// decoding strategies: greedy (argmax each step) and beam search (K hypotheses per sentence,
// finished ones ranked by length-normalised log-probability), both batched over sentences.
// Both recompute the decoder over the whole prefix each step (no key/value cache): the
// sequences here are short (about 20 tokens).
//
// Not here: the model (model.hpp) and metrics (train.hpp).
#pragma once

#include "translation/model.hpp"

#include <cstdint>
#include <vector>

namespace tgx::translation {

// (B, L) int64, each row a sequence followed by <pad> (L = the longest sequence).
tg::Tensor pad_batch(const std::vector<std::vector<int64_t>>& seqs);

struct Hypothesis {
  std::vector<int64_t> ids;  // generated tokens, without <bos> and <eos>
  double logprob = 0;        // sum of the tokens' log-probabilities, <eos> included when reached
  double score = 0;          // logprob / (generated tokens incl. <eos>)^length_penalty
};

// src: source id sequences (ending with <eos>). max_len: most tokens generated per sentence.
std::vector<Hypothesis> greedy_decode(Seq2Seq& model, const std::vector<std::vector<int64_t>>& src,
                                      int64_t max_len);
// Beam search with `beam` hypotheses per sentence; a sentence stops when `beam` hypotheses have
// ended with <eos> and no alive one scores better at its current length (or after max_len
// tokens); the best length-normalised hypothesis is returned.
// beam = 1 gives greedy_decode's tokens.
std::vector<Hypothesis> beam_decode(Seq2Seq& model, const std::vector<std::vector<int64_t>>& src,
                                    int64_t beam, int64_t max_len, double length_penalty = 1.0);

}  // namespace tgx::translation
