// examples/gpt/sample.cpp — temperature and top-k sampling (see sample.hpp).
#include "gpt/sample.hpp"

#include "autograd/tape.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tgx::gpt {

namespace {
// The next id from the last position's logits (V).
int64_t pick(tg::Tensor last, const SampleOptions& o, int64_t V) {
  last = tg::div(last.to(tg::kCPU).to(tg::kFloat64), o.temperature);
  const int64_t k = std::min(o.top_k, V);
  if (k > 0) {
    auto [values, indices] = tg::topk(last, k);                      // (k), (k)
    tg::Tensor choice = tg::multinomial(tg::softmax(values, 0), 1);  // (1)
    return indices.to_vector<int64_t>()[static_cast<size_t>(choice.to_vector<int64_t>()[0])];
  }
  return tg::multinomial(tg::softmax(last, 0), 1).to_vector<int64_t>()[0];
}
// The last position's logits (V) of (1, T, V).
tg::Tensor last_row(const tg::Tensor& logits, int64_t V) {
  const int64_t T = logits.size(1);
  return tg::reshape(tg::slice(logits, 1, T - 1, T), {V});
}
}  // namespace

std::vector<int64_t> generate(Gpt& model, std::vector<int64_t> ids, const SampleOptions& o) {
  if (ids.empty()) throw tg::Error("gpt generate: the context is empty (need at least one id)");
  if (!(o.temperature > 0) || o.top_k < 0 || o.length < 0)
    throw tg::Error(fmt::format("gpt generate: temperature {} must be > 0, top_k {} >= 0",
                                o.temperature, o.top_k));
  const bool llama = model.cfg.is_llama();
  if (llama && static_cast<int64_t>(ids.size()) + o.length > Gpt::kMaxPositions)
    throw tg::Error(
        fmt::format("gpt generate: {} context + {} new characters exceed llama's {} "
                    "rotary positions",
                    ids.size(), o.length, Gpt::kMaxPositions));
  tg::NoGradGuard ng;
  model.eval();
  const tg::Device dev = model.tok_emb->weight.device();
  const int64_t V = model.cfg.vocab_size, block = model.cfg.block;
  const size_t first_new = ids.size();
  // The context the uncached forward reads: GPT's last `block` ids; llama's whole text.
  auto context = [&](size_t n) {
    const int64_t T = llama ? static_cast<int64_t>(n) : std::min<int64_t>(n, block);
    std::vector<int64_t> c(ids.begin() + static_cast<std::ptrdiff_t>(n - T),
                           ids.begin() + static_cast<std::ptrdiff_t>(n));
    return tg::tensor(c, {1, T}).to(dev);
  };
  std::vector<tg::nn::KVCache> caches;
  tg::Tensor logits;
  for (int64_t n = 0; n < o.length; ++n) {
    if (!o.kv_cache) {
      logits = model.forward(context(ids.size()));
    } else if (n == 0 || (!llama && caches.front().position() == block)) {
      // (re)fill: the first step, and each GPT step once its positions are full
      caches = model.make_caches();
      logits = model.forward(context(ids.size()), caches);
    } else {
      logits = model.forward(tg::tensor(std::vector<int64_t>{ids.back()}, {1, 1}).to(dev), caches);
    }
    ids.push_back(pick(last_row(logits, V), o, V));
  }
  return std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(first_new), ids.end());
}

}  // namespace tgx::gpt
