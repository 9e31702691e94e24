// tests/ops/test_half_unary.cpp — the unary family on bfloat16 and float16
// (ops/core/cpu/reduced.hpp's pattern): each result is the float32 kernel's on the loaded values,
// rounded once, forward and backward, on tensors long enough for the parallel chunks and every
// tail.
#include "helpers.hpp"

using namespace tg;

namespace {
// Forward: exactly the float32 result rounded once. Backward (for ops whose derivative reads x,
// not the saved output): exactly the float32 derivative at the same x and g, rounded once. (An op
// whose backward reads its output reads the rounded output, as in PyTorch: not this check.)
void check_once_rounded(const char* name, Tensor (*f)(const Tensor&), DType t, bool reads_x) {
  manual_seed(7);
  for (int64_t n : {1, 15, 1023, 1024, 1025, 5000}) {
    INFO(name << " " << dtype_name(t) << " n " << n);
    Tensor x32 = (randn({n}) * 3).to(t).to(kFloat32);  // values the reduced type holds
    Tensor x = x32.to(t).requires_grad_();
    Tensor y = f(x);
    REQUIRE(y.dtype() == t);
    const Tensor want = f(x32).to(t);  // the float32 result rounded once
    REQUIRE(y.to(kFloat32).to_vector<float>() == want.to(kFloat32).to_vector<float>());
    if (!reads_x) continue;
    Tensor g32 = randn({n}).to(t).to(kFloat32);
    y.backward(g32.to(t));
    REQUIRE(x.grad().dtype() == t);
    Tensor x32l = x32.clone().requires_grad_();
    f(x32l).backward(g32);
    REQUIRE(x.grad().to(kFloat32).to_vector<float>() ==
            x32l.grad().to(t).to(kFloat32).to_vector<float>());
  }
}
}  // namespace

TEST_CASE("half unary: exp, tanh, gelu, silu and sigmoid round the float32 result once") {
  for (DType t : {kBFloat16, kFloat16}) {
    check_once_rounded(
        "exp", [](const Tensor& x) { return exp(x); }, t, false);
    check_once_rounded(
        "tanh", [](const Tensor& x) { return tanh(x); }, t, false);
    check_once_rounded(
        "gelu", [](const Tensor& x) { return gelu(x); }, t, true);
    check_once_rounded(
        "gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, t, true);
    check_once_rounded(
        "silu", [](const Tensor& x) { return silu(x); }, t, true);
    check_once_rounded(
        "sigmoid", [](const Tensor& x) { return sigmoid(x); }, t, false);
  }
}
