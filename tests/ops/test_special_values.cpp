// tests/ops/test_special_values.cpp — every elementwise op at special values (±0, ±inf, NaN,
// subnormals, the edges of exp/log's range, ties at kinks) on tensors of every length 1..33 and 67,
// each value at every position: long enough for the vector body, every tail length. The vector
// kernels once gave pow(0, 0) = 0 and log(1e-310) = -746.5 from 4 float64 / 8 float32 elements on,
// which no short test saw. One table per arity: an op, its scalar reference (std::, with
// PyTorch 1.13's conventions where they differ) and its PyTorch 1.13 gradient rule, so adding an
// op is one line. The references themselves are checked against values torch 1.13 printed
// (tools/make_special_values.py writes tests/fixtures/special_values.txt).
// First the cases spelled out, then the tables.
// Deliberately not here: ordinary-value accuracy and gradchecks (test_elementwise.cpp).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "ops/core/cpu/kernels.hpp"
#include "ops/ops.hpp"
#include "ops/kern/unary_formulas.hpp"
#include "tools/unary_samples.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using tg::Tensor;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// `v` repeated to length n, as T.
template <typename T>
Tensor repeated(std::vector<double> v, int64_t n) {
  std::vector<T> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(static_cast<T>(v[static_cast<size_t>(i) % v.size()]));
  return tg::tensor(out, {n});
}
template <typename T>
void require_values(const Tensor& t, const std::vector<double>& want, const std::string& what) {
  const Tensor c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) {
    const double got = c.data<T>()[i], w = want[static_cast<size_t>(i) % want.size()];
    INFO(what << " n=" << c.numel() << " [" << i << "]: got " << got << ", want " << w);
    if (std::isnan(w))
      REQUIRE(std::isnan(got));
    else
      REQUIRE(got == Approx(w).epsilon(1e-6));
  }
}
}  // namespace

TEMPLATE_TEST_CASE("pow and log at special values do not depend on the tensor's length",
                   "[special]", float, double) {
  using T = TestType;
  for (int64_t n : {1, 3, 4, 8, 9, 16, 67}) {
    // pow(x, e) for x = 0, -0, inf, -inf: PyTorch's (and std::pow's) values
    require_values<T>(tg::pow(repeated<T>({0, -0.0, kInf, -kInf}, n), 0.0), {1, 1, 1, 1}, "x**0");
    require_values<T>(tg::pow(repeated<T>({0, -0.0, kInf, -kInf}, n), -1.0), {kInf, -kInf, 0, -0.0},
                      "x**-1");
    require_values<T>(tg::pow(repeated<T>({0, kInf, -kInf, 4}, n), 0.3),
                      {0, kInf, kInf, std::pow(4.0, 0.3)}, "x**0.3");
    // pow(tensor, tensor): the binary kernel, same rules
    Tensor e = repeated<T>({0, -1, 0, 0.3}, n);
    require_values<T>(tg::pow(repeated<T>({0, 0, kInf, -kInf}, n), e), {1, kInf, 1, kInf},
                      "pow(a, b)");
    // gradients of x**1 and x**0.5 at 0 (PyTorch: 1 and inf)
    Tensor x = repeated<T>({0, 1}, n).requires_grad_();
    tg::pow(x, 1.0).sum().backward();
    require_values<T>(x.grad(), {1, 1}, "d(x**1)");
    Tensor x2 = repeated<T>({0, 4}, n).requires_grad_();
    tg::pow(x2, 0.5).sum().backward();
    require_values<T>(x2.grad(), {kInf, 0.25}, "d(x**0.5)");
  }
  // log of a float64 subnormal: -713.8, not -746.5
  for (int64_t n : {1, 3, 4, 5, 8, 67})
    require_values<double>(tg::log(repeated<double>({1e-310, 1}, n)), {std::log(1e-310), 0},
                           "log(1e-310)");
  for (int64_t n : {1, 7, 8, 9, 67})
    require_values<float>(tg::log(repeated<float>({1e-40, 1}, n)),
                          {std::log(static_cast<double>(1e-40f)), 0}, "log(1e-40f)");
}

// ---- the audit: every op, every special value, every length and position ----

