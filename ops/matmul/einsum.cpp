// ops/matmul/einsum.cpp — einsum (torch.einsum's equation language: letters, an optional "->" output,
// "..." for broadcast dims, repeated letters for diagonals), composed from recorded ops, so its
// gradient is theirs: per operand the diagonals (diagonal) and the letters only it holds (sum),
// then operands contracted left to right, each pair as one batched matmul: (batch, kept of A,
// summed) · (batch, summed, kept of B), finally permuted to the output's order. A letter has one
// size across operands, or 1 there (broadcast); repeated within one operand, its sizes must be
// equal (a diagonal), as PyTorch.
// dtypes: every operand one dtype, as PyTorch. int64 computes in int64 (products wrap modulo 2^64);
// bool computes in int64 too and gives int64 counts when a letter is summed (torch.sum's rule,
// which torch 1.13's einsum follows where it computes: "ij->", "ij,j->j"), bool when none is
// ("ii->i", "i,j->ij", "ij,ij->ij"). torch 1.13 itself refuses bool contractions from inside
// ("bmm" not implemented for 'Bool') and gives bool for an empty one; here they follow the rule.
// Errors name einsum, the equation and every operand's shape. Deliberately not here:
// contraction-order optimisation (opt_einsum).
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// The call, for error messages: every one names the equation and the operands' shapes.
struct Call {
  const std::string& eq;
  const std::vector<Tensor>& ops;
  [[noreturn]] void fail(const std::string& why) const {
    std::vector<std::string> shapes;
    for (const Tensor& t : ops) shapes.push_back(t.defined() ? shape_str(t.shape()) : "undefined");
    const std::string list =
        ops.empty() ? "" : fmt::format(" (operands {})", fmt::join(shapes, ", "));
    throw Error(fmt::format("{}: \"{}\": {}{}", kOp, eq, why, list));
  }
};

// Letters and at most one "..." (PyTorch refuses a second ellipsis and a stray '.').
void check_subscripts(const Call& c, const std::string& s, const std::string& what) {
  const size_t at = s.find("...");
  const std::string rest = at == std::string::npos ? s : s.substr(0, at) + s.substr(at + 3);
  if (rest.find("...") != std::string::npos)
    c.fail(fmt::format("{} \"{}\" has more than one \"...\"", what, s));
  for (char ch : rest) {
    if (ch == '.') c.fail(fmt::format("{} \"{}\" has a '.' that is not part of \"...\"", what, s));
    if (!std::isalpha(static_cast<unsigned char>(ch)))
      c.fail(fmt::format("'{}' is not a letter or \"...\"", ch));
  }
}

// Every operand one dtype and device (torch.einsum's rule: no promotion).
void check_operands(const Call& c) {
  for (const Tensor& t : c.ops)
    if (!t.defined()) c.fail("an operand is undefined");
  std::vector<std::string> dtypes;
  bool same = true;
  for (const Tensor& t : c.ops) {
    dtypes.push_back(dtype_name(t.dtype()));
    same = same && t.dtype() == c.ops[0].dtype() && t.device() == c.ops[0].device();
  }
  if (!same)
    c.fail(
        fmt::format("operands must share one dtype and device, got dtypes {} (convert with .to())",
                    fmt::join(dtypes, ", ")));
}

