// tests/examples/translation/test_data.cpp — the vocabulary, the numbers task's splits, the
// dictd readers on a committed 39-entry sample of freedict-eng-fra (index + gzip'd dict cut from
// Debian's dict-freedict-eng-fra, with a 00-database entry and a repeated headword) and on
// malformed files written here, and chrF against hand-computed values.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "common/metrics.hpp"
#include "common/text.hpp"
#include "translation/data.hpp"
#include "translation/vocab.hpp"

#include <filesystem>
#include <fstream>
#include <set>

using namespace tgx::translation;
using Catch::Contains;

namespace {

const std::string kSample = std::string(TG_FIXTURES) + "/examples/translation/freedict";

std::string scratch(const std::string& name) {
  std::string dir = std::string(TG_BINARY_DIR) + "/test-translation-data/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("translation: vocab encodes, decodes, names unknown tokens and round-trips JSON") {
  Vocab v = Vocab::build({{"b", "a"}, {"c", "a"}});
  REQUIRE(v.size() == 6);
  CHECK(v.tokens() == std::vector<std::string>{"<pad>", "<bos>", "<eos>", "a", "b", "c"});
  CHECK(v.encode({"c", "a"}, "x") == std::vector<int64_t>{5, 3});
  CHECK(v.decode({1, 5, 3, 2, 4}) == std::vector<std::string>{"c", "a"});
  REQUIRE_THROWS_WITH(v.encode({"a", "zz", "q", "zz"}, "--translate"),
                      Contains("--translate: unknown tokens: 'zz', 'q'"));
  REQUIRE_THROWS_AS(v.encode({"<eos>"}, "x"), tgx::UserError);
  CHECK(Vocab::from_json(v.to_json(), "v") == v);
  REQUIRE_THROWS_WITH(Vocab::from_json("[1, 2", "vocab.json"), Contains("vocab.json"));
  REQUIRE_THROWS_WITH(Vocab::from_json(R"(["<pad>","<eos>","<bos>"])", "vocab.json"),
                      Contains("misplaced"));
}

TEST_CASE("translation: numbers task keeps held-out and validation numbers out of training") {
  NumbersOptions o;
  o.seed = 7;
  o.train_size = 3000;
  o.valid_size = 300;
  o.heldout_size = 400;
  Dataset d = make_numbers_dataset(o);
  REQUIRE(d.train.size() == 3000);
  REQUIRE(d.valid.size() == 300);
  REQUIRE(d.heldout.size() == 400);
  std::set<std::string> reserved;
  for (const auto& e : d.heldout) reserved.insert(e.src_text);
  for (const auto& e : d.valid) reserved.insert(e.src_text);
  CHECK(reserved.size() == 700);
  for (const auto& e : d.train) REQUIRE(reserved.count(e.src_text) == 0);
  Dataset again = make_numbers_dataset(o);
  CHECK(again.heldout[17].tgt_text == d.heldout[17].tgt_text);
  CHECK(again.train[2999].src == d.train[2999].src);
  size_t small = 0;  // digit counts are drawn uniformly: about a sixth are below 10
  for (const auto& e : d.train) small += e.src.size() == 1 && e.src_text.size() <= 5;
  CHECK(small > 300);
}

TEST_CASE("translation: dictd base64 numbers") {
  CHECK(dictd_base64("A", "x") == 0);
  CHECK(dictd_base64("B", "x") == 1);
  CHECK(dictd_base64("/", "x") == 63);
  CHECK(dictd_base64("BA", "x") == 64);
  CHECK(dictd_base64("BVBC", "x") == ((1 * 64 + 21) * 64 + 1) * 64 + 2);
  REQUIRE_THROWS_WITH(dictd_base64("B*C", "f.index line 3 offset"),
                      Contains("f.index line 3 offset: 'B*C'"));
  REQUIRE_THROWS_AS(dictd_base64("", "x"), tgx::UserError);
  REQUIRE_THROWS_WITH(dictd_base64("//////////////", "x"), Contains("too large"));
}

TEST_CASE("translation: first translation of a dictd entry") {
  CHECK(first_translation("cat /kæt/\n1. mégère, peau de vache\n2. chat\n") == "mégère");
  CHECK(first_translation("apple /æpl/\npomme\n") == "pomme");
  CHECK(first_translation("x /y/\n\n  12. a  b , c\n") == "a b");
  CHECK(first_translation("lonely /x/\n") == "");
}

TEST_CASE("translation: freedict sample loads (skipping 00-database and repeats)") {
  auto idx = parse_dictd_index(tgx::read_file(kSample + "/freedict-eng-fra.index"), "sample");
  REQUIRE(idx.size() == 39);
  CHECK(idx[0].headword == "00databaseshort");
  CHECK(idx[1].headword == "a");
  CHECK(idx[1].offset == 46);
  auto pairs = load_freedict_pairs(kSample + "/freedict-eng-fra.index",
                                   kSample + "/freedict-eng-fra.dict.dz");
  REQUIRE(pairs.size() == 37);
  CHECK(pairs[0] == std::make_pair(std::string("a"), std::string("à")));
  CHECK(pairs[1].second == "abdiquer");
  CHECK(pairs[3].second == "pomme");
  FreedictOptions o;
  o.dir = kSample;
  o.seed = 3;
  Dataset d = make_freedict_dataset(o);
  CHECK(d.level == Level::Char);
  CHECK(d.train.size() + d.valid.size() + d.heldout.size() == 37);
  CHECK(d.heldout.size() == 3);
  CHECK(d.valid.size() == 1);
}

TEST_CASE("translation: malformed or missing dictd files are errors naming the file") {
  std::string dir = scratch("malformed");
  std::string dict = dir + "/d.dict";
  write(dict, "cat /k/\nchat\ndog /d/\nchien\n");  // plain text: zlib reads it as it is
  write(dir + "/good.index", "cat\tA\tO\ndog\tO\tM\n");
  auto pairs = load_freedict_pairs(dir + "/good.index", dict);
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[1] == std::make_pair(std::string("dog"), std::string("chien")));

