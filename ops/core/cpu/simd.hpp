// ops/core/cpu/simd.hpp — internal to the CPU kernel translation units (ops/<family>/cpu/*.cpp): reductions of
// one contiguous row on xsimd batches — sums accumulated in double (float lanes widened on load),
// dot-like sums of two rows, NaN-propagating max/min — for the kernels whose xtensor form is slow
// (xtensor widens float to double one element at a time, and xt::amax reduces scalar-wise:
// docs/cpu-kernels.md has both measured). Elementwise work stays in xtensor expressions (xt.hpp),
// but for patched_map (below): xsimd's math with its special lanes recomputed by std::.
//
// Every sum adds in an order fixed by n alone (unaligned loads from the row's first element, four
// accumulators, one horizontal add, a scalar tail): a row gives the same bits wherever it lives
// and at any thread count.
#pragma once

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tg::cpu::xtd {

using dbatch = xsimd::batch<double>;
constexpr int64_t kDL = static_cast<int64_t>(dbatch::size);

// Elements p[0 .. kDL) as doubles.
template <typename T>
dbatch load_d(const T* p) {
  if constexpr (std::is_same_v<T, double>)
    return dbatch::load_unaligned(p);
  else
    return xsimd::load_as<double>(p, xsimd::unaligned_mode());
}

// Σ_{i<n} f(i) in double, where fv(i) is the batch f(i .. i+kDL) and fs(i) the scalar f(i).
template <typename FV, typename FS>
double dsum(int64_t n, FV&& fv, FS&& fs) {
  dbatch a0(0.0), a1(0.0), a2(0.0), a3(0.0);
  int64_t i = 0;
  for (; i + 4 * kDL <= n; i += 4 * kDL) {
    a0 += fv(i);
    a1 += fv(i + kDL);
    a2 += fv(i + 2 * kDL);
    a3 += fv(i + 3 * kDL);
  }
  for (; i + kDL <= n; i += kDL) a0 += fv(i);
  double s = xsimd::hadd((a0 + a1) + (a2 + a3));
  for (; i < n; ++i) s += fs(i);
  return s;
}

// Σ f(i) and Σ h(i) in one pass, each added in dsum's order: fv(i, a, b) adds the batches of f
// and h at i .. i+kDL to the accumulators a and b, fs(i, s, t) the scalars to s and t. Written as
// dsum's own updates (a += x·y), they are contracted as there (docs/cpu-kernels.md, "Layer norm").
template <typename FV, typename FS>
void dsum2(int64_t n, double& s, double& t, FV&& fv, FS&& fs) {
  dbatch a0(0.0), a1(0.0), a2(0.0), a3(0.0), b0(0.0), b1(0.0), b2(0.0), b3(0.0);
  int64_t i = 0;
  for (; i + 4 * kDL <= n; i += 4 * kDL) {
    fv(i, a0, b0);
    fv(i + kDL, a1, b1);
    fv(i + 2 * kDL, a2, b2);
    fv(i + 3 * kDL, a3, b3);
  }
  for (; i + kDL <= n; i += kDL) fv(i, a0, b0);
  s = xsimd::hadd((a0 + a1) + (a2 + a3));
  t = xsimd::hadd((b0 + b1) + (b2 + b3));
  for (; i < n; ++i) fs(i, s, t);
}

// Σ p[i] in double.
template <typename T>
double sum(const T* p, int64_t n) {
  return dsum(
      n, [&](int64_t i) { return load_d(p + i); },
      [&](int64_t i) { return static_cast<double>(p[i]); });
}

// Σ f(i) and Σ h(i) for two rows, each bit for bit the dsum of it alone (the same updates, each
// accumulator's in the same order), the rows' additions interleaved so that short rows, whose
// four dependency chains are short, keep the adder busy. fv/fs as dsum's, gv/gs for the second.
template <typename FV, typename FS, typename GV, typename GS>
void dsum_pair(int64_t n, double& sf, double& sh, FV&& fv, FS&& fs, GV&& gv, GS&& gs) {
  dbatch a0(0.0), a1(0.0), a2(0.0), a3(0.0), b0(0.0), b1(0.0), b2(0.0), b3(0.0);
  int64_t i = 0;
  for (; i + 4 * kDL <= n; i += 4 * kDL) {
    a0 += fv(i);
    b0 += gv(i);
    a1 += fv(i + kDL);
    b1 += gv(i + kDL);
    a2 += fv(i + 2 * kDL);
    b2 += gv(i + 2 * kDL);
    a3 += fv(i + 3 * kDL);
    b3 += gv(i + 3 * kDL);
  }
  for (; i + kDL <= n; i += kDL) {
    a0 += fv(i);
    b0 += gv(i);
  }
  sf = xsimd::hadd((a0 + a1) + (a2 + a3));
  sh = xsimd::hadd((b0 + b1) + (b2 + b3));
  for (; i < n; ++i) {
    sf += fs(i);
    sh += gs(i);
  }
}

// Σ p[i] and Σ q[i] in double, each bit for bit sum(p or q, n).
template <typename T>
void sum2(const T* p, const T* q, int64_t n, double& sp, double& sq) {
  dsum_pair(
      n, sp, sq, [&](int64_t i) { return load_d(p + i); },
      [&](int64_t i) { return static_cast<double>(p[i]); },
      [&](int64_t i) { return load_d(q + i); },
      [&](int64_t i) { return static_cast<double>(q[i]); });
}

// Σ (p[i] - m)² in double.
template <typename T>
double sum_sq_dev(const T* p, int64_t n, double m) {
  const dbatch mb(m);
  return dsum(
      n,
      [&](int64_t i) {
        const dbatch d = load_d(p + i) - mb;
        return d * d;
      },
      [&](int64_t i) {
        const double d = static_cast<double>(p[i]) - m;
        return d * d;
      });
}

// Σ a[i]·b[i] in double.
template <typename T>
double dot(const T* a, const T* b, int64_t n) {
  return dsum(
      n, [&](int64_t i) { return load_d(a + i) * load_d(b + i); },
      [&](int64_t i) { return static_cast<double>(a[i]) * static_cast<double>(b[i]); });
}

// The largest (is_max) or smallest element of p[0 .. n), n >= 1; NaN when any element is NaN.
// Floating T only.
template <typename T>
T extreme(const T* p, int64_t n, bool is_max) {
  using B = xsimd::batch<T>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  T best = p[0];
  int64_t i = 0;
  if (n >= L) {
    B m = B::load_unaligned(p);
    auto nan = xsimd::isnan(m);  // not m != m: xsimd's != is ordered (false for NaN)
    for (i = L; i + L <= n; i += L) {
      const B v = B::load_unaligned(p + i);
      m = is_max ? xsimd::max(m, v) : xsimd::min(m, v);
      nan = nan | xsimd::isnan(v);
    }
    if (xsimd::any(nan)) return std::numeric_limits<T>::quiet_NaN();
    alignas(64) T lanes[L];
    m.store_aligned(lanes);
    best = lanes[0];
    for (int64_t k = 1; k < L; ++k)
      best = is_max ? (lanes[k] > best ? lanes[k] : best) : (lanes[k] < best ? lanes[k] : best);
  } else {
    i = 1;
    if (std::isnan(best)) return best;
  }
  for (; i < n; ++i) {
    const T v = p[i];
    if (std::isnan(v)) return v;
    best = is_max ? (v > best ? v : best) : (v < best ? v : best);
  }
  return best;
}

// ---- xsimd's elementwise math with its special lanes patched ----
// xsimd's exp/log/pow are fast and accurate on ordinary arguments but not at the edges:
// pow(0, 0) = 0, pow(inf, 0) = NaN, the log of a subnormal off by 33, exp's subnormal results
// flushed to 0. And xtensor runs an array's unaligned head and its tail through std::, the body
// through xsimd, so such an answer depended on the tensor's length and the element's position.
// patched_map runs every element through the vector code (the tail through a padded batch) and
// recomputes with the scalar function each lane whose arguments or result lie outside the range
// where the vector math is exact to a few ulps (ok false: zero, subnormal, infinite, NaN,
// negative, near overflow): ordinary data never leaves the vector path, and an element's value
// never depends on where it sits.

// Lanes where |v| is a normal finite number (NaN: false).
template <typename T, typename A>
auto normal(const xsimd::batch<T, A>& v) {
  using B = xsimd::batch<T, A>;
  const B a = xsimd::abs(v);
  return (a >= B(std::numeric_limits<T>::min())) & (a <= B(std::numeric_limits<T>::max()));
}

// out[i] = vf(a[i·sa], b[i·sb]) for i < n (sa, sb: 1 for a row, 0 for one broadcast element), with
// the lanes where ok(a, b, y) is false recomputed as sf(a, b). A: the batches' architecture
// (an AVX-512 file passes its own; plain loops, no std:: algorithm, for the reason in
// softmax_rows.hpp).
template <typename A = xsimd::default_arch, typename T, typename V, typename S, typename OK>
void patched_map(T* out, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, V&& vf, S&& sf,
                 OK&& ok) {
  using B = xsimd::batch<T, A>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  alignas(64) T ta[W], tb[W], ty[W], tk[W];
  auto load = [&](const T* p, int64_t s, int64_t i, int64_t m, T* tmp) {
    if (s == 0) return B(p[0]);
    if (m == W) return B::load_unaligned(p + i);
    for (int64_t k = 0; k < W; ++k) tmp[k] = k < m ? p[i + k] : T(1);  // padding: harmless
    return B::load_aligned(tmp);
  };
  for (int64_t i = 0; i < n; i += W) {
    const int64_t m = n - i < W ? n - i : W;
    const B va = load(a, sa, i, m, ta), vb = load(b, sb, i, m, tb);
    const B y = vf(va, vb);
    const auto good = ok(va, vb, y);
    if (m == W && xsimd::all(good)) {
      y.store_unaligned(out + i);
      continue;
    }
    y.store_aligned(ty);
    xsimd::select(good, B(T(1)), B(T(0))).store_aligned(tk);
    for (int64_t k = 0; k < m; ++k)
      out[i + k] = tk[k] != T(0) ? ty[k] : sf(a[(i + k) * sa], b[(i + k) * sb]);
  }
}

// out[i] = a[i·sa]^b[i·sb] (sa, sb as above), std::pow's values within a few ulps. xsimd's pow
// is exp(b·log a), whose relative error grows as |b·log a| ulps (8 float ulps at 89^4), so the
// vector lanes are those with a positive normal a, a normal b and a result in [e^-4, e^4]
// (|b·log a| <= 4): ordinary magnitudes. Every other lane (0, ±inf, NaN, a negative base, b = 0,
// a large or tiny result) takes std::pow.
template <typename T>
void pow_map(T* out, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
  using B = xsimd::batch<T>;
  patched_map(
      out, a, sa, b, sb, n, [](const B& x, const B& e) { return xsimd::exp(e * xsimd::log(x)); },
      [](T x, T e) { return std::pow(x, e); },
      [](const B& x, const B& e, const B& y) {
        return (x > B(T(0))) & normal(x) & normal(e) & (y >= B(T(0.018315638888734179))) &
               (y <= B(T(54.598150033144236)));
      });
}

}  // namespace tg::cpu::xtd
