// ops/cpu/softmax.cpp — the CPU's one row softmax / log_softmax, forward and backward, with the
// project's rule for fully masked and NaN rows (kernels.hpp states it). Used by softmax and
// log_softmax over any dim (ops/softmax.cpp; a non-last dim gathers columns into rows here) and
// by the fused CPU attention's score rows (ops/attention.cpp).
// Written on xsimd batches, not xtensor expressions: measured here (rows of 128 and 1024, f32,
// one thread), the per-row xtensor form (xt::amax, xt::exp(row - max) into the output,
// xt::sum<double>, scale) took 3.0-3.4x the time of these loops forward (xt::amax reduces
// scalar-wise, and each expression costs ~20 ns of setup per row) and xt::sum<double>(g * y) with
// y ⊙ (g - dot) 1.8-2.2x backward. float32 math in float32 (xsimd::exp), float64 in float64; sums
// accumulate in T lanes over at most kFlush batches, then in double.
// Deliberately not here: the op bodies, dims and the tape (ops/softmax.cpp), masking (attention).
#include "ops/cpu/kernels.hpp"
#include "ops/detail.hpp"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace tg::cpu {

namespace {
// Batches summed in T lanes before their partial sum joins the double total: float lanes then
// hold at most 8 terms each; costs nothing measurable against one double sum per row.
constexpr int kFlush = 8;
// Columns gathered per block when softmax runs over a non-last dim.
constexpr int64_t kColumns = 16;

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// The max of x[0, n); NaN entries may or may not win (either way the row ends up NaN).
template <typename T>
T row_max(const T* x, int64_t n) {
  using B = xsimd::batch<T>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  T mx = kNegInf<T>;
  int64_t j = 0;
  if (n >= L) {
    B m(kNegInf<T>);
    for (; j + L <= n; j += L) m = xsimd::max(m, B::load_unaligned(x + j));
    alignas(64) T lanes[64 / sizeof(T)];
    m.store_aligned(lanes);
    for (int64_t u = 0; u < L; ++u) mx = std::max(mx, lanes[u]);
  }
  for (; j < n; ++j) mx = std::max(mx, x[j]);
  return mx;
}

// Σ f(batch at j) over x[0, n) (f's scalar twin fs on the tail), in T lanes flushed into double.
template <typename T, typename F, typename FS>
double row_sum(int64_t n, F f, FS fs) {
  using B = xsimd::batch<T>;
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
    if (std::isnan(x[j])) return true;
  return false;
}
}  // namespace

template <typename T>
bool softmax_row(T* y, const T* x, int64_t n, bool is_log) {
  using B = xsimd::batch<T>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  const T mx = row_max(x, n);
  if (mx == kNegInf<T>) {  // all -inf, or -inf and NaN only (the max skipped the NaNs)
    const bool nan = any_nan(x, n);
    std::fill(y, y + n, nan ? std::numeric_limits<T>::quiet_NaN() : (is_log ? kNegInf<T> : T(0)));
    return nan;
  }
  // A NaN anywhere else makes the sum NaN, hence every output: the row stays NaN.
  const B vmx(mx);
  if (is_log) {  // y = (x - max) - log Σ exp(x - max): x is read twice, so y may be x
    const double sum = row_sum<T>(
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
  const double sum = row_sum<T>(
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

template <typename T>
void softmax_backward_row(T* dx, const T* g, const T* y, int64_t n, bool is_log) {
  using B = xsimd::batch<T>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  int64_t j = 0;
  if (!is_log) {  // dx = y ⊙ (g − Σ g⊙y); a fully masked row has y = 0, hence dx = 0
    const T dot = static_cast<T>(row_sum<T>(
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
    std::fill(dx, dx + n, T(0));
    return;
  }
  const T sg = static_cast<T>(row_sum<T>(
      n, [&](int64_t k) { return B::load_unaligned(g + k); },
      [&](int64_t k) { return static_cast<double>(g[k]); }));
  const B vsg(sg);
  for (; j + L <= n; j += L)
    (B::load_unaligned(g + j) - xsimd::exp(B::load_unaligned(y + j)) * vsg).store_unaligned(dx + j);
  for (; j < n; ++j) dx[j] = g[j] - std::exp(y[j]) * sg;
}

namespace {
// Calls row(out_row, in_rows) on every softmax row of an (outer, n, inner) tensor with nin (1 or
// 2) inputs: on the rows themselves when they are contiguous (inner == 1; in parallel when
// large), else on blocks of up to kColumns columns gathered into contiguous scratch rows, the
// results scattered back into out.
template <typename T, typename Row>
void for_rows(T* out, std::array<const T*, 2> in, int nin, int64_t outer, int64_t n, int64_t inner,
              Row row) {
  if (inner == 1) {
    detail::parallel_for(outer, outer * n, [&](int64_t o) {
      row(out + o * n, std::array<const T*, 2>{in[0] + o * n, nin > 1 ? in[1] + o * n : nullptr});
    });
    return;
  }
  // scratch: kColumns output rows, then kColumns rows per input
  std::vector<T> scratch(static_cast<size_t>((nin + 1) * kColumns * n));
  auto srow = [&](int slot, int64_t c) { return scratch.data() + (slot * kColumns + c) * n; };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i0 = 0; i0 < inner; i0 += kColumns) {
      const int64_t w = std::min(kColumns, inner - i0), base = o * n * inner + i0;
      for (int a = 0; a < nin; ++a)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t c = 0; c < w; ++c) srow(a + 1, c)[j] = in[a][base + j * inner + c];
      for (int64_t c = 0; c < w; ++c)
        row(srow(0, c), std::array<const T*, 2>{srow(1, c), nin > 1 ? srow(2, c) : nullptr});
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < w; ++c) out[base + j * inner + c] = srow(0, c)[j];
    }
}
}  // namespace

template <typename T>
void softmax_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner, bool is_log) {
  for_rows<T>(y, {x, nullptr}, 1, outer, n, inner,
              [=](T* yr, std::array<const T*, 2> r) { softmax_row(yr, r[0], n, is_log); });
}

template <typename T>
void softmax_backward(T* dx, const T* g, const T* y, int64_t outer, int64_t n, int64_t inner,
                      bool is_log) {
  for_rows<T>(dx, {g, y}, 2, outer, n, inner, [=](T* dr, std::array<const T*, 2> r) {
    softmax_backward_row(dr, r[0], r[1], n, is_log);
  });
}

template bool softmax_row<float>(float*, const float*, int64_t, bool);
template bool softmax_row<double>(double*, const double*, int64_t, bool);
template void softmax_backward_row<float>(float*, const float*, const float*, int64_t, bool);
template void softmax_backward_row<double>(double*, const double*, const double*, int64_t, bool);
template void softmax_forward<float>(float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_forward<double>(double*, const double*, int64_t, int64_t, int64_t, bool);
template void softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t,
                                      bool);
template void softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t,
                                       int64_t, bool);

}  // namespace tg::cpu
