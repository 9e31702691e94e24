// tests/ops/test_reduce.cpp — sum, mean, max, var, argmax: values against a raw-loop reference on
// random data (several dim sets, keepdim both ways, float32 and float64), hand-computed values,
// gradchecks, tie splitting for max, and error messages; PyTorch's corners (std at a zero
// deviation, var with correction > n, bool sums, empty logsumexp) against the fixtures of
// tools/make_reduce_fixtures.py (tests/fixtures/reduce).
#include "fixture_case.hpp"
#include "helpers.hpp"

#include <algorithm>
#include <limits>

using namespace tg;

namespace {
// Reference: each output element's input values, grouped by an independent index computation.
struct RefReduce {
  Shape out_shape;
  std::vector<std::vector<double>> groups;  // per output element, in input order
};
RefReduce ref_groups(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const Shape& s = x.shape();
  const int64_t n = x.dim();
  std::vector<bool> red(n, dims.empty());
  for (int64_t d : dims) red[d < 0 ? d + n : d] = true;
  RefReduce r;
  Shape keep;
  for (int64_t d = 0; d < n; ++d) {
    keep.push_back(red[d] ? 1 : s[d]);
    if (!red[d] || keepdim) r.out_shape.push_back(red[d] ? 1 : s[d]);
  }
  r.groups.resize(shape_numel(keep));
  std::vector<double> v = x.to_vector<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, o = 0, mult = 1;
    for (int64_t d = n - 1; d >= 0; --d) {
      int64_t idx = rem % s[d];
      rem /= s[d];
      if (!red[d]) o += idx * mult;
      mult *= keep[d];
    }
    r.groups[o].push_back(v[i]);
  }
  return r;
}
std::vector<double> ref_apply(const RefReduce& r, const char* what, int64_t correction = 1) {
  std::vector<double> out;
  for (const auto& g : r.groups) {
    double s = 0;
    for (double v : g) s += v;
    const double m = s / g.size();
    if (std::string(what) == "sum") out.push_back(s);
    if (std::string(what) == "mean") out.push_back(m);
    if (std::string(what) == "max") out.push_back(*std::max_element(g.begin(), g.end()));
    if (std::string(what) == "var") {
      double ss = 0;
      for (double v : g) ss += (v - m) * (v - m);
      out.push_back(ss / (g.size() - correction));
    }
  }
  return out;
}

const std::vector<std::vector<int64_t>> kDimSets = {{},     {0},     {-1},   {1, 2},       {0, 2},
                                                    {0, 3}, {-1, 0}, {1, 3}, {0, 1, 2, 3}, {2}};
}  // namespace

TEST_CASE("reductions match a raw-loop reference", "[reduce]") {
  manual_seed(11);
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{3, 1, 4, 1}}) {
      Tensor x = randn(shape, dt);
      const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
      for (const auto& dims : kDimSets) {
        for (bool keep : {false, true}) {
          std::string what = fmt::format("{} {} dims [{}] keepdim {}", dtype_name(dt),
                                         shape_str(shape), fmt::join(dims, ","), keep);
          RefReduce r = ref_groups(x, dims, keep);
          Tensor s = sum(x, dims, keep), m = mean(x, dims, keep), mx = max(x, dims, keep);
          Tensor v = var(x, dims, keep), v0 = var(x, dims, keep, 0);
          for (const Tensor& t : {s, m, mx, v, v0}) {
            INFO(what);
            REQUIRE(t.shape() == r.out_shape);
            REQUIRE(t.dtype() == dt);
          }
          tgt::require_close(s, ref_apply(r, "sum"), tol, tol, "sum " + what);
          tgt::require_close(m, ref_apply(r, "mean"), tol, tol, "mean " + what);
          tgt::require_close(mx, ref_apply(r, "max"), 0, 0, "max " + what);
          if (r.groups[0].size() > 1)
            tgt::require_close(v, ref_apply(r, "var", 1), tol, tol, "var " + what);
          tgt::require_close(v0, ref_apply(r, "var", 0), tol, tol, "var0 " + what);
        }
      }
    }
  }
}

