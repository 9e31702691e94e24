// tests/ops/test_divmod_special.cpp — fmod, remainder, floor and trunc division and pow at special
// values (±0, ±inf, NaN, subnormals, max, huge quotients) in float32 and float64, against PyTorch
// 1.13 (tests/fixtures/integer/divmod_*, pow_*: tools/make_integer_fixtures.py), tensor-tensor and
// tensor-number, values and gradients, the sign of every zero checked; every case again on
// tensors of every length 1..40 and 300 (each tail length, the vector body, the threaded chunks).
// Then float64 gradchecks and gradgradchecks of the float division ops.
// Deliberately not here: int64 arithmetic and the bitwise ops (test_integer_ops.cpp).
#include "fixtures.hpp"
#include "helpers.hpp"


#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace tg;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
std::vector<T> values(const Tensor& t) {
  return t.contiguous().to_vector<T>();
}
// got matches want: NaN for NaN, a zero of the same sign, else within rtol (relative).
template <typename T>
bool matches(T got, T want, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (want == 0) return got == 0 && std::signbit(got) == std::signbit(want);
  if (std::isinf(want)) return got == want;
  return std::fabs(static_cast<double>(got) - want) <= rtol * std::fabs(static_cast<double>(want));
}
// Every element of got against want[k] (k the element's index), reporting the first misses.
template <typename T>
void require_matches(const Tensor& got, const std::vector<T>& want, double rtol,
                     const std::string& what) {
  REQUIRE(got.dtype() == dtype_of<T>::value);
  const std::vector<T> g = values<T>(got);
  REQUIRE(g.size() == want.size());
  std::string first;
  int bad = 0;
  for (size_t k = 0; k < g.size(); ++k)
    if (!matches(g[k], want[k], rtol) && bad++ < 5)
      first += fmt::format("  [{}] got {:.9g} want {:.9g}\n", k, g[k], want[k]);
  INFO(what << " n=" << g.size() << "\n" << first);
  REQUIRE(bad == 0);
}
// The elements [start, start + n) of v, cyclically.
template <typename T>
std::vector<T> window(const std::vector<T>& v, size_t start, size_t n) {
  std::vector<T> out;
  for (size_t k = 0; k < n; ++k) out.push_back(v[(start + k) % v.size()]);
  return out;
}
template <typename T>
Tensor make(const std::vector<T>& v) {
  return tensor(v, {static_cast<int64_t>(v.size())});
}
std::vector<size_t> lengths() {
  std::vector<size_t> n;
  for (size_t k = 1; k <= 40; ++k) n.push_back(k);
  n.push_back(300);
  return n;
}

// PyTorch 1.13's slip: where a and b are finite, b != 0 and a / b overflows (max / 0.7, 2.5 / a
// subnormal), its vectorised fmod (a - trunc(a / b)·b) gives NaN in the lanes of a full vector,
// and so do remainder, floor division and remainder's gradient, which use it; its scalar lanes
// give std::fmod's exact value, which tapegrad gives everywhere. There the reference is the op's
// own formula: fmod = std::fmod, remainder = fmod moved by b, floor(a / b) = a / b (±inf).
template <typename T>
bool torch_slip(T a, T b) {
  return std::isfinite(a) && std::isfinite(b) && b != 0 && std::isinf(a / b);
}
template <typename T>
T slip_reference(const std::string& what, T a, T b) {
  const T m = std::fmod(a, b);
  if (what == "fmod") return m;
  if (what == "remainder") return m != 0 && ((b < 0) != (m < 0)) ? m + b : m;
  if (what == "floor") return a / b;
  if (what == "dremainder_db") return -(a / b);
  return std::numeric_limits<T>::quiet_NaN();  // no other table slips
}
// The fixture's `what` column, with the slips replaced by their reference.
template <typename T>
std::vector<T> torch_values(const tgt::Fixture& f, const std::string& what, const std::vector<T>& a,
                            const std::vector<T>& b) {
  std::vector<T> w = values<T>(f.tensor(what));
  for (size_t k = 0; k < w.size(); ++k)
    if (torch_slip(a[k], b[k]) && std::isnan(w[k])) w[k] = slip_reference(what, a[k], b[k]);
  return w;
}