namespace {

// The values every op meets, for T.
template <typename T>
std::vector<T> specials() {
  using L = std::numeric_limits<T>;
  const bool f32 = sizeof(T) == 4;
  std::vector<T> v = {
      T(0),     T(-0.0),       T(1),           T(-1),          T(0.5),          T(-0.5),
      T(2),     T(-2),         T(3),           T(0.7),         T(-1.3),         T(20),
      T(-20),   L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(), -L::denorm_min(),
      L::min(), L::min() / 4,  -L::min() / 4,  L::max(),       -L::max(),       T(1e-30)};
  // the edges of exp's range (overflow, subnormal results, underflow to 0)
  for (double e : f32 ? std::vector<double>{88.5, 89, -87, -100, -104, -110}
                      : std::vector<double>{709.5, 710, -707, -740, -745.5, -800})
    v.push_back(static_cast<T>(e));
  return v;
}
// A smaller set for binary ops, whose cases are all pairs.
template <typename T>
std::vector<T> pair_specials() {
  using L = std::numeric_limits<T>;
  return {T(0),           T(-0.0),      T(1),          T(-1),         T(0.5),
          T(2),           T(-2),        T(3),          L::infinity(), -L::infinity(),
          L::quiet_NaN(), L::min() / 4, -L::min() / 4, L::max()};
}
std::vector<int64_t> lengths() {
  std::vector<int64_t> n;
  for (int64_t i = 1; i <= 33; ++i) n.push_back(i);
  n.push_back(67);
  return n;
}

template <typename T>
Tensor make(const std::vector<T>& v) {
  Tensor t = tg::tensor(v, {static_cast<int64_t>(v.size())});
  return t;
}
template <typename T>
std::vector<T> values(const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  const Tensor c = t.contiguous();
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = c.data<T>()[i];
  return out;
}

// got matches want: the same NaN/infinity, zero of the same sign when sign_of_zero, else within
// atol + rtol·|want| (rtol in units of T's epsilon).
template <typename T>
bool matches(T got, T want, double rtol_eps, double atol, bool sign_of_zero) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isnan(got)) return false;
  if (std::isinf(want) || std::isinf(got)) return got == want;
  if (want == 0 && got == 0) return !sign_of_zero || std::signbit(got) == std::signbit(want);
  const double d = std::fabs(static_cast<double>(got) - static_cast<double>(want));
  return d <= atol + rtol_eps * std::numeric_limits<T>::epsilon() * std::fabs(double(want));
}

template <typename T>
struct UnCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<T(T)> f;      // y = f(x)
  std::function<T(T, T)> df;  // dy/dx at (x, y), PyTorch's rule
  double rtol = 4, atol = 0;  // rtol in epsilons of T
  bool sign_of_zero = true;   // the sign of a zero result is part of the answer
};
template <typename T>
struct BinCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<T(T, T)> f;
  std::function<T(T, T, T)> da, db;  // at (a, b, y); null: no gradient (comparisons)
  double rtol = 0;
  bool sign_of_zero = true;
};

// torch's pow(x, e) for a scalar exponent: 0 → 1, 1 → x, ±0.5 → sqrt/rsqrt of x + 0 (-0 gives
// IEEE's +0 and +inf, where torch 1.13 gives -0 and -inf: torch_slip), -1 → reciprocal, 2, 3, -2
// multiplied out, else std::pow.
template <typename T>
T torch_pow(T x, double e) {
  if (e == 0) return T(1);
  if (e == 1) return x;
  if (e == 0.5) return std::sqrt(x + T(0));
  if (e == -0.5) return T(1) / std::sqrt(x + T(0));
  if (e == -1) return T(1) / x;
  if (e == 2) return x * x;
  if (e == 3) return x * x * x;
  if (e == -2) return T(1) / (x * x);
  return std::pow(x, static_cast<T>(e));
}

