// tests/ops/test_op_table.cpp — docs/ops.md (written by tools/op_table.py) has a row for every op
// the public headers declare and none for an op they do not: a new op without its row, or a row
// left for a removed op, fails here naming it (then run /usr/bin/python3 tools/op_table.py).
// The headers are read with a scan of their own, not the generator's: every function declared
// at namespace level in tg (or a public namespace inside it, named with its prefix: func::vjp)
// that returns something other than a plain value (void, bool, Shape, numbers) is an op, whatever
// its return type (Tensor, ValuesIndices, a pair, a new struct), so an op of a kind the
// generator does not know still fails here.
#include "helpers.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {
const std::string kRoot = std::string(TG_FIXTURES) + "/../../";  // the source tree

std::string source(const std::string& rel) {
  std::ifstream f(kRoot + rel);
  if (!f) FAIL("cannot read " << kRoot + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The public op headers: the four, and ops/pending_*.hpp (declarations waiting to be folded
// into ops.hpp) while there are any.
std::vector<std::string> public_headers() {
  std::vector<std::string> out{"ops/ops.hpp", "ops/index/index.hpp", "ops/attention/attention.hpp",
                               "ops/functional/functional.hpp"};
  std::vector<std::string> pending;
  for (const auto& e : std::filesystem::directory_iterator(kRoot + "ops")) {
    const std::string n = e.path().filename().string();
    if (n.rfind("pending_", 0) == 0 && n.size() > 12 && n.substr(n.size() - 4) == ".hpp")
      pending.push_back("ops/" + n);
  }
  std::sort(pending.begin(), pending.end());
  out.insert(out.end(), pending.begin(), pending.end());
  return out;
}

// The text without comments, string and character contents, and preprocessor lines.
std::string code_only(const std::string& t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    const bool line_start = i == 0 || t[i - 1] == '\n';
    if (t.compare(i, 2, "//") == 0 ||
        (line_start && t.find_first_not_of(" \t", i) != std::string::npos &&
         t[t.find_first_not_of(" \t", i)] == '#')) {
      i = std::min(t.find('\n', i), t.size()) - 1;
    } else if (t.compare(i, 2, "/*") == 0) {
      i = std::min(t.find("*/", i + 2), t.size() - 2) + 1;
    } else if (t[i] == '"' || t[i] == '\'') {
      const char q = t[i];
      for (++i; i < t.size() && t[i] != q; ++i) i += t[i] == '\\';
      out += "\"\"";
    } else {
      out += t[i];
    }
  }
  return out;
}

// The op a statement at namespace level declares ("" for none); ns: the enclosing namespaces.
std::string op_of(const std::string& stmt, const std::vector<std::string>& ns) {
  if (ns.empty() || ns[0] != "tg") return "";
  for (const std::string& n : ns)
    if (n == "detail" || n == "indexing") return "";
  static const std::regex fn(
      R"(^\s*(?:template\s*<[^;{]*?>\s*)?(?:(?:inline|static|constexpr)\s+)*)"
      R"(([A-Za-z_][\w:<>, ]*?[\w>*&])\s*([a-z_]\w*)\s*\()");
  std::smatch m;
  if (!std::regex_search(stmt, m, fn)) return "";
  static const std::set<std::string> values{"void",
                                            "bool",
                                            "Shape",
                                            "int64_t",
                                            "int",
                                            "size_t",
                                            "double",
                                            "float",
                                            "DType",
                                            "Device",
                                            "std::string",
                                            "const char*",
                                            "std::vector<int64_t>"};
  std::string ret = std::regex_replace(m[1].str(), std::regex(R"(\s+)"), " ");
  const std::string first = ret.substr(0, ret.find(' '));
  if (values.count(ret) || first == "using" || first == "struct" || first == "class" ||
      first == "enum" || first == "return")
    return "";
  std::string name;
  for (size_t i = 1; i < ns.size(); ++i) name += ns[i] + "::";
  return name + m[2].str();
}

// Every op a header declares, in order: a scan of its braces that keeps the statements at
// namespace level (a '{' inside parentheses is a default argument, not a body).
std::vector<std::string> declared_ops(const std::string& header_text) {
  struct Scope {
    bool ns;
    std::vector<std::string> names;
  };
  std::vector<Scope> stack;
  std::vector<std::string> found;
  std::string stmt;
  int paren = 0, blocks = 0;
  auto names = [&] {
    std::vector<std::string> n;
    for (const Scope& s : stack) n.insert(n.end(), s.names.begin(), s.names.end());
    return n;
  };
  for (char c : code_only(header_text)) {
    if (blocks > 0) {  // inside a function or class body: only its braces count
      blocks += (c == '{') - (c == '}');
      if (blocks == 0) stack.pop_back();
      continue;
    }
    paren += (c == '(') - (c == ')');
    std::smatch m;
    if (c == '{' && paren == 0) {
      static const std::regex ns_re(R"(^\s*(?:inline\s+)?namespace\s+([\w:]+)\s*$)");
      if (std::regex_match(stmt, m, ns_re)) {
        Scope s{true, {}};
        std::stringstream parts(std::regex_replace(m[1].str(), std::regex("::"), " "));
        for (std::string p; parts >> p;) s.names.push_back(p);
        stack.push_back(s);
      } else {
        found.push_back(op_of(stmt, names()));
        stack.push_back({false, {}});
        blocks = 1;
      }
      stmt.clear();
    } else if ((c == ';' || c == '}') && paren == 0) {
      if (c == ';') found.push_back(op_of(stmt, names()));
      if (c == '}' && !stack.empty()) stack.pop_back();
      stmt.clear();
    } else {
      stmt += c;
    }
  }
  std::vector<std::string> out;
  for (const std::string& f : found)
    if (!f.empty() && std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}
}  // namespace

TEST_CASE("the op scan finds ops of every return type and skips helpers, bodies and comments",
          "[docs]") {
  const std::string header = R"(#pragma once
#include "autograd/tensor.hpp"
namespace tg {
// Tensor commented(const Tensor& x);  {
Tensor plain(const Tensor& x, std::vector<int64_t> dims = {}, Site site = Site::here());
struct ValuesIndices {
  Tensor values, indices;
  Tensor member(int k) const;
};
ValuesIndices newkind(const Tensor& x, int64_t k,
                      bool flag = true);
std::pair<Tensor, Tensor> pairs(const Tensor& x);
Shape helper_shape(const Shape& a);
void switch_on(bool on);
namespace detail {
Tensor internal(const Tensor& x);
}  // namespace detail
template <size_t N>
std::array<Tensor, N> parts(const Tensor& x) {
  Tensor inside(const Tensor& y);
  return {};
}
Tensor& inplace_(const Tensor& x, const char* s = "{not a brace");
}  // namespace tg
namespace tg::func {
std::vector<std::vector<Tensor>> hess(const Fn& fn);
}
namespace other {
Tensor elsewhere(const Tensor& x);
}
)";
  REQUIRE(declared_ops(header) ==
          std::vector<std::string>{"plain", "newkind", "pairs", "parts", "inplace_", "func::hess"});
}

TEST_CASE("docs/ops.md lists every op the headers declare, and only those", "[docs]") {
  std::vector<std::pair<std::string, std::string>> ops;  // (op, header)
  for (const std::string& h : public_headers())
    for (const std::string& n : declared_ops(source(h)))
      if (std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == n; }) ==
          ops.end())
        ops.emplace_back(n, h);
  REQUIRE(ops.size() > 150);
  const std::string doc = source("docs/ops.md");
  const std::regex row(R"(^\| `([a-z_0-9:]+)` \|)", std::regex::multiline);
  std::vector<std::string> rows;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it)
    rows.push_back((*it)[1]);
  for (const auto& [n, h] : ops)
    if (std::find(rows.begin(), rows.end(), n) == rows.end())
      FAIL_CHECK("docs/ops.md has no row for `" << n << "`, declared in " << h
                                                << ": run /usr/bin/python3 tools/op_table.py");
  for (const std::string& n : rows)
    if (std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == n; }) ==
        ops.end())
      FAIL_CHECK("docs/ops.md has a row for `" << n << "`, which no public header declares: run "
                                               << "/usr/bin/python3 tools/op_table.py");
  std::set<std::string> seen;
  for (const std::string& n : rows) CHECK(seen.insert(n).second);  // no op twice
}
