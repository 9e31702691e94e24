// tools/gradcheck/index_cases.cpp — the gradcheck tool's builders of the ops that pick or place
// by index (indexing.cpp, scatter.cpp, index.cpp: gather, scatter_add, scatter, scatter_reduce
// with every reduce mode and include_self, index, topk, sort) and of the in-place writes
// (inplace.cpp: add_ ... index_put_), each on a non-leaf copy of its input so the write is
// recorded. Index tensors come from the seed, with repeated targets where the op allows them.
// Deliberately not here: the other families (cases.cpp, shape_cases.cpp, attention_cases.cpp).
#include "tools/gradcheck/builders.hpp"

#include <fmt/format.h>

namespace tgc {
using tg::Shape;
using tg::Tensor;
namespace {
namespace ix = tg::indexing;

// x (N, C) and src (N, K) with index (N, K) into x's dim 1: --shape N,C, --shape2 N,K.
struct Placed {
  Shape xs, ss;
  Tensor index;
};
Placed placed(const CaseArgs& a) {
  Placed p{a.shape.value_or(Shape{3, 4}), a.shape2.value_or(Shape{3, 5}), Tensor()};
  if (p.xs.size() != 2 || p.ss.size() != 2 || p.ss[0] > p.xs[0])
    throw UsageError(fmt::format("--op {} needs --shape N,C and --shape2 M,K with M <= N", a.op));
  p.index = tg::randint(0, p.xs[1], p.ss);  // K > C: some targets repeat
  return p;
}

// Scatter and its reductions: x and src both differentiated.
void add_scatter(std::vector<OpInfo>& r) {
  const char* help = "--shape N,C (x) --shape2 M,K (src, index along dim 1)";
  r.push_back({"gather", "--shape N,C --shape2 M,K (index along dim 1)", [](const CaseArgs& a) {
                 const Placed p = placed(a);
                 return one(leaf(p.xs),
                            [i = p.index](const Tensor& x) { return tg::gather(x, 1, i); });
               }});
  r.push_back({"scatter_add", help, [](const CaseArgs& a) {
                 const Placed p = placed(a);
                 return two(
                     leaf(p.xs), leaf(p.ss),
                     [i = p.index](const Tensor& x, const Tensor& s) {
                       return tg::scatter_add(x, 1, i, s);
                     },
                     "x", "src");
               }});
  r.push_back(
      {"scatter", help, [](const CaseArgs& a) {
         const Placed p = placed(a);
         return two(
             leaf(p.xs), leaf(p.ss),
             [i = p.index](const Tensor& x, const Tensor& s) { return tg::scatter(x, 1, i, s); },
             "x", "src");
       }});
  r.push_back({"scatter_reduce",
               std::string(help) + " --reduce sum|prod|mean|amax|amin [--exclude-self]",
               [](const CaseArgs& a) {
                 const Placed p = placed(a);
                 const std::string red = a.reduce.empty() ? "sum" : a.reduce;
                 const bool self = !a.exclude_self;
                 return two(
                     leaf(p.xs), leaf(p.ss),
                     [i = p.index, red, self](const Tensor& x, const Tensor& s) {
                       return tg::scatter_reduce(x, 1, i, s, red, self);
                     },
                     "x", "src");
               }});
}

// index (views and copies) and the sorting ops' values.
void add_picking(std::vector<OpInfo>& r) {
  r.push_back({"index",
               "--shape S (2-D): x[1:, ::2], x[[2, 0, 2]], x[..., None, 1], x[x > 0] joined",
               [](const CaseArgs& a) {
                 const Tensor rows = tg::tensor(std::vector<int64_t>{2, 0, 2});
                 return one(leaf(a.shape.value_or(Shape{4, 5})), [rows](const Tensor& x) {
                   const Tensor pos = tg::gt(x.detach(), tg::scalar_tensor(0.0, tg::kFloat64));
                   return joined({tg::index(x, {ix::Slice(1), ix::Slice(ix::None, ix::None, 2)}),
                                  tg::index(x, {rows}) * 2.0,
                                  tg::index(x, {ix::Ellipsis, ix::None, 1}) * 3.0,
                                  tg::index(x, {pos}) * 4.0});
                 });
               }});
  r.push_back({"topk", "--shape S: the 2 largest and the 3 smallest along the last dim",
               [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 5})), [](const Tensor& x) {
                   return joined({tg::topk(x, 2).values, tg::topk(x, 3, -1, false, false).values});
                 });
               }});
  r.push_back({"sort", "--shape S: ascending along the last dim, descending along dim 0",
               [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 5})), [](const Tensor& x) {
                   return joined({tg::sort(x).values, tg::sort(x, 0, true).values * 2.0});
                 });
               }});
}