// PyTorch's exact GELU, x·½(1 + erf(x/√2)), and its backward cdf + x·pdf (in double).
template <typename T>
T gelu_ref(T x) {
  const double d = x;
  return static_cast<T>(d * 0.5 * (1 + std::erf(d * 0.70710678118654752440)));
}
template <typename T>
T gelu_grad_ref(T x) {
  const double d = x;
  return static_cast<T>(0.5 * (1 + std::erf(d * 0.70710678118654752440)) +
                        d * 0.39894228040143267794 * std::exp(-0.5 * d * d));
}
// PyTorch's tanh-GELU and its backward, in T as PyTorch computes them (so x³ overflows in float32).
template <typename T>
T gelu_tanh_ref(T x) {
  const T beta = T(0.79788456080286535588), kappa = T(0.044715);
  return T(0.5) * x * (T(1) + std::tanh(beta * (x + kappa * x * x * x)));
}
template <typename T>
T gelu_tanh_grad_ref(T x) {
  const T beta = T(0.79788456080286535588), kappa = T(0.044715);
  const T x_sq = x * x, t = std::tanh(beta * (x + kappa * x_sq * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * (beta * (T(1) + T(3) * kappa * x_sq));
}

// The math and activation ops: their reference is their formula (ops/kern/unary_formulas.hpp)
// on scalars in T, which the kernels' scalar lanes run; the tables below check the vector lanes
// against it, and the last test checks it against PyTorch's values. Every line of the unary list
// without a row of its own below gets one (list_rows), with the sample call and parameters of
// tools/unary_samples.hpp; TG_MATH writes the rows for other parameters.
template <typename T>
T formula_fwd(tg::kern::UnOp op, T x, T p0, T p1) {
  switch (op) {
#define X(Code, ...)         \
  case tg::kern::UnOp::Code: \
    return tg::kern::uf::Formula<tg::kern::UnOp::Code>::fwd(x, p0, p1);
#include "ops/kern/unary_list.inc"
#undef X
  }
  return T(0);
}
template <typename T>
T formula_bwd(tg::kern::UnOp op, T x, T y, T p0, T p1) {
  switch (op) {
#define X(Code, ...)         \
  case tg::kern::UnOp::Code: \
    return tg::kern::uf::Formula<tg::kern::UnOp::Code>::bwd(T(1), x, y, p0, p1);
#include "ops/kern/unary_list.inc"
#undef X
  }
  return T(0);
}
#define TG_MATH(name, OP, call, p0, p1) TG_MATH_TOL(name, OP, call, p0, p1, 4, 0)
#define TG_MATH_TOL(name, OP, call, p0, p1, rtol, atol)                                        \
  {                                                                                            \
    name, [](const Tensor& x) { return call; },                                                \
        [](T x) { return formula_fwd<T>(tg::kern::UnOp::OP, x, T(p0), T(p1)); },               \
        [](T x, T y) { return formula_bwd<T>(tg::kern::UnOp::OP, x, y, T(p0), T(p1)); }, rtol, \
        atol                                                                                   \
  }

// The list's rows not in `own`, their formula the reference, with these tolerances:
// silu's gradient s + x·s·(1 − s) has a root near x = −1.28 (x = −1.3 is one of the values):
// its rounding error is a few epsilons of its terms (|s| <= 1), not of the result, and FMA
// contraction moves it there, as for tanh; mish's gradient t + x·s·(1 − t²) cancels for x < 0: a
// few epsilons of t and s become tens of the result's.
template <typename T>
void add_list_rows(std::vector<UnCase<T>>& own) {
  const double eps = std::numeric_limits<T>::epsilon();
  for (const tgu::UnarySample& u : tgu::unary_samples()) {
    bool has = false;  // a row of that name, or of that name and a parameter (pow3.0)
    for (const UnCase<T>& c : own) {
      const std::string n = c.name, l = u.name;
      has = has || n == l || (n.rfind(l, 0) == 0 && std::isdigit(n[l.size()]));
    }
    if (has) continue;
    const tg::kern::UnOp op = u.op;
    const T p0 = static_cast<T>(u.p0), p1 = static_cast<T>(u.p1);
    UnCase<T> c{u.name, u.call, [=](T x) { return formula_fwd<T>(op, x, p0, p1); },
                [=](T x, T y) { return formula_bwd<T>(op, x, y, p0, p1); }};
    if (c.name == std::string("silu")) c.atol = 4 * eps;
    if (c.name == std::string("mish")) c.rtol = 32;
    own.push_back(c);
  }
}

#define TG_POW(e)                                                                                 \
  {                                                                                               \
    "pow" #e, [](const Tensor& x) { return tg::pow(x, e); }, [](T x) { return torch_pow(x, e); }, \
        [](T x, T) { return (e) == 0 ? T(0) : static_cast<T>(e) * torch_pow(x, (e)-1.0); }        \
  }

// The unary table. sqrt's and rsqrt's gradients read y, as PyTorch's do.
template <typename T>
std::vector<UnCase<T>> unary_table() {
  const bool f32 = sizeof(T) == 4;
  // float32 GELU: PyTorch's erf approximation, |error| <= 1.5e-7; float64: erfc against
  // PyTorch's 1 + erf, which differ below 1e-15 absolute
  const double gelu_atol = f32 ? 3e-7 : 1e-15;
  std::vector<UnCase<T>> rows = {
      {"neg", [](const Tensor& x) { return tg::neg(x); }, [](T x) { return -x; },
       [](T, T) { return T(-1); }},
      {"exp", [](const Tensor& x) { return tg::exp(x); }, [](T x) { return std::exp(x); },
       [](T, T y) { return y; }},
      {"log", [](const Tensor& x) { return tg::log(x); }, [](T x) { return std::log(x); },
       [](T x, T) { return T(1) / x; }},
      {"sqrt", [](const Tensor& x) { return tg::sqrt(x); }, [](T x) { return std::sqrt(x); },
       [](T, T y) { return T(1) / (T(2) * y); }},
      {"rsqrt", [](const Tensor& x) { return tg::rsqrt(x); },
       [](T x) { return T(1) / std::sqrt(x); }, [](T, T y) { return T(-0.5) * y * y * y; }},
      {"abs", [](const Tensor& x) { return tg::abs(x); }, [](T x) { return std::fabs(x); },
       [](T x, T) { return T((x > 0) - (x < 0)); }},
      // 1 - y² cancels as |y| -> 1: its rounding error is a few epsilons of 1, not of the result,
      // and whether the compiler fuses it into one FMA (Release does, -O0 does not) moves it there.
      {"tanh", [](const Tensor& x) { return tg::tanh(x); }, [](T x) { return std::tanh(x); },
       [](T, T y) { return T(1) - y * y; }, 4, 2 * double(std::numeric_limits<T>::epsilon())},
      {"sigmoid", [](const Tensor& x) { return tg::sigmoid(x); },
       [](T x) { return T(1) / (T(1) + std::exp(-x)); }, [](T, T y) { return (T(1) - y) * y; }},
      // relu is clamp_min(x, 0): -0 stays -0; its gradient is threshold_backward on y (y <= 0:
      // 0), so NaN passes the gradient.
      {"relu", [](const Tensor& x) { return tg::relu(x); }, [](T x) { return x < 0 ? T(0) : x; },
       [](T, T y) { return y <= 0 ? T(0) : T(1); }},
      {"gelu", [](const Tensor& x) { return tg::gelu(x); }, gelu_ref<T>,
       [](T x, T) { return gelu_grad_ref(x); }, 8, gelu_atol, false},
      {"gelu_tanh", [](const Tensor& x) { return tg::gelu(x, "tanh"); }, gelu_tanh_ref<T>,
       [](T x, T) { return gelu_tanh_grad_ref(x); }, f32 ? 16 : 8, f32 ? 1e-7 : 1e-15},
      {"add_s", [](const Tensor& x) { return tg::add(x, 1.5); }, [](T x) { return x + T(1.5); },
       [](T, T) { return T(1); }},
      {"mul_s", [](const Tensor& x) { return tg::mul(x, -2.5); }, [](T x) { return x * T(-2.5); },
       [](T, T) { return T(-2.5); }},
      {"rsub_s", [](const Tensor& x) { return tg::rsub(1.5, x); }, [](T x) { return T(1.5) - x; },
       [](T, T) { return T(-1); }},
      {"rdiv_s", [](const Tensor& x) { return tg::rdiv(2.0, x); }, [](T x) { return T(2) / x; },
       [](T x, T) { return T(-2) / (x * x); }},
      TG_POW(0.0),
      TG_POW(1.0),
      TG_POW(2.0),
      TG_POW(3.0),
      TG_POW(0.5),
      TG_POW(-0.5),
      TG_POW(-1.0),
      TG_POW(-2.0),
      TG_POW(0.3),
      TG_POW(2.5),
      TG_POW(-1.5),
      TG_POW(4.0),
      {"clamp", [](const Tensor& x) { return tg::clamp(x, -1.0, 2.0); },
       [](T x) { return std::isnan(x) ? x : std::min(std::max(x, T(-1)), T(2)); },
       [](T x, T) { return T(x >= T(-1) && x <= T(2)); }},
      {"clamp_0", [](const Tensor& x) { return tg::clamp(x, 0.0, 0.5); },
       [](T x) { return std::isnan(x) ? x : std::min(std::max(x, T(0)), T(0.5)); },
       [](T x, T) { return T(x >= T(0) && x <= T(0.5)); }, 4, 0, false},
      {"clamp_min", [](const Tensor& x) { return tg::clamp_min(x, 0.5); },
       [](T x) { return std::isnan(x) ? x : std::max(x, T(0.5)); },
       [](T x, T) { return T(x >= T(0.5)); }},
      {"clamp_max", [](const Tensor& x) { return tg::clamp_max(x, -0.5); },
       [](T x) { return std::isnan(x) ? x : std::min(x, T(-0.5)); },
       [](T x, T) { return T(x <= T(-0.5)); }},
      // the list's other rows come from add_list_rows; these are its ops at other parameters
      TG_MATH("softplus_b2_t1", Softplus, tg::softplus(x, 2.0, 1.0), 2, 1),
      TG_MATH("elu_a0.5", Elu, tg::elu(x, 0.5), 0.5, 1),
      TG_MATH("selu", Elu, tg::selu(x), 1.6732632423543772848170429916717,
              1.0507009873554804934193349852946),
      TG_MATH("relu6", Hardtanh, tg::relu6(x), 0, 6),
  };
  add_list_rows(rows);
  return rows;
}
#undef TG_MATH
#undef TG_MATH_TOL
#undef TG_POW

template <typename T>
T max_ref(T a, T b) {  // torch.maximum: NaN propagates
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : (a < b ? b : a);
}
template <typename T>
T min_ref(T a, T b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : (b < a ? b : a);
}

template <typename T>
std::vector<BinCase<T>> binary_table() {
  const auto cmp = [](auto f) { return [f](T a, T b) { return T(f(a, b)); }; };
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return tg::add(a, b); },
       [](T a, T b) { return a + b; }, [](T, T, T) { return T(1); }, [](T, T, T) { return T(1); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return tg::sub(a, b); },
       [](T a, T b) { return a - b; }, [](T, T, T) { return T(1); }, [](T, T, T) { return T(-1); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return tg::mul(a, b); },
       [](T a, T b) { return a * b; }, [](T, T b, T) { return b; }, [](T a, T, T) { return a; }},
      {"div", [](const Tensor& a, const Tensor& b) { return tg::div(a, b); },
       [](T a, T b) { return a / b; }, [](T, T b, T) { return T(1) / b; },
       [](T, T b, T y) { return -(y / b); }, 2},
      // PyTorch: d/da = 0 where b == 0; d/db = 0 where a == 0 and b >= 0.
      {"pow", [](const Tensor& a, const Tensor& b) { return tg::pow(a, b); },
       [](T a, T b) { return std::pow(a, b); },
       [](T a, T b, T) { return b == 0 ? T(0) : b * std::pow(a, b - T(1)); },
       [](T a, T b, T y) { return a == 0 && b >= 0 ? T(0) : y * std::log(a); }, 8},
      // PyTorch: ties share the gradient; a NaN gives it to both.
      {"maximum", [](const Tensor& a, const Tensor& b) { return tg::maximum(a, b); }, max_ref<T>,
       [](T a, T b, T) { return a == b ? T(0.5) : (a < b ? T(0) : T(1)); },
       [](T a, T b, T) { return a == b ? T(0.5) : (a > b ? T(0) : T(1)); }, 0, false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return tg::minimum(a, b); }, min_ref<T>,
       [](T a, T b, T) { return a == b ? T(0.5) : (a > b ? T(0) : T(1)); },
       [](T a, T b, T) { return a == b ? T(0.5) : (a < b ? T(0) : T(1)); }, 0, false},
      {"eq", [](const Tensor& a, const Tensor& b) { return tg::eq(a, b).to(a.dtype()); },
       cmp([](T a, T b) { return a == b; }), nullptr, nullptr},
      {"ne", [](const Tensor& a, const Tensor& b) { return tg::ne(a, b).to(a.dtype()); },
       cmp([](T a, T b) { return a != b; }), nullptr, nullptr},
      {"lt", [](const Tensor& a, const Tensor& b) { return tg::lt(a, b).to(a.dtype()); },
       cmp([](T a, T b) { return a < b; }), nullptr, nullptr},
      {"le", [](const Tensor& a, const Tensor& b) { return tg::le(a, b).to(a.dtype()); },
       cmp([](T a, T b) { return a <= b; }), nullptr, nullptr},
      {"gt", [](const Tensor& a, const Tensor& b) { return tg::gt(a, b).to(a.dtype()); },
       cmp([](T a, T b) { return a > b; }), nullptr, nullptr},
      {"ge", [](const Tensor& a, const Tensor& b) { return tg::ge(a, b).to(a.dtype()); },
       cmp([](T a, T b) { return a >= b; }), nullptr, nullptr},
  };
}

