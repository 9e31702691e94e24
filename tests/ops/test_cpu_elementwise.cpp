// tests/ops/test_cpu_elementwise.cpp — the xtensor + xsimd CPU kernels of ops/unary/cpu/unary.cpp
// and ops/binary/cpu/binary.cpp against plain scalar loops in double: every unary op and derivative
// on lengths around the vector width (tails), special values (0, ±inf, NaN, large), float32 within
// float32 accuracy and float64 to a few ulps; every binary op, comparison and where over
// broadcast shape pairs (size-1 dims, scalars, new leading dims) in float32, float64 and int64;
// and bit-equal results for equal inputs wherever they sit.
#include "helpers.hpp"
#include "ops/core/cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tg;
using cpu::BinOp;
using cpu::UnOp;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The reference definitions, in double (ops/unary/cpu/unary.cpp's specification).
double ref_unary(UnOp op, double x, double p0, double p1) {
  switch (op) {
    case UnOp::Neg:
      return -x;
    case UnOp::Exp:
      return std::exp(x);
    case UnOp::Log:
      return std::log(x);
    case UnOp::Sqrt:
      return std::sqrt(x);
    case UnOp::Rsqrt:
      return 1 / std::sqrt(x);
    case UnOp::Abs:
      return std::fabs(x);
    case UnOp::Tanh:
      return std::tanh(x);
    case UnOp::Sigmoid:
      return 1 / (1 + std::exp(-x));
    case UnOp::Relu:  // PyTorch's clamp_min(x, 0): NaN stays NaN
      return x < 0 ? 0 : x;
    case UnOp::GeluErf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case UnOp::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnOp::AddS:
      return x + p0;
    case UnOp::MulS:
      return x * p0;
    case UnOp::RSubS:
      return p0 - x;
    case UnOp::RDivS:
      return p0 / x;
    case UnOp::PowS:
      return std::pow(x, p0);
    case UnOp::Clamp:
    case UnOp::Hardtanh:
      return x < p0 ? p0 : (x > p1 ? p1 : x);
    case UnOp::Sin:
      return std::sin(x);
    case UnOp::Cos:
      return std::cos(x);
    case UnOp::Tan:
      return std::tan(x);
    case UnOp::Asin:
      return std::asin(x);
    case UnOp::Acos:
      return std::acos(x);
    case UnOp::Atan:
      return std::atan(x);
    case UnOp::Sinh:
      return std::sinh(x);
    case UnOp::Cosh:
      return std::cosh(x);
    case UnOp::Asinh:
      return std::asinh(x);
    case UnOp::Acosh:
      return std::acosh(x);
    case UnOp::Atanh:
      return std::atanh(x);
    case UnOp::Erf:
      return std::erf(x);
    case UnOp::Erfc:
      return std::erfc(x);
    case UnOp::Exp2:
      return std::exp2(x);
    case UnOp::Expm1:
      return std::expm1(x);
    case UnOp::Log2:
      return std::log2(x);
    case UnOp::Log10:
      return std::log10(x);
    case UnOp::Log1p:
      return std::log1p(x);
    case UnOp::Floor:
      return std::floor(x);
    case UnOp::Ceil:
      return std::ceil(x);
    case UnOp::Round:
      return std::nearbyint(x);
    case UnOp::Trunc:
      return std::trunc(x);
    case UnOp::Sign:
      return (x > 0) - (x < 0);
    case UnOp::Silu:
      return x / (1 + std::exp(-x));
    case UnOp::Softplus:
      return p0 * x > p1 ? x : std::log1p(std::exp(p0 * x)) / p0;
    case UnOp::LeakyRelu:
      return x > 0 ? x : p0 * x;
    case UnOp::Elu:
      return p1 * (x > 0 ? x : p0 * std::expm1(x));
    case UnOp::Celu:
      return x > 0 ? x : p0 * std::expm1(x / p0);
    case UnOp::Mish:
      return x * std::tanh(std::log1p(std::exp(x)));
    case UnOp::Hardswish:
      return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
    case UnOp::Hardsigmoid:
      return std::min(std::max(x + 3, 0.0), 6.0) / 6;
    case UnOp::LogSigmoid:
      return -std::log1p(std::exp(-x));
    case UnOp::Softsign:
      return x / (1 + std::fabs(x));
    case UnOp::Sinc:
      return x == 0 ? 1 : std::sin(M_PI * x) / (M_PI * x);
  }
  return 0;
}
// d/dx by the same formulas (y = f(x)).
double ref_deriv(UnOp op, double x, double p0, double p1) {
  const double y = ref_unary(op, x, p0, p1);
  switch (op) {
    case UnOp::Neg:
      return -1;
    case UnOp::Exp:
      return y;
    case UnOp::Log:
      return 1 / x;
    case UnOp::Sqrt:
      return 0.5 / y;
    case UnOp::Rsqrt:
      return -0.5 * y * y * y;
    case UnOp::Abs:
      return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case UnOp::Tanh:
      return 1 - y * y;
    case UnOp::Sigmoid:
      return y * (1 - y);
    case UnOp::Relu:  // PyTorch's threshold_backward: NaN passes the gradient
      return x <= 0 ? 0 : 1;
    case UnOp::GeluErf:
      return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
             x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    case UnOp::GeluTanh: {
      const double b = std::sqrt(2 / M_PI), k = 0.044715, t = std::tanh(b * (x + k * x * x * x));
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * b * (1 + 3 * k * x * x);
    }
    case UnOp::AddS:
      return 1;
    case UnOp::MulS:
      return p0;
    case UnOp::RSubS:
      return -1;
    case UnOp::RDivS:
      return -y / x;
    case UnOp::PowS:
      return p0 == 0 ? 0 : p0 * std::pow(x, p0 - 1);
    case UnOp::Clamp:
      return x >= p0 && x <= p1 ? 1 : 0;
    case UnOp::Hardtanh:
      return x > p0 && x < p1 ? 1 : 0;
    case UnOp::Sin:
      return std::cos(x);
    case UnOp::Cos:
      return -std::sin(x);
    case UnOp::Tan:
      return 1 + y * y;
    case UnOp::Asin:
      return 1 / std::sqrt(1 - x * x);
    case UnOp::Acos:
      return -1 / std::sqrt(1 - x * x);
    case UnOp::Atan:
      return 1 / (1 + x * x);
    case UnOp::Sinh:
      return std::cosh(x);
    case UnOp::Cosh:
      return std::sinh(x);
    case UnOp::Asinh:
      return 1 / std::sqrt(x * x + 1);
    case UnOp::Acosh:
      return 1 / std::sqrt(x * x - 1);
    case UnOp::Atanh:
      return 1 / (1 - x * x);
    case UnOp::Erf:
      return 2 / std::sqrt(M_PI) * std::exp(-x * x);
    case UnOp::Erfc:
      return -2 / std::sqrt(M_PI) * std::exp(-x * x);
    case UnOp::Exp2:
      return y * M_LN2;
    case UnOp::Expm1:
      return y + 1;
    case UnOp::Log2:
      return 1 / (x * M_LN2);
    case UnOp::Log10:
      return 1 / (x * M_LN10);
    case UnOp::Log1p:
      return 1 / (1 + x);
    case UnOp::Floor:
    case UnOp::Ceil:
    case UnOp::Round:
    case UnOp::Trunc:
    case UnOp::Sign:
      return 0;
    case UnOp::Silu: {
      const double s = 1 / (1 + std::exp(-x));
      return s + x * s * (1 - s);
    }
    case UnOp::Softplus:
      return p0 * x > p1 ? 1 : 1 / (1 + std::exp(-p0 * x));
    case UnOp::LeakyRelu:
      return x > 0 ? 1 : p0;
    case UnOp::Elu:
      return p1 * (x > 0 ? 1 : p0 * std::exp(x));
    case UnOp::Celu:
      return x > 0 ? 1 : std::exp(x / p0);
    case UnOp::Mish: {
      const double t = std::tanh(std::log1p(std::exp(x))), s = 1 / (1 + std::exp(-x));
      return t + x * s * (1 - t * t);
    }
    case UnOp::Hardswish:
      return x < -3 ? 0 : (x <= 3 ? x / 3 + 0.5 : 1);
    case UnOp::Hardsigmoid:
      return x > -3 && x < 3 ? 1.0 / 6 : 0;
    case UnOp::LogSigmoid:
      return 1 / (1 + std::exp(x));
    case UnOp::Softsign:
      return 1 / ((1 + std::fabs(x)) * (1 + std::fabs(x)));
    case UnOp::Sinc:  // (πx·cos(πx) − sin(πx)) / (πx²)
      return x == 0 ? 0 : (M_PI * x * std::cos(M_PI * x) - std::sin(M_PI * x)) / (M_PI * x * x);
  }
  return 0;
}

struct UnCase {
  UnOp op;
  const char* name;
  double p0 = 0, p1 = 0;
  bool positive = false;  // domain x > 0
};
const std::vector<UnCase> kUnary = {{UnOp::Neg, "neg"},
                                    {UnOp::Exp, "exp"},
                                    {UnOp::Log, "log", 0, 0, true},
                                    {UnOp::Sqrt, "sqrt", 0, 0, true},
                                    {UnOp::Rsqrt, "rsqrt", 0, 0, true},
                                    {UnOp::Abs, "abs"},
                                    {UnOp::Tanh, "tanh"},
                                    {UnOp::Sigmoid, "sigmoid"},
                                    {UnOp::Relu, "relu"},
                                    {UnOp::GeluErf, "gelu"},
                                    {UnOp::GeluTanh, "gelu_tanh"},
                                    {UnOp::AddS, "add_s", 0.75},
                                    {UnOp::MulS, "mul_s", -1.5},
                                    {UnOp::RSubS, "rsub_s", 2.0},
                                    {UnOp::RDivS, "rdiv_s", 3.0, 0, true},
                                    {UnOp::PowS, "pow_s 2", 2.0},
                                    {UnOp::PowS, "pow_s 1.5", 1.5, 0, true},
                                    {UnOp::PowS, "pow_s 0", 0.0},
                                    {UnOp::Clamp, "clamp", -0.5, 0.7},
                                    {UnOp::Sin, "sin"},
                                    {UnOp::Cos, "cos"},
                                    {UnOp::Tan, "tan"},
                                    {UnOp::Asin, "asin"},
                                    {UnOp::Acos, "acos"},
                                    {UnOp::Atan, "atan"},
                                    {UnOp::Sinh, "sinh"},
                                    {UnOp::Cosh, "cosh"},
                                    {UnOp::Asinh, "asinh"},
                                    {UnOp::Acosh, "acosh", 0, 0, true},
                                    {UnOp::Atanh, "atanh"},
                                    {UnOp::Erf, "erf"},
                                    {UnOp::Erfc, "erfc"},
                                    {UnOp::Exp2, "exp2"},
                                    {UnOp::Expm1, "expm1"},
                                    {UnOp::Log2, "log2", 0, 0, true},
                                    {UnOp::Log10, "log10", 0, 0, true},
                                    {UnOp::Log1p, "log1p", 0, 0, true},
                                    {UnOp::Floor, "floor"},
                                    {UnOp::Ceil, "ceil"},
                                    {UnOp::Round, "round"},
                                    {UnOp::Trunc, "trunc"},
                                    {UnOp::Sign, "sign"},
                                    {UnOp::Silu, "silu"},
                                    {UnOp::Softplus, "softplus", 1.0, 20.0},
                                    {UnOp::Softplus, "softplus beta 2 threshold 1", 2.0, 1.0},
                                    {UnOp::LeakyRelu, "leaky_relu", 0.01},
                                    {UnOp::Elu, "elu", 1.0, 1.0},
                                    {UnOp::Elu, "selu", 1.6732632423543772, 1.0507009873554805},
                                    {UnOp::Celu, "celu 0.5", 0.5, 2.0},
                                    {UnOp::Mish, "mish"},
                                    {UnOp::Hardswish, "hardswish"},
                                    {UnOp::Hardsigmoid, "hardsigmoid"},
                                    {UnOp::Hardtanh, "hardtanh", -1.0, 1.0},
                                    {UnOp::LogSigmoid, "logsigmoid"},
                                    {UnOp::Softsign, "softsign"}};

std::vector<double> inputs(int64_t n, bool positive, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, 2.0);
  std::vector<double> v(n);
  for (auto& x : v) x = positive ? std::fabs(nd(rng)) + 1e-3 : nd(rng);
  return v;
}

