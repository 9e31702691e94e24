// ops/softmax/cpu/softmax_rows.hpp — the row softmax / log_softmax kernels, forward and backward, written
// once on xsimd batches of architecture A. Included by ops/softmax/cpu/softmax.cpp (the build's own
// architecture, AVX2 + FMA by default) and by ops/softmax/cpu/softmax_avx512.cpp (compiled with AVX-512
// flags, called only where the CPU has AVX-512: see softmax.cpp). Everything here has internal
// linkage and calls no inline std:: algorithm, so the AVX-512 translation unit emits no
// out-of-line function that the linker could hand to the other one (which would fault on a CPU
// without AVX-512). The rule for fully masked and NaN rows: ops/core/cpu/kernels.hpp.
// Internal to the CPU kernels (ops/<family>/cpu/).
#pragma once

#include <xsimd/xsimd.hpp>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tg::cpu {
namespace {
namespace rows {

// Batches summed in T lanes before their partial sum joins the double total: float lanes then
// hold at most 8 terms each; costs nothing measurable against one double sum per row.
constexpr int kFlush = 8;

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <typename T>
inline void fill(T* p, int64_t n, T v) {
  for (int64_t j = 0; j < n; ++j) p[j] = v;
}

// The max of x[0, n); NaN entries may or may not win (either way the row ends up NaN).
template <typename A, typename T>
T row_max(const T* x, int64_t n) {
  using B = xsimd::batch<T, A>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  T mx = kNegInf<T>;
  int64_t j = 0;
  if (n >= L) {
    B m(kNegInf<T>);
    for (; j + L <= n; j += L) m = xsimd::max(m, B::load_unaligned(x + j));
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<A, xsimd::avx512bw>) {  // a shuffle tree, not 16 scalar steps
      if constexpr (std::is_same_v<T, float>)
        mx = _mm512_reduce_max_ps(m);
      else
        mx = _mm512_reduce_max_pd(m);
    } else
#endif
    {
      alignas(64) T lanes[64 / sizeof(T)];
      m.store_aligned(lanes);
      for (int64_t u = 0; u < L; ++u) mx = lanes[u] > mx ? lanes[u] : mx;
    }
  }
  for (; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  return mx;
}

// Σ f(batch at j) over x[0, n) (f's scalar twin fs on the tail), in T lanes flushed into double.
template <typename A, typename T, typename F, typename FS>
double row_sum(int64_t n, F f, FS fs) {
  using B = xsimd::batch<T, A>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  double sum = 0;
  int64_t j = 0;
  while (j + L <= n) {
    B acc(T(0));
    for (int b = 0; b < kFlush && j + L <= n; ++b, j += L) acc += f(j);
    sum += xsimd::hadd(acc);
  }
  for (; j < n; ++j) sum += fs(j);
  return sum;
}

// exp on a batch. On AVX-512 float32, a shorter form than xsimd::exp's: Cody-Waite reduction
// x = n·ln2 + r (|r| <= ln2/2), Cephes' degree-6 polynomial for e^r, then vscalefps (p·2^n).
// Below -87.3, where e^x leaves the normal floats, the result is 0 (as with flush-to-zero): x is
// raised to -87.3 for the arithmetic, whose results then stay normal (a denormal or underflowing
// result costs a microcode assist), and those lanes are zeroed; -inf gives 0, NaN stays NaN (max
// returns its second operand then; NaN < c is false); exp(100) = inf. Its speed and accuracy
// against double: docs/cpu-kernels.md, "The measured exceptions".
template <typename A, typename T>
xsimd::batch<T, A> exp(const xsimd::batch<T, A>& x) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && std::is_same_v<A, xsimd::avx512bw>) {
    const __m512 lo = _mm512_set1_ps(-87.3f);
    const __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ);  // x >= -87.3 or NaN
    const __m512 xc = _mm512_max_ps(lo, x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
    return _mm512_maskz_scalef_ps(keep, p, n);
  }
#endif
  return xsimd::exp(x);
}

