// tests/examples/translation/test_numbers.cpp — the number-word generators against Python's
// num2words (every row of the committed fixture, both languages), their range errors, and the
// word tokeniser's round trip.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "translation/numbers.hpp"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace tgx::translation;

namespace {

struct Row {
  int64_t n;
  std::string en, fr;
};

std::vector<Row> read_fixture() {
  std::string path = std::string(TG_FIXTURES) + "/examples/translation/num2words.tsv";
  std::ifstream f(path);
  INFO("fixture " << path);
  REQUIRE(f.good());
  std::vector<Row> rows;
  std::string line;
  std::getline(f, line);  // header
  REQUIRE(line == "number\tenglish\tfrench");
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    Row r;
    std::string num;
    std::getline(ss, num, '\t');
    std::getline(ss, r.en, '\t');
    std::getline(ss, r.fr, '\t');
    r.n = std::stoll(num);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("translation: number words equal num2words on every fixture row") {
  std::vector<Row> rows = read_fixture();
  REQUIRE(rows.size() >= 2000);
  int bad = 0;
  for (const Row& r : rows) {
    std::string en = english_words(r.n), fr = french_words(r.n);
    if (en != r.en || fr != r.fr) {
      if (++bad <= 10) {
        UNSCOPED_INFO(r.n << ": en '" << en << "' want '" << r.en << "'; fr '" << fr << "' want '"
                          << r.fr << "'");
      }
    }
  }
  CHECK(bad == 0);
  CHECK(english_words(71402) == "seventy-one thousand, four hundred and two");
  CHECK(french_words(71402) == "soixante et onze mille quatre cent deux");
}

TEST_CASE("translation: number words reject numbers out of range") {
  REQUIRE_THROWS_AS(english_words(-1), tgx::UserError);
  REQUIRE_THROWS_AS(french_words(-5), tgx::UserError);
  REQUIRE_THROWS_AS(english_words(1000000), tgx::UserError);
  REQUIRE_THROWS_WITH(french_words(1000000), Catch::Contains("1000000 is out of range"));
  CHECK(english_words(999999).size() > 0);
}

TEST_CASE("translation: word tokens round-trip through detokenize") {
  std::vector<std::string> t = tokenize_words("seventy-one thousand, four hundred and two");
  CHECK(t == std::vector<std::string>{"seventy", "-", "one", "thousand", ",", "four", "hundred",
                                      "and", "two"});
  for (int64_t n : {0, 21, 71, 80, 1100, 71402, 200001, 999999}) {
    for (const std::string& s : {english_words(n), french_words(n)}) {
      CHECK(detokenize_words(tokenize_words(s)) == s);
    }
  }
  CHECK(tokenize_words("  ").empty());
  CHECK(detokenize_words({}) == "");
}