// |got - want| <= atol + rtol·|want|, NaN matching NaN and infinities equal.
template <typename T>
void check_values(const std::vector<T>& got, const std::vector<double>& want, double atol,
                  double rtol, const std::string& what) {
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w)) {
      INFO(what << " [" << i << "] got " << g << " want NaN");
      REQUIRE(std::isnan(g));
    } else if (std::isinf(w)) {
      INFO(what << " [" << i << "] got " << g << " want " << w);
      REQUIRE(g == w);
    } else if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      INFO(what << " [" << i << "] got " << g << " want " << w << " diff " << std::fabs(g - w));
      REQUIRE(false);
    }
  }
}

template <typename T>
void check_unary_case(const UnCase& c, int64_t n, double atol, double rtol) {
  std::vector<double> xs = inputs(n, c.positive, static_cast<uint32_t>(n * 131 + int(c.op)));
  std::vector<T> x(xs.begin(), xs.end()), g(n), y(n), dx(n);
  for (int64_t i = 0; i < n; ++i) g[i] = static_cast<T>(0.5 + 0.25 * (i % 5));
  cpu::unary<T>(c.op, y.data(), x.data(), n, c.p0, c.p1);
  cpu::unary_backward<T>(c.op, dx.data(), g.data(), x.data(), y.data(), n, c.p0, c.p1);
  std::vector<double> wy(n), wd(n);
  for (int64_t i = 0; i < n; ++i) {
    wy[i] = ref_unary(c.op, static_cast<double>(x[i]), c.p0, c.p1);
    wd[i] = static_cast<double>(g[i]) * ref_deriv(c.op, static_cast<double>(x[i]), c.p0, c.p1);
  }
  const std::string what = fmt::format("{} {} n={}", c.name, sizeof(T) == 4 ? "f32" : "f64", n);
  check_values(y, wy, atol, rtol, what + " forward");
  check_values(dx, wd, atol, rtol, what + " backward");
}