// Replaces "..." in each input spec with labels from 'A'..: the ellipsis of operand i covers
// ndim - letters dims, right-aligned across operands (broadcast dims share labels).
std::vector<std::string> expand_ellipsis(const Call& c, std::vector<std::string> specs,
                                         std::string& out, bool explicit_out) {
  const std::vector<Tensor>& ops = c.ops;
  int64_t most = 0;
  std::vector<int64_t> count(specs.size(), 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    const size_t at = specs[i].find("...");
    const int64_t letters =
        static_cast<int64_t>(specs[i].size()) - (at == std::string::npos ? 0 : 3);
    if (at == std::string::npos) {
      if (letters != ops[i].dim())
        c.fail(fmt::format("operand {} {} has {} dims but its subscripts name {}", i,
                           shape_str(ops[i].shape()), ops[i].dim(), letters));
      continue;
    }
    count[i] = ops[i].dim() - letters;
    if (count[i] < 0)
      c.fail(fmt::format("operand {} {} has fewer dims than its subscripts name", i,
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

// (B, M, K)·(B, K, N) in int64 (matmul is floating only), wrapping modulo 2^64 as PyTorch's
// integer products (multiplied as uint64, where overflow is defined). CUDA: on CPU copies.
Tensor int_bmm(const Tensor& a, const Tensor& b) {
  if (on_cuda(a)) return int_bmm(a.to(kCPU), b.to(kCPU)).to(a.device());
  const Tensor A = a.contiguous(), B = b.contiguous();
  const int64_t nb = A.size(0), M = A.size(1), K = A.size(2), N = B.size(2);
  Tensor out = zeros({nb, M, N}, kInt64);
  const int64_t *pa = A.data<int64_t>(), *pb = B.data<int64_t>();
  int64_t* po = static_cast<int64_t*>(out.data_ptr());
  for (int64_t q = 0; q < nb; ++q)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        const uint64_t x = static_cast<uint64_t>(pa[(q * M + m) * K + k]);
        const int64_t* row = pb + (q * K + k) * N;
        int64_t* o = po + (q * M + m) * N;
        for (int64_t n = 0; n < N; ++n)
          o[n] =
              static_cast<int64_t>(static_cast<uint64_t>(o[n]) + x * static_cast<uint64_t>(row[n]));
      }
  return out;
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
  Tensor r = A.dtype() == kInt64 ? int_bmm(A, B) : matmul(A, B);  // (batch, ka, kb)
  Term out{reshape(r, dims_of(batch + ka + kb)), batch + ka + kb};
  return out;
}
}  // namespace

namespace {
// The subscripts of each operand and the output (implicit: the letters seen once, sorted), with
// "..." expanded; `out` receives the output's.
std::vector<std::string> parse(const Call& c, const std::string& eq, std::string& out) {
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  const std::string lhs = eq.substr(0, arrow);
  out = explicit_out ? eq.substr(arrow + 2) : "";
  std::vector<std::string> specs;
  for (size_t s = 0;;) {
    const size_t comma = lhs.find(',', s);
    specs.push_back(lhs.substr(s, comma == std::string::npos ? std::string::npos : comma - s));
    if (comma == std::string::npos) break;
    s = comma + 1;
  }
  if (specs.size() != c.ops.size())
    c.fail(fmt::format("{} subscript groups for {} operands", specs.size(), c.ops.size()));
  for (size_t i = 0; i < specs.size(); ++i)
    check_subscripts(c, specs[i], fmt::format("operand {}'s subscripts", i));
  if (explicit_out) check_subscripts(c, out, "the output");
  if (!explicit_out) {
    std::map<char, int> seen;
    for (const std::string& s : specs)
      for (char ch : s)
        if (std::isalpha(static_cast<unsigned char>(ch))) ++seen[ch];
    for (const auto& [ch, n] : seen)
      if (n == 1) out += ch;
  }
  return expand_ellipsis(c, specs, out, explicit_out);
}

// Every letter's size: one size, or 1 in some operands (broadcast); equal within an operand.
std::map<char, int64_t> letter_sizes(const Call& c, const std::vector<std::string>& specs,
                                     const std::string& out) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < specs.size(); ++i) {
    std::map<char, int64_t> own;  // this operand's
    for (size_t k = 0; k < specs[i].size(); ++k) {
      const char ch = specs[i][k];
      const int64_t n = c.ops[i].size(static_cast<int64_t>(k));
      if (own.count(ch) && own[ch] != n)
        c.fail(fmt::format("letter '{}' is repeated in operand {} {} with sizes {} and {}", ch, i,
                           shape_str(c.ops[i].shape()), own[ch], n));
      own[ch] = n;
      auto it = size.find(ch);
      if (it == size.end() || it->second == 1)
        size[ch] = n;
      else if (n != 1 && n != it->second)
        c.fail(fmt::format("letter '{}' is {} in operand {} {} but {} before", ch, n, i,
                           shape_str(c.ops[i].shape()), it->second));
    }
  }
  for (char ch : out) {
    if (size.find(ch) == size.end())
      c.fail(fmt::format("output letter '{}' names no input dim", ch));
    if (std::count(out.begin(), out.end(), ch) > 1)
      c.fail(fmt::format("output letter '{}' appears twice", ch));
  }
  return size;
}
}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands, Site site) {
  SiteScope scope(site);
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  const Call c{equation, operands};
  if (operands.empty()) c.fail("no operands");
  check_operands(c);
  std::string out;
  const std::vector<std::string> specs = parse(c, eq, out);
  std::map<char, int64_t> size = letter_sizes(c, specs, out);
  // bool in int64 (see the file head): bool again at the end when no letter is summed
  const bool is_bool = operands[0].dtype() == kBool;
  bool sums = false;
  std::vector<Term> terms;
  for (size_t i = 0; i < specs.size(); ++i) {
    terms.push_back({is_bool ? operands[i].to(kInt64) : operands[i], specs[i]});
    for (char ch : specs[i]) sums = sums || out.find(ch) == std::string::npos;
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
  for (char ch : out) full.push_back(size[ch]);
  if (r.shape() != full) r = expand(r, full).contiguous();
  return is_bool && !sums ? r.to(kBool) : r;
}

}  // namespace tg
