// tests/ops/test_half_softmax.cpp — softmax and log_softmax on bfloat16 and float16, forward and
// backward, against PyTorch 1.13 (tests/fixtures/half_rows/softmax_*, from
// tools/make_half_fixtures_rows.py): rows of 1, 15, 16, 17, 1023 and 1027 elements (the float32
// vector bodies and every tail), a softmax over dim 0 (strided rows), and rows holding -inf, +inf,
// NaN and logits up to 3e38 (bfloat16) / 6e4 (float16).
// Tolerances (tests/ops/half_rows.hpp: ulps of the reduced type at the reference value, plus a
// floor that is a fraction of the tensor's largest magnitude):
//   against PyTorch's float32 result rounded once (bf16 and f16): the output 1 ulp; the gradient,
//     whose reference applies the float32 formula to the ROUNDED output (what a reduced-type
//     backward saves and reads, PyTorch's too), 1 ulp + 2^-16 of the largest: we also compute in
//     float32 and round once, but exp and the sums run in another order, which can move a value
//     across a rounding boundary, and dx subtracts terms as large as the largest;
//   against PyTorch's bfloat16 kernels: 2 ulps + 2^-8 of the largest (one bfloat16 rounding of
//     the largest intermediate), forward and backward: PyTorch 1.13 rounds x - max, the log-sum
//     and its backward's products to bfloat16 along the way; we keep float32 throughout.
// The fully masked row (all -inf) is tapegrad's rule (zeros, not PyTorch's NaN): test_nan_rows.cpp.
#include "half_rows.hpp"

using namespace tg;

namespace {
void check_case(const std::string& id, DType t) {
  tgt::Fixture f(id);
  const int64_t dim = std::stoll(f.meta("dim"));
  const bool bf = t == kBFloat16;
  const std::string s = bf ? "" : "16";
  for (bool is_log : {false, true}) {
    const std::string op = is_log ? "lsm" : "sm";
    INFO(id << " " << dtype_name(t) << " " << (is_log ? "log_softmax" : "softmax"));
    Tensor x = f.tensor("x" + s).to(t).requires_grad_();
    Tensor y = is_log ? log_softmax(x, dim) : softmax(x, dim);
    REQUIRE(y.dtype() == t);
    y.backward(f.tensor("dout" + s).to(t));
    REQUIRE(x.grad().dtype() == t);
    tgt::check_refs(f, op, y, x.grad(), t, 0);
  }
}
}  // namespace

TEST_CASE("half softmax: bf16 and f16 rows of every tail length and over dim 0 match PyTorch") {
  const auto cases = tgt::half_cases("softmax_D");
  REQUIRE(cases.size() == 6);
  for (const std::string& id : cases)
    for (DType t : {kBFloat16, kFloat16}) check_case(id, t);
  for (DType t : {kBFloat16, kFloat16}) check_case("half_rows/softmax_dim0", t);
}

TEST_CASE("half softmax: -inf, +inf, NaN and huge logits in bf16 and f16 match PyTorch") {
  const auto cases = tgt::half_cases("softmax_special");
  REQUIRE(cases.size() == 2);
  for (const std::string& id : cases)
    for (DType t : {kBFloat16, kFloat16}) check_case(id, t);
}

TEST_CASE("half softmax: bf16 equals the float32 kernel on the loaded values, rounded once") {
  // Our own float32 path is the reference here, so the match is exact, every tail included.
  manual_seed(3);
  for (int64_t n : {1, 15, 16, 17, 33, 1023, 1027, 4099}) {
    for (DType t : {kBFloat16, kFloat16}) {
      INFO("n " << n << " " << dtype_name(t));
      const Tensor x32 = (randn({3, n}) * 4).to(t).to(kFloat32);
      const Tensor g32 = randn({3, n}).to(t).to(kFloat32);
      for (bool is_log : {false, true}) {
        Tensor x = x32.to(t).requires_grad_();
        Tensor y = is_log ? log_softmax(x, 1) : softmax(x, 1);
        const Tensor y32 = is_log ? log_softmax(x32, 1) : softmax(x32, 1);
        REQUIRE(y.to(kFloat32).to_vector<float>() == y32.to(t).to(kFloat32).to_vector<float>());
        y.backward(g32.to(t));
        // the float32 backward formula on the saved (rounded) output, in float32 ops: their sum
        // runs in another order than the row kernel's, hence 1 ulp
        const Tensor yr = y.to(kFloat32);
        const Tensor dx32 = is_log ? sub(g32, mul(exp(yr), sum(g32, {1}, true)))
                                   : mul(yr, sub(g32, sum(mul(g32, yr), {1}, true)));
        tgt::require_ulps("dx vs float32 on the saved output", x.grad(), dx32, t, 1);
      }
    }
  }
}

// The row-wise activations of issue 42's list: GELU and SiLU are unary ops (their bf16 kernels are
// the unary family's). Checked here for what PyTorch 1.13 gets wrong: its tanh-GELU runs in
// bfloat16 arithmetic and gives -0 at -3.4; ours computes in float32 and rounds once, so the small
// negative value survives.
TEST_CASE("half activations: tanh-GELU(-3.4) in bf16 is the float32 value rounded once, not -0") {
  const Tensor x = full({1}, -3.4).to(kBFloat16);
  const float got = gelu(x, "tanh").to(kFloat32).item<float>();
  const float want = gelu(x.to(kFloat32), "tanh").to(kBFloat16).to(kFloat32).item<float>();
  CHECK(got == want);
  CHECK(got < 0);  // PyTorch 1.13: -0
}
