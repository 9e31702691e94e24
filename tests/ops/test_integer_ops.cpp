// tests/ops/test_integer_ops.cpp — int64 arithmetic (add, sub, mul, neg, abs, sign, true, floor
// and trunc division, floor_divide, fmod, remainder, pow, floor/ceil/round/trunc), bool add / mul
// / sign, int64 linspace, the bitwise ops and shifts on int64 and bool, and hardtanh with a NaN
// bound, against PyTorch 1.13 (tests/fixtures/integer/*.safetensors:
// tools/make_integer_fixtures.py), dtypes as well as values; the number forms with integral and
// fractional numbers (PyTorch's promotion); the extremes where PyTorch 1.13 crashes or is
// undefined (INT64_MIN / -1, shift counts outside [0, 63]) with tapegrad's documented answers;
// and every error message.
// Deliberately not here: the float division ops at special values (test_divmod_special.cpp).
#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace tg;

namespace {
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

Tensor fixture(const std::string& c, const std::string& name) {
  return tgt::Fixture("integer/" + c).tensor(name);
}
Tensor ints(const std::vector<int64_t>& v) { return tensor(v, {static_cast<int64_t>(v.size())}); }
// got equals want: dtype, shape and every element (floats: NaN to NaN, zeros by sign, others
// within rtol, 0 unless the float path is documented to differ by ulps).
void require_same(const Tensor& got, const Tensor& want, const std::string& what, double rtol = 0) {
  INFO(what << ": got " << dtype_name(got.dtype()) << " " << shape_str(got.shape()) << ", want "
            << dtype_name(want.dtype()) << " " << shape_str(want.shape()));
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  if (!is_floating(want.dtype())) {
    REQUIRE(got.contiguous().to(kInt64).to_vector<int64_t>() ==
            want.contiguous().to(kInt64).to_vector<int64_t>());
    return;
  }
  const std::vector<double> g = got.contiguous().to_vector<double>(),
                            w = want.contiguous().to_vector<double>();
  for (size_t k = 0; k < g.size(); ++k) {
    INFO("[" << k << "] got " << g[k] << " want " << w[k]);
    if (std::isnan(w[k]))
      REQUIRE(std::isnan(g[k]));
    else if (w[k] == 0 || std::isinf(w[k]))
      REQUIRE((g[k] == w[k] && std::signbit(g[k]) == std::signbit(w[k])));
    else
      REQUIRE(std::fabs(g[k] - w[k]) <= rtol * std::fabs(w[k]));
  }
}
std::vector<double> meta_numbers(const std::string& c, const std::string& key) {
  std::vector<double> out;
  for (const std::string& s : tgt::Fixture("integer/" + c).meta_list(key))
    out.push_back(std::stod(s));
  return out;
}
}  // namespace

TEST_CASE("int64 division family matches PyTorch: dtypes, values, number forms",
          "[integer][division]") {
  const Tensor a = fixture("int_div", "a"), b = fixture("int_div", "b");
  using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
  using NumOp = std::function<Tensor(const Tensor&, double)>;
  const std::vector<std::tuple<std::string, Op, NumOp>> ops = {
      {"true", [](const Tensor& x, const Tensor& y) { return div(x, y); },
       [](const Tensor& x, double y) { return div(x, y); }},
      {"floor", [](const Tensor& x, const Tensor& y) { return div(x, y, "floor"); },
       [](const Tensor& x, double y) { return div(x, y, "floor"); }},
      {"trunc", [](const Tensor& x, const Tensor& y) { return div(x, y, "trunc"); },
       [](const Tensor& x, double y) { return div(x, y, "trunc"); }},
      {"floor_divide", [](const Tensor& x, const Tensor& y) { return floor_divide(x, y); },
       [](const Tensor& x, double y) { return floor_divide(x, y); }},
      {"fmod", [](const Tensor& x, const Tensor& y) { return fmod(x, y); },
       [](const Tensor& x, double y) { return fmod(x, y); }},
      {"remainder", [](const Tensor& x, const Tensor& y) { return remainder(x, y); },
       [](const Tensor& x, double y) { return remainder(x, y); }}};
  const std::vector<double> numbers = meta_numbers("int_div", "scalars");
  for (const auto& [name, f, fs] : ops) {
    require_same(f(a, b), fixture("int_div", name), name);
    // a number holding an integer keeps int64 (a Python int), 2.5 and -0.5 promote to float32
    for (size_t k = 0; k < numbers.size(); ++k)
      require_same(fs(a, numbers[k]), fixture("int_div", fmt::format("{}_s{}", name, k)),
                   fmt::format("{} by the number {}", name, numbers[k]));
  }
  // broadcasting: (3, 1) by (2)
  const Tensor col = ints({7, -7, 0}).reshape({3, 1}), row = ints({2, -3});
  REQUIRE(div(col, row, "floor").to_vector<int64_t>() == std::vector<int64_t>{3, -3, -4, 2, 0, 0});
  REQUIRE(remainder(col, row).to_vector<int64_t>() == std::vector<int64_t>{1, -2, 1, -1, 0, 0});
}

