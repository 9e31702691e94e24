// examples/gpt/sample.cpp — temperature and top-k sampling (see sample.hpp).
#include "gpt/sample.hpp"

#include "autograd/tape.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tgx::gpt {

std::vector<int64_t> generate(Gpt& model, std::vector<int64_t> ids, const SampleOptions& o) {
  if (ids.empty()) throw tg::Error("gpt generate: the context is empty (need at least one id)");
  if (!(o.temperature > 0) || o.top_k < 0 || o.length < 0)
    throw tg::Error(fmt::format("gpt generate: temperature {} must be > 0, top_k {} >= 0",
                                o.temperature, o.top_k));
  tg::NoGradGuard ng;
  model.eval();
  const tg::Device dev = model.tok_emb->weight.device();
  const int64_t V = model.cfg.vocab_size, k = std::min(o.top_k, V);
  const size_t first_new = ids.size();
  for (int64_t n = 0; n < o.length; ++n) {
    const int64_t T = std::min<int64_t>(static_cast<int64_t>(ids.size()), model.cfg.block);
    std::vector<int64_t> ctx(ids.end() - T, ids.end());
    tg::Tensor logits = model.forward(tg::tensor(ctx, {1, T}).to(dev));               // (1, T, V)
    tg::Tensor last = tg::reshape(tg::slice(logits, 1, T - 1, T), {V}).to(tg::kCPU);  // (V)
    last = tg::div(last.to(tg::kFloat64), o.temperature);
    int64_t next;
    if (k > 0) {
      auto [values, indices] = tg::topk(last, k);                    // (k), (k)
      tg::Tensor pick = tg::multinomial(tg::softmax(values, 0), 1);  // (1)
      next = indices.to_vector<int64_t>()[static_cast<size_t>(pick.to_vector<int64_t>()[0])];
    } else {
      next = tg::multinomial(tg::softmax(last, 0), 1).to_vector<int64_t>()[0];
    }
    ids.push_back(next);
  }
  return std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(first_new), ids.end());
}

}  // namespace tgx::gpt
