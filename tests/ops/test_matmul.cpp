// tests/ops/test_matmul.cpp — matmul, mm, bmm and linear: values against a naive triple loop for
// every rank combination (with batch broadcasting and size-1 dims), float64 gradchecks, float32
// agreement, and the exact error messages.
#include "helpers.hpp"

#include <algorithm>

using namespace tg;

namespace {

// Naive reference of PyTorch's matmul rules over float64 values: 1-D lhs (K) is (1, K), 1-D rhs
// (K) is (K, 1), batch dims broadcast; written independently of ops/matmul/matmul.cpp.
std::vector<double> ref_matmul(const Tensor& a, const Tensor& b, Shape* out_shape) {
  std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  Shape sa = a.shape(), sb = b.shape();
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), 1);
  if (b1) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t nd = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), nd - ba.size(), 1);
  bb.insert(bb.begin(), nd - bb.size(), 1);
  Shape batch(nd);
  for (size_t d = 0; d < nd; ++d) batch[d] = std::max(ba[d], bb[d]);
  *out_shape = batch;
  if (!a1) out_shape->push_back(M);
  if (!b1) out_shape->push_back(N);
  const int64_t nb = shape_numel(batch);
  std::vector<double> out(nb * M * N, 0.0);
  for (int64_t i = 0; i < nb; ++i) {
    // Unravel i over batch, then ravel into a's and b's batch (index 0 on broadcast dims).
    int64_t rem = i, ia = 0, ib = 0, sta = 1, stb = 1;
    for (size_t d = nd; d-- > 0;) {
      int64_t id = rem % batch[d];
      rem /= batch[d];
      ia += (ba[d] == 1 ? 0 : id) * sta;
      ib += (bb[d] == 1 ? 0 : id) * stb;
      sta *= ba[d];
      stb *= bb[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += va[(ia * M + m) * K + k] * vb[(ib * K + k) * N + n];
        out[(i * M + m) * N + n] = acc;
      }
  }
  return out;
}

// Both operands from a seeded randn; checks float64 and float32 values and the float64 gradient.
void check_matmul_case(const Shape& sa, const Shape& sb) {
  std::string what = "matmul " + shape_str(sa) + " x " + shape_str(sb);
  INFO(what);
  Tensor a = tgt::leaf(sa), b = tgt::leaf(sb);
  Shape ref_shape;
  std::vector<double> ref = ref_matmul(a, b, &ref_shape);
  Tensor out = matmul(a, b);
  REQUIRE(out.shape() == ref_shape);
  REQUIRE(out.dtype() == kFloat64);
  tgt::require_close(out, ref, 1e-12, 1e-12, what);
  Tensor out32 = matmul(a.detach().to(kFloat32), b.detach().to(kFloat32));
  REQUIRE(out32.dtype() == kFloat32);
  tgt::require_close(out32, ref, 1e-4, 1e-4, what + " float32");
  tgt::check_grad([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b}, what);
}

// Reference linear: x (..., Cin) · Wᵀ + b.
std::vector<double> ref_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  std::vector<double> vx = x.to_vector<double>(), vw = w.to_vector<double>();
  std::vector<double> vb = b.defined() ? b.to_vector<double>() : std::vector<double>();
  const int64_t Cout = w.size(0), Cin = w.size(1), N = x.numel() / Cin;
  std::vector<double> out(N * Cout);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t o = 0; o < Cout; ++o) {
      double acc = vb.empty() ? 0.0 : vb[o];
      for (int64_t i = 0; i < Cin; ++i) acc += vx[r * Cin + i] * vw[o * Cin + i];
      out[r * Cout + o] = acc;
    }
  return out;
}

}  // namespace

