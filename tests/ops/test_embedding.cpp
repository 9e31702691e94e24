// tests/ops/test_embedding.cpp — embedding: lookup values, scatter-add gradient with repeated
// indices, padding_idx (none, positive and negative), gradcheck and errors.
#include "helpers.hpp"

using namespace tg;

namespace {
// weight (V, C) = 10*v + c.
Tensor table(int64_t V, int64_t C, DType dt = kFloat64) {
  std::vector<double> v;
  for (int64_t i = 0; i < V; ++i)
    for (int64_t c = 0; c < C; ++c) v.push_back(10.0 * i + c);
  return tensor(v, {V, C}).to(dt);
}
}  // namespace

TEST_CASE("embedding looks up rows for indices of any shape", "[embedding]") {
  Tensor w = table(5, 3);
  Tensor idx = tensor(std::vector<int64_t>{4, 0, 2, 2}, {2, 2});
  Tensor y = embedding(idx, w);
  REQUIRE(y.shape() == Shape{2, 2, 3});
  tgt::require_close(y, {40, 41, 42, 0, 1, 2, 20, 21, 22, 20, 21, 22}, 0, 0);
  // 0-dim indices give one row (C).
  Tensor one = embedding(scalar_tensor(3, kInt64), table(5, 3, kFloat32));
  REQUIRE(one.shape() == Shape{3});
  REQUIRE(one.dtype() == kFloat32);
  tgt::require_close(one, {30, 31, 32}, 0, 0);
}

TEST_CASE("embedding backward scatter-adds and skips padding rows", "[embedding]") {
  Tensor idx = tensor(std::vector<int64_t>{1, 3, 1, 4}, {4});
  Tensor dout = tensor(std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4}, {4, 2});
  auto grad_with = [&](std::optional<int64_t> pad) {
    Tensor w = table(5, 2).requires_grad_();
    embedding(idx, w, pad).backward(dout);
    return w.grad();
  };
  tgt::require_close(grad_with(std::nullopt), {0, 0, 4, 4, 0, 0, 2, 2, 4, 4}, 0, 0);
  tgt::require_close(grad_with(1), {0, 0, 0, 0, 0, 0, 2, 2, 4, 4}, 0, 0);
  tgt::require_close(grad_with(-2), {0, 0, 4, 4, 0, 0, 0, 0, 4, 4}, 0, 0);  // -2 is row V-2 = 3
  tgt::require_close(grad_with(4), {0, 0, 4, 4, 0, 0, 2, 2, 0, 0}, 0, 0);
  tgt::require_close(grad_with(-1), {0, 0, 4, 4, 0, 0, 2, 2, 0, 0}, 0, 0);  // -1 is row V-1
  // The padding row is still read in the forward, like PyTorch.
  tgt::require_close(embedding(tensor(std::vector<int64_t>{1}, {1}), table(5, 2), 1), {10, 11}, 0,
                     0);
}

TEST_CASE("embedding gradcheck w.r.t. weight", "[embedding]") {
  manual_seed(41);
  Tensor w = tgt::leaf({6, 3});
  Tensor i2 = tensor(std::vector<int64_t>{0, 5, 5, 2, 1, 0}, {2, 3});
  tgt::check_grad([i2](const std::vector<Tensor>& in) { return embedding(i2, in[0]); }, {w},
                  "embedding (2,3)");
  Tensor i0 = scalar_tensor(2, kInt64);
  tgt::check_grad([i0](const std::vector<Tensor>& in) { return embedding(i0, in[0]); }, {w},
                  "embedding 0-dim");
  Tensor f32 = table(6, 3, kFloat32).requires_grad_();
  embedding(i2, f32).backward(ones({2, 3, 3}));
  REQUIRE(f32.grad().dtype() == kFloat32);
  tgt::require_close(f32.grad(), {2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 2}, 0, 0);
}

TEST_CASE("embedding errors name the index, V and the shapes", "[embedding]") {
  Tensor w = zeros({5, 3});
  REQUIRE_ERROR(
      embedding(tensor(std::vector<int64_t>{0, 7, 1, 2}, {2, 2}), w),
      "embedding: index 7 at [0,1] is out of range for weight (5,3) with V = 5 (indices (2,2))");
  REQUIRE_ERROR(embedding(tensor(std::vector<int64_t>{-1, 0}, {2}), w),
                "embedding: index -1 at [0] is out of range");
  REQUIRE_ERROR(embedding(zeros({2}), w),
                "embedding: indices (2) has dtype float32, expected int64");
  REQUIRE_ERROR(embedding(tensor(std::vector<int64_t>{0}, {1}), zeros({5})),
                "embedding: weight (5) must be 2-D (V, C) (indices (1))");
  REQUIRE_ERROR(embedding(tensor(std::vector<int64_t>{0}, {1}), zeros({5, 3}, kInt64)),
                "embedding: weight (5,3) has dtype int64");
  REQUIRE_ERROR(embedding(tensor(std::vector<int64_t>{0}, {1}), w, 5),
                "embedding: padding_idx 5 is out of range for weight (5,3) with V = 5");
  REQUIRE_ERROR(embedding(tensor(std::vector<int64_t>{0}, {1}), w, -6),
                "embedding: padding_idx -6 is out of range");
}
