// tests/ops/test_half_reduce.cpp — reductions and scans on bfloat16 and float16 against PyTorch
// 1.13 (tests/fixtures/half_ops/), forward and backward: the result keeps the reduced dtype (as
// PyTorch's sum of bf16 is bf16), accumulated in float32 or double and rounded once.
// Tolerances: max / amax 0 ulp (a value of the input); sum, mean, var, logsumexp, cumsum, cumprod
// 1 ulp: both accumulate in float32 or wider, in different orders, so the float32 sums differ
// by a few float32 ulps and can round to neighbouring bf16 / f16 values. The special values go
// through sum and max (NaN wins, infinities kept).
#include "test_half_ops_check.hpp"

using namespace tg;
using V = std::vector<Tensor>;

TEST_CASE("half reduce: sum, mean, max, amax, var, logsumexp match PyTorch") {
  tgt::half_case(
      "sum", [](const V& x) { return x[0].sum(); }, 1, 1);
  tgt::half_case(
      "sum_dim", [](const V& x) { return sum(x[0], {1}); }, 1, 1);
  tgt::half_case(
      "mean_dim", [](const V& x) { return mean(x[0], {-1}); }, 1, 1);
  tgt::half_case(
      "amax_dim", [](const V& x) { return max(x[0], {0}); }, 0, 0);
  tgt::half_case(
      "max", [](const V& x) { return x[0].max(); }, 0, 0);
  tgt::half_case(
      "var_dim", [](const V& x) { return var(x[0], {1}); }, 1, 1);
  tgt::half_case(
      "logsumexp", [](const V& x) { return logsumexp(x[0], {1}); }, 1, 1);
}

TEST_CASE("half reduce: cumsum and cumprod match PyTorch") {
  tgt::half_case(
      "cumsum", [](const V& x) { return cumsum(x[0], 1); }, 1, 1);
  // cumprod's backward recomputes the float32 output from x rather than reading the stored,
  // rounded one (PyTorch's bf16 reads it rounded), so it matches the float32 reference
  tgt::half_case(
      "cumprod", [](const V& x) { return cumprod(x[0], 1); }, 1, 1);
}

TEST_CASE("half reduce: argmax, min, std, prod, cummax keep the reduced dtype") {
  manual_seed(4);
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor x32 = randn({6, 301}).to(t).to(kFloat32);
    Tensor x = x32.to(t);
    REQUIRE(argmax(x, 1).to_vector<int64_t>() == argmax(x32, 1).to_vector<int64_t>());
    REQUIRE(min(x, {1}).to(kFloat32).to_vector<float>() == min(x32, {1}).to_vector<float>());
    REQUIRE(tg::std(x, {1}).dtype() == t);
    REQUIRE(tg::std(x, {1}).to(kFloat32).to_vector<float>() ==
            tg::std(x32, {1}).to(t).to(kFloat32).to_vector<float>());
    REQUIRE(prod(x, 1).dtype() == t);
    REQUIRE(cummax(x, 1).values.to(kFloat32).to_vector<float>() ==
            cummax(x32, 1).values.to_vector<float>());
  }
}
