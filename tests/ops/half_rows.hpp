// tests/ops/half_rows.hpp — what the row-wise bfloat16 / float16 tests (test_half_{softmax,norm,
// loss,rotary,optim}.cpp) share: the fixture cases of tests/fixtures/half_rows/ (written by
// tools/make_half_fixtures_rows.py) and a comparison in units in the last place of the reduced
// type, which states each tolerance in the type's own grain. Not here: the checks themselves.
#pragma once

#include "fixtures.hpp"
#include "helpers.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace tgt {

// The half_rows cases whose names start with prefix, in the generator's order.
inline std::vector<std::string> half_cases(const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& c : fixture_index("half_rows"))
    if (c.rfind(prefix, 0) == 0) out.push_back("half_rows/" + c);
  return out;
}

// The gap between want and its neighbour away from zero in dtype t (bfloat16: 8 significant bits,
// float16: 11, down to each type's subnormal step); float32: 24 bits.
inline double ulp_of(double want, tg::DType t) {
  int e = 0;
  std::frexp(std::fabs(want), &e);  // |want| = m·2^e, m in [0.5, 1)
  if (want == 0) e = -1000;
  if (t == tg::kBFloat16) return std::ldexp(1.0, std::max(e, -125) - 8);
  if (t == tg::kFloat16) return std::ldexp(1.0, std::max(e, -13) - 11);
  return std::ldexp(1.0, std::max(e, -125) - 24);
}

// The worst of |got - want| / (ulp(want) + rel_floor·max|want|) over the elements, in ulps of t,
// and where it is (NaN matches NaN, an infinity itself; any other mismatch of those is infinitely
// far). rel_floor > 0 is for results that subtract terms as large as the tensor's largest value
// (backward passes, rotations): their error scales with those terms, not with the difference.
struct UlpReport {
  double worst = 0;
  size_t at = 0;
  float got = 0, want = 0;
};
inline UlpReport max_ulps(const tg::Tensor& got, const tg::Tensor& want, tg::DType t,
                          double rel_floor = 0) {
  const std::vector<float> g = got.to(tg::kFloat32).contiguous().to_vector<float>();
  const std::vector<float> w = want.to(tg::kFloat32).contiguous().to_vector<float>();
  REQUIRE(g.size() == w.size());
  double big = 0;
  for (float v : w)
    if (std::isfinite(v)) big = std::max(big, double(std::fabs(v)));
  UlpReport r;
  for (size_t i = 0; i < g.size(); ++i) {
    double d = 0;
    if (std::isnan(w[i]) || std::isnan(g[i]) || std::isinf(w[i]) || std::isinf(g[i]))
      d = (std::isnan(w[i]) && std::isnan(g[i])) || g[i] == w[i] ? 0 : INFINITY;
    else
      d = std::fabs(double(g[i]) - double(w[i])) / (ulp_of(w[i], t) + rel_floor * big);
    if (d > r.worst) r = {d, i, g[i], w[i]};
  }
  return r;
}

// got is within tol (in the units of max_ulps) of want; prints what, the distance and where.
inline void require_ulps(const std::string& what, const tg::Tensor& got, const tg::Tensor& want,
                         tg::DType t, double tol, double rel_floor = 0) {
  REQUIRE(got.shape() == want.shape());
  const UlpReport r = max_ulps(got, want, t, rel_floor);
  INFO(what << ": " << r.worst << " ulps of " << tg::dtype_name(t) << " (tolerance " << tol
            << ", floor " << rel_floor << " of the largest) at element " << r.at << ": got "
            << r.got << ", want " << r.want);
  CHECK(r.worst <= tol);
}

// The floors the tests use: 2^-16 of the largest against float32 references (float32 rounding in
// terms as large as the largest), 2^-8 against PyTorch's bfloat16 kernels (one bfloat16 rounding
// of the largest intermediate).
constexpr double kFloor = 1.0 / 65536;
constexpr double kTorchFloor = 1.0 / 256;

// A row op's output y and input gradient dx in dtype t against the case's references <pre><op>
// and <pre><op>_dx: r_ (bfloat16) or h_ (float16), PyTorch's float32 result rounded once, within
// 1 ulp (the output with out_floor, the gradient with kFloor); for bfloat16 also bf_, PyTorch's
// bfloat16 kernels, within 2 ulps + kTorchFloor.
inline void check_refs(const Fixture& f, const std::string& op, const tg::Tensor& y,
                       const tg::Tensor& dx, tg::DType t, double out_floor) {
  const bool bf = t == tg::kBFloat16;
  const std::string ref = bf ? "r_" : "h_";
  require_ulps(op + " vs float32 rounded once", y, f.tensor(ref + op), t, 1, out_floor);
  require_ulps(op + " dx vs float32 rounded once", dx, f.tensor(ref + op + "_dx"), t, 1, kFloor);
  if (!bf) return;
  require_ulps(op + " vs PyTorch bf16", y, f.tensor("bf_" + op), t, 2, kTorchFloor);
  require_ulps(op + " dx vs PyTorch bf16", dx, f.tensor("bf_" + op + "_dx"), t, 2, kTorchFloor);
}

}  // namespace tgt