// Runs body() on the build's own instruction-set table, then on AVX-512's where the CPU has it
// (ops/core/cpu/isa.hpp: its own float32 exp, log, tanh, sigmoid and GELUs), and restores the
// default.
template <typename F>
void on_both_tables(F&& body) {
  struct Restore {
    ~Restore() { cpu::reset_simd_kernels(); }
  } restore;
  for (bool avx512 : {false, true}) {
    if (!cpu::set_simd_kernels(avx512)) {
      WARN("this CPU (or this build) has no AVX-512 kernels: only the build's own were checked");
      continue;
    }
    INFO("kernels " << cpu::simd_kernels());
    body();
  }
}

// The ops with kernels of their own in the AVX-512 table (unary_rows.hpp).
const std::vector<UnOp> kTableOps = {UnOp::Exp,     UnOp::Log,     UnOp::Tanh,
                                     UnOp::Sigmoid, UnOp::GeluErf, UnOp::GeluTanh};

// Units in the last place between two floats of the same sign (0 when equal, NaN = NaN).
int64_t ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  if (a == b) return 0;
  if ((a < 0) != (b < 0)) return INT64_MAX;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::abs(static_cast<int64_t>(ia) - ib);
}

}  // namespace

TEST_CASE("cpu unary kernels match the scalar definitions", "[cpu][elementwise]") {
  on_both_tables([] {
    for (const UnCase& c : kUnary) {
      for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 33, 1000}) {
        // float32: float32 math (PyTorch's erf approximation for the exact GELU: 1.5e-7 absolute).
        check_unary_case<float>(c, n, 1e-6, 4e-6);
        check_unary_case<double>(c, n, 1e-14, 1e-13);
      }
    }
  });
}