TEST_CASE("int64 and bool add / sub / mul, neg, abs, sign match PyTorch: dtypes, values, numbers",
          "[integer][arith]") {
  const Tensor a = fixture("int_arith", "a"), b = fixture("int_arith", "b");
  // overflow wraps (two's complement), as PyTorch's
  require_same(add(a, b), fixture("int_arith", "add"), "add");
  require_same(sub(a, b), fixture("int_arith", "sub"), "sub");
  require_same(mul(a, b), fixture("int_arith", "mul"), "mul");
  require_same(a + b, fixture("int_arith", "add"), "+");
  require_same(a - b, fixture("int_arith", "sub"), "-");
  require_same(a * b, fixture("int_arith", "mul"), "*");
  // -INT64_MIN and |INT64_MIN| are INT64_MIN
  require_same(neg(a), fixture("int_arith", "neg_a"), "neg");
  require_same(-a, fixture("int_arith", "neg_a"), "unary -");
  require_same(abs(a), fixture("int_arith", "abs_a"), "abs");
  require_same(a.abs(), fixture("int_arith", "abs_a"), "Tensor::abs");
  require_same(sign(a), fixture("int_arith", "sign_a"), "sign");
  // a number holding an integer (-2^63 included) keeps int64; 2.5, ±inf, NaN, 1e20 give float32
  const std::vector<double> numbers = meta_numbers("int_arith", "scalars");
  for (size_t k = 0; k < numbers.size(); ++k) {
    const double s = numbers[k];
    auto want = [&](const char* op) { return fixture("int_arith", fmt::format("{}_s{}", op, k)); };
    INFO("the number " << s);
    require_same(add(a, s), want("add"), "add");
    require_same(sub(a, s), want("sub"), "sub");
    require_same(rsub(s, a), want("rsub"), "rsub");
    require_same(mul(a, s), want("mul"), "mul");
    require_same(a + s, want("add"), "a + s");
    require_same(s + a, want("add"), "s + a");
    require_same(a - s, want("sub"), "a - s");
    require_same(s - a, want("rsub"), "s - a");
    require_same(a * s, want("mul"), "a * s");
    require_same(s * a, want("mul"), "s * a");
  }
  // bool: add is or and mul is and, in bool; with a number, int64 or float32 as above
  const Tensor p = fixture("int_arith", "p"), q = fixture("int_arith", "q");
  require_same(add(p, q), fixture("int_arith", "padd"), "bool add");
  require_same(p * q, fixture("int_arith", "pmul"), "bool mul");
  require_same(sign(p), fixture("int_arith", "psign"), "bool sign");
  for (size_t k = 0; k < numbers.size(); ++k) {
    INFO("the number " << numbers[k]);
    require_same(p + numbers[k], fixture("int_arith", fmt::format("padd_s{}", k)), "bool + s");
    require_same(mul(p, numbers[k]), fixture("int_arith", fmt::format("pmul_s{}", k)), "bool * s");
  }
  // broadcasting: (3, 1) with (2)
  const Tensor col = ints({kMax, -1, 0}).reshape({3, 1}), row = ints({1, kMin});
  REQUIRE((col + row).to_vector<int64_t>() == std::vector<int64_t>{kMin, -1, 0, kMax, 1, kMin});
  REQUIRE((col * row).to_vector<int64_t>() == std::vector<int64_t>{kMax, kMin, -1, kMin, 0, 0});
}