template <typename T>
bool any_nan(const T* x, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    if (x[j] != x[j]) return true;
  return false;
}

template <typename A, typename T>
bool softmax_row(T* y, const T* x, int64_t n, bool is_log) {
  using B = xsimd::batch<T, A>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  const T mx = row_max<A>(x, n);
  if (mx == kNegInf<T>) {  // all -inf, or -inf and NaN only (the max skipped the NaNs)
    const bool nan = any_nan(x, n);
    fill(y, n, nan ? std::numeric_limits<T>::quiet_NaN() : (is_log ? kNegInf<T> : T(0)));
    return nan;
  }
  // A NaN anywhere else makes the sum NaN, hence every output: the row stays NaN.
  const B vmx(mx);
  if (is_log) {  // y = (x - max) - log Σ exp(x - max): x is read twice, so y may be x
    const double sum = row_sum<A, T>(
        n, [&](int64_t j) { return rows::exp<A>(B::load_unaligned(x + j) - vmx); },
        [&](int64_t j) { return std::exp(x[j] - mx); });
    const T lse = static_cast<T>(std::log(sum));
    const B vlse(lse);
    int64_t j = 0;
    for (; j + L <= n; j += L) ((B::load_unaligned(x + j) - vmx) - vlse).store_unaligned(y + j);
    for (; j < n; ++j) y[j] = (x[j] - mx) - lse;
    return true;
  }
  // exp(x - max) once, into y; then y *= 1 / Σ.
  const double sum = row_sum<A, T>(
      n,
      [&](int64_t j) {
        const B e = rows::exp<A>(B::load_unaligned(x + j) - vmx);
        e.store_unaligned(y + j);
        return e;
      },
      [&](int64_t j) { return y[j] = std::exp(x[j] - mx); });
  const T inv = static_cast<T>(1.0 / sum);
  const B vinv(inv);
  int64_t j = 0;
  for (; j + L <= n; j += L) (B::load_unaligned(y + j) * vinv).store_unaligned(y + j);
  for (; j < n; ++j) y[j] *= inv;
  return true;
}

template <typename A, typename T>
void softmax_backward_row(T* dx, const T* g, const T* y, int64_t n, bool is_log) {
  using B = xsimd::batch<T, A>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  int64_t j = 0;
  if (!is_log) {  // dx = y ⊙ (g − Σ g⊙y); a fully masked row has y = 0, hence dx = 0
    const T dot = static_cast<T>(row_sum<A, T>(
        n, [&](int64_t k) { return B::load_unaligned(g + k) * B::load_unaligned(y + k); },
        [&](int64_t k) { return static_cast<double>(g[k]) * y[k]; }));
    const B vdot(dot);
    for (; j + L <= n; j += L)
      (B::load_unaligned(y + j) * (B::load_unaligned(g + j) - vdot)).store_unaligned(dx + j);
    for (; j < n; ++j) dx[j] = y[j] * (g[j] - dot);
    return;
  }
  // dx = g − exp(y)·Σ g; a fully masked row (y all -inf) gets 0.
  bool masked = true;
  for (int64_t k = 0; k < n && masked; ++k) masked = y[k] == kNegInf<T>;
  if (masked) {
    fill(dx, n, T(0));
    return;
  }
  const T sg = static_cast<T>(row_sum<A, T>(
      n, [&](int64_t k) { return B::load_unaligned(g + k); },
      [&](int64_t k) { return static_cast<double>(g[k]); }));
  const B vsg(sg);
  for (; j + L <= n; j += L)
    (B::load_unaligned(g + j) - rows::exp<A>(B::load_unaligned(y + j)) * vsg)
        .store_unaligned(dx + j);
  for (; j < n; ++j) dx[j] = g[j] - std::exp(y[j]) * sg;
}

}  // namespace rows
}  // namespace
}  // namespace tg::cpu
