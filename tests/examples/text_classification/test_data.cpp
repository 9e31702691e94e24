// tests/examples/text_classification/test_data.cpp — the fortunes parser (separators,
// overstrikes, empty items, invalid UTF-8), the data set loaders on the committed samples and
// their error messages, and the seeded stratified split.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "text_classification/data.hpp"

#include <filesystem>
#include <fstream>
#include <set>

using namespace tgx::cls;
using Catch::Matchers::Contains;

namespace {
const std::string kFix = std::string(TG_FIXTURES) + "/examples/text_classification";
}

TEST_CASE("fortunes: % separators, overstrikes, empty items", "[text_classification]") {
  std::string text =
      "First fortune\n  spans two lines.\n%\n%\n"
      "_\b_\b_\bn\bn\bno\bot underlined and X\bX bold\n%\n"
      "   \n%\n"
      "100% sure, %% not a separator\n%\nlast without separator";
  std::vector<std::string> items = parse_fortunes(text, "test");
  REQUIRE(items.size() == 4);
  CHECK(items[0] == "First fortune spans two lines.");
  CHECK(items[1] == "not underlined and X bold");
  CHECK(items[2] == "100% sure, %% not a separator");
  CHECK(items[3] == "last without separator");
  CHECK(resolve_overstrikes("a\b_ _\bb") == "a b");
  CHECK(resolve_overstrikes("\b\bq\nx\by") == "q\ny");  // backspace at line start is ignored
  CHECK(resolve_overstrikes("'\be") == "e");
}

TEST_CASE("fortunes: invalid UTF-8 is an error naming the file", "[text_classification]") {
  REQUIRE_THROWS_AS(parse_fortunes("ok\n%\nbad \xFF byte\n", "fortunes/x"), tgx::UserError);
  REQUIRE_THROWS_WITH(parse_fortunes("ok\n%\nbad \xFF byte\n", "fortunes/x"),
                      Contains("fortunes/x") && Contains("UTF-8"));
}

TEST_CASE("data: the committed samples load with their classes", "[text_classification]") {
  Dataset spam = load_spam(kFix + "/spam");
  REQUIRE(spam.examples.size() == 30);
  CHECK(spam.class_names == std::vector<std::string>{"ham", "spam"});
  int64_t n_spam = 0;
  for (const Example& e : spam.examples) n_spam += e.label;
  CHECK(n_spam == 15);
  CHECK(spam.examples.front().text.find('\n') != std::string::npos);  // subject line first
  Dataset fort = load_fortunes(kFix + "/fortunes");
  CHECK(fort.class_names.size() == 7);
  CHECK(fort.examples.size() == 56);
}

TEST_CASE("data: missing data and unknown names are user errors", "[text_classification]") {
  REQUIRE_THROWS_WITH(load_dataset("poems", ""),
                      Contains("unknown data set") && Contains("spam, fortunes"));
  REQUIRE_THROWS_WITH(load_dataset("spam", "/nonexistent/dir"),
                      Contains("/nonexistent/dir") && Contains("npm install"));
  REQUIRE_THROWS_WITH(load_dataset("fortunes", "/nonexistent/dir"),
                      Contains("apt-get install fortunes"));
  REQUIRE_THROWS_WITH(load_spam(kFix + "/fortunes"), Contains("missing folder easy-ham-1"));
  namespace fs = std::filesystem;
  std::string dir = std::string(TG_BINARY_DIR) + "/tmp_cls_data";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* c :
       {"computers", "definitions", "people", "politics", "science", "songs-poems", "work"})
    std::ofstream(dir + "/" + c) << "%\n  \n%\n";
  REQUIRE_THROWS_WITH(load_fortunes(dir), Contains("no fortunes found"));
  std::ofstream(dir + "/work") << "fine\n%\nbad \xC3\x28\n";
  REQUIRE_THROWS_WITH(load_fortunes(dir), Contains(dir + "/work") && Contains("UTF-8"));
  fs::remove(dir + "/work");
  REQUIRE_THROWS_WITH(load_fortunes(dir), Contains(dir + "/work") && Contains("apt-get"));
  for (const char* f : {"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"})
    fs::create_directories(dir + "/" + f);
  REQUIRE_THROWS_WITH(load_spam(dir), Contains("no emails"));
  fs::remove_all(dir);
}

TEST_CASE("split: deterministic, stratified, disjoint", "[text_classification]") {
  std::vector<int64_t> labels;
  for (int i = 0; i < 100; ++i) labels.push_back(0);
  for (int i = 0; i < 50; ++i) labels.push_back(1);
  for (int i = 0; i < 2; ++i) labels.push_back(2);  // too small to split: all in train
  Split a = stratified_split(labels, 3, 7), b = stratified_split(labels, 3, 7);
  CHECK(a.train == b.train);
  CHECK(a.val == b.val);
  CHECK(a.test == b.test);
  Split c = stratified_split(labels, 3, 8);
  CHECK(c.test != a.test);
  auto count = [&](const std::vector<int64_t>& idx, int64_t cls) {
    int64_t n = 0;
    for (int64_t i : idx) n += labels[i] == cls;
    return n;
  };
  CHECK(count(a.test, 0) == 10);
  CHECK(count(a.test, 1) == 5);
  CHECK(count(a.val, 0) == 10);
  CHECK(count(a.val, 1) == 5);
  CHECK(count(a.train, 2) == 2);
  std::set<int64_t> all(a.train.begin(), a.train.end());
  all.insert(a.val.begin(), a.val.end());
  all.insert(a.test.begin(), a.test.end());
  CHECK(all.size() == labels.size());
  CHECK(a.train.size() + a.val.size() + a.test.size() == labels.size());
}
