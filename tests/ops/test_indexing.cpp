// tests/ops/test_indexing.cpp — the indexing and sampling family (ops/index/gather.cpp): outputs,
// indices and input gradients against PyTorch 1.13 (tests/fixtures/indexing/<case>.safetensors,
// written by tools/make_indexing_fixtures.py) in float64 and float32; float64 gradchecks of every
// differentiable op over several dims (negative dims, k = 1 and k = size); hand-checked edge cases
// (ties, NaN, 0-dim, src larger than index, large rows against std::stable_sort); x.index({...})
// and index_put_ through a mask, and matmul of transposed/permuted views, against PyTorch's x[...],
// y[mask] = v and a.t() @ b; multinomial's
// seeding, no-repeat rule and distribution (chi-square tests); arange in every dtype; and the
// error messages.
#include "indexing_cases.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

using namespace tg;
using namespace tg::indexing;

namespace {
using tgt::check_case;
using tgt::fixture;
using tgt::IndexingCase;
using tgt::one;
std::vector<Tensor> both(const ValuesIndices& r) { return {r.values, r.indices}; }

std::vector<IndexingCase> cases() {
  using In = const std::vector<Tensor>&;
  return {
      {"gather_dim1", {"x", "index"}, [](In in) { return one(gather(in[0], 1, in[1])); }},
      {"gather_dim0", {"x", "index"}, [](In in) { return one(gather(in[0], 0, in[1])); }},
      {"gather_dimm1", {"x", "index"}, [](In in) { return one(gather(in[0], -1, in[1])); }},
      {"scatter_add_dim0",
       {"x", "index", "src"},
       [](In in) { return one(scatter_add(in[0], 0, in[1], in[2])); }},
      {"scatter_add_dimm1",
       {"x", "index", "src"},
       [](In in) { return one(scatter_add(in[0], -1, in[1], in[2])); }},
      {"topk_k3", {"x"}, [](In in) { return both(topk(in[0], 3, -1)); }},
      {"topk_small_dim0", {"x"}, [](In in) { return both(topk(in[0], 2, 0, false)); }},
      {"topk_k1", {"x"}, [](In in) { return both(topk(in[0], 1, 1)); }},
      {"topk_kall", {"x"}, [](In in) { return both(topk(in[0], 4, -2)); }},
      {"topk_ties", {"x"}, [](In in) { return both(topk(in[0], 4, 1)); }},
      {"topk_ties_small", {"x"}, [](In in) { return both(topk(in[0], 4, 1, false)); }},
      {"sort_ties", {"x"}, [](In in) { return both(sort(in[0], -1)); }},
      {"sort_ties_desc0", {"x"}, [](In in) { return both(sort(in[0], 0, true)); }},
      {"sort_int64", {"x"}, [](In in) { return both(sort(in[0], 1)); }},
      {"cumsum_dim1", {"x"}, [](In in) { return one(cumsum(in[0], 1)); }},
      {"cumsum_dimm1", {"x"}, [](In in) { return one(cumsum(in[0], -1)); }},
      {"cumsum_int64", {"x"}, [](In in) { return one(cumsum(in[0], 0)); }},
      {"cumsum_bool", {"x"}, [](In in) { return one(cumsum(in[0], -1)); }},
      {"tril_0", {"x"}, [](In in) { return one(tril(in[0])); }},
      {"tril_m1", {"x"}, [](In in) { return one(tril(in[0], -1)); }},
      {"triu_0", {"x"}, [](In in) { return one(triu(in[0])); }},
      {"triu_2", {"x"}, [](In in) { return one(triu(in[0], 2)); }},
      {"triu_m1_4d", {"x"}, [](In in) { return one(triu(in[0], -1)); }},
      {"one_hot_infer", {"index"}, [](In in) { return one(one_hot(in[0])); }},
      {"one_hot_5", {"index"}, [](In in) { return one(one_hot(in[0], 5)); }},
      // x[...] as x.index({...}) (ops/index/index.cpp) and views feeding matmul
      {"index_int_slice_step",
       {"x"},
       [](In in) {
         return one(in[0].index({1, Slice(), Slice(None, None, 2)}));
       }},
      {"index_none_ellipsis",
       {"x"},
       [](In in) {
         return one(in[0].index({None, Ellipsis, -1}));
       }},
      {"index_neg_slice",
       {"x"},
       [](In in) {
         return one(in[0].index({Slice(-2, None), Slice(1, -1), 3}));
       }},
      {"index_int64_rows",
       {"x", "index"},
       [](In in) {
         return one(in[0].index({Slice(), in[1]}));
       }},
      {"index_bool_mask",
       {"x"},
       [](In in) { return one(in[0].index({gt(in[0].detach(), zeros({}, in[0].dtype()))})); }},
      {"index_put_mask",
       {"x"},
       [](In in) {
         Tensor y = in[0] * 1.0;
         y.index_put_({gt(in[0].detach(), full({}, 0.5, in[0].dtype()))}, -1.0);
         return one(y);
       }},
      {"matmul_transposed",
       {"a", "b"},
       [](In in) { return one(matmul(in[0].t(), in[1].transpose(0, 1))); }},
      {"matmul_permuted",
       {"q", "k"},
       [](In in) {
         return one(matmul(in[0].transpose(1, 2), in[1].permute({0, 2, 3, 1})));
       }},
  };
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
Tensor i64(std::vector<int64_t> v, Shape s = {}) { return tensor(v, std::move(s)); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
}  // namespace

// ---- PyTorch parity ----
TEST_CASE("indexing ops match PyTorch in float64", "[indexing][parity]") {
  for (const IndexingCase& c : cases()) {
    SECTION(c.name) { check_case(c, kFloat64, 1e-12, 1e-10); }
  }
}

TEST_CASE("indexing ops match PyTorch in float32", "[indexing][parity]") {
  for (const IndexingCase& c : cases()) {
    SECTION(c.name) { check_case(c, kFloat32, 1e-5, 1e-5); }
  }
}

TEST_CASE("the indexing fixtures hold the documented shapes and ties", "[indexing][parity]") {
  REQUIRE(fixture("gather_dimm1", "index").shape() == Shape{2, 2, 6});  // longer than x along dim
  REQUIRE(fixture("gather_dim0", "out").shape() == Shape{2, 3, 2});
  REQUIRE(fixture("scatter_add_dim0", "dsrc").shape() == Shape{2, 4});
  REQUIRE(fixture("topk_kall", "out").shape() == Shape{2, 4, 3});
  REQUIRE(fixture("cumsum_bool", "x").dtype() == kBool);
  REQUIRE(fixture("cumsum_bool", "out").dtype() == kInt64);
  REQUIRE(fixture("one_hot_infer", "out").shape() == Shape{2, 3, 3});
  // topk_ties really has ties across the chosen boundary: row 0 is {0,0,1,2,0,1,2}.
  tgt::require_close(fixture("topk_ties", "x").narrow(0, 0, 1), {0, 0, 1, 2, 0, 1, 2}, 0, 0);
  tgt::require_close(fixture("topk_ties", "indices").narrow(0, 0, 1), {3, 6, 2, 5}, 0, 0);
}

// ---- gradchecks (float64) ----
TEST_CASE("gather and scatter_add pass gradcheck", "[indexing]") {
  manual_seed(31);
  Tensor x = tgt::leaf({3, 4, 2});
  Tensor i0 = i64({2, 0, 2, 1, 1, 0, 0, 0, 2, 2, 1, 0}, {2, 3, 2});  // dim 0, repeats
  Tensor i1 = i64({3, 3, 0, 1, 2, 0, 1, 3, 1, 1, 0, 2}, {3, 2, 2});  // dim 1, repeats
  Tensor im = i64({1, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0}, {2, 2, 3});  // dim -1, longer than x
  tgt::check_grad([i0](auto& in) { return gather(in[0], 0, i0); }, {x}, "gather dim 0");
  tgt::check_grad([i1](auto& in) { return gather(in[0], 1, i1); }, {x}, "gather dim 1");
  tgt::check_grad([im](auto& in) { return gather(in[0], -1, im); }, {x}, "gather dim -1");
  // scatter_add: both inputs, repeated targets, and src larger than index (dsrc zero-padded).
  Tensor base = tgt::leaf({3, 4});
  Tensor src = tgt::leaf({2, 4});
  Tensor big = tgt::leaf({3, 5});
  Tensor j0 = i64({0, 1, 2, 0, 2, 1, 2, 0}, {2, 4});
  Tensor jm = i64({3, 0, 3, 1, 1, 2}, {2, 3});
  tgt::check_grad([j0](auto& in) { return scatter_add(in[0], 0, j0, in[1]); }, {base, src},
                  "scatter_add dim 0");
  tgt::check_grad([jm](auto& in) { return scatter_add(in[0], -1, jm, in[1]); }, {base, big},
                  "scatter_add dim -1, src larger than index");
  tgt::check_grad([j0](auto& in) { return scatter_add(in[0], -2, j0, in[1]) * in[0]; }, {base, src},
                  "scatter_add composed");
}

TEST_CASE("topk and sort values pass gradcheck", "[indexing]") {
  manual_seed(32);
  Tensor x = tgt::leaf({3, 5, 4});
  const std::vector<std::pair<std::string, Fn>> cs = {
      {"topk k=1 dim -1", [](auto& in) { return topk(in[0], 1).values; }},
      {"topk k=size dim -1", [](auto& in) { return topk(in[0], 4, -1).values; }},
      {"topk k=2 dim 1 smallest", [](auto& in) { return topk(in[0], 2, 1, false).values; }},
      {"topk k=5 dim -2", [](auto& in) { return topk(in[0], 5, -2).values; }},
      {"topk k=3 dim 0", [](auto& in) { return topk(in[0], 3, 0).values; }},
      {"topk k=1 dim 0 smallest", [](auto& in) { return topk(in[0], 1, 0, false).values; }},
      {"topk unsorted", [](auto& in) { return topk(in[0], 3, 1, true, false).values; }},
      {"sort dim -1", [](auto& in) { return sort(in[0]).values; }},
      {"sort dim 1 descending", [](auto& in) { return sort(in[0], 1, true).values; }},
      {"sort dim -3", [](auto& in) { return sort(in[0], -3).values; }},
  };
  for (const auto& [name, fn] : cs) tgt::check_grad(fn, {x}, name);
}

TEST_CASE("cumsum, tril and triu pass gradcheck", "[indexing]") {
  manual_seed(33);
  Tensor x = tgt::leaf({2, 3, 4});
  Tensor w = randn({2, 3, 4}, kFloat64);
  const std::vector<std::pair<std::string, Fn>> cs = {
      {"cumsum dim 0", [](auto& in) { return cumsum(in[0], 0); }},
      {"cumsum dim 1", [](auto& in) { return cumsum(in[0], 1); }},
      {"cumsum dim -1", [w](auto& in) { return cumsum(in[0] * w, -1); }},
      {"tril", [](auto& in) { return tril(in[0]); }},
      {"tril -1", [](auto& in) { return tril(in[0], -1); }},
      {"tril 2", [](auto& in) { return tril(in[0], 2); }},
      {"triu", [](auto& in) { return triu(in[0]); }},
      {"triu 1", [](auto& in) { return triu(in[0], 1); }},
      {"triu -2", [](auto& in) { return triu(in[0], -2); }},
      {"triu of cumsum", [](auto& in) { return triu(cumsum(in[0], -2), 1); }},
  };
  for (const auto& [name, fn] : cs) tgt::check_grad(fn, {x}, name);
  Tensor s = tgt::leaf({});
  tgt::check_grad([](auto& in) { return cumsum(in[0], -1) * 3.0; }, {s}, "cumsum 0-dim");
  tgt::check_grad([](auto& in) { return gather(in[0], 0, scalar_tensor(0, kInt64)); }, {s},
                  "gather 0-dim");
}

// ---- edge cases by hand ----
TEST_CASE("gather and scatter_add work on every dtype and 0-dim tensors", "[indexing]") {
  Tensor xi = i64({10, 11, 12, 13, 14, 15}, {2, 3});
  Tensor idx = i64({2, 0, 1, 1}, {2, 2});
  REQUIRE(ints(gather(xi, 1, idx)) == std::vector<int64_t>{12, 10, 14, 14});
  Tensor xb = tensor(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  tgt::require_close(gather(xb, 1, idx), {0, 1, 1, 1}, 0, 0);
  Tensor si = scatter_add(zeros({2, 3}, kInt64), 1, idx, i64({1, 2, 3, 4}, {2, 2}));
  REQUIRE(ints(si) == std::vector<int64_t>{2, 0, 1, 0, 7, 0});
  // 0-dim x and index: dims 0 and -1, like PyTorch.
  Tensor s = scalar_tensor(5.0, kFloat64);
  REQUIRE(gather(s, -1, scalar_tensor(0, kInt64)).dim() == 0);
  REQUIRE(gather(s, 0, scalar_tensor(0, kInt64)).item<double>() == 5.0);
  REQUIRE(
      scatter_add(s, 0, scalar_tensor(0, kInt64), scalar_tensor(2.0, kFloat64)).item<double>() ==
      7.0);
  // An empty index gives an empty result and a zero gradient.
  Tensor x = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor e = gather(x, 0, zeros({0}, kInt64));
  REQUIRE(e.shape() == Shape{0});
  e.sum().backward();
  tgt::require_close(x.grad(), {0, 0, 0}, 0, 0);
}

TEST_CASE("scatter_add's dsrc has src's shape when src is larger than index", "[indexing]") {
  Tensor x = zeros({3, 4}, kFloat64).requires_grad_();
  Tensor src = arange(0, 15, 1, kFloat64).reshape({3, 5}).detach().requires_grad_();
  Tensor idx = i64({0, 1, 2, 0}, {2, 2});
  Tensor y = scatter_add(x, 0, idx, src);
  // src[0][0]=0 -> (0,0), src[0][1]=1 -> (1,1), src[1][0]=5 -> (2,0), src[1][1]=6 -> (0,1).
  tgt::require_close(y, {0, 6, 0, 0, 0, 1, 0, 0, 5, 0, 0, 0}, 0, 0);
  Tensor g = arange(0, 12, 1, kFloat64).reshape({3, 4});
  y.backward(g);
  tgt::require_close(x.grad(), g);
  // dsrc[i][j] = g[idx[i][j]][j] inside index's (2,2) block, 0 elsewhere.
  tgt::require_close(src.grad(), {0, 5, 0, 0, 0, 8, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 0);
}

TEST_CASE("topk breaks ties by the lower index and orders NaN as the largest", "[indexing]") {
  Tensor x = tensor(std::vector<double>{1, 3, 3, 0, 3, 1});
  ValuesIndices r = topk(x, 2);
  REQUIRE(ints(r.indices) == std::vector<int64_t>{1, 2});
  REQUIRE(ints(topk(x, 3, 0, false).indices) == std::vector<int64_t>{3, 0, 5});
  // sorted = false: the chosen k in index order.
  REQUIRE(ints(topk(x, 4, 0, true, false).indices) == std::vector<int64_t>{0, 1, 2, 4});
  tgt::require_close(topk(x, 4, 0, true, false).values, {1, 3, 3, 3}, 0, 0);
  REQUIRE(topk(x, 0).values.shape() == Shape{0});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor xn = tensor(std::vector<double>{1, nan, 3, 3, nan});
  REQUIRE(ints(topk(xn, 3).indices) == std::vector<int64_t>{1, 4, 2});
  REQUIRE(ints(sort(xn).indices) == std::vector<int64_t>{0, 2, 3, 1, 4});
  REQUIRE(ints(sort(xn, 0, true).indices) == std::vector<int64_t>{1, 4, 2, 3, 0});
  // The gradient of tied values goes to the chosen positions only.
  Tensor xg = tensor(std::vector<double>{2, 5, 5, 5}).requires_grad_();
  topk(xg, 2).values.backward(tensor(std::vector<double>{10, 20}));
  tgt::require_close(xg.grad(), {0, 10, 20, 0}, 0, 0);
  // 0-dim: values x, index 0 (PyTorch's rule, also for k = 0).
  Tensor s = scalar_tensor(4.0, kFloat64);
  REQUIRE(topk(s, 1).values.item<double>() == 4.0);
  REQUIRE(topk(s, 1).indices.dim() == 0);
  REQUIRE(sort(s).indices.item<int64_t>() == 0);
}

TEST_CASE("sort and argsort are stable on every dtype and agree", "[indexing]") {
  Tensor b = tensor(std::vector<bool>{true, false, true, false});
  REQUIRE(ints(sort(b).indices) == std::vector<int64_t>{1, 3, 0, 2});
  REQUIRE(ints(argsort(b, 0, true)) == std::vector<int64_t>{0, 2, 1, 3});
  Tensor xf = tensor(std::vector<float>{2, 1, 2, 1, 0, 2}, {2, 3});
  REQUIRE(ints(argsort(xf, 0)) == std::vector<int64_t>{1, 1, 0, 0, 0, 1});
  REQUIRE(ints(argsort(xf)) == ints(sort(xf).indices));
  REQUIRE(argsort(xf).dtype() == kInt64);
  REQUIRE(sort(xf).values.dtype() == kFloat32);
  // Large rows with many ties (the threaded path) against std::stable_sort, both directions.
  manual_seed(34);
  const int64_t R = 64, n = 1024;
  Tensor xi = randint(0, 50, {R, n});
  for (bool desc : {false, true}) {
    ValuesIndices r = sort(xi, 1, desc);
    std::vector<int64_t> v = ints(xi), want_i, want_v;
    for (int64_t row = 0; row < R; ++row) {
      std::vector<int64_t> ord(n);
      std::iota(ord.begin(), ord.end(), int64_t(0));
      const int64_t* p = v.data() + row * n;
      std::stable_sort(ord.begin(), ord.end(),
                       [&](int64_t a, int64_t c) { return desc ? p[a] > p[c] : p[a] < p[c]; });
      for (int64_t j : ord) {
        want_i.push_back(j);
        want_v.push_back(p[j]);
      }
    }
    INFO("descending " << desc);
    REQUIRE(ints(r.indices) == want_i);
    REQUIRE(ints(r.values) == want_v);
    // topk is the first k of the same order.
    REQUIRE(ints(topk(xi, 7, -1, desc).indices) == ints(narrow(r.indices, 1, 0, 7)));
  }
}

TEST_CASE("cumsum accumulates float32 in double and integers in int64", "[indexing]") {
  // 2^24 + 1 + 1: float32 accumulation would stick at 2^24.
  Tensor x = tensor(std::vector<float>{16777216.0f, 1.0f, 1.0f});
  REQUIRE(cumsum(x, 0).to_vector<float>() ==
          std::vector<float>{16777216.0f, 16777216.0f, 16777218.0f});
  Tensor b = tensor(std::vector<bool>{true, true, false, true});
  REQUIRE(cumsum(b, 0).dtype() == kInt64);
  REQUIRE(ints(cumsum(b, -1)) == std::vector<int64_t>{1, 2, 2, 3});
  REQUIRE(cumsum(zeros({2, 0}), 1).shape() == Shape{2, 0});
  REQUIRE(cumsum(scalar_tensor(2.5), 0).item<double>() == 2.5);
}

TEST_CASE("tril and triu mask every batch and every dtype", "[indexing]") {
  Tensor x = arange(1, 7, 1, kInt64).reshape({2, 3});
  REQUIRE(ints(tril(x)) == std::vector<int64_t>{1, 0, 0, 4, 5, 0});
  REQUIRE(ints(triu(x, 1)) == std::vector<int64_t>{0, 2, 3, 0, 0, 6});
  REQUIRE(ints(tril(x, -2)) == std::vector<int64_t>{0, 0, 0, 0, 0, 0});
  REQUIRE(ints(triu(x, -5)) == ints(x));
  Tensor b = ones({2, 2, 2}, kBool);
  tgt::require_close(tril(b), {1, 0, 1, 1, 1, 0, 1, 1}, 0, 0);
  REQUIRE(tril(b).dtype() == kBool);
}

TEST_CASE("one_hot infers or takes num_classes", "[indexing]") {
  Tensor i = i64({3, 0, 1});
  REQUIRE(ints(one_hot(i)) == std::vector<int64_t>{0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0});
  REQUIRE(one_hot(i, 6).shape() == Shape{3, 6});
  REQUIRE(one_hot(zeros({0}, kInt64), 4).shape() == Shape{0, 4});
  REQUIRE(one_hot(scalar_tensor(2, kInt64)).shape() == Shape{3});
}

TEST_CASE("arange works in every dtype like PyTorch", "[indexing][parity]") {
  tgt::require_close(arange(0, 1, 0.1, kFloat32), fixture("arange", "f32_tenths"), 0, 0);
  tgt::require_close(arange(0, 1, 0.1, kFloat64), fixture("arange", "f64_tenths"), 0, 0);
  tgt::require_close(arange(16777216, 16777220, 1, kFloat32), fixture("arange", "f32_2p24"), 0, 0);
  tgt::require_close(arange(2, -1, -0.75, kFloat64), fixture("arange", "f64_down"), 0, 0);
  REQUIRE(ints(arange(5, 0, -1.5, kInt64)) == ints(fixture("arange", "i64_down")));
  REQUIRE(ints(arange(-2.5, 2, 1, kInt64)) == ints(fixture("arange", "i64_frac")));
  const double two53 = 9007199254740992.0;
  REQUIRE(ints(arange(two53, two53 + 4, 1, kInt64)) == ints(fixture("arange", "i64_2p53")));
  REQUIRE(arange(0, 1, 0.1, kFloat32).dtype() == kFloat32);
  REQUIRE(arange(3, 3, 1, kFloat64).numel() == 0);
  REQUIRE(arange(4).dtype() == kInt64);
  REQUIRE_ERROR(arange(0, 3, 0.5, kInt64),
                "arange: step 0.5 truncates to 0 for dtype int64 (start=0 end=3)");
  REQUIRE_ERROR(arange(3, kBool), "arange: dtype bool is not supported");
  REQUIRE_ERROR(arange(0, 3, -1, kFloat64), "arange: invalid range start=0 end=3 step=-1");
}

// ---- multinomial ----
namespace {
// Σ (observed - expected)² / expected over the categories.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double s = 0;
  for (size_t c = 0; c < p.size(); ++c) {
    const double e = p[c] * static_cast<double>(n);
    s += (static_cast<double>(counts[c]) - e) * (static_cast<double>(counts[c]) - e) / e;
  }
  return s;
}
constexpr double kChi2Df4 = 18.47;  // the 0.999 quantile of chi-square with 4 degrees of freedom
}  // namespace

TEST_CASE("multinomial repeats under one seed and keeps its rules", "[indexing]") {
  Tensor p = tensor(std::vector<double>{0.1, 0, 0.4, 0.2, 0.3, 0, 0.5, 0.5, 0, 0}, {2, 5});
  for (bool repl : {true, false}) {
    INFO("replacement " << repl);
    const int64_t k = repl ? 50 : 2;
    manual_seed(5);
    Tensor a = multinomial(p, k, repl);
    manual_seed(5);
    Tensor b = multinomial(p, k, repl);
    REQUIRE(a.shape() == Shape{2, k});
    REQUIRE(a.dtype() == kInt64);
    REQUIRE(ints(a) == ints(b));
    manual_seed(6);
    Tensor c = multinomial(p, k, repl);
    if (repl) REQUIRE(ints(a) != ints(c));
    // Zero-probability categories are never drawn.
    const std::vector<int64_t> av = ints(a);
    const std::set<int64_t> row0(av.begin(), av.begin() + k), row1(av.begin() + k, av.end());
    const std::set<int64_t> nz0{0, 2, 3, 4}, nz1{1, 2};
    REQUIRE(std::includes(nz0.begin(), nz0.end(), row0.begin(), row0.end()));
    REQUIRE(std::includes(nz1.begin(), nz1.end(), row1.begin(), row1.end()));
    if (!repl) REQUIRE(row1 == nz1);
  }
  // Without replacement: no repeats; all non-zero categories = a permutation of them.
  manual_seed(7);
  Tensor w = tensor(std::vector<float>{3, 0, 1, 2, 5, 0, 4});
  const std::set<int64_t> nz{0, 2, 3, 4, 6};
  int64_t bad_all = 0, bad_three = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<int64_t> d = ints(multinomial(w, 5));
    bad_all += std::set<int64_t>(d.begin(), d.end()) != nz;
    const std::vector<int64_t> d3 = ints(multinomial(w, 3));
    const std::set<int64_t> u3(d3.begin(), d3.end());
    bad_three += u3.size() != 3 || !std::includes(nz.begin(), nz.end(), u3.begin(), u3.end());
  }
  REQUIRE(bad_all == 0);
  REQUIRE(bad_three == 0);
  // Unnormalised weights: scaling by 4 (exact) gives the same draws.
  manual_seed(8);
  Tensor d1 = multinomial(tensor(std::vector<double>{0.1, 0.6, 0.3}), 20, true);
  manual_seed(8);
  Tensor d4 = multinomial(tensor(std::vector<double>{0.4, 2.4, 1.2}), 20, true);
  REQUIRE(ints(d1) == ints(d4));
  REQUIRE(multinomial(tensor(std::vector<double>{0, 1}), 3, true).shape() == Shape{3});
  REQUIRE(ints(multinomial(tensor(std::vector<double>{0, 1}), 3, true)) ==
          std::vector<int64_t>{1, 1, 1});
}

TEST_CASE("multinomial with replacement draws the right distribution (chi-square)", "[indexing]") {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.15, 0.25};
  const int64_t n = 100000;
  for (DType dt : {kFloat64, kFloat32}) {
    manual_seed(2024);
    std::vector<int64_t> d = ints(multinomial(tensor(p).to(dt), n, true));
    std::vector<int64_t> counts(p.size(), 0);
    for (int64_t v : d) ++counts[v];
    const double chi2 = chi_square(counts, p, n);
    INFO(dtype_name(dt) << " counts " << counts[0] << " " << counts[1] << " " << counts[2] << " "
                        << counts[3] << " " << counts[4] << ", chi-square " << chi2);
    REQUIRE(chi2 < kChi2Df4);
  }
}

TEST_CASE("multinomial without replacement draws like sequential draws (chi-square)",
          "[indexing]") {
  // 20 000 rows of the same distribution, 2 draws each: the first is distributed as p, the
  // second as P(j) = Σ_{i != j} p_i·p_j / (1 - p_i).
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.15, 0.25};
  const int64_t N = 20000, C = 5;
  std::vector<double> rows;
  for (int64_t r = 0; r < N; ++r) rows.insert(rows.end(), p.begin(), p.end());
  manual_seed(77);
  std::vector<int64_t> d = ints(multinomial(tensor(rows, {N, C}), 2));
  std::vector<int64_t> first(C, 0), second(C, 0);
  int64_t repeats = 0;
  for (int64_t r = 0; r < N; ++r) {
    repeats += d[2 * r] == d[2 * r + 1];
    ++first[d[2 * r]];
    ++second[d[2 * r + 1]];
  }
  std::vector<double> p2(C, 0);
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < C; ++i)
      if (i != j) p2[j] += p[i] * p[j] / (1 - p[i]);
  REQUIRE(repeats == 0);
  REQUIRE(std::accumulate(p2.begin(), p2.end(), 0.0) == Approx(1.0));
  const double c1 = chi_square(first, p, N), c2 = chi_square(second, p2, N);
  INFO("chi-square first draw " << c1 << ", second draw " << c2);
  REQUIRE(c1 < kChi2Df4);
  REQUIRE(c2 < kChi2Df4);
}

