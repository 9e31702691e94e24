// tests/ops/test_matmul_mixed.cpp — matmul / mm / bmm / linear of float32 with bfloat16 / float16
// (weight-only reduced precision, ops/matmul/mixed.hpp), and layer_norm / rms_norm with a float32
// input and reduced parameters: forward and backward against the same op in float32 on the
// converted operand (bf16 -> f32 is exact, so the reference is the float32 math itself).
// Every product is float32 arithmetic: K-long float32 sums of the same products as one float32
// GEMM on the converted operand, in another order (OpenBLAS on the converted panels, whose edge
// columns take other kernels than inside a wider matrix; or, for a few rows, direct dot products
// in 8 lanes). So elements differ by float32 rounding: products and float32 gradients are
// required within kRel of the largest value (sums of up to 2000 terms here), a reduced gradient
// (the float32 one rounded once) within one ulp of its dtype there. The norms are required bit
// for bit. Shapes cross panel boundaries (cpu::kMixedPanelElems / K columns, at least 16) and
// the direct path's column blocks (M <= 4 rows: blocks of 256 outputs), with tails of both and
// of the 8 lanes, batches, broadcasts and transposed views of the reduced operand.
#include "helpers.hpp"
#include "ops/matmul/cpu/mixed_gemm.hpp"
#include "ops/ops.hpp"

#include <array>
#include <cstring>
#include <functional>

using namespace tg;

namespace {

constexpr double kRel = 5e-6;

// One ulp of dt at 1 (relative to the largest value): a gradient rounded once from float32
// sums that differ by float32 rounding may round the other way.
double ulp(DType dt) { return dt == kBFloat16 ? 0x1p-7 : dt == kFloat16 ? 0x1p-10 : kRel; }

Tensor rnd(const Shape& s, DType dt, uint64_t seed) {
  manual_seed(seed);
  return randn(s, kFloat32).to(dt);
}

// max |got - want| / max |want| <= rel (rel 0: equal bits), with the op in the message.
void require_same(const Tensor& got, const Tensor& want, double rel, const std::string& what) {
  INFO(what << ": got " << dtype_name(got.dtype()) << " " << shape_str(got.shape()) << ", want "
            << dtype_name(want.dtype()) << " " << shape_str(want.shape()));
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = got.contiguous().to(kFloat32).to_vector<float>();
  const std::vector<float> w = want.contiguous().to(kFloat32).to_vector<float>();
  double maxd = 0, scale = 0;
  size_t first = g.size();
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = std::abs(static_cast<double>(g[i]) - w[i]);
    if (d > maxd) maxd = d;
    if (first == g.size() && std::memcmp(&g[i], &w[i], sizeof(float)) != 0) first = i;
    scale = std::max(scale, std::abs(static_cast<double>(w[i])));
  }
  INFO("max |diff| " << maxd << " of max |want| " << scale
                     << (first < g.size() ? " first differing element " + std::to_string(first)
                                          : std::string()));
  if (rel == 0)
    REQUIRE(first == g.size());
  else
    REQUIRE(maxd <= rel * scale);
}

using Op2 = std::function<Tensor(const Tensor&, const Tensor&)>;

// op(a, b) with one reduced operand against op on float32 leaves holding the same values:
// the output (float32), and each operand's gradient for a seeded dout (the reduced operand's
// rounded once to its dtype). rel: 0 for bit for bit, else the tolerances above.
void check_pair(const std::string& what, const Op2& op, const Tensor& a_in, const Tensor& b_in,
                bool exact = false) {
  Tensor a = a_in.detach().requires_grad_(), b = b_in.detach().requires_grad_();
  Tensor a32 = a_in.detach().to(kFloat32).requires_grad_();
  Tensor b32 = b_in.detach().to(kFloat32).requires_grad_();
  Tensor out = op(a, b), want = op(a32, b32);
  require_same(out, want, exact ? 0 : kRel, what + " forward");
  const Tensor dout = rnd(out.shape(), kFloat32, 7);
  sum(mul(out, dout)).backward();
  sum(mul(want, dout)).backward();
  require_same(a.grad(), a32.grad().to(a.dtype()), exact ? 0 : ulp(a.dtype()), what + " d lhs");
  require_same(b.grad(), b32.grad().to(b.dtype()), exact ? 0 : ulp(b.dtype()), what + " d rhs");
}