namespace {
// Two's complement wrapping, the reference the int64 kernels must match.
int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }
}  // namespace

// The int64 add / sub / mul loops (ops/binary/cpu/binary.cpp) are vectorised by the compiler: every
// length 1..40 and 300 reaches the vector body and every tail, with INT64_MIN, INT64_MAX, -1 and
// 0 in every lane, as full rows, with a number, and broadcast along rows.
TEST_CASE("int64 add / sub / mul / neg / abs / sign wrap at every length", "[integer][arith]") {
  const std::vector<int64_t> sv = {kMin, kMax, -1, 0, 1, kMin + 1, kMax - 1, 3037000500, -2};
  std::vector<int64_t> lengths(40);
  for (int64_t n = 1; n <= 40; ++n) lengths[static_cast<size_t>(n - 1)] = n;
  lengths.push_back(300);
  for (int64_t n : lengths) {
    std::vector<int64_t> x(static_cast<size_t>(n)), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = sv[i % sv.size()];
      y[i] = sv[(i / sv.size() + 3 * i + 1) % sv.size()];  // every pair of values meets
    }
    const Tensor tx = ints(x), ty = ints(y);
    const std::vector<int64_t> sum = add(tx, ty).to_vector<int64_t>(),
                               diff = sub(tx, ty).to_vector<int64_t>(),
                               prod = mul(tx, ty).to_vector<int64_t>(),
                               ng = neg(tx).to_vector<int64_t>(), ab = abs(tx).to_vector<int64_t>(),
                               sg = sign(tx).to_vector<int64_t>(),
                               plus_min = add(tx, -9223372036854775808.0).to_vector<int64_t>(),
                               min_minus = rsub(-9223372036854775808.0, tx).to_vector<int64_t>(),
                               times_m1 = mul(tx, -1.0).to_vector<int64_t>();
    // (2, n) with (n): the broadcast walk, one row per call
    const std::vector<int64_t> rows = sub(stack({tx, ty}), tx).to_vector<int64_t>();
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("length " << n << " [" << i << "] x " << x[i] << " y " << y[i]);
      const uint64_t ux = static_cast<uint64_t>(x[i]), uy = static_cast<uint64_t>(y[i]);
      REQUIRE(sum[i] == wrap(ux + uy));
      REQUIRE(diff[i] == wrap(ux - uy));
      REQUIRE(prod[i] == wrap(ux * uy));
      REQUIRE(ng[i] == wrap(0 - ux));
      REQUIRE(ab[i] == (x[i] < 0 ? wrap(0 - ux) : x[i]));
      REQUIRE(sg[i] == (x[i] > 0) - (x[i] < 0));
      REQUIRE(plus_min[i] == wrap(ux + (uint64_t{1} << 63)));
      REQUIRE(min_minus[i] == wrap((uint64_t{1} << 63) - ux));
      REQUIRE(times_m1[i] == wrap(0 - ux));
      REQUIRE(rows[i] == 0);
      REQUIRE(rows[x.size() + i] == wrap(uy - ux));
    }
  }
}

