// ops/shape/rearrange.cpp — einops-style rearrange: "b t (h d) -> b h t d" with {{"h", NH}}.
//
// Both sides of the pattern are parsed into groups of named axes ("(h d)" is one group, "1" and
// "()" are anonymous size-1 groups); unknown axis sizes are inferred from the input shape (at most
// one per group). The op is then reshape to the elementary axes, permute, reshape to the output
// grouping — composed from reshape and permute, so it needs no backward of its own.
// Deliberately not here: the ellipsis "...", reductions and repeats (einops' reduce/repeat).
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace tg {
using namespace detail;

namespace {
struct Group {
  std::vector<std::string> tokens;  // as written, "1" included
  std::vector<std::string> axes;    // named axes only
  bool paren = false;
  std::string str() const {
    std::string s;
    for (const auto& t : tokens) s += (s.empty() ? "" : " ") + t;
    return paren ? "(" + s + ")" : s;
  }
};
using Side = std::vector<Group>;

// Error context: every message names the pattern and the input shape.
struct Ctx {
  const std::string& pattern;
  const Shape& shape;
  template <typename... Args>
  [[noreturn]] void fail(const char* fmt_str, Args&&... args) const {
    throw Error(fmt::format("rearrange: pattern \"{}\" on input {}: {}", pattern, shape_str(shape),
                            fmt::format(fmt::runtime(fmt_str), std::forward<Args>(args)...)));
  }
};

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

Side parse_side(const std::string& s, const char* which, const Ctx& c) {
  Side side;
  Group cur;
  bool open = false;
  for (size_t i = 0; i < s.size();) {
    const char ch = s[i];
    if (std::isspace(static_cast<unsigned char>(ch))) {
      ++i;
    } else if (ch == '(') {
      if (open) c.fail("nested parentheses on the {} side", which);
      open = true;
      cur = Group{{}, {}, true};
      ++i;
    } else if (ch == ')') {
      if (!open) c.fail("unbalanced ')' on the {} side", which);
      open = false;
      side.push_back(cur);
      ++i;
    } else if (ch == '.') {
      c.fail("the ellipsis \"...\" is not supported");
    } else if (is_ident_char(ch)) {
      size_t j = i;
      while (j < s.size() && is_ident_char(s[j])) ++j;
      std::string tok = s.substr(i, j - i);
      i = j;
      bool anon = std::isdigit(static_cast<unsigned char>(tok[0]));
      if (anon && tok != "1")
        c.fail("axis \"{}\" on the {} side: only the anonymous axis 1 is supported", tok, which);
      Group& g = open ? cur : side.emplace_back();
      g.tokens.push_back(tok);
      if (!anon) g.axes.push_back(tok);
    } else {
      c.fail("unexpected character '{}' on the {} side", ch, which);
    }
  }
  if (open) c.fail("unbalanced '(' on the {} side", which);
  return side;
}

// Named axes of a side in order; each may appear once.
std::vector<std::string> axis_names(const Side& side, const char* which, const Ctx& c) {
  std::vector<std::string> names;
  for (const Group& g : side)
    for (const std::string& a : g.axes) {
      if (std::find(names.begin(), names.end(), a) != names.end())
        c.fail("axis \"{}\" is repeated on the {} side", a, which);
      names.push_back(a);
    }
  return names;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Fills `known` with the size of every left axis, inferring at most one unknown per group.
void infer_sizes(const Side& left, const Ctx& c, std::map<std::string, int64_t>& known) {
  for (size_t i = 0; i < left.size(); ++i) {
    const Group& g = left[i];
    const int64_t dim = c.shape[i];
    int64_t prod = 1;
    std::vector<std::string> unknown;
    for (const std::string& a : g.axes) {
      auto it = known.find(a);
      if (it == known.end())
        unknown.push_back(a);
      else
        prod *= it->second;
    }
    if (unknown.size() > 1)
      c.fail(
          "cannot infer the sizes of {} axes in group {} (dim {} of size {}): give all but one "
          "in sizes",
          unknown.size(), g.str(), i, dim);
    if (unknown.size() == 1) {
      if (dim % prod != 0)
        c.fail("group {} (dim {} of size {}) is not divisible by the known sizes' product {}",
               g.str(), i, dim, prod);
      known[unknown[0]] = dim / prod;
    } else if (prod != dim) {
      c.fail("group {} (dim {}) has size {} but its axis sizes multiply to {}", g.str(), i, dim,
             prod);
    }
  }
}
}  // namespace

Tensor rearrange(const Tensor& x, const std::string& pattern,
                 const std::vector<std::pair<std::string, int64_t>>& sizes, Site site) {
  SiteScope scope(site);
  check_defined(x, "rearrange", "input");
  const Ctx c{pattern, x.shape()};
  const size_t arrow = pattern.find("->");
  if (arrow == std::string::npos || pattern.find("->", arrow + 2) != std::string::npos)
    c.fail("expected exactly one \"->\"");
  const Side left = parse_side(pattern.substr(0, arrow), "left", c);
  const Side right = parse_side(pattern.substr(arrow + 2), "right", c);
  const std::vector<std::string> lnames = axis_names(left, "left", c);
  const std::vector<std::string> rnames = axis_names(right, "right", c);
  for (const std::string& a : rnames)
    if (!contains(lnames, a))
      c.fail("axis \"{}\" on the right side does not appear on the left", a);
  for (const std::string& a : lnames)
    if (!contains(rnames, a))
      c.fail("axis \"{}\" on the left side is missing on the right (rearrange cannot reduce)", a);
  std::map<std::string, int64_t> known;
  for (const auto& [name, size] : sizes) {
    if (!contains(lnames, name))
      c.fail("a size is given for axis \"{}\", which is not in the pattern", name);
    if (size <= 0) c.fail("the size of axis \"{}\" must be positive, got {}", name, size);
    known[name] = size;
  }
  if (static_cast<size_t>(x.dim()) != left.size())
    throw Error(fmt::format("rearrange: pattern \"{}\" expects {} dims, got {}", pattern,
                            left.size(), shape_str(x.shape())));
  infer_sizes(left, c, known);

  // x (left groups) -> (left axes) -> permuted (right axes) -> (right groups)
  Shape elem;
  for (const std::string& a : lnames) elem.push_back(known[a]);
  std::vector<int64_t> perm;
  bool identity = true;
  for (const std::string& a : rnames) {
    perm.push_back(std::find(lnames.begin(), lnames.end(), a) - lnames.begin());
    identity = identity && perm.back() == static_cast<int64_t>(perm.size()) - 1;
  }
  Shape out_shape;
  for (const Group& g : right) {
    int64_t prod = 1;
    for (const std::string& a : g.axes) prod *= known[a];
    out_shape.push_back(prod);
  }
  Tensor t = reshape(x, elem);
  if (!identity) t = permute(t, perm);
  return reshape(t, out_shape);
}

}  // namespace tg