  write(dir + "/bad64.index", "cat\tA\tO\ndog\tO!\tM\n");
  REQUIRE_THROWS_WITH(load_freedict_pairs(dir + "/bad64.index", dict),
                      Contains("bad64.index line 2 offset") && Contains("bad character '!'"));
  write(dir + "/fields.index", "cat\tA\n");
  REQUIRE_THROWS_WITH(load_freedict_pairs(dir + "/fields.index", dict),
                      Contains("fields.index line 1"));
  write(dir + "/past.index", "cat\tA\tO\ndog\tO\tZZ\n");
  REQUIRE_THROWS_WITH(load_freedict_pairs(dir + "/past.index", dict),
                      Contains("past.index: entry 'dog'") && Contains("runs past the end"));
  REQUIRE_THROWS_WITH(load_freedict_pairs(dir + "/none.index", dict),
                      Contains("none.index") && Contains("apt-get install dict-freedict-eng-fra"));
  REQUIRE_THROWS_WITH(
      load_freedict_pairs(dir + "/good.index", dir + "/none.dict.dz"),
      Contains("none.dict.dz") && Contains("apt-get install dict-freedict-eng-fra"));
  write(dir + "/latin1.dict", "cat /k/\nchat\xe9\ndog /d/\nchien\n");
  REQUIRE_THROWS_WITH(load_freedict_pairs(dir + "/good.index", dir + "/latin1.dict"),
                      Contains("latin1.dict (entry 'cat')") && Contains("UTF-8"));
  FreedictOptions o;
  o.dir = dir + "/nowhere";
  REQUIRE_THROWS_WITH(make_freedict_dataset(o), Contains("sudo apt-get install"));
}

TEST_CASE("translation: chrF against hand-computed values") {
  CHECK(tgx::chrf({"ab"}, {"ab"}) == Approx(100.0));
  // 1-grams: P = R = 1/2; 2-grams: P = R = 0; two effective orders -> P = R = 1/4 -> 25.
  CHECK(tgx::chrf({"ab"}, {"ac"}) == Approx(25.0));
  // 1-grams P 2/3 R 1; 2-grams P 1/2 R 1; the 3-gram "abc" has no reference 3-grams, so it
  // adds 0 to P and the effective order stays 2: P = 7/12, R = 1, F2 = 5PR / (4P + R) = 0.875.
  CHECK(tgx::chrf({"abc"}, {"ab"}) == Approx(87.5));
}