TEST_CASE("argmax matches a raw-loop reference", "[reduce]") {
  manual_seed(12);
  Tensor x = randn({3, 4, 5}, kFloat64);
  for (int64_t d : {0, 1, 2, -1}) {
    for (bool keep : {false, true}) {
      RefReduce r = ref_groups(x, {d}, keep);
      Tensor a = argmax(x, d, keep);
      REQUIRE(a.dtype() == kInt64);
      REQUIRE(a.shape() == r.out_shape);
      std::vector<double> want;
      for (const auto& g : r.groups)
        want.push_back(static_cast<double>(std::max_element(g.begin(), g.end()) - g.begin()));
      tgt::require_close(a, want, 0, 0, fmt::format("argmax dim {} keepdim {}", d, keep));
    }
  }
}

TEST_CASE("reductions: hand-computed values", "[reduce]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  tgt::require_close(sum(x), std::vector<double>{21});
  REQUIRE(sum(x).dim() == 0);
  tgt::require_close(x.sum({0}), std::vector<double>{5, 7, 9});
  tgt::require_close(x.sum({1}, true), std::vector<double>{6, 15});
  REQUIRE(x.sum({1}, true).shape() == Shape{2, 1});
  tgt::require_close(x.mean(), std::vector<double>{3.5});
  tgt::require_close(x.mean({-1}), std::vector<double>{2, 5});
  tgt::require_close(x.max(), std::vector<double>{6});
  tgt::require_close(x.max({0}), std::vector<double>{4, 5, 6});
  Tensor y = tensor(std::vector<double>{1, 2, 3, 4});
  tgt::require_close(y.var({0}), std::vector<double>{5.0 / 3}, 1e-12);
  tgt::require_close(y.var({0}, false, 0), std::vector<double>{1.25}, 1e-12);
  // float32 accumulates in double: 2^20 copies of 0.1f sum exactly (a float accumulator drifts).
  Tensor big = full({1 << 20}, 0.1, kFloat32);
  REQUIRE(sum(big).item<double>() == static_cast<double>(0.1f) * (1 << 20));
  REQUIRE(mean(big).item<double>() == static_cast<double>(0.1f));
  // Integer and bool sums give int64.
  Tensor b = tensor(std::vector<bool>{true, false, true, true});
  REQUIRE(sum(b).dtype() == kInt64);
  REQUIRE(sum(b).item<int64_t>() == 3);
  Tensor iv = tensor(std::vector<int64_t>{3, -1, 7, 2}, {2, 2});
  tgt::require_close(sum(iv, {1}), std::vector<double>{2, 9});
  tgt::require_close(max(iv, {0}), std::vector<double>{7, 2});
  REQUIRE(max(iv).dtype() == kInt64);
  // A 0-dim tensor reduces over nothing.
  Tensor s = scalar_tensor(2.5, kFloat64);
  tgt::require_close(sum(s, {0}), std::vector<double>{2.5});
  REQUIRE(argmax(s, 0).item<int64_t>() == 0);
  // mean of an empty tensor is NaN, its sum 0.
  Tensor e = zeros({0, 3}, kFloat64);
  REQUIRE(std::isnan(mean(e).item<double>()));
  tgt::require_close(sum(e, {0}), std::vector<double>{0, 0, 0});
}

TEST_CASE("argmax: first index, NaN, int64, keepdim", "[reduce]") {
  Tensor x = tensor(std::vector<double>{1, 5, 5, 7, 2, 7}, {2, 3});
  tgt::require_close(argmax(x, 1), std::vector<double>{1, 0});
  tgt::require_close(x.argmax(0), std::vector<double>{1, 0, 1});
  REQUIRE(argmax(x, -1, true).shape() == Shape{2, 1});
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor xn = tensor(std::vector<double>{1, nan, 9, nan});
  REQUIRE(argmax(xn, 0).item<int64_t>() == 1);
  tgt::require_close(max(xn), std::vector<double>{nan});
  Tensor iv = tensor(std::vector<int64_t>{3, 9, 9, 1});
  REQUIRE(argmax(iv, 0).item<int64_t>() == 1);
  Tensor xf = tensor(std::vector<float>{0.5f, -1, 2, 2});
  REQUIRE(argmax(xf, 0).item<int64_t>() == 2);
}

