// tests/ops/test_rotary.cpp — apply_rotary and nn::RotaryEmbedding: both layouts against PyTorch
// 1.13 references (tests/fixtures/rotary: Hugging Face's rotate_half on (B, NH, T, hs), Meta's
// complex pairs on (B, T, NH, hs) with partial rotary dims; tools/make_fixtures.py), on the fused
// path (tables without gradient) and the composed one (tables with gradient); gradchecks; the
// module's tables and decoding at an offset; errors naming the op and shapes; the kernel at special
// values (±0, ±inf, NaN, subnormals) on every head size up to the vector body and past it.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/layers.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

using namespace tg;

namespace {
// The fixture case against apply_rotary in dtype: outputs and dx always, dcos and dsin when the
// tables require grad (the composed path).
void check_rotary_case(const std::string& name, bool interleaved, int64_t seq_dim, DType dt,
                       bool table_grads, double tol) {
  const tgt::Fixture f("rotary/" + name);
  Tensor x = f.tensor("x").to(dt).detach().requires_grad_();
  Tensor c = f.tensor("cos").to(dt).detach(), s = f.tensor("sin").to(dt).detach();
  if (table_grads) {
    c.requires_grad_();
    s.requires_grad_();
  }
  Tensor y = apply_rotary(x, c, s, interleaved, seq_dim);
  const std::string what = name + (table_grads ? " composed " : " fused ") + dtype_name(dt);
  tgt::require_close(y, f.tensor("out"), tol, tol, what + " out");
  y.backward(f.tensor("dout").to(dt));
  tgt::require_close(x.grad(), f.tensor("dx"), tol, tol, what + " dx");
  if (table_grads) {
    tgt::require_close(c.grad(), f.tensor("dcos"), tol, tol, what + " dcos");
    tgt::require_close(s.grad(), f.tensor("dsin"), tol, tol, what + " dsin");
  }
}
}  // namespace

TEST_CASE("apply_rotary matches PyTorch in both layouts, fused and composed", "[parity][rotary]") {
  for (bool table_grads : {false, true})
    for (DType dt : {kFloat64, kFloat32}) {
      const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
      check_rotary_case("half", false, -2, dt, table_grads, tol);
      check_rotary_case("interleaved_partial", true, 1, dt, table_grads, tol);
    }
}

TEST_CASE("apply_rotary gradcheck: half-split and interleaved, partial, tables with gradient",
          "[rotary]") {
  manual_seed(3);
  for (bool inter : {false, true}) {
    const std::string lay = inter ? "interleaved" : "half-split";
    Tensor x = tgt::leaf({2, 3, 4, 10});  // D 10, R 6: four passed-through dims
    Tensor c = randn({3, 3}, kFloat64), s = randn({3, 3}, kFloat64);
    tgt::check_grad(
        [&](const std::vector<Tensor>& in) { return apply_rotary(in[0], c, s, inter, 1); }, {x},
        "apply_rotary " + lay + " fused, seq_dim 1");
    Tensor cl = tgt::leaf({4, 5}), sl = tgt::leaf({4, 5});
    tgt::check_grad(
        [&](const std::vector<Tensor>& in) { return apply_rotary(in[0], in[1], in[2], inter); },
        {x, cl, sl}, "apply_rotary " + lay + " composed, tables with gradient");
  }
}