// Out-of-place index_put with accumulate: x plus values at (row, col) pairs, one repeated.
void add_index_put(std::vector<OpInfo>& r) {
  r.push_back({"index_put", "--shape N,C (N, C >= 3): values added at 4 (row, col) pairs",
               [](const CaseArgs& a) {
                 const Shape s = a.shape.value_or(Shape{3, 4});
                 if (s.size() != 2 || s[0] < 3 || s[1] < 3)
                   throw UsageError("--op index_put needs --shape N,C with N, C >= 3");
                 const Tensor rows = tg::tensor(std::vector<int64_t>{0, 2, 0, 1}, {4});
                 const Tensor cols = tg::tensor(std::vector<int64_t>{1, 0, 1, 2}, {4});
                 return two(
                     leaf(s), leaf(Shape{4}),
                     [rows, cols](const Tensor& x, const Tensor& v) {
                       return tg::index_put(x, {rows, cols}, v, /*accumulate=*/true);
                     },
                     "x", "values");
               }});
}

// The in-place writes, each on y = x·1.5 (a recorded non-leaf), returning y.
void add_inplace(std::vector<OpInfo>& r) {
  using F = void (*)(const Tensor& y, const Tensor& other);
  struct W {
    const char* name;
    F f;
  };
  static const W writes[] = {
      {"add_", [](const Tensor& y, const Tensor& o) { tg::add_(tg::add_(y, o, 0.5), 2.0); }},
      {"sub_", [](const Tensor& y, const Tensor& o) { tg::sub_(tg::sub_(y, o), 1.0); }},
      {"mul_", [](const Tensor& y, const Tensor& o) { tg::mul_(tg::mul_(y, o), -2.0); }},
      {"div_", [](const Tensor& y, const Tensor& o) { tg::div_(tg::div_(y, o * o + 0.5), 3.0); }},
      {"clamp_", [](const Tensor& y, const Tensor& o) { tg::clamp_(y, -0.5, 0.6); }},
      {"zero_", [](const Tensor& y, const Tensor& o) { tg::zero_(tg::select(y, 0, 0)); }},
      {"fill_", [](const Tensor& y, const Tensor& o) { tg::fill_(tg::select(y, 1, 1), 0.25); }},
      {"copy_", [](const Tensor& y,
                   const Tensor& o) { tg::copy_(tg::select(y, 0, 1), tg::select(o, 0, 0)); }},
      {"masked_fill_",
       [](const Tensor& y, const Tensor& o) {
         tg::masked_fill_(y, tg::gt(o.detach(), tg::scalar_tensor(0.0, tg::kFloat64)), -1.0);
       }},
      {"index_put_",
       [](const Tensor& y, const Tensor& o) {
         const Tensor pos = tg::gt(o.detach(), tg::scalar_tensor(0.0, tg::kFloat64));
         tg::index_put_(y, {pos}, tg::sum(o) * 0.5);  // a bool mask; the value broadcast
         tg::index_put_(y, {1, ix::Slice(1, 3)}, 7.0);
       }},
      {"scatter_",
       [](const Tensor& y, const Tensor& o) {
         const Tensor idx = tg::tensor(std::vector<int64_t>{0, 2, 1, 1, 2, 0}, {3, 2});
         tg::scatter_(y, 1, idx, tg::narrow(o, 1, 0, 2));     // a repeated target: the last write
         tg::scatter_(y, 0, tg::narrow(idx, 0, 0, 1), -0.5);  // the one-hot idiom's value form
       }},
  };
  for (const W& w : writes)
    r.push_back({w.name, "--shape S (2-D, 3 rows or more): on x·1.5, other of x's shape",
                 [w](const CaseArgs& a) {
                   const Shape s = a.shape.value_or(Shape{3, 4});
                   if (s.size() != 2 || s[0] < 3 || s[1] < 3)
                     throw UsageError(
                         fmt::format("--op {} needs --shape N,C with N, C >= 3", w.name));
                   return two(
                       leaf(s), leaf(s),
                       [w](const Tensor& x, const Tensor& o) {
                         Tensor y = x * 1.5;
                         w.f(y, o);
                         return y;
                       },
                       "x", "other");
                 }});
}

}  // namespace

void add_index(std::vector<OpInfo>& r) {
  add_scatter(r);
  add_picking(r);
  add_index_put(r);
  add_inplace(r);
}

}  // namespace tgc