TEST_CASE("in-place add_ / mul_ on int64 and bool follow PyTorch's casting rule",
          "[integer][arith]") {
  Tensor x = ints({kMax, -1, 0});
  x.add_(1);  // wraps
  REQUIRE(x.to_vector<int64_t>() == std::vector<int64_t>{kMin, 0, 1});
  x.mul_(3);
  REQUIRE(x.to_vector<int64_t>() == std::vector<int64_t>{kMin, 0, 3});
  // a float result does not go into int64, nor an int64 one into bool (PyTorch: "result type
  // Float can't be cast to the desired output type Long"); x is left as it was
  REQUIRE_ERROR(x.add_(2.5),
                "add_: result type float32 can't be cast to self (3) of dtype int64 (PyTorch's "
                "rule: a floating result into int64 or bool, or int64 into bool)");
  REQUIRE_ERROR(x.div_(2), "div_: result type float32 can't be cast to self (3) of dtype int64");
  REQUIRE(x.to_vector<int64_t>() == std::vector<int64_t>{kMin, 0, 3});
  Tensor p = tensor(std::vector<bool>{true, false});
  REQUIRE_ERROR(p.add_(1), "add_: result type int64 can't be cast to self (2) of dtype bool");
  p.mul_(tensor(std::vector<bool>{true, true}));
  REQUIRE(p.to_vector<bool>() == std::vector<bool>{true, false});
}

// PyTorch 1.13 dies of SIGFPE at INT64_MIN / -1 (floor, trunc, fmod, remainder). tapegrad wraps
// the quotient to INT64_MIN, as INT64_MIN * -1 wraps in PyTorch, and gives the exact remainder 0.
TEST_CASE("int64 extremes: INT64_MIN / -1 and friends are defined", "[integer][division]") {
  const Tensor a = ints({kMin, kMin, kMax, kMin + 1}), m1 = ints({-1, 1, -1, -1});
  REQUIRE(div(a, m1, "floor").to_vector<int64_t>() ==
          std::vector<int64_t>{kMin, kMin, -kMax, kMax});
  REQUIRE(div(a, m1, "trunc").to_vector<int64_t>() ==
          std::vector<int64_t>{kMin, kMin, -kMax, kMax});
  REQUIRE(floor_divide(a, -1.0).to_vector<int64_t>() ==
          std::vector<int64_t>{kMin, kMin, -kMax, kMax});
  REQUIRE(fmod(a, m1).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0});
  REQUIRE(remainder(a, m1).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0});
  REQUIRE(remainder(ints({kMin, kMax}), ints({kMax, kMin})).to_vector<int64_t>() ==
          std::vector<int64_t>{kMax - 1, -1});
  // true division promotes: no overflow at all
  REQUIRE(div(a, m1).dtype() == kFloat32);
}

TEST_CASE("int64 pow and rounding ops match PyTorch", "[integer][pow]") {
  const Tensor a = fixture("int_pow", "a"), e = fixture("int_pow", "e");
  // negative exponents of the tensor form truncate (1, ±1 or 0); overflow wraps
  require_same(pow(a, e), fixture("int_pow", "pow"), "pow(int64, int64)");
  const std::vector<double> numbers = meta_numbers("int_pow", "scalars");
  // a fractional exponent promotes to float32, whose pow is xsimd's within a few ulps where the
  // base is ordinary (ops/core/cpu/simd.hpp's pow_map; test_special_values.cpp's tolerance)
  for (size_t k = 0; k < numbers.size(); ++k)
    require_same(pow(a, numbers[k]), fixture("int_pow", fmt::format("pow_s{}", k)),
                 fmt::format("pow(int64, {})", numbers[k]), 4 * 1.1920929e-7);
  const Tensor x = fixture("int_round", "x");
  require_same(floor(x), fixture("int_round", "floor"), "floor");
  require_same(ceil(x), fixture("int_round", "ceil"), "ceil");
  require_same(round(x), fixture("int_round", "round"), "round");
  require_same(trunc(x), fixture("int_round", "trunc"), "trunc");
  // a copy, not the input itself
  Tensor y = floor(x);
  y.data<int64_t>()[0] = 99;
  REQUIRE(x.data<int64_t>()[0] == 0);
}

