// tests/ops/test_op_table.cpp — docs/ops.md (written by tools/op_table.py) names exactly the ops
// that ops/ops.hpp and ops/attention.hpp declare, in their order: a new op without its row, or a
// row left for a removed op, fails here (then run /usr/bin/python3 tools/op_table.py).
#include "helpers.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {
// The source tree, from the fixtures folder (tests/fixtures) the build names.
std::string source(const std::string& rel) {
  const std::string path = std::string(TG_FIXTURES) + "/../../" + rel;
  std::ifstream f(path);
  if (!f) FAIL("cannot read " << path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("docs/ops.md lists every op the headers declare, and only those", "[docs]") {
  // the same declaration pattern as tools/op_table.py
  const std::regex decl(
      R"(^(?:template <[^>]*>\s*)?(?:Tensor|std::vector<Tensor>|std::pair<Tensor, Tensor>|)"
      R"(std::array<Tensor, N>|AttentionResult|std::tuple<[^>]*>)\s+([a-z_][a-z_0-9]*)\()",
      std::regex::multiline);
  std::vector<std::string> ops;
  for (const char* h : {"ops/ops.hpp", "ops/attention.hpp"}) {
    const std::string text = source(h);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), decl);
         it != std::sregex_iterator(); ++it) {
      const std::string n = (*it)[1];
      if (n != "sum_to" && n != "to_array" && std::find(ops.begin(), ops.end(), n) == ops.end())
        ops.push_back(n);
    }
  }
  const std::string doc = source("docs/ops.md");
  const std::regex row(R"(^\| `([a-z_0-9]+)` \|)", std::regex::multiline);
  std::vector<std::string> rows;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it)
    rows.push_back((*it)[1]);
  INFO("docs/ops.md is stale: run /usr/bin/python3 tools/op_table.py");
  REQUIRE(ops.size() > 150);
  for (const std::string& n : ops) {
    INFO("declared, no row: " << n);
    CHECK(std::find(rows.begin(), rows.end(), n) != rows.end());
  }
  for (const std::string& n : rows) {
    INFO("a row, not declared: " << n);
    CHECK(std::find(ops.begin(), ops.end(), n) != ops.end());
  }
  REQUIRE(rows == ops);
}
