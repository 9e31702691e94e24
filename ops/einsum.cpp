// ops/einsum.cpp — einsum (torch.einsum's equation language: letters, an optional "->" output,
// "..." for broadcast dims, repeated letters for diagonals), composed from recorded ops, so its
// gradient is theirs: per operand the diagonals (diagonal) and the letters only it holds (sum),
// then operands contracted left to right, each pair as one batched matmul: (batch, kept of A,
// summed) · (batch, summed, kept of B), finally permuted to the output's order. Letters of one
// size, or 1 (broadcast). Deliberately not here: contraction-order optimisation (opt_einsum).
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>

namespace tg {
using namespace detail;

namespace {
constexpr const char* kOp = "einsum";

// An operand and the label of each of its dims.
struct Term {
  Tensor t;
  std::string labels;
};

[[noreturn]] void fail(const std::string& eq, const std::string& why) {
  throw Error(fmt::format("{}: \"{}\": {}", kOp, eq, why));
}

// Replaces "..." in each input spec with labels from 'A'..: the ellipsis of operand i covers
// ndim - letters dims, right-aligned across operands (broadcast dims share labels).
std::vector<std::string> expand_ellipsis(const std::string& eq, std::vector<std::string> specs,
                                         const std::vector<Tensor>& ops, std::string& out,
                                         bool explicit_out) {
  int64_t most = 0;
  std::vector<int64_t> count(specs.size(), 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    const size_t at = specs[i].find("...");
    const int64_t letters =
        static_cast<int64_t>(specs[i].size()) - (at == std::string::npos ? 0 : 3);
    if (at == std::string::npos) {
      if (letters != ops[i].dim())
        fail(eq, fmt::format("operand {} {} has {} dims but its subscripts name {}", i,
                             shape_str(ops[i].shape()), ops[i].dim(), letters));
      continue;
    }
    count[i] = ops[i].dim() - letters;
    if (count[i] < 0)
      fail(eq, fmt::format("operand {} {} has fewer dims than its subscripts name", i,
                           shape_str(ops[i].shape())));
    most = std::max(most, count[i]);
  }
  std::string ell;  // the labels of the broadcast dims, outermost first
  for (int64_t k = 0; k < most; ++k) ell += static_cast<char>(1 + k);  // never a letter
  for (size_t i = 0; i < specs.size(); ++i) {
    const size_t at = specs[i].find("...");
    if (at != std::string::npos) specs[i].replace(at, 3, ell.substr(ell.size() - count[i]));
  }
  const size_t at = out.find("...");
  if (explicit_out && at != std::string::npos) out.replace(at, 3, ell);
  if (!explicit_out) out = ell + out;
  return specs;
}

// Takes the diagonal of every letter repeated within t's labels (the diagonal's dim goes last).
void diagonals(Term& a) {
  for (;;) {
    size_t i = 0, j = std::string::npos;
    for (; i < a.labels.size() && j == std::string::npos; ++i)
      j = a.labels.find(a.labels[i], i + 1);
    if (j == std::string::npos) return;
    --i;
    const char c = a.labels[i];
    a.t = diagonal(a.t, 0, static_cast<int64_t>(i), static_cast<int64_t>(j));
    std::string rest;
    for (size_t k = 0; k < a.labels.size(); ++k)
      if (k != i && k != j) rest += a.labels[k];
    a.labels = rest + c;
  }
}

// Sums the dims whose labels are not in `keep`.
void sum_out(Term& a, const std::string& keep) {
  std::vector<int64_t> dims;
  std::string rest;
  for (size_t k = 0; k < a.labels.size(); ++k)
    if (keep.find(a.labels[k]) == std::string::npos)
      dims.push_back(static_cast<int64_t>(k));
    else
      rest += a.labels[k];
  if (dims.empty()) return;
  a.t = sum(a.t, dims);
  a.labels = rest;
}

// a permuted so its labels read `order`.
Tensor arrange(const Term& a, const std::string& order) {
  std::vector<int64_t> p;
  for (char c : order) p.push_back(static_cast<int64_t>(a.labels.find(c)));
  return permute(a.t, p);
}

// a · b over their shared labels; `keep` the labels needed later (the output, other operands).
Term contract(const Term& a, const Term& b, const std::string& keep,
              std::map<char, int64_t>& size) {
  std::string batch, summed, ka, kb;
  for (char c : a.labels) {
    const bool inb = b.labels.find(c) != std::string::npos;
    if (inb && keep.find(c) != std::string::npos)
      batch += c;
    else if (inb)
      summed += c;
    else
      ka += c;
  }
  for (char c : b.labels)
    if (a.labels.find(c) == std::string::npos) kb += c;
  auto dims_of = [&](const std::string& ls) {
    Shape s;
    for (char c : ls) s.push_back(size[c]);
    return s;
  };
  auto block = [&](const Term& t, const std::string& first, const std::string& second,
                   const std::string& third) {
    Tensor x = arrange(t, first + second + third);
    Shape full = dims_of(first + second + third);
    x = expand(x, full);  // broadcast size-1 dims
    auto prod_of = [&](const std::string& ls) {
      int64_t p = 1;
      for (char c : ls) p *= size[c];
      return p;
    };
    return reshape(x, {prod_of(first), prod_of(second), prod_of(third)});
  };
  Tensor A = block(a, batch, ka, summed), B = block(b, batch, summed, kb);
  Tensor r = matmul(A, B);  // (batch, ka, kb)
  Term out{reshape(r, dims_of(batch + ka + kb)), batch + ka + kb};
  return out;
}
}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands, Site site) {
  SiteScope scope(site);
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  if (operands.empty()) fail(equation, "no operands");
  for (size_t i = 0; i < operands.size(); ++i) check_defined(operands[i], kOp, "operand");
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  const std::string lhs = eq.substr(0, arrow);
  std::string out = explicit_out ? eq.substr(arrow + 2) : "";
  std::vector<std::string> specs;
  for (size_t s = 0;;) {
    const size_t comma = lhs.find(',', s);
    specs.push_back(lhs.substr(s, comma == std::string::npos ? std::string::npos : comma - s));
    if (comma == std::string::npos) break;
    s = comma + 1;
  }
  if (specs.size() != operands.size())
    fail(equation,
         fmt::format("{} subscript groups for {} operands", specs.size(), operands.size()));
  for (const std::string& s : specs)
    for (size_t k = 0; k < s.size(); ++k)
      if (!std::isalpha(static_cast<unsigned char>(s[k])) && s.compare(k, 3, "...") != 0 &&
          !(k > 0 && s.compare(k - 1, 3, "...") == 0) &&
          !(k > 1 && s.compare(k - 2, 3, "...") == 0))
        fail(equation, fmt::format("'{}' is not a letter or \"...\"", s[k]));
  if (!explicit_out) {  // implicit: the letters that appear once, in alphabetical order
    std::map<char, int> seen;
    for (const std::string& s : specs)
      for (char c : s)
        if (std::isalpha(static_cast<unsigned char>(c))) ++seen[c];
    for (const auto& [c, n] : seen)
      if (n == 1) out += c;
  }
  specs = expand_ellipsis(equation, specs, operands, out, explicit_out);
  // every letter's size: equal, or 1 (broadcast)
  std::map<char, int64_t> size;
  std::vector<Term> terms;
  for (size_t i = 0; i < specs.size(); ++i) {
    terms.push_back({operands[i], specs[i]});
    for (size_t k = 0; k < specs[i].size(); ++k) {
      const char c = specs[i][k];
      const int64_t n = operands[i].size(static_cast<int64_t>(k));
      auto it = size.find(c);
      if (it == size.end() || it->second == 1)
        size[c] = n;
      else if (n != 1 && n != it->second)
        fail(equation, fmt::format("letter '{}' is {} in operand {} {} but {} before", c, n, i,
                                   shape_str(operands[i].shape()), it->second));
    }
  }
  for (char c : out) {
    if (size.find(c) == size.end())
      fail(equation, fmt::format("output letter '{}' names no input dim", c));
    if (std::count(out.begin(), out.end(), c) > 1)
      fail(equation, fmt::format("output letter '{}' appears twice", c));
  }
  // the labels wanted after operand i: the output's and every later operand's
  auto later = [&](size_t i) {
    std::string k = out;
    for (size_t j = i + 1; j < terms.size(); ++j) k += terms[j].labels;
    return k;
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    diagonals(terms[i]);
    std::string keep = out;
    for (size_t j = 0; j < terms.size(); ++j)
      if (j != i) keep += specs[j];
    sum_out(terms[i], keep);
  }
  Term acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    acc = contract(acc, terms[i], later(i), size);
    sum_out(acc, later(i));
  }
  sum_out(acc, out);
  Tensor r = arrange(acc, out);
  Shape full;
  for (char c : out) full.push_back(size[c]);
  return r.shape() == full ? r : expand(r, full).contiguous();
}

}  // namespace tg
