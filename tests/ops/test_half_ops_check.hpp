// tests/ops/test_half_ops_check.hpp — the shared check of the bf16 / f16 family tests
// (test_half_binary.cpp, test_half_reduce.cpp, test_half_shape.cpp): a case of
// tests/fixtures/half_ops/ (tools/make_half_fixtures_ops.py) run through our op on tensors of the
// reduced dtype, forward and backward, compared with PyTorch within `ulps` units in the last place
// of the reduced type (NaN matches NaN; ±0 compared as equal values, infinities exactly).
#pragma once

#include "fixtures.hpp"
#include "helpers.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace tgt {

// The spacing of the reduced type's values at |w| (subnormals: the smallest spacing).
inline double ulp_of(tg::DType t, double w) {
  const int mant = t == tg::kBFloat16 ? 7 : 10, emin = t == tg::kBFloat16 ? -126 : -14;
  const int e =
      w == 0 ? emin : std::max(emin, static_cast<int>(std::floor(std::log2(std::fabs(w)))));
  return std::ldexp(1.0, e - mant);
}

// got (dtype t) against want (float32 holding values of t).
inline void require_ulps(const std::string& what, const tg::Tensor& got, const tg::Tensor& want,
                         tg::DType t, double ulps) {
  INFO(what << " " << tg::dtype_name(t) << " shape " << tg::shape_str(want.shape()));
  REQUIRE(got.dtype() == t);
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = got.to(tg::kFloat32).to_vector<float>(), w = want.to_vector<float>();
  int64_t bad = -1;
  double worst = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      if (std::isnan(w[i]) != std::isnan(g[i]) && bad < 0) bad = static_cast<int64_t>(i);
      continue;
    }
    if (std::isinf(w[i]) || std::isinf(g[i])) {
      if (w[i] != g[i] && bad < 0) bad = static_cast<int64_t>(i);
      continue;
    }
    const double d = std::fabs(double(g[i]) - double(w[i])) / ulp_of(t, w[i]);
    worst = std::max(worst, d);
    if (d > ulps && bad < 0) bad = static_cast<int64_t>(i);
  }
  INFO("worst " << worst << " ulp (allowed " << ulps << ")");
  INFO("first difference at " << bad << ": got " << (bad < 0 ? 0.f : g[bad]) << " want "
                              << (bad < 0 ? 0.f : w[bad]));
  REQUIRE(bad < 0);
}

using HalfFn = std::function<tg::Tensor(const std::vector<tg::Tensor>&)>;

// Runs fixture case `name` for bf16 (tolerance bf16_ulps) and f16 (f16_ulps): forward, and the
// gradients of every input the fixture has one for.
inline void half_case(const std::string& name, const HalfFn& f, double bf16_ulps, double f16_ulps) {
  Fixture fx("half_ops/" + name);
  for (auto [tag, t, ulps] :
       {std::tuple{"bf16", tg::kBFloat16, bf16_ulps}, std::tuple{"f16", tg::kFloat16, f16_ulps}}) {
    const std::string sfx = std::string("_") + tag;
    std::vector<tg::Tensor> xs;
    for (int k = 0; fx.has("x" + std::to_string(k) + sfx); ++k)
      xs.push_back(fx.tensor("x" + std::to_string(k) + sfx).to(t).requires_grad_());
    const tg::Tensor out = f(xs), want = fx.tensor("out" + sfx);
    if (want.dtype() == tg::kBool) {
      INFO(name << " " << tag);
      REQUIRE(out.to_vector<bool>() == want.to_vector<bool>());
      continue;
    }
    require_ulps(name + " forward", out, want, t, ulps);
    if (!fx.has("dout" + sfx)) continue;
    out.backward(fx.tensor("dout" + sfx).to(t));
    for (size_t k = 0; k < xs.size(); ++k) {
      const std::string dn = "dx" + std::to_string(k) + sfx;
      if (fx.has(dn)) require_ulps(name + " " + dn, xs[k].grad(), fx.tensor(dn), t, ulps);
    }
  }
}

}  // namespace tgt