// Collects the first failures of one op, to report them all at once.
struct Failures {
  std::string text;
  int count = 0;
  template <typename... A>
  void add(const char* f, const A&... a) {
    if (count++ < 40) text += fmt::format(f, a...) + "\n";
  }
};

template <typename T>
void run_unary(const UnCase<T>& c, Failures& fail) {
  const std::vector<T> sp = specials<T>();
  const size_t K = sp.size();
  for (int64_t n : lengths())
    for (size_t s = 0; s < K; ++s) {  // every value at every position, over the shifts s
      std::vector<T> xv(static_cast<size_t>(n));
      for (size_t i = 0; i < xv.size(); ++i) xv[i] = sp[(i + s) % K];
      Tensor x = make(xv).requires_grad_();
      Tensor y = c.op(x);
      y.backward(tg::ones_like(y));
      const std::vector<T> yv = values<T>(y), gv = values<T>(x.grad());
      for (size_t i = 0; i < xv.size(); ++i) {
        const T want = c.f(xv[i]), dwant = c.df(xv[i], want);
        if (!matches(yv[i], want, c.rtol, c.atol, c.sign_of_zero))
          fail.add("{} n={} [{}] x={:.9g}: y {:.9g}, want {:.9g}", c.name, n, i, xv[i], yv[i],
                   want);
        if (!matches(gv[i], dwant, c.rtol, c.atol, false))
          fail.add("{} n={} [{}] x={:.9g}: dx {:.9g}, want {:.9g}", c.name, n, i, xv[i], gv[i],
                   dwant);
      }
    }
}