TEST_CASE("matmul: values and gradients for every rank combination", "[matmul]") {
  manual_seed(1);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4}, {4}},                    // dot -> 0-dim
      {{4}, {4, 3}},                 // vector · matrix
      {{3, 4}, {4}},                 // matrix · vector
      {{3, 4}, {4, 5}},              // mm
      {{1, 1}, {1, 1}},              // size-1 everything
      {{2, 3, 4}, {4}},              // batch · vector
      {{4}, {2, 4, 3}},              // vector · batch
      {{2, 3, 4}, {4, 5}},           // folded fast path
      {{3, 4}, {2, 4, 5}},           // matrix · batch (lhs broadcast)
      {{2, 3, 4}, {2, 4, 5}},        // bmm-like
      {{2, 1, 3, 4}, {5, 4, 6}},     // broadcasting batch both ways
      {{1, 3, 4}, {2, 4, 5}},        // size-1 batch broadcast on lhs
      {{2, 3, 4}, {1, 4, 5}},        // size-1 batch broadcast on rhs
      {{2, 2, 3, 4}, {2, 2, 4, 2}},  // 4-D · 4-D
      {{2, 2, 3, 4}, {4}},           // 4-D · vector
      {{4}, {2, 2, 4, 3}},           // vector · 4-D
      {{2, 1, 1, 4}, {3, 4, 1}},     // size-1 M and N with broadcasting
      {{3, 1}, {1, 4}},              // K = 1 outer product
  };
  for (const auto& [sa, sb] : cases) check_matmul_case(sa, sb);
}