TEST_CASE("RotaryEmbedding: tables, decoding at an offset, float64, errors", "[rotary][layers]") {
  // the fixture's tables: positions 3..7 of dim 8, base 10000
  const tgt::Fixture f("rotary/half");
  nn::RotaryEmbedding rope(8, 16);
  REQUIRE(rope.num_parameters() == 0);
  CHECK(rope.repr() == "RotaryEmbedding(dim=8, max_seq_len=16, base=10000, interleaved=False)");
  tgt::require_close(narrow(rope.cos, 0, 3, 5), f.tensor("cos"), 1e-7, 1e-6, "cos table");
  tgt::require_close(narrow(rope.sin, 0, 3, 5), f.tensor("sin"), 1e-7, 1e-6, "sin table");
  CHECK(rope.state_dict().empty());  // the tables are not saved (persistent = false)
  // the module at offset 3 is the fixture's rotation (tables rounded to float32)
  Tensor x = f.tensor("x").to(kFloat32);
  tgt::require_close(rope.forward(x, 3), f.tensor("out"), 1e-5, 1e-5, "forward at offset 3");
  // decoding: positions 2..4 of a longer sequence at offset 2 equal rows 2..4 of the whole
  Tensor seq = randn({2, 3, 7, 8});
  Tensor whole = rope.forward(seq);
  Tensor part = rope.forward(narrow(seq, 2, 2, 3), 2);
  CHECK(part.to_vector<float>() == narrow(whole, 2, 2, 3).contiguous().to_vector<float>());
  // float64 module, partial rotary over 4 of 8 dims, (B, T, NH, hs) with seq_dim 1
  nn::RotaryEmbedding r4(4, 32, 500.0, true);
  r4.to(kFloat64);
  Tensor x64 = randn({2, 6, 3, 8}, kFloat64);
  Tensor y64 = r4.forward(x64, 0, 1);
  CHECK(narrow(y64, -1, 4, 4).to_vector<double>() ==
        narrow(x64, -1, 4, 4).contiguous().to_vector<double>());
  REQUIRE_ERROR(rope.forward(randn({2, 17, 8})), "positions 0 .. 16 out of range [0, 16)");
  REQUIRE_ERROR(rope.forward(randn({2, 3, 4}), 0), "input (2,3,4) must be");
  REQUIRE_ERROR(nn::RotaryEmbedding(7), "dim must be even, got 7");
}

TEST_CASE("apply_rotary errors name the op, every shape and the allowed range", "[rotary]") {
  Tensor x = zeros({2, 5, 8}), c = zeros({5, 4});
  REQUIRE_ERROR(apply_rotary(x, c, zeros({5, 3})),
                "apply_rotary: cos (5,4) and sin (5,3) must both be (T, R/2); x (2,5,8)");
  REQUIRE_ERROR(apply_rotary(x, zeros({4, 4}), zeros({4, 4})),
                "apply_rotary: cos and sin (4,4) must be (T, R/2) with T = x's dim 1 (5)");
  REQUIRE_ERROR(apply_rotary(x, zeros({5, 5}), zeros({5, 5})), "R <= D (8)");
  REQUIRE_ERROR(apply_rotary(x, c, c, false, 2),
                "apply_rotary: seq_dim 2 out of range for x (2,5,8): expected [-3, 1]");
  REQUIRE_ERROR(apply_rotary(x, c.to(kFloat64), c), "apply_rotary");
}