TEST_CASE("int64 linspace matches PyTorch: computed in float, truncated", "[integer][linspace]") {
  const std::vector<std::string> cases =
      tgt::split(tgt::Fixture("integer/linspace").meta("cases"), ';');
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::vector<std::string> c = tgt::split(cases[k], ',');
    require_same(linspace(std::stod(c[0]), std::stod(c[1]), std::stoll(c[2]), kInt64),
                 fixture("linspace", fmt::format("l{}", k)), "linspace(" + cases[k] + ")");
  }
  // A long case where PyTorch 1.13's vectorised loop (from 8 values on) truncates one base per
  // vector and adds k·step to it, so its values depend on position and vector width
  // ([100, 97, 95, 93, 91, 88, ...] on AVX2): every element here is the scalar formula's.
  const std::vector<int64_t> l = linspace(100, -3, 50, kInt64).to_vector<int64_t>();
  const double step = -103.0 / 49;
  for (int64_t i = 0; i < 50; ++i)
    REQUIRE(l[static_cast<size_t>(i)] ==
            static_cast<int64_t>(i < 25 ? 100 + step * static_cast<double>(i)
                                        : -3 - step * static_cast<double>(49 - i)));
  // the ends of int64's range: no overflow, the last value end itself
  REQUIRE(linspace(-9223372036854775808.0, 0, 3, kInt64).to_vector<int64_t>() ==
          std::vector<int64_t>{kMin, -4611686018427387904, 0});
  REQUIRE(linspace(0, 9.2e18, 2, kInt64).to_vector<int64_t>().back() == 9200000000000000000);
}

TEST_CASE("bitwise ops and shifts match PyTorch on int64 and bool", "[integer][bitwise]") {
  const Tensor a = fixture("bitwise", "a"), b = fixture("bitwise", "b");
  require_same(bitwise_and(a, b), fixture("bitwise", "and"), "and");
  require_same(bitwise_or(a, b), fixture("bitwise", "or"), "or");
  require_same(bitwise_xor(a, b), fixture("bitwise", "xor"), "xor");
  require_same(bitwise_not(a), fixture("bitwise", "not_a"), "not");
  require_same(a & b, fixture("bitwise", "and"), "&");
  require_same(a | b, fixture("bitwise", "or"), "|");
  require_same(a ^ b, fixture("bitwise", "xor"), "^");
  require_same(~a, fixture("bitwise", "not_a"), "~");
  require_same(bitwise_and(b, 3), fixture("bitwise", "and_s"), "and 3");
  require_same(bitwise_or(b, 3), fixture("bitwise", "or_s"), "or 3");
  require_same(bitwise_xor(b, 3), fixture("bitwise", "xor_s"), "xor 3");
  require_same(3 & b, fixture("bitwise", "and_s"), "3 &");
  const Tensor sa = fixture("bitwise", "sa"), sb = fixture("bitwise", "sb");
  require_same(bitwise_left_shift(sa, sb), fixture("bitwise", "shl"), "<<");
  require_same(bitwise_right_shift(sa, sb), fixture("bitwise", "shr"), ">>");
  require_same(sa << sb, fixture("bitwise", "shl"), "<<");
  require_same(sa >> sb, fixture("bitwise", "shr"), ">>");
  require_same(bitwise_left_shift(sa, 3), fixture("bitwise", "shl_s"), "<< 3");
  require_same(sa >> 3, fixture("bitwise", "shr_s"), ">> 3");
  const Tensor p = fixture("bitwise", "p"), q = fixture("bitwise", "q");
  require_same(p & q, fixture("bitwise", "pand"), "bool &");
  require_same(p | q, fixture("bitwise", "por"), "bool |");
  require_same(p ^ q, fixture("bitwise", "pxor"), "bool ^");
  require_same(~p, fixture("bitwise", "pnot"), "bool ~");
  require_same(bitwise_and(p, 1), fixture("bitwise", "pand_s"), "bool & 1 (int64)");
  // 1 << t: the number on the left
  REQUIRE((1 << ints({0, 3, 62})).to_vector<int64_t>() == std::vector<int64_t>{1, 8, 1LL << 62});
  // an integer number at full int64 precision (a double would round it)
  REQUIRE(bitwise_xor(ints({0}), kMax).item<int64_t>() == kMax);
}

