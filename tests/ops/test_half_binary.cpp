// tests/ops/test_half_binary.cpp — the binary family (add … pow, maximum/minimum, comparisons,
// where) on bfloat16 and float16 against PyTorch 1.13 (tests/fixtures/half_ops/, from
// tools/make_half_fixtures_ops.py), forward and backward, with 0, -0, ±inf, NaN and the
// subnormals of both types among the inputs, on tensors past the 1024-element chunk with a tail;
// then PyTorch's promotion between a reduced and a float32 tensor, the double scalar (never
// promoting) and the engine's sum of two reduced gradients.
// Tolerances: 0 ulp where our float32 result rounded once is PyTorch's (its bf16 binary kernels
// compute in float32 and round once; its f16 reference is the float32 result .half()); pow 1 ulp
// (PyTorch's vectorised float32 pow and std::pow may differ by one float32 ulp before rounding).
#include "test_half_ops_check.hpp"

using namespace tg;
using V = std::vector<Tensor>;

TEST_CASE("half binary: add, sub, mul, div, maximum, minimum, comparisons, where match PyTorch") {
  tgt::half_case(
      "add", [](const V& x) { return add(x[0], x[1]); }, 0, 0);
  tgt::half_case(
      "sub", [](const V& x) { return sub(x[0], x[1]); }, 0, 0);
  tgt::half_case(
      "mul", [](const V& x) { return mul(x[0], x[1]); }, 0, 0);
  // div's d/dother = -g·(out/b): PyTorch's bf16 rounds out/b and the product (twice), ours once
  // from the stored out; its f16 reference reads the unrounded out: 1 ulp either way
  tgt::half_case(
      "div", [](const V& x) { return div(x[0], x[1]); }, 1, 1);
  tgt::half_case(
      "maximum", [](const V& x) { return maximum(x[0], x[1]); }, 0, 0);
  tgt::half_case(
      "minimum", [](const V& x) { return minimum(x[0], x[1]); }, 0, 0);
  tgt::half_case(
      "add_bcast", [](const V& x) { return add(x[0], x[1]); }, 0, 0);
  tgt::half_case(
      "mul_bcast", [](const V& x) { return mul(x[0], x[1]); }, 0, 0);
  tgt::half_case(
      "lt", [](const V& x) { return lt(x[0], x[1]); }, 0, 0);
  tgt::half_case(
      "where", [](const V& x) { return where(gt(x[0], 0.0), x[0], x[1]); }, 0, 0);
  // pow: 1 ulp forward (float32 pow paths); d/da = g·b·a^(b−1) is three bf16 roundings in
  // PyTorch, one here: 3 ulp for bf16
  tgt::half_case(
      "pow", [](const V& x) { return pow(x[0], x[1]); }, 3, 1);
}

TEST_CASE("half binary: a reduced tensor with a float32 one promotes, gradients in each dtype") {
  manual_seed(3);
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor a32 = randn({1029}).to(t).to(kFloat32);
    Tensor b = randn({1029}).requires_grad_();
    Tensor a = a32.to(t).requires_grad_();
    Tensor y = mul(a, b);  // float32, as PyTorch's bf16 * f32
    REQUIRE(y.dtype() == kFloat32);
    REQUIRE(y.to_vector<float>() == mul(a32, b.detach()).to_vector<float>());
    y.sum().backward();
    REQUIRE(a.grad().dtype() == t);
    REQUIRE(b.grad().dtype() == kFloat32);
    REQUIRE(a.grad().to(kFloat32).to_vector<float>() ==
            b.detach().to(t).to(kFloat32).to_vector<float>());
    REQUIRE(b.grad().to_vector<float>() == a32.to_vector<float>());
  }
  // bfloat16 with float16 gives float32 (neither holds the other)
  Tensor h = ones({3}, kFloat16), bf = full({3}, 0.5, kBFloat16);
  REQUIRE(add(h, bf).dtype() == kFloat32);
  REQUIRE(add(h, bf).to_vector<float>() == std::vector<float>{1.5f, 1.5f, 1.5f});
  REQUIRE(lt(bf, h).dtype() == kBool);
  REQUIRE(where(lt(bf, h), bf, h).dtype() == kFloat32);
  // a 0-dim float32 tensor does not promote a dimensioned bf16 one (PyTorch's rule): the result
  // is bf16, the product taken in float32 and rounded once; its gradient stays float32
  {
    manual_seed(6);
    Tensor x32 = randn({1029}).to(kBFloat16).to(kFloat32);
    Tensor x = x32.to(kBFloat16).requires_grad_();
    Tensor s = full({}, 2.7, kFloat32).requires_grad_();
    Tensor y = mul(x, s);
    REQUIRE(y.dtype() == kBFloat16);
    REQUIRE(y.to(kFloat32).to_vector<float>() ==
            mul(x32, 2.7).to(kBFloat16).to(kFloat32).to_vector<float>());
    y.to(kFloat32).sum().backward();
    REQUIRE(s.grad().dtype() == kFloat32);
    REQUIRE(x.grad().dtype() == kBFloat16);
    REQUIRE(add(full({}, 1.0, kBFloat16), ones({3}, kFloat32)).dtype() == kFloat32);
  }
  // int with float keeps its error, float32 with float64 too (unchanged)
  REQUIRE_ERROR(add(ones({2}, kBFloat16), ones({2}, kInt64)), "add");
  REQUIRE_ERROR(add(ones({2}, kFloat32), ones({2}, kFloat64)), "add");
}

TEST_CASE("half binary: a double scalar does not promote and is not rounded to bf16 first") {
  // x * 2.7 stays bfloat16 and is float32(x)·float32(2.7) rounded once. PyTorch 1.13 rounds the
  // scalar to bf16 first (2.703125), which we deliberately do not: 9 * 2.7 = 24.3 gives 24.25
  // here, PyTorch's 9 * 2.703125 = 24.328125 gives 24.375 (likewise 13 -> 35.0 vs 35.25).
  REQUIRE(mul(full({1}, 9.0, kBFloat16), 2.7).to(kFloat32).item<float>() == 24.25f);
  REQUIRE(mul(full({1}, 13.0, kBFloat16), 2.7).to(kFloat32).item<float>() == 35.0f);
  for (DType t : {kBFloat16, kFloat16}) {
    manual_seed(5);
    Tensor x32 = (randn({1029}) * 4).to(t).to(kFloat32);
    Tensor y = mul(x32.to(t), 2.7);
    REQUIRE(y.dtype() == t);
    REQUIRE(y.to(kFloat32).to_vector<float>() ==
            mul(x32, 2.7).to(t).to(kFloat32).to_vector<float>());
    Tensor z = add(x32.to(t), 0.1);
    REQUIRE(z.to(kFloat32).to_vector<float>() ==
            add(x32, 0.1).to(t).to(kFloat32).to_vector<float>());
  }
}

TEST_CASE("half binary: the engine sums two reduced gradients in float32, rounded once") {
  for (DType t : {kBFloat16, kFloat16}) {
    manual_seed(9);
    Tensor x32 = randn({1029}).to(t).to(kFloat32);
    Tensor p = randn({1029}).to(t).to(kFloat32), q = randn({1029}).to(t).to(kFloat32);
    Tensor x = x32.to(t).requires_grad_();
    add(mul(x, p.to(t)), mul(x, q.to(t))).sum().backward();  // two gradients for x
    REQUIRE(x.grad().dtype() == t);
    // each term p·1, q·1 is exact; their sum is rounded once
    REQUIRE(x.grad().to(kFloat32).to_vector<float>() ==
            add(p, q).to(t).to(kFloat32).to_vector<float>());
  }
}