// The AVX-512 table's kernels run the same xsimd algorithms on wider batches and send the tail
// through a padded batch where the build's own xtensor kernels use std:: (tanh, sigmoid, the tanh
// GELU); the compiler also fuses their products and sums differently per width and optimisation
// level (a Release build gives the exact GELU's and exp's forward bit for bit, -O1 does not). The
// two agree to float32 rounding: within 2 ulps, or where the result is much smaller than the terms
// it is computed from, within 4 ε of their size (absolute): forward |x| (the GELU's left tail,
// x·Φ(x) as Φ → 0), backward |g| (near a zero of the derivative, where its terms cancel).
TEST_CASE("cpu unary kernels: the AVX-512 table agrees with the build's own",
          "[cpu][elementwise]") {
  struct Restore {
    ~Restore() { cpu::reset_simd_kernels(); }
  } restore;
  if (!cpu::set_simd_kernels(true)) {
    WARN("this CPU (or this build) has no AVX-512 kernels: nothing to compare");
    return;
  }
  const double eps = std::numeric_limits<float>::epsilon();
  for (UnOp op : kTableOps) {
    const bool positive = op == UnOp::Log;
    for (int64_t n : {1, 5, 15, 16, 17, 31, 47, 1000, 4099}) {
      std::vector<double> xs = inputs(n, positive, static_cast<uint32_t>(n * 7 + int(op)));
      std::vector<float> x(xs.begin(), xs.end()), g(n);
      for (int64_t i = 0; i < n; ++i) g[i] = static_cast<float>(0.5 + 0.25 * (i % 5));
      std::vector<float> y[2], dx[2];
      for (int t = 0; t < 2; ++t) {
        REQUIRE(cpu::set_simd_kernels(t == 1));
        y[t].resize(n), dx[t].resize(n);
        cpu::unary<float>(op, y[t].data(), x.data(), n);
        cpu::unary_backward<float>(op, dx[t].data(), g.data(), x.data(), y[t].data(), n);
      }
      int64_t worst = 0, worst_d = 0;
      double worst_abs = 0, worst_abs_d = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (const int64_t u = ulps(y[0][i], y[1][i]); u > 2) {
          worst = std::max(worst, u);
          const double size = std::max(1.0, std::fabs(double(x[i])));
          worst_abs = std::max(worst_abs, std::fabs(double(y[0][i]) - y[1][i]) / (eps * size));
        }
        if (const int64_t u = ulps(dx[0][i], dx[1][i]); u > 2) {
          worst_d = std::max(worst_d, u);
          worst_abs_d =
              std::max(worst_abs_d, std::fabs(double(dx[0][i]) - dx[1][i]) / (eps * g[i]));
        }
      }
      INFO("op " << int(op) << " n=" << n << ": beyond 2 ulps forward " << worst << " ulps, "
                 << worst_abs << " ε·max(1, |x|); backward " << worst_d << " ulps, " << worst_abs_d
                 << " ε·|g|");
      CHECK(worst_abs <= 4);
      CHECK(worst_abs_d <= 4);
    }
  }
}

