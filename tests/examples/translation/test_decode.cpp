// tests/examples/translation/test_decode.cpp — the model's shapes and masks, and decoding:
// beam search with K = 1 gives greedy's tokens, and wider beams return well-formed hypotheses.
#include <catch2/catch.hpp>

#include "autograd/tensor.hpp"
#include "translation/decode.hpp"
#include "translation/model.hpp"
#include "translation/vocab.hpp"

#include <cmath>

using namespace tgx::translation;

namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.src_vocab = 12;
  c.tgt_vocab = 9;
  c.d_model = 16;
  c.heads = 2;
  c.enc_layers = c.dec_layers = 1;
  c.ff = 32;
  c.max_len = 16;
  return c;
}

std::vector<std::vector<int64_t>> sources() {
  return {{3, 4, 5, 2}, {7, 2}, {11, 10, 9, 8, 7, 6, 2}, {5, 5, 2}};
}

}  // namespace

TEST_CASE("translation: Seq2Seq maps (B, S) and (B, T) ids to (B, T, V) logits") {
  tg::manual_seed(0);
  Seq2Seq m(tiny_config());
  tg::Tensor logits = m.forward(pad_batch(sources()), pad_batch({{1, 3}, {1}, {1, 4, 5}, {1}}));
  CHECK(logits.shape() == tg::Shape{4, 3, 9});
  tg::Tensor pad = Seq2Seq::padding_mask(pad_batch({{3, 2}, {4}}));
  CHECK(pad.to_vector<bool>() == std::vector<bool>{false, false, false, true});
  ModelConfig bad = tiny_config();
  bad.heads = 3;
  REQUIRE_THROWS_WITH(Seq2Seq(bad), Catch::Contains("--d-model 16 must be divisible by --heads 3"));
  CHECK(tiny_config().differences(tiny_config()).empty());
  CHECK(tiny_config().differences(ModelConfig::from_json(bad.to_json(), "x")) == "heads 2 vs 3");
}

TEST_CASE("translation: beam search with K = 1 equals greedy decoding") {
  for (uint64_t seed : {1, 2, 3}) {
    tg::manual_seed(seed);
    Seq2Seq m(tiny_config());
    m.eval();
    auto g = greedy_decode(m, sources(), 10);
    auto b = beam_decode(m, sources(), 1, 10);
    REQUIRE(g.size() == b.size());
    for (size_t i = 0; i < g.size(); ++i) {
      INFO("seed " << seed << " sentence " << i);
      CHECK(g[i].ids == b[i].ids);
      CHECK(g[i].logprob == Approx(b[i].logprob).epsilon(1e-9));
    }
  }
}

TEST_CASE("translation: wider beams return normalised scores and no special tokens") {
  tg::manual_seed(4);
  Seq2Seq m(tiny_config());
  m.eval();
  auto b = beam_decode(m, sources(), 4, 10);
  REQUIRE(b.size() == 4);
  for (const Hypothesis& h : b) {
    CHECK(h.ids.size() <= 10);
    for (int64_t id : h.ids) CHECK(id > Vocab::kEos);
    CHECK(h.logprob <= 0);
    size_t len = h.ids.size() + (h.ids.size() < 10 ? 1 : 0);
    CHECK(h.score == Approx(h.logprob / static_cast<double>(len)));
  }
}