// One case of c: a and b of av and bv, one of them a single element (broadcast, the scalar
// operand path) when one_elem is 'a' or 'b'. The one-element operand's gradient is a sum over
// the row, not checked here.
template <typename T>
void check_bin(const BinCase<T>& c, const std::vector<T>& av, const std::vector<T>& bv,
               char one_elem, Failures& fail) {
  Tensor a = make(av).requires_grad_(), b = make(bv).requires_grad_();
  Tensor y = c.op(a, b);
  const bool grad = static_cast<bool>(c.da);
  if (grad) y.backward(tg::ones_like(y));
  const std::vector<T> yv = values<T>(y);
  const std::vector<T> ga = grad ? values<T>(a.grad()) : std::vector<T>(),
                       gb = grad ? values<T>(b.grad()) : std::vector<T>();
  const int64_t n = static_cast<int64_t>(yv.size());
  const char* how = one_elem == 'a' ? " a one element" : one_elem == 'b' ? " b one element" : "";
  for (size_t i = 0; i < yv.size(); ++i) {
    const T ai = av[one_elem == 'a' ? 0 : i], bi = bv[one_elem == 'b' ? 0 : i];
    const T want = c.f(ai, bi);
    if (!matches(yv[i], want, c.rtol, 0, c.sign_of_zero))
      fail.add("{} n={} [{}] ({:.9g}, {:.9g}){}: y {:.9g}, want {:.9g}", c.name, n, i, ai, bi, how,
               yv[i], want);
    if (!grad) continue;
    const T da = c.da(ai, bi, want), db = c.db(ai, bi, want);
    if (one_elem != 'a' && !matches(ga[i], da, c.rtol + 2, 0, false))
      fail.add("{} n={} [{}] ({:.9g}, {:.9g}){}: da {:.9g}, want {:.9g}", c.name, n, i, ai, bi, how,
               ga[i], da);
    if (one_elem != 'b' && !matches(gb[i], db, c.rtol + 2, 0, false))
      fail.add("{} n={} [{}] ({:.9g}, {:.9g}){}: db {:.9g}, want {:.9g}", c.name, n, i, ai, bi, how,
               gb[i], db);
  }
}

