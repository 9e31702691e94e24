// tests/examples/gpt/test_data.cpp — the GPT's data and baseline: the corpus loader on the
// committed fixture (plain files only, items rejoined with separators, overstrikes resolved), the
// seeded split by file, the character vocabulary, and the Kneser-Ney baseline against
// probabilities computed by hand.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "gpt/data.hpp"
#include "gpt/ngram.hpp"

#include <set>

using namespace tgx::gpt;
using Catch::Matchers::Contains;

namespace {
const std::string kFix = std::string(TG_FIXTURES) + "/examples/gpt/fortunes";
}

TEST_CASE("gpt corpus: plain fortune files only, items rejoined, overstrikes resolved", "[gpt]") {
  std::vector<CorpusFile> files = load_corpus(kFix);
  std::vector<std::string> names;
  for (const CorpusFile& f : files) names.push_back(f.name);
  // Not computers.u8 (a symlink), wisdom.dat (an index) or off/ (a folder).
  CHECK(names == std::vector<std::string>{"computers", "goedel", "pets", "science", "wisdom"});
  const CorpusFile& c = files[0];
  CHECK(c.items == 9);
  CHECK(c.text.substr(c.text.size() - 3) == "\n%\n");
  CHECK(c.text.find("It is not a bug, it is a feature.\n%\n") != std::string::npos);
  CHECK(c.text.find('\b') == std::string::npos);
  CHECK(c.chars == static_cast<int64_t>(c.text.size()));  // the fixture is ASCII
  // The goedel fortune keeps its lines and tabs.
  CHECK(files[1].text.find("\n\tDirected by Steven Spielberg.\n") != std::string::npos);

  REQUIRE_THROWS_AS(load_corpus(kFix + "/nowhere"), tgx::UserError);
  REQUIRE_THROWS_WITH(load_corpus(kFix + "/nowhere"), Contains("no such folder") &&
                                                          Contains("bash tools/setup.sh --data") &&
                                                          Contains("apt-get install fortunes"));
}

TEST_CASE("gpt split: whole files, seeded, about 10 % held out", "[gpt]") {
  std::vector<CorpusFile> files = load_corpus(kFix);
  Split a = split_by_file(files, 1), b = split_by_file(files, 1);
  CHECK(a.heldout_files == b.heldout_files);
  // 10 % of the ~6300 characters: only goedel (821) does not overshoot 1.5 x the target.
  REQUIRE(a.heldout_files == std::vector<std::string>{"goedel"});
  CHECK(a.train_files.size() == 4);
  std::set<std::string> all(a.train_files.begin(), a.train_files.end());
  all.insert(a.heldout_files.begin(), a.heldout_files.end());
  CHECK(all.size() == 5);
  int64_t total = 0;
  for (const CorpusFile& f : files) {
    total += f.chars;
    if (f.name == a.heldout_files[0]) CHECK(a.heldout_text == f.text);
  }
  CHECK(a.train_chars + a.heldout_chars == total);
  // Many equal files: 10 % held out, which ones depends on the seed.
  std::vector<CorpusFile> many;
  for (int i = 0; i < 40; ++i) many.push_back({"f" + std::to_string(i), "x", 1, 100});
  Split m = split_by_file(many, 7);
  CHECK(m.heldout_files.size() == 4);
  CHECK(m.heldout_chars == 400);
  CHECK(split_by_file(many, 7).heldout_files == m.heldout_files);
  CHECK(split_by_file(many, 8).heldout_files != m.heldout_files);
  REQUIRE_THROWS_WITH(split_by_file({files[0]}, 1), Contains("at least 2"));
}

TEST_CASE("gpt vocabulary: code points of the training text, <unk> for the rest", "[gpt]") {
  CharVocab v = CharVocab::build("abca\xC3\xA9");  // a b c a é
  REQUIRE(v.size() == 5);                          // <unk> a b c é
  CHECK(v.chars()[0] == "<unk>");
  CHECK(v.encode("ab\xC3\xA9") == std::vector<int64_t>{1, 2, 4});
  int64_t unk = 0;
  CHECK(v.encode("azb", &unk) == std::vector<int64_t>{1, 0, 2});
  CHECK(unk == 1);
  CHECK(v.decode({3, 0, 1}) ==
        "c\xEF\xBF\xBD"
        "a");
  REQUIRE_THROWS_WITH(v.encode_strict("a\nz", "--sample"),
                      Contains("--sample") && Contains("2 character(s)") && Contains("\"\\n\"") &&
                          Contains("\"z\""));
  CharVocab back = CharVocab::from_json(v.to_json(), "vocab");
  CHECK(back.chars() == v.chars());
  REQUIRE_THROWS_AS(CharVocab::from_json("[\"a\"]", "vocab"), tgx::UserError);
}

TEST_CASE("gpt baseline: Kneser-Ney probabilities computed by hand", "[gpt]") {
  // Text "abcab" over {<unk>, a, b, c} (V = 4), order 2, discount 0.5.
  // Bigrams: ab 2, bc 1, ca 1. Unigram continuation counts: a 1 (ca) + 1 (the text's start),
  // b 1 (ab), c 1 (bc): total 4, 3 types. P1(w) = max(c - 0.5, 0)/4 + 0.5·3/4·1/4.
  // P(b | a) = (2 - 0.5)/2 + 0.5·1/2·P1(b) = 0.75 + 0.25·(0.125 + 0.09375) = 0.8046875.
  const std::vector<int64_t> text = {1, 2, 3, 1, 2};
  KneserNey::Options o;
  o.order = 2;
  o.discount = 0.5;
  KneserNey kn(text, 4, o);
  const int64_t a = 1;
  CHECK(kn.prob(&a, 1, 2) == Approx(0.8046875).epsilon(1e-12));
  CHECK(kn.prob(&a, 1, 3) == Approx(0.25 * 0.21875).epsilon(1e-12));
  CHECK(kn.prob(&a, 0, 1) == Approx(1.5 / 4 + 0.09375).epsilon(1e-12));  // no context: P1(a)
  CHECK(kn.prob(&a, 0, 0) == Approx(0.09375).epsilon(1e-12));            // <unk>: unseen
  // Every context's distribution sums to 1 (seen, unseen and empty contexts).
  for (int64_t h = 0; h < 4; ++h) {
    double s = 0;
    for (int64_t w = 0; w < 4; ++w) s += kn.prob(&h, 1, w);
    CHECK(s == Approx(1.0).epsilon(1e-12));
  }
  // The estimated discount is n1 / (n1 + 2·n2): at the top level 2 bigrams once, 1 twice.
  KneserNey est(text, 4, KneserNey::Options{2, -1});
  CHECK(est.discount(2) == Approx(2.0 / (2 + 2 * 1)));
  // Order 3 on a longer text: still normalised with two characters of context.
  std::vector<int64_t> longer;
  for (int i = 0; i < 200; ++i) longer.push_back(1 + (i * i + i / 3) % 5);
  KneserNey k3(longer, 7, KneserNey::Options{3, -1});
  const int64_t ctx[2] = {2, 5};
  double s = 0;
  for (int64_t w = 0; w < 7; ++w) s += k3.prob(ctx, 2, w);
  CHECK(s == Approx(1.0).epsilon(1e-12));
  CHECK(k3.nats_per_char(longer) < std::log(7.0));
  REQUIRE_THROWS_AS(KneserNey(text, 4, KneserNey::Options{0, -1}), tgx::UserError);
}
