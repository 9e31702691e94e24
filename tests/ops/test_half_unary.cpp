// tests/ops/test_half_unary.cpp — the unary family on bfloat16 and float16
// (ops/core/cpu/reduced.hpp's pattern): each result is the float32 kernel's on the loaded values,
// rounded once, forward and backward, on tensors long enough for the parallel chunks and every
// tail, and through the special lanes (0, -0, ±inf, NaN, subnormals of both reduced types). A
// backward that reads the output (exp, tanh, sigmoid, sqrt, rsqrt) reads it as stored, rounded (as
// PyTorch's bf16 kernels do): its reference is the float32 formula on the rounded output, rounded
// once.
#include "helpers.hpp"

#include <cmath>
#include <limits>

using namespace tg;

namespace {
using Fn = Tensor (*)(const Tensor&);
using FromY = Tensor (*)(const Tensor& g, const Tensor& y);

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}
std::vector<float> f32(const Tensor& t) { return t.to(kFloat32).to_vector<float>(); }

// n values of the reduced type (as float32): scaled normals, the special values first, and
// positive only (|x| + 0.01) for ops defined on x > 0.
Tensor inputs(int64_t n, DType t, bool positive) {
  Tensor x = randn({n}) * 3;
  if (positive) x = add(abs(x), 0.01);
  std::vector<float> v = x.to_vector<float>();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> sp = {0.f,
                                 -0.f,
                                 inf,
                                 -inf,
                                 NAN,
                                 std::ldexp(1.f, -130),
                                 -std::ldexp(1.f, -133),
                                 std::ldexp(1.f, -20),
                                 65504.f};
  for (size_t i = 0; i < sp.size() && i < v.size(); ++i)
    if (!positive || sp[i] >= 0) v[i] = sp[i];
  return tensor(v).to(t).to(kFloat32);
}

void check_once_rounded(const char* name, Fn f, DType t, bool positive = false,
                        FromY from_y = nullptr) {
  manual_seed(7);
  for (int64_t n : {1, 15, 1023, 1024, 1025, 5000}) {
    INFO(name << " " << dtype_name(t) << " n " << n);
    Tensor x32 = inputs(n, t, positive);  // values the reduced type holds
    Tensor x = x32.to(t).requires_grad_();
    Tensor y = f(x);
    REQUIRE(y.dtype() == t);
    const Tensor want = f(x32).to(t);  // the float32 result rounded once
    REQUIRE(same(f32(y), f32(want)));
    Tensor g32 = randn({n}).to(t).to(kFloat32);
    y.backward(g32.to(t));
    REQUIRE(x.grad().dtype() == t);
    Tensor dwant;
    if (from_y) {
      dwant = from_y(g32, y.detach().to(kFloat32)).to(t);
    } else {
      Tensor x32l = x32.clone().requires_grad_();
      f(x32l).backward(g32);
      dwant = x32l.grad().to(t);
    }
    REQUIRE(same(f32(x.grad()), f32(dwant)));
  }
}
}  // namespace

TEST_CASE("half unary: exp, tanh, gelu, silu and sigmoid round the float32 result once") {
  for (DType t : {kBFloat16, kFloat16}) {
    check_once_rounded(
        "exp", [](const Tensor& x) { return exp(x); }, t, false,
        [](const Tensor& g, const Tensor& y) { return mul(g, y); });
    check_once_rounded(
        "tanh", [](const Tensor& x) { return tanh(x); }, t, false,
        [](const Tensor& g, const Tensor& y) { return mul(g, rsub(1.0, mul(y, y))); });
    check_once_rounded(
        "gelu", [](const Tensor& x) { return gelu(x); }, t);
    check_once_rounded(
        "gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, t);
    check_once_rounded(
        "silu", [](const Tensor& x) { return silu(x); }, t);
    check_once_rounded(
        "sigmoid", [](const Tensor& x) { return sigmoid(x); }, t, false,
        [](const Tensor& g, const Tensor& y) { return mul(mul(g, y), rsub(1.0, y)); });
  }
}

TEST_CASE("half unary: the other entries and the special-lane overrides accept bf16 and f16") {
  for (DType t : {kBFloat16, kFloat16}) {
    check_once_rounded(
        "log", [](const Tensor& x) { return log(x); }, t, true);
    check_once_rounded(
        "sqrt", [](const Tensor& x) { return sqrt(x); }, t, true,
        [](const Tensor& g, const Tensor& y) { return div(mul(g, 0.5), y); });
    check_once_rounded(
        "rsqrt", [](const Tensor& x) { return rsqrt(x); }, t, true,
        [](const Tensor& g, const Tensor& y) { return mul(mul(mul(mul(g, -0.5), y), y), y); });
    check_once_rounded(
        "pow 1.5", [](const Tensor& x) { return pow(x, 1.5); }, t, true);
    check_once_rounded(
        "abs", [](const Tensor& x) { return abs(x); }, t);
    check_once_rounded(
        "neg", [](const Tensor& x) { return neg(x); }, t);
    check_once_rounded(
        "relu", [](const Tensor& x) { return relu(x); }, t);
    check_once_rounded(
        "sin", [](const Tensor& x) { return sin(x); }, t);
    check_once_rounded(
        "log1p", [](const Tensor& x) { return log1p(x); }, t, true);
    check_once_rounded(
        "softplus", [](const Tensor& x) { return softplus(x); }, t);
    check_once_rounded(
        "mul 2.7", [](const Tensor& x) { return mul(x, 2.7); }, t);
    check_once_rounded(
        "clamp", [](const Tensor& x) { return clamp(x, -1.0, 2.0); }, t);
  }
}
