// tests/ops/test_half_shape.cpp — shape and index ops on bfloat16 and float16: cat, flip,
// transpose, gather, embedding and sort against PyTorch 1.13 (tests/fixtures/half_ops/), forward
// and backward (data movement is exact: 0 ulp; the gradients that sum — embedding's repeated
// rows — add in float32 and round once, which PyTorch's float32 .half() and its bf16 index_add
// (a single bf16 addition per repeat here, two repeats) match exactly). Then the rest of the
// movement and index family moves bits unchanged: the reduced result equals the float32 op's.
#include "test_half_ops_check.hpp"

using namespace tg;
using V = std::vector<Tensor>;

TEST_CASE("half shape: cat, flip, transpose, gather, embedding, sort match PyTorch") {
  tgt::half_case(
      "cat",
      [](const V& x) {
        return cat({x[0], x[1]}, 0);
      },
      0, 0);
  tgt::half_case(
      "flip_t", [](const V& x) { return flip(x[0], {0}).t().contiguous(); }, 0, 0);
  const Tensor gi = tensor(std::vector<int64_t>{0, 2, 2, 1, 1, 0}).reshape({2, 3});
  tgt::half_case(
      "gather", [&](const V& x) { return gather(x[0], 1, gi); }, 0, 0);
  const Tensor ei = tensor(std::vector<int64_t>{0, 3, 3, 4, 0, 3}).reshape({2, 3});
  tgt::half_case(
      "embedding", [&](const V& x) { return embedding(ei, x[0]); }, 0, 0);
  tgt::half_case(
      "sort", [](const V& x) { return sort(x[0], 1, true).values; }, 0, 0);
}

TEST_CASE("half shape: movement and index ops equal the float32 op on the same values") {
  manual_seed(2);
  const Tensor idx = tensor(std::vector<int64_t>{3, 0, 2});
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"stack",
       [](const Tensor& x) {
         return stack({x, x}, 1);
       }},
      {"repeat",
       [](const Tensor& x) {
         return repeat(x, {2, 3});
       }},
      {"roll", [](const Tensor& x) { return roll(x, {3}, {1}); }},
      {"permute",
       [](const Tensor& x) {
         return x.permute({1, 0}).contiguous();
       }},
      {"narrow", [](const Tensor& x) { return x.narrow(1, 2, 5); }},
      {"tril", [](const Tensor& x) { return tril(x, 1); }},
      {"triu", [](const Tensor& x) { return triu(x); }},
      {"index_select", [&](const Tensor& x) { return index_select(x, 0, idx); }},
      {"masked_fill", [](const Tensor& x) { return masked_fill(x, gt(x, 0.0), -1.0); }},
      {"topk", [](const Tensor& x) { return topk(x, 4, 1).values; }},
      {"scatter_add",
       [](const Tensor& x) {
         const Tensor i = zeros({4, 7}, kInt64);
         return scatter_add(x, 1, i, x.narrow(1, 0, 7));
       }},
  };
  for (DType t : {kBFloat16, kFloat16})
    for (const auto& [name, f] : ops) {
      INFO(name << " " << dtype_name(t));
      Tensor x32 = randn({4, 9}).to(t).to(kFloat32);
      Tensor x = x32.to(t).requires_grad_();
      Tensor y = f(x);
      REQUIRE(y.dtype() == t);
      REQUIRE(y.to(kFloat32).to_vector<float>() == f(x32).to(t).to(kFloat32).to_vector<float>());
      Tensor x32l = x32.clone().requires_grad_();
      Tensor g32 = randn(y.shape()).to(t).to(kFloat32);
      f(x32l).backward(g32);
      y.backward(g32.to(t));
      REQUIRE(x.grad().dtype() == t);
      REQUIRE(x.grad().to(kFloat32).to_vector<float>() ==
              x32l.grad().to(t).to(kFloat32).to_vector<float>());
    }
}

TEST_CASE("half shape: in-place writes and dropout keep the reduced dtype") {
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor x = zeros({3, 4}, t);
    x.narrow(1, 1, 2).copy_(full({3, 2}, 1.5, t));
    REQUIRE(x.to(kFloat32).sum().item<float>() == 9.0f);
    manual_seed(11);
    Tensor a32 = randn({2000}).to(t).to(kFloat32);
    Tensor a = a32.to(t).requires_grad_();
    manual_seed(12);
    Tensor y = dropout(a, 0.3, true);
    manual_seed(12);
    Tensor y32 = dropout(a32, 0.3, true);  // the same draws
    REQUIRE(y.dtype() == t);
    REQUIRE(y.to(kFloat32).to_vector<float>() == y32.to(t).to(kFloat32).to_vector<float>());
    y.sum().backward();
    REQUIRE(a.grad().dtype() == t);
  }
}
