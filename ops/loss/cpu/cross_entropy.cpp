// ops/loss/cpu/cross_entropy.cpp — CPU kernels of cross-entropy fused with log-softmax
// (cpu::cross_entropy_forward, cross_entropy_backward), the CPU twins of cuda/loss.cu. Per row of
// C logits: the max (simd.hpp, NaN-propagating), Σ exp(x - max) with exp on xsimd batches in T
// (float32 math in float32) summed in double, so lse = max + log Σ in double; Σx in double for
// label smoothing. Backward: dx = exp(x - lse)·g - g·ε/C on xsimd batches, the target element
// redone in double; float32 takes exp(x - float(lse))·exp(float(lse) - lse) so rounding lse to
// float costs no accuracy. Every element, the row's tail too, goes through the same vector exp
// (a padded batch), so bits depend on C alone. xsimd loops rather than xtensor expressions: a
// per-row xt::exp expression spends more in its setup than in exp (docs/cpu-kernels.md, "The
// measured exceptions").
// Logits (N, C, inner) with inner > 1 have rows at stride inner: each row is gathered into a
// buffer first (and dx scattered back), a strided copy this rare layout pays.
// Rows split across threads in fixed blocks; each row's result does not depend on the split.
// Deliberately not here: the op, its checks, reductions and record (ops/loss/cross_entropy.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/simd.hpp"
#include "ops/core/detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace tg::cpu {

namespace {
// Rows per parallel task (each task owns one row buffer).
constexpr int64_t kRows = 16;

// Calls f(row, buf) for every row, rows split across threads in blocks of kRows; buf holds 2·C
// elements of T for the task (used only when inner > 1).
template <typename T, typename F>
void for_rows(int64_t rows, int64_t C, int64_t inner, F&& f) {
  const int64_t blocks = (rows + kRows - 1) / kRows;
  detail::parallel_for(blocks, rows * C, [&](int64_t blk) {
    std::vector<T> buf(inner > 1 ? 2 * C : 0);
    for (int64_t r = blk * kRows; r < std::min(rows, (blk + 1) * kRows); ++r) f(r, buf.data());
  });
}

// The logits of row r = n·inner + i, contiguous: in place when inner == 1, else gathered into
// buf.
template <typename T>
const T* row_of(const T* x, int64_t r, int64_t C, int64_t inner, T* buf) {
  if (inner == 1) return x + r * C;
  const T* p = x + (r / inner) * C * inner + r % inner;
  for (int64_t c = 0; c < C; ++c) buf[c] = p[c * inner];
  return buf;
}

// Calls f(batch, c, n) for x[c .. c+L) over the row, n of the L lanes real: the last batch is
// padded with `pad`.
template <typename T, typename F>
void for_batches(const T* x, int64_t C, T pad, F&& f) {
  using B = xsimd::batch<T>;
  constexpr int64_t L = static_cast<int64_t>(B::size);
  int64_t c = 0;
  for (; c + L <= C; c += L) f(B::load_unaligned(x + c), c, L);
  if (c < C) {
    alignas(64) T t[L];
    for (int64_t k = 0; k < L; ++k) t[k] = c + k < C ? x[c + k] : pad;
    f(B::load_aligned(t), c, C - c);
  }
}

// Σ_c exp(x_c - m) in double, exp in T.
template <typename T>
double sum_exp(const T* x, int64_t C, T m) {
  using B = xsimd::batch<T>;
  const B mb(m);
  xtd::dbatch a0(0.0), a1(0.0);
  for_batches(x, C, -std::numeric_limits<T>::infinity(), [&](const B& v, int64_t, int64_t) {
    const B e = xsimd::exp(v - mb);  // a pad gives exp(-inf) = 0
    if constexpr (std::is_same_v<T, double>) {
      a0 += e;
    } else {  // widen: the low and the high half of the float lanes
      alignas(64) T lanes[B::size];
      e.store_aligned(lanes);
      a0 += xtd::load_d(lanes);
      a1 += xtd::load_d(lanes + xtd::kDL);
    }
  });
  return xsimd::hadd(a0 + a1);
}

// d[c] = exp(x[c] - shift)·a - b.
template <typename T>
void exp_affine(T* d, const T* x, int64_t C, T shift, T a, T b) {
  using B = xsimd::batch<T>;
  const B sb(shift), ab(a), bb(b);
  for_batches(x, C, T(0), [&](const B& v, int64_t c, int64_t n) {
    const B y = xsimd::exp(v - sb) * ab - bb;
    if (n == static_cast<int64_t>(B::size)) {
      y.store_unaligned(d + c);
    } else {
      alignas(64) T lanes[B::size];
      y.store_aligned(lanes);
      std::copy(lanes, lanes + n, d + c);
    }
  });
}
}  // namespace