using BinFn = std::function<Tensor(const Tensor&, const Tensor&)>;
struct DivOp {
  const char* name;  // the fixture's tensor: values, and d<name>_da / _db
  BinFn f;
  std::function<Tensor(const Tensor&, double)> scalar;
};
std::vector<DivOp> div_ops() {
  return {{"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); },
           [](const Tensor& a, double b) { return fmod(a, b); }},
          {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); },
           [](const Tensor& a, double b) { return remainder(a, b); }},
          {"floor", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); },
           [](const Tensor& a, double b) { return div(a, b, "floor"); }},
          {"trunc", [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); },
           [](const Tensor& a, double b) { return div(a, b, "trunc"); }}};
}
}  // namespace

TEMPLATE_TEST_CASE("fmod, remainder and rounded division match PyTorch at special values",
                   "[divmod][special]", float, double) {
  using T = TestType;
  const tgt::Fixture f(sizeof(T) == 4 ? "integer/divmod_f32" : "integer/divmod_f64");
  const std::vector<T> a = values<T>(f.tensor("a")), b = values<T>(f.tensor("b"));
  for (const DivOp& op : div_ops()) {
    const std::vector<T> want = torch_values(f, op.name, a, b);
    // values and gradients once on the whole table (fmod(x, ±inf) = x, remainder(-1, inf) = inf)
    Tensor ta = make(a).requires_grad_(), tb = make(b).requires_grad_();
    Tensor y = op.f(ta, tb);
    require_matches<T>(y, want, 0, op.name);
    y.sum().backward();
    require_matches<T>(ta.grad(), torch_values(f, fmt::format("d{}_da", op.name), a, b), 0,
                       fmt::format("d{}/da", op.name));
    require_matches<T>(tb.grad(), torch_values(f, fmt::format("d{}_db", op.name), a, b), 0,
                       fmt::format("d{}/db", op.name));
    // every length and position
    for (size_t n : lengths())
      for (size_t s = 0; s < a.size(); s += n)
        require_matches<T>(op.f(make(window(a, s, n)), make(window(b, s, n))), window(want, s, n),
                           0, op.name);
    // the number forms: the table is every pair (a = v[i], b = v[j]) at i·m + j, so divisor j
    // meets every dividend in column j
    const size_t m = static_cast<size_t>(std::lround(std::sqrt(static_cast<double>(a.size()))));
    for (size_t j = 0; j < m; ++j) {
      std::vector<T> dividends, wcol;
      for (size_t i = 0; i < m; ++i) dividends.push_back(a[i * m]), wcol.push_back(want[i * m + j]);
      for (size_t n : lengths())  // starting at dividend j, so each sits at many positions
        require_matches<T>(op.scalar(make(window(dividends, j, n)), static_cast<double>(b[j])),
                           window(wcol, j, n), 0,
                           fmt::format("{} by the number {}", op.name, b[j]));
    }
  }
}

