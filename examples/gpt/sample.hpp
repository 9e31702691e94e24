// examples/gpt/sample.hpp — generating text with a trained GPT: autoregressive sampling from the
// softmax of the last position's logits divided by the temperature, optionally restricted to the
// top k characters (tg::topk), drawn with tg::multinomial from the global generator (so
// tg::manual_seed(seed) makes a sample reproducible). The GPT's context is the last `block`
// characters; llama's is the whole text, read through its sliding window of block keys.
// Deliberately not here: loading the model (train.hpp: load_best), option parsing (app.hpp).
#pragma once

#include "gpt/data.hpp"
#include "gpt/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::gpt {

struct SampleOptions {
  int64_t length = 300;      // characters to generate
  double temperature = 0.8;  // > 0
  int64_t top_k = 0;         // 0: every character
  // Incremental decoding with one KVCache per layer (Gpt::make_caches): the same logits as
  // without, each step runs one position. The GPT's context is the last `block` characters: once
  // it is full every step recomputes it (its learned positions shift); llama's rolls on.
  bool kv_cache = true;
};

// Continues `context` (ids, at least one) by opts.length ids; returns only the new ids. Runs on
// the model's device (the CPU for a loaded model) in eval mode, without a tape.
std::vector<int64_t> generate(Gpt& model, std::vector<int64_t> context, const SampleOptions& opts);

// The context a sample starts from when the prompt is empty: the end of a fortune ("%\n"), so
// the model begins a new one.
inline constexpr const char* kFortuneStart = "%\n";

}  // namespace tgx::gpt