TEST_CASE("cpu unary kernels: special values", "[cpu][elementwise]") {
  on_both_tables([] {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> sv = {0.0, -0.0, kInf, -kInf, nan, 1e30, -1e30, 88.0, -88.0, 20.0};
    for (UnOp op : {UnOp::Exp, UnOp::Tanh, UnOp::Sigmoid, UnOp::GeluErf, UnOp::GeluTanh, UnOp::Relu,
                    UnOp::Abs, UnOp::Clamp}) {
      std::vector<float> x(sv.begin(), sv.end()), y(sv.size());
      cpu::unary<float>(op, y.data(), x.data(), static_cast<int64_t>(x.size()), -1, 1);
      for (size_t i = 0; i < sv.size(); ++i) {
        const double w = ref_unary(op, static_cast<double>(x[i]), -1, 1);
        INFO("op " << int(op) << " x " << x[i] << " got " << y[i] << " want " << w);
        if (std::isnan(w))
          CHECK(std::isnan(y[i]));
        else if (std::isinf(w) || std::fabs(w) > 1e29)
          CHECK(static_cast<double>(y[i]) == static_cast<float>(w));
        else
          CHECK(std::fabs(y[i] - w) <= 1e-6 + 4e-6 * std::fabs(w));
      }
    }
  });
}