TEST_CASE("max shares the gradient evenly among tied maxima", "[reduce]") {
  Tensor x = tensor(std::vector<double>{1, 3, 3, 2, 2, 2}, {2, 3}).requires_grad_();
  Tensor m = max(x, {1});
  tgt::require_close(m, std::vector<double>{3, 2});
  m.backward(tensor(std::vector<double>{1, 6}));
  tgt::require_close(x.grad(), std::vector<double>{0, 0.5, 0.5, 2, 2, 2}, 1e-12);
  x.reset_grad();
  x.max().backward();
  tgt::require_close(x.grad(), std::vector<double>{0, 0.5, 0.5, 0, 0, 0}, 1e-12);
  // float32 path.
  Tensor xf = tensor(std::vector<float>{4, 1, 4, 4}).requires_grad_();
  xf.max({0}).backward();
  tgt::require_close(xf.grad(), std::vector<double>{1.0 / 3, 0, 1.0 / 3, 1.0 / 3}, 1e-7);
}

TEST_CASE("var and mean backward by hand", "[reduce]") {
  Tensor y = tensor(std::vector<double>{1, 2, 3, 4}).requires_grad_();
  y.var({0}).backward();  // 2(x - 2.5)/3
  tgt::require_close(y.grad(), std::vector<double>{-1, -1.0 / 3, 1.0 / 3, 1}, 1e-12);
  y.reset_grad();
  y.var({0}, false, 0).backward();  // 2(x - 2.5)/4
  tgt::require_close(y.grad(), std::vector<double>{-0.75, -0.25, 0.25, 0.75}, 1e-12);
  Tensor z = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  z.mean({1}).backward(tensor(std::vector<float>{3, 6}));
  tgt::require_close(z.grad(), std::vector<double>{1, 1, 1, 2, 2, 2}, 1e-6);
  REQUIRE(z.grad().dtype() == kFloat32);
  z.reset_grad();
  z.sum().backward();
  tgt::require_close(z.grad(), std::vector<double>{1, 1, 1, 1, 1, 1});
}

TEST_CASE("reductions pass gradcheck", "[reduce]") {
  manual_seed(13);
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {1}, {-1}, {0, 2}, {2, 0}, {0, 1, 2}};
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{3, 1, 2}}) {
    Tensor x = tgt::leaf(shape);
    for (const auto& dims : dim_sets) {
      for (bool keep : {false, true}) {
        std::string what =
            fmt::format("{} dims [{}] keepdim {}", shape_str(shape), fmt::join(dims, ","), keep);
        auto d = dims;
        tgt::check_grad([d, keep](const std::vector<Tensor>& in) { return sum(in[0], d, keep); },
                        {x}, "sum " + what);
        tgt::check_grad([d, keep](const std::vector<Tensor>& in) { return mean(in[0], d, keep); },
                        {x}, "mean " + what);
        tgt::check_grad([d, keep](const std::vector<Tensor>& in) { return max(in[0], d, keep); },
                        {x}, "max " + what);
        tgt::check_grad([d, keep](const std::vector<Tensor>& in) { return var(in[0], d, keep, 0); },
                        {x}, "var0 " + what);
        if (ref_groups(x, d, keep).groups[0].size() > 1)  // n - 1 > 0
          tgt::check_grad([d, keep](const std::vector<Tensor>& in) { return var(in[0], d, keep); },
                          {x}, "var " + what);
      }
    }
  }
  // Composed: a reduction feeding elementwise math (the gradient flows through both).
  Tensor x = tgt::leaf({4, 5});
  tgt::check_grad(
      [](const std::vector<Tensor>& in) {
        Tensor c = in[0] - in[0].mean({1}, true);
        return (c * c).sum({1}) / in[0].var({1}, false);
      },
      {x}, "normalised second moment");
}