const Op2 kMatmul = [](const Tensor& a, const Tensor& b) { return matmul(a, b); };

}  // namespace

TEST_CASE("matmul_mixed: linear with bf16 / f16 weight and float32 x, across panels and tails") {
  for (DType dt : {kBFloat16, kFloat16}) {
    // K 2000: panels of 32 weight rows (Cout 70: 32, 32, 6); K 300: 218 (Cout 500: 218, 218, 64);
    // K 5000: the 16-row minimum (Cout 40: 16, 16, 8). N <= 4: the direct path (Cout 600: column
    // blocks 256, 256, 88).
    for (auto [N, K, Cout] : std::vector<std::array<int64_t, 3>>{{1, 2000, 70},
                                                                 {5, 2000, 70},
                                                                 {37, 300, 500},
                                                                 {3, 5000, 40},
                                                                 {2, 7, 3},
                                                                 {2, 300, 600},
                                                                 {4, 301, 600}}) {
      const std::string what =
          fmt::format("linear {} N {} Cin {} Cout {}", dtype_name(dt), N, K, Cout);
      INFO(what);
      const Tensor x = rnd({N, K}, kFloat32, 1), w = rnd({Cout, K}, dt, 2),
                   bias = rnd({Cout}, dt, 3);
      Tensor xw = x.detach().requires_grad_(), ww = w.detach().requires_grad_(),
             bw = bias.detach().requires_grad_();
      Tensor x32 = x.detach().requires_grad_(), w32 = w.to(kFloat32).requires_grad_(),
             b32 = bias.to(kFloat32).requires_grad_();
      Tensor y = linear(xw, ww, bw), want = linear(x32, w32, b32);
      REQUIRE(y.dtype() == kFloat32);
      require_same(y, want, kRel, what + " forward");
      const Tensor dout = rnd(y.shape(), kFloat32, 4);
      sum(mul(y, dout)).backward();
      sum(mul(want, dout)).backward();
      require_same(xw.grad(), x32.grad(), kRel, what + " dx");
      require_same(ww.grad(), w32.grad().to(dt), ulp(dt), what + " dW");
      require_same(bw.grad(), b32.grad().to(dt), ulp(dt), what + " db");
      // Without a bias, and with a float32 bias beside the reduced weight.
      require_same(linear(x, w, Tensor()), linear(x, w.to(kFloat32), Tensor()), kRel,
                   what + " no bias");
      require_same(linear(x, w, bias.to(kFloat32)), want.detach(), kRel, what + " float32 bias");
    }
  }
}

TEST_CASE("matmul_mixed: linear on (B, T, C) x, and x reduced with a float32 weight") {
  const Tensor x = rnd({2, 3, 600}, kFloat32, 11), w = rnd({130, 600}, kBFloat16, 12);
  require_same(linear(x, w, Tensor()), linear(x, w.to(kFloat32), Tensor()), kRel, "3-D x");
  check_pair(
      "linear bf16 x, float32 W",
      [](const Tensor& a, const Tensor& b) { return linear(a, b, Tensor()); },
      rnd({4, 2000}, kBFloat16, 13), rnd({50, 2000}, kFloat32, 14));
}