// ---- errors ----
// The exact message, and a tg::Error.
#define REQUIRE_TG_ERROR_IS(expr, msg)  \
  do {                                  \
    REQUIRE_THROWS_AS(expr, tg::Error); \
    REQUIRE_THROWS_WITH(expr, msg);     \
  } while (0)

TEST_CASE("indexing errors name the op, the bad value and every shape", "[indexing]") {
  Tensor x = zeros({2, 3});
  // wrong dtype of index
  REQUIRE_TG_ERROR_IS(gather(x, 1, zeros({2, 3})),
                      "gather: index (2,3) has dtype float32, expected int64");
  REQUIRE_TG_ERROR_IS(scatter_add(x, 0, zeros({1, 3}, kFloat64), x),
                      "scatter_add: index (1,3) has dtype float64, expected int64");
  REQUIRE_TG_ERROR_IS(one_hot(zeros({3})), "one_hot: index (3) has dtype float32, expected int64");
  // shapes
  REQUIRE_TG_ERROR_IS(gather(x, 1, zeros({2, 3, 1}, kInt64)),
                      "gather: x (2,3) and index (2,3,1): index must have x's ndim 2");
  REQUIRE_TG_ERROR_IS(gather(x, 1, zeros({3, 1}, kInt64)),
                      "gather: x (2,3) and index (3,1): index size 3 at dim 0 exceeds x's size 2 "
                      "(only dim 1 may be larger)");
  REQUIRE_TG_ERROR_IS(scatter_add(x, 0, zeros({2}, kInt64), zeros({2, 2})),
                      "scatter_add: x (2,3), index (2) and src (2,2): index and src must have "
                      "x's ndim 2");
  REQUIRE_TG_ERROR_IS(scatter_add(x, 0, zeros({2, 3}, kInt64), zeros({2, 2})),
                      "scatter_add: index (2,3) and src (2,2): index size 3 at dim 1 exceeds "
                      "src's size 2 (x (2,3))");
  REQUIRE_TG_ERROR_IS(scatter_add(x, 0, zeros({2, 4}, kInt64), zeros({2, 4})),
                      "scatter_add: x (2,3) and index (2,4): index size 4 at dim 1 exceeds x's "
                      "size 3 (only dim 0 may be larger; src (2,4))");
  REQUIRE_TG_ERROR_IS(scatter_add(x, 0, zeros({1, 3}, kInt64), zeros({1, 3}, kFloat64)),
                      "scatter_add: x (2,3) is float32 but src (1,3) is float64; convert one "
                      "with .to()");
  REQUIRE_TG_ERROR_IS(tril(zeros({3})), "tril: x (3) must have at least 2 dims (B..., N, C)");
  REQUIRE_TG_ERROR_IS(triu(scalar_tensor(1)), "triu: x () must have at least 2 dims (B..., N, C)");
  // out-of-range index values: the value, its position and the allowed range
  REQUIRE_TG_ERROR_IS(gather(x, 1, i64({0, 3, 1, 2}, {2, 2})),
                      "gather: index value 3 at [0,1] is out of range [0, 3) for dim 1 of x (2,3) "
                      "(index (2,2))");
  REQUIRE_TG_ERROR_IS(gather(x, -2, i64({0, 1, -1}, {1, 3})),
                      "gather: index value -1 at [0,2] is out of range [0, 2) for dim 0 of x (2,3) "
                      "(index (1,3))");
  REQUIRE_TG_ERROR_IS(scatter_add(x, 0, i64({1, 2, 0}, {1, 3}), ones({1, 3})),
                      "scatter_add: index value 2 at [0,1] is out of range [0, 2) for dim 0 of x "
                      "(2,3) (index (1,3))");
  REQUIRE_TG_ERROR_IS(one_hot(i64({0, 4, 1}), 3),
                      "one_hot: index value 4 at [1] is out of range [0, 3) for num_classes 3 "
                      "(index (3))");
  REQUIRE_TG_ERROR_IS(one_hot(i64({2, -1})),
                      "one_hot: index value -1 at [1] is out of range [0, 3) for num_classes 3 "
                      "(the largest value + 1) (index (2))");
  REQUIRE_TG_ERROR_IS(one_hot(zeros({0}, kInt64)),
                      "one_hot: cannot infer num_classes from an empty index (0); pass it");
  REQUIRE_TG_ERROR_IS(one_hot(i64({1}), -2),
                      "one_hot: num_classes must be -1 (the largest value + 1) or >= 0, got -2 "
                      "(index (1))");
  // dims and k
  REQUIRE_TG_ERROR_IS(gather(x, 2, zeros({2, 3}, kInt64)),
                      "gather: dim 2 out of range for a tensor of shape (2,3) (rank 2)");
  REQUIRE_TG_ERROR_IS(cumsum(x, -3),
                      "cumsum: dim -3 out of range for a tensor of shape (2,3) "
                      "(rank 2)");
  REQUIRE_TG_ERROR_IS(sort(x, 2), "sort: dim 2 out of range for a tensor of shape (2,3) (rank 2)");
  REQUIRE_TG_ERROR_IS(topk(x, 4), "topk: k 4 is out of range [0, 3] for dim 1 of x (2,3)");
  REQUIRE_TG_ERROR_IS(topk(x, -1, 0), "topk: k -1 is out of range [0, 2] for dim 0 of x (2,3)");
  REQUIRE_TG_ERROR_IS(topk(scalar_tensor(1), 2),
                      "topk: k 2 is out of range [0, 1] for dim 0 of x ()");
  // multinomial's probabilities and sample counts
  REQUIRE_TG_ERROR_IS(multinomial(tensor(std::vector<double>{0.5, -0.1, 0.6}), 1),
                      "multinomial: probs (3) has the entry -0.1 at [1]; probabilities must be "
                      "finite and non-negative");
  REQUIRE_TG_ERROR_IS(
      multinomial(
          tensor(std::vector<double>{0.5, 0.5, std::numeric_limits<double>::infinity(), 0.1},
                 {2, 2}),
          1),
      "multinomial: probs (2,2) has the entry inf at [1,0]; probabilities must be finite and "
      "non-negative");
  REQUIRE_TG_ERROR_IS(multinomial(tensor(std::vector<double>{0.5, 0.5, 0, 0}, {2, 2}), 1, true),
                      "multinomial: row 1 of probs (2,2) is all zero; every row needs a positive "
                      "probability");
  REQUIRE_TG_ERROR_IS(multinomial(tensor(std::vector<double>{0.5, 0, 0.5}), 3),
                      "multinomial: cannot draw 3 samples without replacement from row 0 of probs "
                      "(3), which has 2 non-zero categories");
  REQUIRE_TG_ERROR_IS(multinomial(zeros({2, 2, 2}), 1),
                      "multinomial: probs (2,2,2) must be (C) or (N, C)");
  REQUIRE_TG_ERROR_IS(multinomial(zeros({2, 0}), 1),
                      "multinomial: probs (2,0) has no categories (C = 0)");
  REQUIRE_TG_ERROR_IS(multinomial(ones({4}), 0),
                      "multinomial: num_samples must be positive, got 0 (probs (4))");
  REQUIRE_TG_ERROR_IS(multinomial(ones({4}, kInt64), 1),
                      "multinomial: probs (4) has dtype int64, expected float32 or float64");
  REQUIRE_TG_ERROR_IS(scatter_add(ones({2}, kBool), 0, i64({0}), ones({1}, kBool)),
                      "scatter_add: x (2) has dtype bool, expected float32, float64 or int64");
  REQUIRE_TG_ERROR_IS(gather(Tensor(), 0, i64({0})), "gather: x is undefined");
}