TEST_CASE("cpu unary kernels: equal inputs give equal bits at any offset", "[cpu][elementwise]") {
  // One vector code for every element (the tail through a padded batch): the exact GELU, exp and
  // log on both tables, every op of the AVX-512 table there.
  on_both_tables([] {
    for (UnOp op : kTableOps) {
      if (!cpu::simd_avx512() && op != UnOp::GeluErf && op != UnOp::Exp && op != UnOp::Log)
        continue;
      std::vector<double> xs = inputs(64, op == UnOp::Log, 7);
      std::vector<float> buf(80), y0(64), y1(64);
      for (int off : {0, 1, 3, 5}) {
        std::copy(xs.begin(), xs.end(), buf.begin() + off);
        cpu::unary<float>(op, y1.data(), buf.data() + off, 64 - off);
        if (off == 0) y0 = y1;
        INFO("op " << int(op) << " offset " << off);
        REQUIRE(std::equal(y1.begin(), y1.begin() + (64 - off), y0.begin()));
      }
    }
  });
}

namespace {
template <typename T>
double ref_binary(BinOp op, T a, T b) {
  const double x = static_cast<double>(a), y = static_cast<double>(b);
  switch (op) {
    case BinOp::Add:
      return static_cast<double>(static_cast<T>(a + b));
    case BinOp::Sub:
      return static_cast<double>(static_cast<T>(a - b));
    case BinOp::Mul:
      return static_cast<double>(static_cast<T>(a * b));
    case BinOp::Div:
      return x / y;
    case BinOp::Pow:
      return std::pow(x, y);
    case BinOp::Max:
      return std::isnan(x) || std::isnan(y) ? x + y : std::max(x, y);
    case BinOp::Min:
      return std::isnan(x) || std::isnan(y) ? x + y : std::min(x, y);
    case BinOp::Eq:
      return a == b;
    case BinOp::Ne:
      return a != b;
    case BinOp::Lt:
      return a < b;
    case BinOp::Le:
      return a <= b;
    case BinOp::Gt:
      return a > b;
    case BinOp::Ge:
      return a >= b;
  }
  return 0;
}
// Element (index into out) → element of an operand broadcast from shape s.
int64_t bcast_index(int64_t o, const Shape& out, const Shape& s) {
  int64_t idx = 0, stride = 1;
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t d = out.size() - 1 - k, e = s.size() - 1 - k;
    int64_t od = 1;
    for (size_t j = d + 1; j < out.size(); ++j) od *= out[j];
    const int64_t i = (o / od) % out[d];
    if (s[e] != 1) idx += i * stride;
    stride *= s[e];
  }
  return idx;
}
const std::vector<std::pair<Shape, Shape>> kPairs = {
    {{3, 17}, {3, 17}},     {{3, 17}, {}},
    {{3, 17}, {17}},        {{2, 3, 9}, {3, 1}},
    {{1, 9}, {5, 1}},       {{9}, {2, 1, 9}},
    {{2, 1, 3}, {1, 4, 1}}, {{4, 1, 1, 33}, {4, 5, 2, 1}},
    {{0, 3}, {3}},          {{2, 3, 1}, {2, 3, 40}}};