namespace {
// Special values for the rotary kernels: ±0, ±inf, NaN, subnormals, ordinary values. Magnitudes
// stay far from overflow so a product never sits at the edge where a fused multiply-add and a
// plain product round differently.
template <typename T>
std::vector<T> rotary_specials() {
  using L = std::numeric_limits<T>;
  return {T(0),           T(-0.0),       L::infinity(),   -L::infinity(),
          L::quiet_NaN(), T(1),          L::denorm_min(), -L::denorm_min(),
          L::min() / 4,   T(-2.5),       T(0.75),         T(-1e-3),
          T(3),           -L::min() / 8, T(1e15)};
}
// v cycled from `shift` into a (rows, n) tensor: each position sees every value in turn.
template <typename T>
std::vector<T> cycled(const std::vector<T>& v, int64_t rows, int64_t n, int64_t shift) {
  std::vector<T> out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      out.push_back(v[static_cast<size_t>((i + r * 7 + shift) % static_cast<int64_t>(v.size()))]);
  return out;
}
// One output element of the reference: its value, the size of the products it sums (for the
// rounding allowance), and whether every product has a zero factor (then no rounding is involved
// and the sign of a zero result is fixed).
template <typename T>
struct Expected {
  T value, scale;
  bool exact;
};
// The pair (a, b) turned by (c, ±s), as the test's own plain loop: (a·c − b·s', b·c + a·s').
template <typename T>
std::pair<Expected<T>, Expected<T>> rotate(T a, T b, T c, T s, bool inverse) {
  const T sp = inverse ? -s : s;
  auto zero = [](T u, T v) { return (u == 0 && std::isfinite(v)) || (v == 0 && std::isfinite(u)); };
  return {{a * c - b * sp, std::fabs(a * c) + std::fabs(b * sp), zero(a, c) && zero(b, sp)},
          {b * c + a * sp, std::fabs(b * c) + std::fabs(a * sp), zero(b, c) && zero(a, sp)}};
}
// x (P, D) turned by the tables (P, R/2) on its first R dims, the rest copied: the reference.
template <typename T>
std::vector<Expected<T>> rotary_reference(const std::vector<T>& x, const std::vector<T>& c,
                                          const std::vector<T>& s, int64_t P, int64_t D, int64_t R,
                                          bool interleaved, bool inverse) {
  const int64_t h = R / 2;
  std::vector<Expected<T>> out;
  for (int64_t p = 0; p < P; ++p) {
    const T* xr = x.data() + p * D;
    std::vector<Expected<T>> row(static_cast<size_t>(D));
    for (int64_t i = 0; i < h; ++i) {
      const int64_t ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + h;
      std::tie(row[ia], row[ib]) = rotate(xr[ia], xr[ib], c[p * h + i], s[p * h + i], inverse);
    }
    for (int64_t j = R; j < D; ++j) row[j] = {xr[j], 0, true};
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}
// got equals the reference: NaN where it is NaN, the same infinities, finite values within a few
// roundings of the products (a fused multiply-add rounds once where the loop rounds twice), and
// the same sign of zero where no rounding is involved.
template <typename T>
void require_rotated(const Tensor& got_t, const std::vector<Expected<T>>& want,
                     const std::string& what) {
  const std::vector<T> got = got_t.contiguous().to_vector<T>();
  REQUIRE(got.size() == want.size());
  const T eps = std::numeric_limits<T>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    const T w = want[i].value, g = got[i];
    INFO(what << " element " << i << ": got " << g << ", want " << w);
    if (std::isnan(w)) {
      REQUIRE(std::isnan(g));
    } else if (std::isinf(w)) {
      REQUIRE(g == w);
    } else {
      REQUIRE(std::fabs(g - w) <= 4 * eps * want[i].scale + std::numeric_limits<T>::denorm_min());
      if (w == 0 && want[i].exact) REQUIRE(std::signbit(g) == std::signbit(w));
    }
  }
}
}  // namespace

TEMPLATE_TEST_CASE(
    "apply_rotary at special values: every head size 2..80 and 300, both layouts, "
    "forward and backward, against a plain loop",
    "[rotary][special]", float, double) {
  using T = TestType;
  const DType dt = std::is_same<T, float>::value ? kFloat32 : kFloat64;
  const std::vector<T> sv = rotary_specials<T>();
  constexpr int64_t P = 3;  // positions
  std::vector<int64_t> halves;
  for (int64_t h = 1; h <= 40; ++h) halves.push_back(h);
  halves.push_back(150);
  for (bool inter : {false, true})
    for (int64_t h : halves) {
      const int64_t R = 2 * h, D = R + (h % 2) * 3;  // odd h: 3 dims pass through
      const std::string what = fmt::format("{} {} D={} R={}", inter ? "interleaved" : "half-split",
                                           dtype_name(dt), D, R);
      const std::vector<T> xv = cycled(sv, P, D, 0), cv = cycled(sv, P, h, 3),
                           sn = cycled(sv, P, h, 8), gv = cycled(sv, P, D, 5);
      Tensor x = tensor(xv, {P, D}).requires_grad_();
      const Tensor c = tensor(cv, {P, h}), s = tensor(sn, {P, h});
      Tensor y = apply_rotary(x, c, s, inter, 0);
      require_rotated(y, rotary_reference(xv, cv, sn, P, D, R, inter, false), what + " forward");
      y.backward(tensor(gv, {P, D}));
      require_rotated(x.grad(), rotary_reference(gv, cv, sn, P, D, R, inter, true),
                      what + " backward");
    }
}