// Counts outside [0, 63]: PyTorch 1.13 shifts by the count mod 64 (C++'s undefined behaviour on
// x86: 1 << 64 = 1); tapegrad shifts every bit out, as later PyTorch defines it.
TEST_CASE("shifts by counts outside [0, 63] shift every bit out", "[integer][bitwise]") {
  const Tensor x = ints({1, 1, 5, -8, 8, -1, 8}), c = ints({64, -1, 1000, 64, 100, 70, -3});
  REQUIRE((x << c).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0});
  REQUIRE((x >> c).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, -1, 0, -1, 0});
  REQUIRE((ints({3}) << 63).item<int64_t>() == kMin);  // wraps, bits past 63 dropped
}

namespace {
// Whether `a op b` compiles for a Tensor a and a b of type S (floating numbers must not).
template <typename S, typename = void>
struct can_and : std::false_type {};
template <typename S>
struct can_and<S, std::void_t<decltype(std::declval<Tensor>() & std::declval<S>())>>
    : std::true_type {};
template <typename S, typename = void>
struct can_shift : std::false_type {};
template <typename S>
struct can_shift<
    S, std::void_t<decltype(bitwise_left_shift(std::declval<Tensor>(), std::declval<S>()))>>
    : std::true_type {};
static_assert(can_and<int>::value && can_and<int64_t>::value && can_and<Tensor>::value);
static_assert(!can_and<double>::value && !can_and<float>::value);
static_assert(can_shift<int>::value && !can_shift<double>::value);
}  // namespace

TEST_CASE("hardtanh: a NaN bound gives NaN and no gradient, and min_val > max_val is refused",
          "[hardtanh]") {
  const Tensor x = fixture("hardtanh_nan", "x");
  for (const auto& [name, lo, hi] :
       {std::tuple<std::string, double, double>{"lo_nan", NAN, 1.0},
        std::tuple<std::string, double, double>{"hi_nan", -1.0, NAN}}) {
    Tensor xr = x.detach().requires_grad_();
    Tensor y = hardtanh(xr, lo, hi);
    require_same(y, fixture("hardtanh_nan", name), "hardtanh " + name);
    y.sum().backward();
    require_same(xr.grad(), fixture("hardtanh_nan", "d" + name), "dhardtanh " + name);
  }
  // min_val == max_val is allowed (a constant), min_val > max_val is not
  REQUIRE(hardtanh(tgt::vec({-3, 0.5, 3}), 0.5, 0.5).to_vector<double>() ==
          std::vector<double>{0.5, 0.5, 0.5});
  REQUIRE_ERROR(hardtanh(tgt::vec({1, 2}), 1.0, -1.0),
                "hardtanh: min_val 1 cannot be greater than max_val -1 (input (2))");
}