template <typename T>
void run_binary(const BinCase<T>& c, Failures& fail) {
  const std::vector<T> sp = pair_specials<T>();
  const size_t K = sp.size();
  for (int64_t n : lengths())
    for (size_t s = 0; s < K; ++s)
      for (size_t t = 0; t < K; ++t) {  // every pair at every position
        std::vector<T> av(static_cast<size_t>(n)), bv(av.size());
        for (size_t i = 0; i < av.size(); ++i) {
          av[i] = sp[(i + s) % K];
          bv[i] = sp[(i + s + t) % K];
        }
        check_bin(c, av, bv, 0, fail);
        if (s != 0) continue;  // one operand one element: each value once per n
        check_bin(c, av, std::vector<T>{sp[t]}, 'b', fail);
        check_bin(c, std::vector<T>{sp[t]}, av, 'a', fail);
      }
}

template <typename T>
const char* dname() {
  return sizeof(T) == 4 ? "float32" : "float64";
}

}  // namespace

// On both instruction-set tables (ops/core/cpu/isa.hpp): the AVX-512 one has float32 kernels of its
// own for exp, log, tanh, sigmoid and both GELUs.
TEMPLATE_TEST_CASE("unary ops match their references at special values, any length and position",
                   "[special]", float, double) {
  struct Restore {
    ~Restore() { tg::cpu::reset_simd_kernels(); }
  } restore;
  for (bool avx512 : {false, true}) {
    if (!tg::cpu::set_simd_kernels(avx512)) {
      WARN("this CPU (or this build) has no AVX-512 kernels: only the build's own were checked");
      continue;
    }
    for (const UnCase<TestType>& c : unary_table<TestType>()) {
      Failures fail;
      run_unary(c, fail);
      INFO(tg::cpu::simd_kernels()
           << " " << dname<TestType>() << " " << c.name << ": " << fail.count << " mismatches\n"
           << fail.text);
      CHECK(fail.count == 0);
    }
  }
}

