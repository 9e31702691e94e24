// ops/cpu/softmax_rows.hpp — the row softmax / log_softmax kernels, forward and backward, written
// once on xsimd batches of architecture A. Included by ops/cpu/softmax.cpp (the build's own
// architecture, AVX2 + FMA by default) and by ops/cpu/softmax_avx512.cpp (compiled with AVX-512
// flags, called only where the CPU has AVX-512: see softmax.cpp). Everything here has internal
// linkage and calls no inline std:: algorithm, so the AVX-512 translation unit emits no
// out-of-line function that the linker could hand to the other one (which would fault on a CPU
// without AVX-512). The rule for fully masked and NaN rows: ops/cpu/kernels.hpp.
// Internal to ops/cpu/.
#pragma once

#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

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
    alignas(64) T lanes[64 / sizeof(T)];
    m.store_aligned(lanes);
    for (int64_t u = 0; u < L; ++u) mx = lanes[u] > mx ? lanes[u] : mx;
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
        n, [&](int64_t j) { return xsimd::exp(B::load_unaligned(x + j) - vmx); },
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
        const B e = xsimd::exp(B::load_unaligned(x + j) - vmx);
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
    (B::load_unaligned(g + j) - xsimd::exp(B::load_unaligned(y + j)) * vsg).store_unaligned(dx + j);
  for (; j < n; ++j) dx[j] = g[j] - std::exp(y[j]) * sg;
}

}  // namespace rows
}  // namespace
}  // namespace tg::cpu
