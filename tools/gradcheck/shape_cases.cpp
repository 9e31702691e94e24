// tools/gradcheck/shape_cases.cpp — the gradcheck tool's builders of shape ops (ops/shape/views.cpp,
// rearrange.cpp, repeat.cpp's unflatten and meshgrid, diagonal.cpp, indexing.cpp's tril and
// triu): views, copies, joins and splits, diagonals and windows. Each turns CaseArgs into float64
// leaves and a function of them.
// Deliberately not here: the other families (cases.cpp, index_cases.cpp, attention_cases.cpp).
#include "tools/gradcheck/builders.hpp"

#include <algorithm>

namespace tgc {
using tg::Shape;
using tg::Tensor;
namespace {

Tensor weighted_cat(const std::vector<Tensor>& parts, int64_t dim) {
  std::vector<Tensor> w;
  for (size_t i = 0; i < parts.size(); ++i) w.push_back(parts[i] * static_cast<double>(i + 1));
  return tg::cat(w, dim);
}

// A case of one input: the op's name, its help, the function, the input's shape without
// --shape, and the public ops it differentiates when not just `name`.
struct S1 {
  const char* name;
  const char* help;
  Tensor (*f)(const Tensor&);
  Shape shape = {2, 3, 4};
  std::vector<std::string> covers = {};
};
template <size_t N>
void add_table(std::vector<OpInfo>& r, const S1 (&ops)[N]) {
  for (const S1& s : ops)
    r.push_back({s.name, s.help,
                 [s](const CaseArgs& a) {
                   if (std::string(s.name) == "rearrange" && a.shape && a.shape->size() != 2 &&
                       a.shape->size() != 3)
                     throw UsageError("--op rearrange needs a 2-D or 3-D --shape");
                   return one(leaf(a.shape.value_or(s.shape)), s.f);
                 },
                 s.covers});
}

void add_views(std::vector<OpInfo>& r) {
  static const S1 ops[] = {
      {"reshape", "--shape S: reshape to (last, -1)",
       [](const Tensor& x) {
         return tg::reshape(x, {x.size(-1), -1});
       }},
      {"flatten", "--shape S: flatten from dim 1",
       [](const Tensor& x) { return tg::flatten(x, x.dim() > 1 ? 1 : 0); }},
      {"transpose", "--shape S: swap the first and last dims",
       [](const Tensor& x) { return tg::transpose(x, 0, -1); }},
      {"permute", "--shape S: reverse the dims",
       [](const Tensor& x) {
         std::vector<int64_t> d;
         for (int64_t i = x.dim() - 1; i >= 0; --i) d.push_back(i);
         return tg::permute(x, d);
       }},
      {"squeeze",
       "--shape S: squeeze every size-1 dim, unsqueeze(0)",
       [](const Tensor& x) { return tg::unsqueeze(tg::squeeze(x), 0); },
       {2, 3, 4},
       {"squeeze", "unsqueeze"}},
      {"expand", "--shape S: every size-1 dim (or a new leading one) expanded to 3",
       [](const Tensor& x) {
         Tensor y = std::count(x.shape().begin(), x.shape().end(), 1) ? x : x.unsqueeze(0);
         Shape s = y.shape();
         for (auto& d : s) d = d == 1 ? 3 : d;
         return tg::expand(y, s);
       }},
      {"narrow", "--shape S: narrow(0, 1, size0 - 1)",
       [](const Tensor& x) { return tg::narrow(x, 0, 1, x.size(0) - 1); }},
      {"slice", "--shape S: x[::2] along dim 0",
       [](const Tensor& x) { return tg::slice(x, 0, 0, x.size(0), 2); }},
      {"index_select", "--shape S: rows (last, 0, last) of dim 0",
       [](const Tensor& x) {
         const int64_t n = x.size(0) - 1;
         return tg::index_select(x, 0, tg::tensor(std::vector<int64_t>{n, 0, n}));
       }},
      {"rearrange", "--shape A,B,C: 'a b c -> c (a b)' (2-D: 'a b -> b a')",
       [](const Tensor& x) {
         return x.dim() == 2 ? tg::rearrange(x, "a b -> b a")
                             : tg::rearrange(x, "a b c -> c (a b)");
       }},
  };
  add_table(r, ops);
  r.push_back({"cat", "--shape A --shape2 B: cat along dim 0", [](const CaseArgs& a) {
                 const Shape sa = a.shape.value_or(Shape{2, 3});
                 return two(leaf(sa), leaf(a.shape2.value_or(sa)),
                            [](const Tensor& x, const Tensor& y) {
                              return weighted_cat({x, y}, 0);
                            });
               }});
  r.push_back({"stack", "--shape A [--shape2 A]: stack along dim 0", [](const CaseArgs& a) {
                 const Shape sa = a.shape.value_or(Shape{2, 3});
                 return two(leaf(sa), leaf(a.shape2.value_or(sa)),
                            [](const Tensor& x, const Tensor& y) {
                              return tg::stack({x, y * 2.0}, 0);
                            });
               }});
  r.push_back({"split", "--shape S [--dim d]: pieces of 2, weighted and concatenated",
               [](const CaseArgs& a) {
                 const int64_t d = dim_or(a, 0);
                 return one(leaf(a.shape.value_or(Shape{5, 2})),
                            [d](const Tensor& x) { return weighted_cat(tg::split(x, 2, d), d); });
               }});
  r.push_back(
      {"chunk", "--shape S [--dim d]: 3 chunks, weighted and concatenated", [](const CaseArgs& a) {
         const int64_t d = dim_or(a, 0);
         return one(leaf(a.shape.value_or(Shape{6, 2})),
                    [d](const Tensor& x) { return weighted_cat(tg::chunk(x, 3, d), d); });
       }});
}

// Diagonals, windows and triangles (diagonal.cpp, indexing.cpp), and meshgrid.
void add_diagonals(std::vector<OpInfo>& r) {
  static const S1 ops[] = {
      {"view",
       "--shape S: view as (-1) and as (size0, -1)",
       [](const Tensor& x) {
         return joined({tg::view(x, {-1}), tg::view(x, {x.size(0), -1}) * 2.0});
       },
       {6, 5}},
      {"t", "--shape S (2-D, or 1-D: itself)", [](const Tensor& x) { return tg::t(x); }, {6, 5}},
      {"sum_to",
       "--shape S: summed to (1, last) and to (last)",
       [](const Tensor& x) {
         return joined({tg::sum_to(x, {1, x.size(-1)}), tg::sum_to(x, {x.size(-1)}) * 2.0});
       },
       {2, 3, 4}},
      {"select",
       "--shape S: select(0, 1) and select(-1, 0)",
       [](const Tensor& x) {
         return joined({tg::select(x, 0, 1), tg::select(x, -1, 0) * 3.0});
       },
       {6, 5}},
      {"unflatten",
       "--shape S: dim 0 of size 6 into (2, -1), the last dim into (1, size)",
       [](const Tensor& x) {
         return tg::unflatten(tg::unflatten(x, 0, {2, -1}), -1, {1, x.size(-1)});
       },
       {6, 5}},
      {"diagonal",
       "--shape S (3-D): offsets 0, 1, -1 over dims (0, 1), (-1, 0), (1, 2)",
       [](const Tensor& x) {
         return joined(
             {tg::diagonal(x), tg::diagonal(x, 1, -1, 0) * 2.0, tg::diagonal(x, -1, 1, 2) * 3.0});
       },
       {3, 4, 5}},
      {"diag",
       "--shape S (2-D): its diagonals 0, 1, -2; and diag of a row at offsets 0 and -1",
       [](const Tensor& x) {
         const Tensor row = tg::select(x, 0, 0);
         return joined({tg::diag(x), tg::diag(x, 1) * 2.0, tg::diag(x, -2) * 3.0,
                        tg::diag(row) * 4.0, tg::diag(row, -1) * 5.0});
       },
       {6, 5}},
      {"unfold",
       "--shape S: windows of 2 step 1 along dim 0, of 3 step 2 along the last",
       [](const Tensor& x) {
         return joined({tg::unfold(x, 0, 2, 1), tg::unfold(x, -1, 3, 2) * 2.0});
       },
       {6, 5}},
      {"tril",
       "--shape S: tril at 0 and -1",
       [](const Tensor& x) {
         return joined({tg::tril(x), tg::tril(x, -1) * 2.0});
       },
       {6, 5}},
      {"triu",
       "--shape S: triu at 0 and 1",
       [](const Tensor& x) {
         return joined({tg::triu(x), tg::triu(x, 1) * 2.0});
       },
       {6, 5}},
  };
  add_table(r, ops);
  r.push_back({"meshgrid", "--shape A --shape2 B (1-D): indexing ij and xy, every grid joined",
               [](const CaseArgs& a) {
                 return two(leaf(a.shape.value_or(Shape{3})), leaf(a.shape2.value_or(Shape{4})),
                            [](const Tensor& x, const Tensor& y) {
                              std::vector<Tensor> g = tg::meshgrid({x, y});
                              for (const Tensor& t : tg::meshgrid({x, y}, "xy"))
                                g.push_back(t * 2.0);
                              return joined(g);
                            });
               }});
}

}  // namespace

void add_shape(std::vector<OpInfo>& r) {
  add_views(r);
  add_diagonals(r);
}

}  // namespace tgc
