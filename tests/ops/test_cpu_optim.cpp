// tests/ops/test_cpu_optim.cpp — the CPU Adam / AdamW step (ops/optim/cpu/optim.cpp, a loop gcc
// vectorises) against a long-double reference of PyTorch 1.13's _single_tensor_adam, on every
// length 1..67 and 1000..1017 (the vector body and every tail, at 4, 8 and 16 lanes), all 16
// combinations of maximize, decoupled (AdamW), weight decay and amsgrad, float32 and float64, with
// 0, -0, ±inf, NaN and subnormals in the gradient and the state at a row's start, middle and end:
// the same NaNs and infinities, finite values within a few roundings of each step's terms.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tg;

namespace {
template <typename T>
int64_t check_adam(int combo) {
  int64_t checked = 0;
  const bool maximize = combo & 1, decoupled = combo & 2, use_wd = combo & 4, ams = combo & 8;
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = use_wd ? 0.01 : 0.0;
  const double tol = std::is_same_v<T, float> ? 4e-6 : 1e-14;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T sub = std::numeric_limits<T>::denorm_min() * 3;
  const T specials[] = {T(0), -T(0), inf, -inf, nan, sub, -sub};
  std::mt19937 rng(100 + combo);
  std::normal_distribution<double> nd;
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 67; ++n) lengths.push_back(n);
  for (int64_t n = 1000; n <= 1017; ++n) lengths.push_back(n);
  for (int64_t n : lengths) {
    for (int s = 0; s < 7; ++s) {
      std::vector<T> p(n), g(n), m(n), v(n), vm(n);
      for (int64_t i = 0; i < n; ++i) {
        p[i] = T(nd(rng)), g[i] = T(nd(rng)), m[i] = T(0.1 * nd(rng));
        v[i] = T(0.01 * std::fabs(nd(rng))), vm[i] = T(0.01 * std::fabs(nd(rng)));
      }
      // A special value in the gradient at the start, in p in the middle, in m at the end.
      g[0] = specials[s];
      p[n / 2] = specials[(s + 1) % 7];
      m[n - 1] = specials[(s + 2) % 7];
      const std::vector<T> p0 = p, g0 = g, m0 = m, v0 = v, vm0 = vm;
      const int step = 1 + (combo + s) % 5;
      const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
      cpu::adam_step(std::is_same_v<T, float> ? kern::DT::F32 : kern::DT::F64, p.data(), g.data(),
                     m.data(), v.data(), ams ? vm.data() : nullptr, n, lr, b1, b2, eps, wd,
                     decoupled, maximize, bc1, bc2);
      for (int64_t i = 0; i < n; ++i) {
        using L = long double;
        L gi = maximize ? -L(g0[i]) : L(g0[i]);
        L pi = p0[i];
        if (decoupled)
          pi = pi * L(T(1 - lr * wd));
        else if (wd != 0)
          gi = gi + L(T(wd)) * pi;
        const L mi = L(m0[i]) * L(T(b1)) + L(T(1 - b1)) * gi;
        const L vi = L(v0[i]) * L(T(b2)) + L(T(1 - b2)) * gi * gi;
        L vv = vi;
        L vmi = vm0[i];
        if (ams) vv = vmi = (vmi < vi) ? vi : vmi;  // std::max(vmax, v): a NaN v keeps vmax
        const L denom = std::sqrt(vv) / L(T(std::sqrt(bc2))) + L(T(eps));
        const L upd = L(T(-(lr / bc1))) * mi / denom;
        const L pn = pi + upd;
        // One assertion per failing value (a CHECK per element would be millions of them).
        auto same = [&](const char* what, T got, L want, L scale) {
          const double w = static_cast<double>(want);
          const bool ok = std::isnan(w) ? std::isnan(got)
                          : std::isinf(w)
                              ? static_cast<L>(got) == want
                              : std::isfinite(got) &&
                                    std::fabs(static_cast<L>(got) - want) <= L(tol) * (1 + scale);
          if (!ok)
            FAIL_CHECK("n " << n << " i " << i << " special " << s << " combo " << combo << " "
                            << what << " got " << got << " want " << w);
          ++checked;
        };
        same("m", m[i], mi, std::fabs(L(m0[i])) + std::fabs(gi));
        same("v", v[i], vi, std::fabs(L(v0[i])) + gi * gi);
        if (ams) same("vmax", vm[i], vmi, std::fabs(vmi));
        same("p", p[i], pn, std::fabs(pi) + std::fabs(upd) + std::fabs(L(p0[i])));
      }
    }
  }
  return checked;
}
}  // namespace

TEST_CASE("cpu adam_step at special values on every length, all option combinations",
          "[cpu][optim]") {
  int64_t checked = 0;
  for (int combo = 0; combo < 16; ++combo)
    checked += check_adam<float>(combo) + check_adam<double>(combo);
  CHECK(checked > 1000000);  // every value of every case was compared
}