TEST_CASE("matmul_mixed: matmul with the reduced operand on either side, both dtypes") {
  for (DType dt : {kBFloat16, kFloat16}) {
    const std::string d = dtype_name(dt);
    check_pair("f32 (5, 2000) x " + d + " (2000, 70)", kMatmul, rnd({5, 2000}, kFloat32, 1),
               rnd({2000, 70}, dt, 2));
    check_pair(d + " (70, 2000) x f32 (2000, 5)", kMatmul, rnd({70, 2000}, dt, 3),
               rnd({2000, 5}, kFloat32, 4));
    // Folded batch (rhs one matrix), and 1-D operands.
    check_pair("f32 (2, 3, 1200) x " + d + " (1200, 90)", kMatmul, rnd({2, 3, 1200}, kFloat32, 5),
               rnd({1200, 90}, dt, 6));
    check_pair("f32 (1200) x " + d + " (1200, 90)", kMatmul, rnd({1200}, kFloat32, 7),
               rnd({1200, 90}, dt, 8));
    check_pair(d + " (90, 1200) x f32 (1200)", kMatmul, rnd({90, 1200}, dt, 9),
               rnd({1200}, kFloat32, 10));
    // A few rows by B (K, N) (Conv1D's layout), across the direct path's column blocks.
    check_pair("f32 (3, 301) x " + d + " (301, 600)", kMatmul, rnd({3, 301}, kFloat32, 11),
               rnd({301, 600}, dt, 12));
  }
}