TEMPLATE_TEST_CASE("binary ops match their references at special values, any length and position",
                   "[special]", float, double) {
  for (const BinCase<TestType>& c : binary_table<TestType>()) {
    Failures fail;
    run_binary(c, fail);
    INFO(dname<TestType>() << " " << c.name << ": " << fail.count << " mismatches\n" << fail.text);
    CHECK(fail.count == 0);
  }
}

namespace {
template <typename T>
T parse(const std::string& s) {
  if constexpr (sizeof(T) == 4)
    return std::strtof(s.c_str(), nullptr);
  else
    return std::strtod(s.c_str(), nullptr);
}
// The fixture's lines of one kind ("un" or "bin") and dtype, split into words.
std::vector<std::vector<std::string>> fixture_rows(const std::string& kind, const std::string& dt) {
  const std::string path = std::string(TG_FIXTURES) + "/special_values.txt";
  std::ifstream f(path);
  INFO("fixture " << path << " (tools/make_special_values.py)");
  REQUIRE(f.good());
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(f, line);) {
    std::istringstream ss(line);
    std::vector<std::string> w;
    for (std::string t; ss >> t;) w.push_back(t);
    if (w.size() >= 2 && w[0] == kind && w[1] == dt) rows.push_back(w);
  }
  return rows;
}
}  // namespace

// torch 1.13's slips, where its value is not the function's and the reference keeps std::'s:
// sinh and cosh overflow to inf where e^|x| does but the result is finite; log1p(max) gives inf;
// results in the subnormal range lose digits or flush to 0 (softplus and mish of a large negative
// x, softsign's gradient at ±max); hardsigmoid's float64 gradient is float32's 1/6.
template <typename T>
bool torch_slip(const std::string& op, T x, T want, bool grad) {
  const T big = std::numeric_limits<T>::max();
  // (the gradient of each is the other)
  if ((op == "sinh" || op == "cosh") && std::isfinite(want) && std::fabs(want) > big / 2)
    return true;
  if (!grad && op == "log1p" && x == big) return true;
  if (want != 0 && std::fabs(want) < std::numeric_limits<T>::min()) return true;
  if (grad && op == "hardsigmoid" && sizeof(T) == 8) return true;
  // pow(-0, ±0.5) and the gradients that read it (x^0.5, x^1.5 at -0): torch 1.13's sqrt keeps
  // -0's sign (pytorch/pytorch issue 127163); tapegrad gives IEEE's +0 and +inf
  if (x == 0 && std::signbit(x) && (op == "pow0.5" || op == "pow-0.5" || (grad && op == "pow1.5")))
    return true;
  return false;
}