TEST_CASE("reduction errors name the op, the dims and the shape", "[reduce]") {
  Tensor x = zeros({2, 3, 4});
  REQUIRE_ERROR(sum(x, {1, -2}),
                "sum: dim 1 appears more than once in dims [1,-2] for input (2,3,4)");
  REQUIRE_ERROR(mean(x, {3}), "mean: dim 3 out of range for a tensor of shape (2,3,4) (rank 3)");
  REQUIRE_ERROR(max(x, {0, -4}), "max: dim -4 out of range for a tensor of shape (2,3,4)");
  REQUIRE_ERROR(var(x, {0, 0}), "var: dim 0 appears more than once in dims [0,0]");
  REQUIRE_ERROR(argmax(x, 5), "argmax: dim 5 out of range for a tensor of shape (2,3,4)");
  Tensor iv = tensor(std::vector<int64_t>{1, 2, 3});
  REQUIRE_ERROR(mean(iv), "mean: input (3) has dtype int64, expected float32 or float64");
  REQUIRE_ERROR(var(iv), "var: input (3) has dtype int64, expected float32 or float64");
  Tensor b = tensor(std::vector<bool>{true});
  REQUIRE(max(b).dtype() == kBool);  // any(), as PyTorch (tests/ops/test_torch_corners.cpp)
  REQUIRE_ERROR(argmax(b, 0), "argmax: input (1) has dtype bool");
  REQUIRE_ERROR(max(zeros({2, 0}), {1}),
                "max: cannot reduce input (2,0) over dims [1]: the reduced size is 0");
  REQUIRE_ERROR(argmax(zeros({0, 3}), 0), "argmax: cannot reduce input (0,3) over dims [0]");
  REQUIRE_ERROR(var(x, {0}, false, -1), "var: correction must be >= 0, got -1 (input (2,3,4))");
  REQUIRE_ERROR(sum(Tensor()), "sum: input is undefined");
}

TEST_CASE("min, argmin, logsumexp, std, all, any, isnan/isinf/isfinite", "[reduce]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor x = tensor(std::vector<double>{3, -1, -1, 2, nan, 0, -inf, 5, 1}, {3, 3});
  // min: NaN propagates, ties share the gradient (amin semantics), as max
  std::vector<double> m = min(x, {1}).to_vector<double>();
  CHECK(m[0] == -1);
  CHECK(std::isnan(m[1]));
  CHECK(m[2] == -inf);
  Tensor xt = tensor(std::vector<double>{3, -1, -1, 2}, {4}).requires_grad_();
  min(xt).backward();
  CHECK(xt.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0});
  // argmin: the first minimum; NaN counts as the minimum; int64 input
  CHECK(argmin(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 0});
  CHECK(argmin(tensor(std::vector<int64_t>{4, 2, 2, 7}, {4}), 0).item<int64_t>() == 1);
  // logsumexp: shifted, exact for large values; rows of -inf give -inf
  Tensor big = tensor(std::vector<double>{1000, 1000, -inf, -inf}, {2, 2});
  std::vector<double> lse = logsumexp(big, {1}).to_vector<double>();
  CHECK(lse[0] == Approx(1000 + std::log(2.0)).epsilon(1e-15));
  CHECK(lse[1] == -inf);
  CHECK(logsumexp(big, {1}, true).shape() == Shape{2, 1});
  manual_seed(2);
  tgt::check_grad(
      [](const std::vector<Tensor>& in) {
        return logsumexp(in[0], {0, 2});
      },
      {tgt::leaf({2, 3, 4})}, "logsumexp over dims 0, 2");
  tgt::check_grad([](const std::vector<Tensor>& in) { return min(in[0], {1}); },
                  {tgt::leaf({3, 4})}, "min over dim 1");
  tgt::check_grad([](const std::vector<Tensor>& in) { return tg::std(in[0], {1}, true, 0); },
                  {tgt::leaf({3, 4})}, "std, correction 0");
  tgt::require_close(tg::std(tensor(std::vector<double>{1, 2, 3, 4}, {4})), {std::sqrt(5.0 / 3.0)},
                     1e-15, 0);
  // all / any: a number is true where it is not 0 (NaN too); empty: all true, any false
  CHECK(all(x).item<bool>() == false);
  CHECK(any(x).item<bool>() == true);
  CHECK(all(x, {1}).to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(any(zeros({2, 0}), {1}).to_vector<bool>() == std::vector<bool>{false, false});
  CHECK(all(zeros({0})).item<bool>() == true);
  CHECK(isnan(x).to_vector<bool>() ==
        std::vector<bool>{false, false, false, false, true, false, false, false, false});
  CHECK(isinf(x).to_vector<bool>() ==
        std::vector<bool>{false, false, false, false, false, false, true, false, false});
  CHECK(isfinite(x).to_vector<bool>() ==
        std::vector<bool>{true, true, true, true, false, true, false, true, true});
  CHECK(isfinite(tensor(std::vector<int64_t>{1, 2}, {2})).to_vector<bool>() ==
        std::vector<bool>{true, true});
  REQUIRE_ERROR(min(zeros({2, 0}), {1}), "min");
  REQUIRE_ERROR(argmin(zeros({2, 3}), 2), "argmin");
}