TEST_CASE("matmul: hand-computed values", "[matmul]") {
  Tensor a = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor(std::vector<float>{1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor c = matmul(a, b);
  REQUIRE(c.shape() == Shape{2, 2});
  tgt::require_close(c, std::vector<double>{4, 5, 10, 11});
  Tensor v = tensor(std::vector<float>{1, 2, 3});
  Tensor d = v.matmul(v);
  REQUIRE(d.dim() == 0);
  REQUIRE(d.item<double>() == 14.0);
  tgt::require_close(matmul(a, v), std::vector<double>{14, 32});
  // Gradients by hand: y = sum(A·B) -> dA = 1·Bᵀ row sums, dB = Aᵀ·1 column sums.
  Tensor A = tensor(std::vector<double>{1, 2, 3, 4}, {2, 2}).requires_grad_();
  Tensor B = tensor(std::vector<double>{5, 6, 7, 8}, {2, 2}).requires_grad_();
  matmul(A, B).backward(ones({2, 2}, kFloat64));
  tgt::require_close(A.grad(), std::vector<double>{11, 15, 11, 15});
  tgt::require_close(B.grad(), std::vector<double>{4, 4, 6, 6});
}

TEST_CASE("matmul: broadcast operand accumulates its gradient over the batch", "[matmul]") {
  // W (2, 2) shared by 3 batches of ones: dW = sum_i X[i]ᵀ·1.
  Tensor x = ones({3, 1, 2}, kFloat64).requires_grad_();
  Tensor w = tensor(std::vector<double>{1, 2, 3, 4}, {1, 2, 2}).requires_grad_();
  Tensor y = matmul(x, w);  // (3, 1, 2)
  tgt::require_close(y, std::vector<double>{4, 6, 4, 6, 4, 6});
  y.backward(ones({3, 1, 2}, kFloat64));
  tgt::require_close(w.grad(), std::vector<double>{3, 3, 3, 3});
  tgt::require_close(x.grad(), std::vector<double>{3, 7, 3, 7, 3, 7});
}

TEST_CASE("matmul: empty dims give empty or zero results", "[matmul]") {
  Tensor a = tgt::leaf({2, 0}), b = tgt::leaf({0, 3});
  Tensor c = matmul(a, b);  // K = 0: zeros
  REQUIRE(c.shape() == Shape{2, 3});
  tgt::require_close(c, std::vector<double>(6, 0.0));
  c.backward(ones({2, 3}, kFloat64));
  REQUIRE(a.grad().shape() == Shape{2, 0});
  REQUIRE(b.grad().shape() == Shape{0, 3});
  Tensor e = matmul(tgt::leaf({0, 4}), tgt::leaf({4, 3}));
  REQUIRE(e.shape() == Shape{0, 3});
  REQUIRE(matmul(zeros({0, 2, 3}), zeros({3, 4})).shape() == Shape{0, 2, 4});
}

TEST_CASE("mm and bmm: values, gradients, and their rank rules", "[matmul]") {
  manual_seed(2);
  Tensor a = tgt::leaf({3, 4}), b = tgt::leaf({4, 2});
  Shape rs;
  tgt::require_close(mm(a, b), ref_matmul(a, b, &rs), 1e-12, 1e-12, "mm");
  tgt::check_grad([](const std::vector<Tensor>& in) { return mm(in[0], in[1]); }, {a, b}, "mm");
  Tensor x = tgt::leaf({2, 3, 4}), y = tgt::leaf({2, 4, 5});
  Tensor z = bmm(x, y);
  REQUIRE(z.shape() == Shape{2, 3, 5});
  tgt::require_close(z, ref_matmul(x, y, &rs), 1e-12, 1e-12, "bmm");
  tgt::check_grad([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, {x, y}, "bmm");
  REQUIRE(std::string(z.grad_fn()->op) == "bmm");
  Tensor x1 = tgt::leaf({1, 1, 3}), y1 = tgt::leaf({1, 3, 1});
  tgt::check_grad([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, {x1, y1},
                  "bmm size-1");
}

TEST_CASE("linear: values and gradients with and without bias", "[matmul]") {
  manual_seed(3);
  const std::vector<Shape> xs = {{3}, {2, 3}, {2, 4, 3}, {1, 1, 3}, {2, 2, 1, 3}};
  for (const Shape& sx : xs) {
    INFO("x " << shape_str(sx));
    Tensor x = tgt::leaf(sx), w = tgt::leaf({5, 3}), b = tgt::leaf({5});
    Shape ys = sx;
    ys.back() = 5;
    Tensor y = linear(x, w, b);
    REQUIRE(y.shape() == ys);
    tgt::require_close(y, ref_linear(x, w, b), 1e-12, 1e-12, "linear");
    Tensor y0 = linear(x, w);
    tgt::require_close(y0, ref_linear(x, w, Tensor()), 1e-12, 1e-12, "linear no bias");
    Tensor y32 = linear(x.detach().to(kFloat32), w.detach().to(kFloat32), b.detach().to(kFloat32));
    tgt::require_close(y32, ref_linear(x, w, b), 1e-4, 1e-4, "linear float32");
    tgt::check_grad([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                    {x, w, b}, "linear with bias");
    tgt::check_grad([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); }, {x, w},
                    "linear");
  }
  // Only some inputs require grad.
  Tensor x = tgt::leaf({2, 3}), w = randn({4, 3}, kFloat64), b = tgt::leaf({4});
  linear(x, w, b).backward(ones({2, 4}, kFloat64));
  tgt::require_close(b.grad(), std::vector<double>{2, 2, 2, 2});
  REQUIRE_FALSE(w.grad().defined());
  REQUIRE(x.grad().shape() == Shape{2, 3});
}

TEST_CASE("linear: hand-computed values", "[matmul]") {
  Tensor x = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor w = tensor(std::vector<float>{1, 0, 1, 1, 0, 2}, {3, 2});
  Tensor b = tensor(std::vector<float>{10, 20, 30});
  tgt::require_close(linear(x, w, b), std::vector<double>{11, 23, 34, 13, 27, 38});
  Tensor e = linear(zeros({2, 0}), zeros({3, 0}), b);  // Cin = 0: the bias on each row
  tgt::require_close(e, std::vector<double>{10, 20, 30, 10, 20, 30});
}

TEST_CASE("matmul family: errors name op, arguments and shapes", "[matmul]") {
  Tensor a = zeros({2, 3, 4}), b = zeros({5, 6});
  REQUIRE_ERROR(matmul(a, b), "matmul: lhs (2,3,4) and rhs (5,6): inner dims 4 != 5");
  REQUIRE_ERROR(matmul(zeros({3}), zeros({4})), "matmul: lhs (3) and rhs (4): inner dims 3 != 4");
  REQUIRE_ERROR(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})),
                "matmul: lhs (2,3,4) and rhs (3,4,5): batch dims (2) and (3) cannot be broadcast");
  REQUIRE_ERROR(matmul(scalar_tensor(1), zeros({3})),
                "matmul: lhs () and rhs (3): both operands need at least 1 dim");
  REQUIRE_ERROR(matmul(zeros({3}), scalar_tensor(1)),
                "matmul: lhs (3) and rhs (): both operands need at least 1 dim");
  REQUIRE_ERROR(matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)),
                "matmul: lhs (2,3) is float32 but rhs (3,2) is float64");
  REQUIRE_ERROR(matmul(zeros({2, 3}, kInt64), zeros({3, 2}, kInt64)),
                "matmul: lhs (2,3) has dtype int64, expected float32 or float64");
  REQUIRE_ERROR(matmul(Tensor(), zeros({3})), "matmul: lhs is undefined");
  REQUIRE_ERROR(mm(zeros({2, 3, 4}), zeros({4, 5})),
                "mm: lhs (2,3,4) and rhs (4,5): both must be 2-D");
  REQUIRE_ERROR(mm(zeros({2, 3}), zeros({4, 5})), "mm: lhs (2,3) and rhs (4,5): inner dims 3 != 4");
  REQUIRE_ERROR(bmm(zeros({2, 3, 4}), zeros({4, 5})),
                "bmm: lhs (2,3,4) and rhs (4,5): both must be 3-D");
  REQUIRE_ERROR(bmm(zeros({2, 3, 4}), zeros({1, 4, 5})),
                "bmm: lhs (2,3,4) and rhs (1,4,5): batch sizes 2 != 1 (bmm does not broadcast)");
  REQUIRE_ERROR(bmm(zeros({2, 3, 4}), zeros({2, 5, 5})),
                "bmm: lhs (2,3,4) and rhs (2,5,5): inner dims 4 != 5");
}