// ---- CUDA inputs: computed on the CPU through the differentiable copies ----
TEST_CASE("indexing ops on a CUDA tensor return on its device with gradients", "[indexing]") {
  if (!cuda_is_available()) {
    WARN("no CUDA device: the CUDA round trip of the indexing ops is not exercised here");
    return;
  }
  const Device dev = cuda_device(0);
  manual_seed(40);
  Tensor xc = randn({3, 4}, kFloat64).to(dev).detach().requires_grad_();
  Tensor xh = xc.detach().cpu().requires_grad_();
  Tensor idx = i64({0, 3, 2, 2, 1, 0}, {3, 2});
  Tensor src = randn({3, 2}, kFloat64);
  auto run = [&](const Tensor& x, const Device& d) {
    std::vector<Tensor> outs = {gather(x, 1, idx.to(d)),
                                scatter_add(x, 1, idx.to(d), src.to(d)),
                                topk(x, 2).values,
                                sort(x, 0, true).values,
                                cumsum(x, -1),
                                tril(x, 1),
                                triu(x, -1)};
    Tensor total = zeros({}, kFloat64, d);
    for (const Tensor& o : outs) total = total + (o * o).sum();
    return std::make_pair(outs, total);
  };
  auto [oc, tc] = run(xc, dev);
  auto [oh, th] = run(xh, kCPU);
  for (size_t i = 0; i < oc.size(); ++i) {
    REQUIRE(oc[i].device() == dev);
    tgt::require_close(oc[i].cpu(), oh[i], 1e-12, 1e-12, "output " + std::to_string(i));
  }
  tc.backward();
  th.backward();
  REQUIRE(xc.grad().device() == dev);
  tgt::require_close(xc.grad().cpu(), xh.grad(), 1e-10, 1e-10, "dx");
  REQUIRE(topk(xc, 2).indices.device() == dev);
  REQUIRE(argsort(xc).device() == dev);
  REQUIRE(one_hot(idx.to(dev)).device() == dev);
  manual_seed(41);
  Tensor mc = multinomial(tensor(std::vector<double>{0.2, 0.3, 0.5}).to(dev), 10, true);
  manual_seed(41);
  Tensor mh = multinomial(tensor(std::vector<double>{0.2, 0.3, 0.5}), 10, true);
  REQUIRE(mc.device() == dev);
  REQUIRE(ints(mc) == ints(mh));
  REQUIRE_ERROR(gather(xc, 1, idx), "gather: x (3,4) is on cuda:0 but index (3,2) is on cpu");
}