TEST_CASE("std and std_mean: a zero deviation has gradient 0, as PyTorch", "[reduce][std]") {
  using V = std::vector<Tensor>;
  // a constant row (0, gradient 0), a NaN row and a ±inf row (NaN, NaN gradient)
  tgt::require_fixture_case("reduce/std_dim1_const_row", {"x"},
                            [](const V& in) { return tg::std(in[0], {1}); });
  // one element, correction 0: 0 with gradient 0; correction 1: NaN with a NaN gradient
  tgt::require_fixture_case("reduce/std_c0_one_element", {"x"},
                            [](const V& in) { return tg::std(in[0], {1}, false, 0); });
  tgt::require_fixture_case("reduce/std_c1_one_element", {"x"},
                            [](const V& in) { return tg::std(in[0], {0}); });
  tgt::require_fixture_case("reduce/std_mean_dims02_keepdim", {"x"}, [](const V& in) {
    return std_mean(in[0], {0, 2}, true).first * 2.0 + sum(std_mean(in[0], {1}).second);
  });
  // var with correction > n: the value divides by max(0, n - c) = 0, the gradient by n - c
  tgt::require_fixture_case("reduce/var_correction_over_n", {"x"},
                            [](const V& in) { return var(in[0], {1}, false, 3); });
  // create_graph at a zero deviation: the recorded gradient is 0 and so is its derivative
  Tensor c = full({3}, 2.0, kFloat64).requires_grad_();
  GradOptions cg;
  cg.create_graph = true;
  const Tensor g = grad({tg::std(c)}, {c}, {}, cg)[0];
  CHECK(g.to_vector<double>() == std::vector<double>{0, 0, 0});
  CHECK(grad({sum(g * g + g)}, {c})[0].to_vector<double>() == std::vector<double>{0, 0, 0});
  // away from zero: gradcheck and gradgradcheck, one dim and several
  manual_seed(21);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, {0, 2}, {}}) {
    auto fn = [dims](const V& in) { return tg::std(in[0], dims, false, 1); };
    tgt::check_grad(fn, {tgt::leaf({2, 3, 4})}, "std dims " + std::to_string(dims.size()));
    tgt::check_second_order("std", fn, {tgt::leaf({2, 3, 4})});
  }
  tgt::check_second_order(
      "std_mean", [](const V& in) { return add(std_mean(in[0], {1}, true, 0).first, in[0]); },
      {tgt::leaf({3, 4})});
}

TEST_CASE("logsumexp over an empty reduction is -inf, as PyTorch", "[reduce]") {
  const double inf = std::numeric_limits<double>::infinity();
  tgt::require_fixture_case("reduce/logsumexp_empty_dim0", {"x"},
                            [](const std::vector<Tensor>& in) { return logsumexp(in[0], {0}); });
  Tensor x = zeros({2, 0}, kFloat64).requires_grad_();
  Tensor r = logsumexp(x, {1});
  CHECK(r.shape() == Shape{2});
  CHECK(r.to_vector<double>() == std::vector<double>{-inf, -inf});
  CHECK(logsumexp(x, {1}, true).shape() == Shape{2, 1});
  CHECK(logsumexp(x, {0}).shape() == Shape{0});  // nothing empty is reduced: an empty result
  CHECK(logsumexp(x, {0, 1}).item<double>() == -inf);
  CHECK(logsumexp(zeros({0}), {0}).item<float>() == -inf);
  sum(r).backward();
  CHECK(x.grad().shape() == Shape{2, 0});
}

TEST_CASE("sum of bool counts in int64, and mean refuses bool and int64 as PyTorch", "[reduce]") {
  tgt::require_fixture_case("reduce/sum_bool_dim1", {"x"},
                            [](const std::vector<Tensor>& in) { return sum(in[0], {1}); });
  CHECK(sum(tensor(std::vector<bool>{true, false, true})).item<int64_t>() == 2);
  REQUIRE_ERROR(mean(tensor(std::vector<bool>{true})),
                "mean: input (1) has dtype bool, expected float32 or float64");
  REQUIRE_ERROR(mean(tensor(std::vector<int64_t>{1, 2}), {0}),
                "mean: input (2) has dtype int64, expected float32 or float64");
}
