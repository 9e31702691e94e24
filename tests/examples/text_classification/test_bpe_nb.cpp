// tests/examples/text_classification/test_bpe_nb.cpp — the BPE tokenizer (training, round trip,
// save/load, <unk>, truncation) and the Naive Bayes baseline against hand-computed probabilities.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "text_classification/bpe.hpp"
#include "text_classification/naive_bayes.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace tgx::cls;

namespace {
std::vector<std::string> corpus() {
  return {"the lower road, the lowest road", "Newer and newest: the low road!",
          "low low low lower lowest new newer"};
}
}  // namespace

TEST_CASE("bpe: head + tail truncation keeps a long text's start and end",
          "[text_classification]") {
  Bpe::Options o;
  o.vocab_size = 60;
  o.min_char_count = 1;
  Bpe bpe = Bpe::train(corpus(), o);
  std::string text = "the lower road";
  for (int i = 0; i < 2000; ++i) text += " low new";  // ~16 KB: the tail window is a suffix
  text += " the newest road!";
  const std::vector<int64_t> all = bpe.encode(text);
  REQUIRE(all.size() > 4000);
  const std::vector<int64_t> ht = bpe.encode_head_tail(text, 12, 5);
  REQUIRE(ht.size() == 12);
  CHECK(std::vector<int64_t>(ht.begin(), ht.begin() + 7) == bpe.encode(text, 7));
  CHECK(std::vector<int64_t>(ht.begin() + 7, ht.end()) ==
        std::vector<int64_t>(all.end() - 5, all.end()));
  CHECK(bpe.decode({ht.end() - 5, ht.end()}).find("newest road!") != std::string::npos);
  // A text that fits is encoded whole; tail 0 is the plain prefix.
  CHECK(bpe.encode_head_tail("the low road", 12, 5) == bpe.encode("the low road"));
  CHECK(bpe.encode_head_tail(text, 12, 0) == bpe.encode(text, 12));
}

TEST_CASE("bpe: pretokenize lowercases and splits words from punctuation",
          "[text_classification]") {
  std::vector<std::string> p = Bpe::pretokenize("Hello, World!  x");
  std::string m = Bpe::kMarker;
  CHECK(p == std::vector<std::string>{m + "hello", ",", m + "world", "!", m + "x"});
}

TEST_CASE("bpe: learns merges, round-trips text, unknown characters are <unk>",
          "[text_classification]") {
  Bpe::Options o;
  o.vocab_size = 60;
  o.min_char_count = 1;
  Bpe bpe = Bpe::train(corpus(), o);
  CHECK(bpe.vocab_size() <= 60);
  CHECK(bpe.num_merges() > 5);
  CHECK(bpe.token(0) == "<pad>");
  CHECK(bpe.token(1) == "<unk>");
  std::vector<int64_t> ids = bpe.encode("The LOWEST road, newer!");
  CHECK(ids.size() < 15);  // fewer tokens than the 20 characters: merges apply
  CHECK(bpe.decode(ids) == "the lowest road, newer!");
  std::vector<int64_t> unk = bpe.encode("low zq");
  REQUIRE(unk.size() >= 3);
  CHECK(unk[unk.size() - 1] == Bpe::kUnk);
  CHECK(unk[unk.size() - 2] == Bpe::kUnk);
  CHECK(bpe.encode("the lower road the lowest", 3).size() == 3);
  // Training is deterministic.
  CHECK(Bpe::train(corpus(), o) == bpe);
}

TEST_CASE("bpe: save and load give the same tokenizer, and bad files are user errors",
          "[text_classification]") {
  Bpe::Options o;
  o.vocab_size = 50;
  o.min_char_count = 1;
  Bpe bpe = Bpe::train(corpus(), o);
  std::string path = std::string(TG_BINARY_DIR) + "/tmp_cls_tokenizer.json";
  bpe.save(path);
  Bpe back = Bpe::load(path);
  CHECK(back == bpe);
  CHECK(back.encode("newest lower roads") == bpe.encode("newest lower roads"));
  std::ofstream(path) << "{\"format\": \"tapegrad-bpe/1\", \"vocab\": [\"<pad>\", \"<unk>\", "
                         "\"a\"], \"merges\": [[2, 2, 7]]}";
  REQUIRE_THROWS_AS(Bpe::load(path), tgx::UserError);
  std::ofstream(path) << "not json";
  REQUIRE_THROWS_WITH(Bpe::load(path), Catch::Contains("not valid JSON"));
  std::filesystem::remove(path);
}

TEST_CASE("naive bayes: hand-computed posteriors with Laplace smoothing", "[text_classification]") {
  NaiveBayes nb(2);
  nb.fit({{"a", "a", "b"}, {"b", "c"}}, {0, 1});
  // P(a|0) = 3/6, P(b|0) = 2/6; P(a|1) = 1/5, P(b|1) = 2/5; priors 1/2.
  std::vector<double> p = nb.predict_proba({"a", "b", "unseen"});
  CHECK(p[0] == Approx(25.0 / 37.0).epsilon(1e-12));
  CHECK(p[1] == Approx(12.0 / 37.0).epsilon(1e-12));
  std::vector<double> s = nb.log_scores({"c"});
  CHECK(s[0] == Approx(std::log(0.5) + std::log(1.0 / 6.0)));
  CHECK(s[1] == Approx(std::log(0.5) + std::log(2.0 / 5.0)));
  CHECK(nb.predict({"c", "c"}) == 1);
  CHECK(nb.predict({"a"}) == 0);
  CHECK(nb.vocab_size() == 3);
}