template <typename T>
void check_binary(BinOp op, bool compare) {
  for (const auto& [sa, sb] : kPairs) {
    const Shape so = broadcast_shapes(sa, sb, "test");
    const int64_t na = shape_numel(sa), nb = shape_numel(sb), no = shape_numel(so);
    std::vector<double> da = inputs(na, false, 3), db = inputs(nb, false, 4);
    std::vector<T> a(na), b(nb);
    for (int64_t i = 0; i < na; ++i)
      a[i] = static_cast<T>(std::is_integral_v<T> ? std::round(da[i] * 3) : da[i]);
    for (int64_t i = 0; i < nb; ++i)
      b[i] = static_cast<T>(std::is_integral_v<T> ? std::round(db[i] * 3)
                                                  : (op == BinOp::Pow ? std::fabs(db[i]) : db[i]));
    if (op == BinOp::Pow)
      for (auto& v : a) v = static_cast<T>(std::fabs(static_cast<double>(v)) + 0.1);
    if (na > 2) a[1] = nb > 1 ? b[1] : b[0];      // a tie for eq / max
    if constexpr (std::is_floating_point_v<T>) {  // NaN on either side, in row bodies and tails
      if (na > 3) a[3] = std::numeric_limits<T>::quiet_NaN();
      if (nb > 2) b[nb - 1] = std::numeric_limits<T>::quiet_NaN();
    }
    std::vector<double> want(no);
    for (int64_t o = 0; o < no; ++o)
      want[o] = ref_binary<T>(op, a[bcast_index(o, so, sa)], b[bcast_index(o, so, sb)]);
    const std::string what =
        fmt::format("binary op {} {} {} {}", int(op), shape_str(sa), shape_str(sb), sizeof(T));
    if (compare) {
      std::unique_ptr<bool[]> out(new bool[std::max<int64_t>(no, 1)]);
      cpu::binary<T, bool>(op, out.get(), a.data(), b.data(), so, sa, sb);
      std::vector<double> got(out.get(), out.get() + no);
      check_values(got, want, 0, 0, what);
    } else {
      std::vector<T> out(no);
      cpu::binary<T, T>(op, out.data(), a.data(), b.data(), so, sa, sb);
      check_values(out, want, std::is_same_v<T, float> ? 1e-6 : 1e-14,
                   std::is_same_v<T, float> ? 2e-6 : 1e-14, what);
    }
  }
}
}  // namespace

TEST_CASE("cpu binary kernels broadcast like the scalar loop", "[cpu][elementwise]") {
  for (BinOp op :
       {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Pow, BinOp::Max, BinOp::Min}) {
    check_binary<float>(op, false);
    check_binary<double>(op, false);
    if (op != BinOp::Div && op != BinOp::Pow && op != BinOp::Max && op != BinOp::Min)
      check_binary<int64_t>(op, false);
  }
  for (BinOp op : {BinOp::Eq, BinOp::Ne, BinOp::Lt, BinOp::Le, BinOp::Gt, BinOp::Ge}) {
    check_binary<float>(op, true);
    check_binary<double>(op, true);
    check_binary<int64_t>(op, true);
  }
}

TEST_CASE("cpu where broadcasts condition and both sides", "[cpu][mask]") {
  const std::vector<std::tuple<Shape, Shape, Shape>> cases = {
      {{3, 17}, {3, 17}, {3, 17}}, {{3, 1}, {3, 17}, {}}, {{17}, {}, {3, 17}},
      {{2, 1, 9}, {1, 4, 9}, {9}}, {{2, 4, 1}, {}, {}},   {{1}, {5, 3}, {5, 3}}};
  for (const auto& [sc, sa, sb] : cases) {
    const Shape so = broadcast_shapes(broadcast_shapes(sa, sb, "t"), sc, "t");
    const int64_t no = shape_numel(so);
    std::vector<double> a = inputs(shape_numel(sa), false, 1),
                        b = inputs(shape_numel(sb), false, 2);
    std::unique_ptr<bool[]> c(new bool[shape_numel(sc)]);
    for (int64_t i = 0; i < shape_numel(sc); ++i) c[i] = (i * 7) % 3 == 0;
    std::vector<double> out(no), want(no);
    cpu::where<double>(out.data(), c.get(), a.data(), b.data(), so, sc, sa, sb);
    for (int64_t o = 0; o < no; ++o)
      want[o] = c[bcast_index(o, so, sc)] ? a[bcast_index(o, so, sa)] : b[bcast_index(o, so, sb)];
    INFO("where " << shape_str(sc) << " " << shape_str(sa) << " " << shape_str(sb));
    REQUIRE(out == want);
  }
}