// The references above are PyTorch's: checked against the values torch 1.13 printed.
TEMPLATE_TEST_CASE("the special-value references agree with PyTorch 1.13", "[special]", float,
                   double) {
  using T = TestType;
  std::map<std::string, UnCase<T>> un;
  for (const UnCase<T>& c : unary_table<T>()) un.emplace(c.name, c);
  std::map<std::string, BinCase<T>> bin;
  for (const BinCase<T>& c : binary_table<T>()) bin.emplace(c.name, c);
  Failures fail;
  size_t seen = 0;
  for (const auto& w : fixture_rows("un", dname<T>())) {
    REQUIRE(w.size() == 6);
    INFO("fixture op " << w[2] << " is not in the unary table");
    REQUIRE(un.count(w[2]) == 1);
    const UnCase<T>& c = un.at(w[2]);
    const T x = parse<T>(w[3]), y = parse<T>(w[4]), dx = parse<T>(w[5]);
    const T want = c.f(x), dwant = c.df(x, want);
    if (!torch_slip(c.name, x, want, false) && !matches(want, y, c.rtol, c.atol, c.sign_of_zero))
      fail.add("{} x={:.9g}: reference y {:.9g}, torch {:.9g}", c.name, x, want, y);
    if (!torch_slip(c.name, x, dwant, true) && !matches(dwant, dx, c.rtol, c.atol, false))
      fail.add("{} x={:.9g}: reference dx {:.9g}, torch {:.9g}", c.name, x, dwant, dx);
    ++seen;
  }
  for (const auto& w : fixture_rows("bin", dname<T>())) {
    REQUIRE(w.size() == 8);
    INFO("fixture op " << w[2] << " is not in the binary table");
    REQUIRE(bin.count(w[2]) == 1);
    const BinCase<T>& c = bin.at(w[2]);
    const T a = parse<T>(w[3]), b = parse<T>(w[4]), y = parse<T>(w[5]), da = parse<T>(w[6]),
            db = parse<T>(w[7]);
    const T want = c.f(a, b);
    // torch 1.13's own slip: its vectorised pow gives inf for pow(max, 1); std::pow gives max
    if (c.name == std::string("pow") && a == std::numeric_limits<T>::max() && b == 1) continue;
    if (!matches(want, y, c.rtol, 0, c.sign_of_zero))
      fail.add("{} ({:.9g}, {:.9g}): reference y {:.9g}, torch {:.9g}", c.name, a, b, want, y);
    if (!matches(c.da(a, b, want), da, c.rtol + 2, 0, false))
      fail.add("{} ({:.9g}, {:.9g}): reference da {:.9g}, torch {:.9g}", c.name, a, b,
               c.da(a, b, want), da);
    if (!matches(c.db(a, b, want), db, c.rtol + 2, 0, false))
      fail.add("{} ({:.9g}, {:.9g}): reference db {:.9g}, torch {:.9g}", c.name, a, b,
               c.db(a, b, want), db);
    ++seen;
  }
  INFO(dname<T>() << ": " << fail.count << " of " << seen << " disagree\n" << fail.text);
  CHECK(seen > 1000);
  CHECK(fail.count == 0);
}

// Every line of the unary list (ops/kern/unary_list.inc) has a row of the unary table, and PyTorch
// values for it in the fixture, so its reference is checked (a row named as the line, or as the
// line and a parameter: pow3.0).
TEST_CASE("every line of the unary list has a special-value row and PyTorch's values for it",
          "[special]") {
  auto named = [](const std::string& n, const std::string& line) {
    return n == line || (n.rfind(line, 0) == 0 && std::isdigit(n[line.size()]));
  };
  const auto table = unary_table<float>();
  const auto fixture = fixture_rows("un", "float32");
  for (const tgu::UnarySample& u : tgu::unary_samples()) {
    INFO("unary list line " << u.name);
    CHECK(std::any_of(table.begin(), table.end(),
                      [&](const UnCase<float>& c) { return named(c.name, u.name); }));
    CHECK(std::any_of(fixture.begin(), fixture.end(),
                      [&](const std::vector<std::string>& w) { return named(w[2], u.name); }));
  }
}