TEST_CASE("matmul_mixed: batched, broadcast and transposed reduced operands") {
  // Batched both sides; the shared (broadcast) operand's gradient sums its batches in float32.
  check_pair(
      "bmm f32 (3, 4, 2000) x bf16 (3, 2000, 40)",
      [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, rnd({3, 4, 2000}, kFloat32, 1),
      rnd({3, 2000, 40}, kBFloat16, 2));
  check_pair("f32 (3, 4, 2000) x broadcast bf16 (1, 2000, 40)", kMatmul,
             rnd({3, 4, 2000}, kFloat32, 3), rnd({1, 2000, 40}, kBFloat16, 4));
  check_pair("broadcast bf16 (1, 40, 2000) x f32 (3, 2000, 5)", kMatmul,
             rnd({1, 40, 2000}, kBFloat16, 5), rnd({3, 2000, 5}, kFloat32, 6));
  // Transposed views of the reduced operand (strides (..., 1, R)): used as they lie.
  const Op2 rhs_t = [](const Tensor& a, const Tensor& b) { return matmul(a, b.transpose(-1, -2)); };
  const Op2 lhs_t = [](const Tensor& a, const Tensor& b) { return matmul(a.transpose(-1, -2), b); };
  check_pair("f32 (6, 2000) x bf16 (70, 2000).t()", rhs_t, rnd({6, 2000}, kFloat32, 7),
             rnd({70, 2000}, kBFloat16, 8));
  check_pair("bf16 (2000, 70).t() x f32 (2000, 6)", lhs_t, rnd({2000, 70}, kBFloat16, 9),
             rnd({2000, 6}, kFloat32, 10));
  check_pair("f32 (2, 3, 2000) x f16 (2, 50, 2000).transpose", rhs_t,
             rnd({2, 3, 2000}, kFloat32, 11), rnd({2, 50, 2000}, kFloat16, 12));
  // A strided (non-transposed) view is made contiguous first.
  const Op2 rhs_sliced = [](const Tensor& a, const Tensor& b) {
    return matmul(a, narrow(b, 1, 1, 30));
  };
  check_pair("f32 (4, 700) x bf16 (700, 40)[:, 1:31]", rhs_sliced, rnd({4, 700}, kFloat32, 13),
             rnd({700, 40}, kBFloat16, 14));
}

TEST_CASE("matmul_mixed: mm, empty products, and the pairs that stay refused") {
  const Tensor a = rnd({3, 8}, kFloat32, 1), b = rnd({8, 5}, kBFloat16, 2);
  require_same(mm(a, b), mm(a, b.to(kFloat32)), kRel, "mm");
  const Tensor e = matmul(rnd({3, 0}, kFloat32, 3), rnd({0, 4}, kBFloat16, 4));
  REQUIRE(e.dtype() == kFloat32);
  CHECK(e.to_vector<float>() == std::vector<float>(12, 0.0f));
  CHECK_THROWS_MATCHES(
      matmul(rnd({3, 8}, kFloat64, 5), b), Error,
      tgt::ErrorContains("matmul: lhs (3,8) is float64 but rhs (8,5) is bfloat16"));
  CHECK_THROWS_MATCHES(matmul(rnd({3, 8}, kFloat16, 6), b), Error,
                       tgt::ErrorContains("is float16 but rhs (8,5) is bfloat16"));
  CHECK_THROWS_MATCHES(
      linear(rnd({3, 8}, kFloat32, 7), rnd({5, 8}, kBFloat16, 8), rnd({5}, kFloat16, 9)), Error,
      tgt::ErrorContains("linear: bias (5) is float16 but weight (5,8)"));
}

TEST_CASE("matmul_mixed: create_graph gradients come back in each operand's dtype") {
  Tensor x = rnd({3, 40}, kFloat32, 1).requires_grad_();
  Tensor w = rnd({6, 40}, kBFloat16, 2).requires_grad_();
  Tensor y = sum(mul(linear(x, w, Tensor()), linear(x, w, Tensor())));
  GradOptions o;
  o.create_graph = true;
  std::vector<Tensor> g = grad({y}, {x, w}, {}, o);
  CHECK(g[0].dtype() == kFloat32);
  CHECK(g[1].dtype() == kBFloat16);
  Tensor x32 = x.detach().requires_grad_(), w32 = w.detach().to(kFloat32).requires_grad_();
  Tensor y32 = sum(mul(linear(x32, w32, Tensor()), linear(x32, w32, Tensor())));
  std::vector<Tensor> g32 = grad({y32}, {x32, w32}, {}, o);
  require_same(g[0], g32[0], kRel, "create_graph dx");
  require_same(g[1], g32[1].to(kBFloat16), ulp(kBFloat16), "create_graph dW");
}

TEST_CASE("matmul_mixed: layer_norm and rms_norm of float32 x with bf16 parameters") {
  for (DType dt : {kBFloat16, kFloat16}) {
    const Tensor x = rnd({5, 96}, kFloat32, 1), w = rnd({96}, dt, 2), b = rnd({96}, dt, 3);
    check_pair(
        std::string("rms_norm ") + dtype_name(dt),
        [](const Tensor& a, const Tensor& p) { return rms_norm(a, {96}, p, 1e-5); }, x, w, true);
    Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_(),
           bl = b.detach().requires_grad_();
    Tensor x32 = x.detach().requires_grad_(), w32 = w.to(kFloat32).requires_grad_(),
           b32 = b.to(kFloat32).requires_grad_();
    Tensor out = layer_norm(xl, {96}, wl, bl, 1e-5), want = layer_norm(x32, {96}, w32, b32, 1e-5);
    REQUIRE(out.dtype() == kFloat32);
    require_same(out, want, 0, "layer_norm forward");
    const Tensor dout = rnd({5, 96}, kFloat32, 4);
    sum(mul(out, dout)).backward();
    sum(mul(want, dout)).backward();
    require_same(xl.grad(), x32.grad(), 0, "layer_norm dx");
    require_same(wl.grad(), w32.grad().to(dt), 0, "layer_norm dw");
    require_same(bl.grad(), b32.grad().to(dt), 0, "layer_norm db");
  }
}

TEST_CASE("matmul_mixed: on a CUDA device the reduced operand is cast to float32 first") {
  if (!cuda_is_available()) return;  // a CPU-only build or machine: the CPU cases above cover it
  const Device dev = cuda_device(0);
  const Tensor x = rnd({3, 40}, kFloat32, 1), w = rnd({6, 40}, kBFloat16, 2),
               b = rnd({6}, kBFloat16, 3);
  Tensor xd = x.to(dev).requires_grad_(), wd = w.to(dev).requires_grad_();
  const Tensor y = linear(xd, wd, b.to(dev)), m = matmul(xd, wd.t());
  REQUIRE(y.dtype() == kFloat32);
  REQUIRE(y.device() == dev);
  require_same(y.cpu(), linear(x, w, b), 1e-5, "cuda linear");
  require_same(m.cpu(), matmul(x, w.t()), 1e-5, "cuda matmul");
  sum(y).backward();
  REQUIRE(wd.grad().dtype() == kBFloat16);
  REQUIRE(xd.grad().dtype() == kFloat32);
}