TEST_CASE("integer ops: every bad input names op, argument and what is wrong",
          "[integer][errors]") {
  const Tensor a = ints({7, -7}), z = ints({3, 0});
  // PyTorch raises ZeroDivisionError for every integer division by 0
  REQUIRE_ERROR(
      div(a, z, "floor"),
      "div: ZeroDivisionError: integer division by zero (other (2) of dtype int64 holds 0 "
      "at flat index 1)");
  REQUIRE_ERROR(div(a, z, "trunc"), "div: ZeroDivisionError");
  REQUIRE_ERROR(floor_divide(a, 0.0), "floor_divide: ZeroDivisionError");
  REQUIRE_ERROR(fmod(a, z), "fmod: ZeroDivisionError");
  REQUIRE_ERROR(remainder(a, 0.0), "remainder: ZeroDivisionError");
  // true division by 0 is IEEE's, in float
  REQUIRE(std::isinf(div(a, z).to_vector<float>()[1]));
  REQUIRE_ERROR(div(a, a, "round"),
                "div: rounding_mode must be \"floor\" or \"trunc\" (div(input, other) divides "
                "exactly), got \"round\"");
  REQUIRE_ERROR(pow(a, -1.0),
                "pow: input (2) is int64 and exponent -1 a negative integer: Integers to negative "
                "integer powers are not allowed");
  REQUIRE_ERROR(
      fmod(tensor(std::vector<bool>{true}), tensor(std::vector<bool>{true})),
      "fmod: input (1) and other (1) have dtype bool, expected float32, float64 or int64");
  REQUIRE_ERROR(div(a, zeros({2}, kFloat32), "floor"),
                "div: input (2) is int64 but other (2) is float32");
  REQUIRE_ERROR(remainder(ints({1, 2, 3}), ints({1, 2})), "remainder: shapes (3) and (2)");
  // bitwise: floating inputs refused naming op and dtype (PyTorch: not implemented for 'Float')
  REQUIRE_ERROR(bitwise_and(zeros({2}), zeros({2})),
                "bitwise_and: input (2) and other (2) have dtype float32, expected int64 or bool");
  REQUIRE_ERROR(bitwise_not(zeros({2}, kFloat64)),
                "bitwise_not: input (2) has dtype float64, expected int64 or bool");
  REQUIRE_ERROR(
      bitwise_left_shift(tensor(std::vector<bool>{true}), tensor(std::vector<bool>{true})),
      "bitwise_left_shift: input (1) and other (1) have dtype bool, expected int64");
  REQUIRE_ERROR(bitwise_or(a, tensor(std::vector<bool>{true, false})),
                "bitwise_or: input (2) is int64 but other (2) is bool");
  REQUIRE_ERROR(bitwise_xor(ints({1, 2, 3}), ints({1, 2})), "bitwise_xor: shapes (3) and (2)");
  REQUIRE_ERROR(linspace(0, 1e19, 3, kInt64),
                "linspace: end 1e+19 cannot be converted to int64 without overflow");
  REQUIRE_ERROR(linspace(NAN, 1, 3, kInt64), "linspace: start nan cannot be converted to int64");
  REQUIRE_ERROR(linspace(0, 1, 3, kBool), "linspace: dtype must be float32, float64 or int64");
  // PyTorch has no subtraction, negation or abs of bool (its hints come with the refusal)
  const Tensor p = tensor(std::vector<bool>{true, false});
  REQUIRE_ERROR(sub(p, p),
                "sub: self (2) has dtype bool: subtraction of a bool tensor is not supported, as "
                "in PyTorch (use ~ or logical_not to invert a mask, ^ or logical_xor for a "
                "difference)");
  REQUIRE_ERROR(sub(a, p), "sub: other (2) has dtype bool: subtraction of a bool tensor");
  REQUIRE_ERROR(p - 1, "sub: self (2) has dtype bool: subtraction");
  REQUIRE_ERROR(1 - p, "rsub: input (2) has dtype bool: subtraction");
  REQUIRE_ERROR(-p, "neg: input (2) has dtype bool: negation of a bool tensor is not supported");
  REQUIRE_ERROR(abs(p), "abs: input (2) has dtype bool, expected float32, float64 or int64");
  // no implicit promotion between tensors of two dtypes
  REQUIRE_ERROR(add(a, p), "add: self (2) is int64 but other (2) is bool");
  REQUIRE_ERROR(mul(p, a), "mul: self (2) is bool but other (2) is int64");
  REQUIRE_ERROR(add(Tensor(), 1), "add: input is undefined");
  REQUIRE_ERROR(glu(scalar_tensor(1.0), 0),
                "glu: input () is 0-dim (dim 0): glu does not support scalars because halving size "
                "must be even");
  REQUIRE_ERROR(glu(zeros({2, 4}), 2), "glu: dim 2 out of range for input (2,4): expected [-2, 1]");
}