TEST_CASE("linear: errors name x, weight and bias shapes", "[matmul]") {
  REQUIRE_ERROR(linear(zeros({2, 5}), zeros({4, 3}), zeros({4})),
                "linear: x has 5 input features but weight expects Cin = 3 (x (2,5), weight (4,3), "
                "bias (4))");
  REQUIRE_ERROR(linear(zeros({2, 3}), zeros({4, 3}), zeros({5})),
                "linear: bias must be (Cout) = (4) (x (2,3), weight (4,3), bias (5))");
  REQUIRE_ERROR(linear(zeros({2, 3}), zeros({12})),
                "linear: weight must be 2-D (Cout, Cin) (x (2,3), weight (12), bias undefined)");
  REQUIRE_ERROR(linear(scalar_tensor(1), zeros({4, 1})),
                "linear: x must be (..., Cin), got a 0-dim tensor (x (), weight (4,1)");
  REQUIRE_ERROR(linear(zeros({2, 3}), zeros({4, 3}, kFloat64)),
                "linear: x (2,3) is float32 but weight (4,3) is float64");
  REQUIRE_ERROR(linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, kFloat64)),
                "linear: bias (4) is float64 but weight (4,3) is float32");
  REQUIRE_ERROR(linear(zeros({2, 3}), Tensor()), "linear: weight is undefined");
}

// OpenBLAS's pool: a GEMM below 2^24 multiply-adds runs on one OpenBLAS thread (ops/matmul/cpu/blas.cpp)
// and leaves the pool at tg::get_num_threads() afterwards; small and large products give the
// same values at 1 and 2 threads.
extern "C" int openblas_get_num_threads();
TEST_CASE("matmul: small GEMMs on one OpenBLAS thread and the pool restored after", "[matmul]") {
  const int before = get_num_threads();
  manual_seed(3);
  Tensor a = randn({32, 128}), b = randn({128, 384});   // 1.6M multiply-adds: one thread
  Tensor c = randn({300, 256}), d = randn({256, 300});  // 23M: the whole pool
  std::vector<float> small[2], large[2];
  for (int i = 0; i < 2; ++i) {
    set_num_threads(i + 1);
    small[i] = matmul(a, b).to_vector<float>();
    REQUIRE(openblas_get_num_threads() == i + 1);
    large[i] = matmul(c, d).to_vector<float>();
    REQUIRE(openblas_get_num_threads() == i + 1);
  }
  set_num_threads(before);
  REQUIRE(small[0] == small[1]);
  REQUIRE(large[0].size() == 90000u);
  // the pool may split the 256-term sums elsewhere: float32 rounding of sums of size ~16
  tgt::require_close(tensor(large[1], {300, 300}), tensor(large[0], {300, 300}), 5e-4, 1e-5,
                     "2 threads against 1");
}