template <typename T>
int64_t cross_entropy_forward(double* loss, double* lse, const T* x, const int64_t* t, int64_t N,
                              int64_t C, int64_t inner, int64_t ignore_index,
                              double label_smoothing) {
  const int64_t rows = N * inner;
  const double eps = label_smoothing;
  for_rows<T>(rows, C, inner, [&](int64_t r, T* buf) {
    if (t[r] == ignore_index) {
      loss[r] = lse[r] = 0;
      return;
    }
    const T* xr = row_of(x, r, C, inner, buf);
    const T mx = xtd::extreme(xr, C, true);
    const double z = static_cast<double>(mx) + std::log(sum_exp(xr, C, mx));
    const double nll = z - static_cast<double>(xr[t[r]]);
    const double n = static_cast<double>(C);
    loss[r] = eps == 0 ? nll : (1 - eps) * nll + eps / n * (n * z - xtd::sum(xr, C));
    lse[r] = z;
  });
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) count += t[r] != ignore_index;
  return count;
}

template <typename T>
void cross_entropy_backward(T* dx, const double* grow, double grow_scalar, const T* x,
                            const int64_t* t, const double* lse, int64_t N, int64_t C,
                            int64_t inner, int64_t ignore_index, double label_smoothing) {
  const int64_t rows = N * inner;
  const double eps = label_smoothing, eps_c = eps / static_cast<double>(C);
  for_rows<T>(rows, C, inner, [&](int64_t r, T* buf) {
    T* dr = inner == 1 ? dx + r * C : buf;
    if (t[r] == ignore_index) {
      std::fill(dr, dr + C, T(0));
    } else {
      const T* xr = row_of(x, r, C, inner, buf + C);
      const double g = grow ? grow[r] : grow_scalar;
      const T shift = static_cast<T>(lse[r]);
      // exp(x - lse) = exp(x - shift)·exp(shift - lse): the second factor is 1 in float64.
      const T scale = static_cast<T>(g * std::exp(static_cast<double>(shift) - lse[r]));
      exp_affine(dr, xr, C, shift, scale, static_cast<T>(g * eps_c));
      const int64_t k = t[r];
      dr[k] =
          static_cast<T>(g * (std::exp(static_cast<double>(xr[k]) - lse[r]) - (1 - eps) - eps_c));
    }
    if (inner > 1) {
      T* p = dx + (r / inner) * C * inner + r % inner;
      for (int64_t c = 0; c < C; ++c) p[c * inner] = dr[c];
    }
  });
}

void cross_entropy_forward(DT dt, double* loss, double* lse, const void* logits,
                           const int64_t* target, int64_t N, int64_t C, int64_t inner,
                           int64_t ignore_index, double label_smoothing, int64_t* count_host) {
  detail::dispatch_float(static_cast<DType>(dt), "cross_entropy_forward", [&](auto tag) {
    using T = decltype(tag);
    *count_host = cross_entropy_forward<T>(loss, lse, static_cast<const T*>(logits), target, N, C,
                                           inner, ignore_index, label_smoothing);
  });
}
void cross_entropy_backward(DT dt, void* dlogits, const double* grow, double grow_scalar,
                            const void* logits, const int64_t* target, const double* lse, int64_t N,
                            int64_t C, int64_t inner, int64_t ignore_index,
                            double label_smoothing) {
  detail::dispatch_float(static_cast<DType>(dt), "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_backward<T>(static_cast<T*>(dlogits), grow, grow_scalar,
                              static_cast<const T*>(logits), target, lse, N, C, inner, ignore_index,
                              label_smoothing);
  });
}

template int64_t cross_entropy_forward<float>(double*, double*, const float*, const int64_t*,
                                              int64_t, int64_t, int64_t, int64_t, double);
template int64_t cross_entropy_forward<double>(double*, double*, const double*, const int64_t*,
                                               int64_t, int64_t, int64_t, int64_t, double);
template void cross_entropy_backward<float>(float*, const double*, double, const float*,
                                            const int64_t*, const double*, int64_t, int64_t,
                                            int64_t, int64_t, double);
template void cross_entropy_backward<double>(double*, const double*, double, const double*,
                                             const int64_t*, const double*, int64_t, int64_t,
                                             int64_t, int64_t, double);

}  // namespace tg::cpu