// pow(-0, y) for negative non-integer y is +inf (IEEE, and PyTorch's tensor-tensor pow); PyTorch
// 1.13's tensor-number pow gives -inf at y = -0.5 and -0 at y = 0.5 (sqrt keeps -0's sign:
// pytorch/pytorch issue 127163), which tapegrad does not copy: there the expected value is the
// tensor-tensor one, and the gradient y · pow(-0, y - 1) at y = 0.5 and 1.5 reads +inf and +0.
TEMPLATE_TEST_CASE("pow matches PyTorch at special bases, with -0 to negative powers +inf",
                   "[divmod][special][pow]", float, double) {
  using T = TestType;
  const tgt::Fixture f(sizeof(T) == 4 ? "integer/pow_f32" : "integer/pow_f64");
  const std::vector<T> x = values<T>(f.tensor("x")), es = values<T>(f.tensor("e"));
  const Tensor pow_t = f.tensor("pow_t"), pow_s = f.tensor("pow_s"), dpow_s = f.tensor("dpow_s");
  const double rtol = 4 * std::numeric_limits<T>::epsilon();  // xsimd's lanes: a few ulps
  for (int64_t i = 0; i < static_cast<int64_t>(es.size()); ++i) {
    const double e = es[static_cast<size_t>(i)];
    const std::vector<T> wt = values<T>(pow_t.select(0, i));
    std::vector<T> ws = values<T>(pow_s.select(0, i)), wd = values<T>(dpow_s.select(0, i));
    for (size_t k = 0; k < x.size(); ++k) {
      if (!(x[k] == 0 && std::signbit(x[k]))) continue;
      if (std::fabs(e) == 0.5) ws[k] = wt[k];  // +0 and +inf, not PyTorch 1.13's -0 and -inf
      if (std::fabs(e - 1) == 0.5) wd[k] = static_cast<T>(e * std::pow(0.0, e - 1));
    }
    INFO("exponent " << e);
    for (size_t n : lengths()) {
      const Tensor xs = make(window(x, 0, n));
      require_matches<T>(pow(xs, make(std::vector<T>(n, static_cast<T>(e)))), window(wt, 0, n),
                         rtol, "pow(x, e tensor)");
      Tensor xg = xs.detach().requires_grad_();
      Tensor y = pow(xg, e);
      require_matches<T>(y, window(ws, 0, n), rtol, "pow(x, e number)");
      y.sum().backward();
      require_matches<T>(xg.grad(), window(wd, 0, n), rtol, "d pow(x, e number)/dx");
    }
  }
  // the case spelled out, both forms, both zeros
  for (double e : {-0.5, -1.5, -0.25}) {
    REQUIRE(pow(make(std::vector<T>{T(-0.0)}), e).template item<T>() == static_cast<T>(kInf));
    REQUIRE(pow(make(std::vector<T>{T(-0.0)}), make(std::vector<T>{T(e)})).template item<T>() ==
            static_cast<T>(kInf));
  }
  REQUIRE_FALSE(std::signbit(pow(make(std::vector<T>{T(-0.0)}), 0.5).template item<T>()));
  REQUIRE(pow(make(std::vector<T>{T(-0.0)}), -1.0).template item<T>() == static_cast<T>(-kInf));
}

TEST_CASE("float division ops pass gradcheck and gradgradcheck", "[divmod]") {
  manual_seed(40);
  // quotients away from integers, so the piecewise-constant parts do not jump under the probe
  Tensor a = tgt::vec({2.3, -2.3, 5.6, -0.7, 7.4, -4.1}).reshape({2, 3}).requires_grad_();
  Tensor b = tgt::vec({1.5, -1.5, 2.0}).requires_grad_();
  const std::vector<std::pair<std::string, tg::GradcheckFn>> cases = {
      {"fmod", [](const std::vector<Tensor>& in) { return fmod(in[0], in[1]); }},
      {"remainder", [](const std::vector<Tensor>& in) { return remainder(in[0], in[1]); }},
      {"div floor", [](const std::vector<Tensor>& in) { return div(in[0], in[1], "floor"); }},
      {"div trunc", [](const std::vector<Tensor>& in) { return div(in[0], in[1], "trunc"); }},
      {"floor_divide", [](const std::vector<Tensor>& in) { return floor_divide(in[0], in[1]); }},
      {"fmod number", [](const std::vector<Tensor>& in) { return fmod(in[0], 1.5) * in[1]; }},
      {"remainder number",
       [](const std::vector<Tensor>& in) { return remainder(in[0], -1.5) * in[1]; }},
  };
  for (const auto& [name, fn] : cases) {
    tgt::check_grad(fn, {a, b}, name);
    tgt::check_second_order(name, fn, {a, b});
  }
  // the rounded divisions' gradient is exactly zero (PyTorch's)
  Tensor y = div(a, b, "floor");
  y.sum().backward();
  REQUIRE(values<double>(a.grad()) == std::vector<double>(6, 0.0));
  REQUIRE(values<double>(b.grad()) == std::vector<double>(3, 0.0));
}
