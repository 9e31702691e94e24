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
// bfloat16 / float16 logits: each row loaded as float32 and run through the float32 row functions,
// dlogits rounded once on the store (reduced_forward / reduced_backward).
// Deliberately not here: the op, its checks, reductions and record (ops/loss/cross_entropy.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
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

namespace {
// One row of C contiguous logits with target k (not ignored): its loss and lse.
template <typename T>
void forward_row(double& loss, double& lse, const T* xr, int64_t C, int64_t k, double eps) {
  const T mx = xtd::extreme(xr, C, true);
  const double z = static_cast<double>(mx) + std::log(sum_exp(xr, C, mx));
  const double nll = z - static_cast<double>(xr[k]);
  const double n = static_cast<double>(C);
  loss = eps == 0 ? nll : (1 - eps) * nll + eps / n * (n * z - xtd::sum(xr, C));
  lse = z;
}

// dr (C) of one row of C contiguous logits xr with target k (not ignored), upstream g and lse z.
template <typename T>
void backward_row(T* dr, const T* xr, int64_t C, int64_t k, double g, double z, double eps) {
  const double eps_c = eps / static_cast<double>(C);
  const T shift = static_cast<T>(z);
  // exp(x - lse) = exp(x - shift)·exp(shift - lse): the second factor is 1 in float64.
  const T scale = static_cast<T>(g * std::exp(static_cast<double>(shift) - z));
  exp_affine(dr, xr, C, shift, scale, static_cast<T>(g * eps_c));
  dr[k] = static_cast<T>(g * (std::exp(static_cast<double>(xr[k]) - z) - (1 - eps) - eps_c));
}

int64_t count_kept(const int64_t* t, int64_t rows, int64_t ignore_index) {
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) count += t[r] != ignore_index;
  return count;
}

// Row r = n·inner + i of (N, C, inner) logits starts at element start(r), at stride inner.
int64_t row_start(int64_t r, int64_t C, int64_t inner) {
  return (r / inner) * C * inner + r % inner;
}
}  // namespace

template <typename T>
int64_t cross_entropy_forward(double* loss, double* lse, const T* x, const int64_t* t, int64_t N,
                              int64_t C, int64_t inner, int64_t ignore_index,
                              double label_smoothing) {
  const int64_t rows = N * inner;
  for_rows<T>(rows, C, inner, [&](int64_t r, T* buf) {
    if (t[r] == ignore_index) {
      loss[r] = lse[r] = 0;
      return;
    }
    forward_row(loss[r], lse[r], row_of(x, r, C, inner, buf), C, t[r], label_smoothing);
  });
  return count_kept(t, rows, ignore_index);
}

template <typename T>
void cross_entropy_backward(T* dx, const double* grow, double grow_scalar, const T* x,
                            const int64_t* t, const double* lse, int64_t N, int64_t C,
                            int64_t inner, int64_t ignore_index, double label_smoothing) {
  const int64_t rows = N * inner;
  for_rows<T>(rows, C, inner, [&](int64_t r, T* buf) {
    T* dr = inner == 1 ? dx + r * C : buf;
    if (t[r] == ignore_index)
      std::fill(dr, dr + C, T(0));
    else
      backward_row(dr, row_of(x, r, C, inner, buf + C), C, t[r], grow ? grow[r] : grow_scalar,
                   lse[r], label_smoothing);
    if (inner > 1) {
      T* p = dx + row_start(r, C, inner);
      for (int64_t c = 0; c < C; ++c) p[c * inner] = dr[c];
    }
  });
}

namespace {
// bfloat16 / float16 logits (dt): each row loaded as float32 (ops/core/cpu/reduced.hpp), the
// float32 row functions above, dlogits stored rounded once; loss and lse stay float64.
int64_t reduced_forward(DT dt, double* loss, double* lse, const void* x, const int64_t* t,
                        int64_t N, int64_t C, int64_t inner, int64_t ignore_index, double eps) {
  const int64_t rows = N * inner;
  for_rows<float>(rows, C, inner, [&](int64_t r, float*) {
    if (t[r] == ignore_index) {
      loss[r] = lse[r] = 0;
      return;
    }
    thread_local std::vector<float> xr;
    xr.resize(static_cast<size_t>(C));
    reduced::load_row(dt, xr.data(), x, row_start(r, C, inner), C, inner);
    forward_row(loss[r], lse[r], xr.data(), C, t[r], eps);
  });
  return count_kept(t, rows, ignore_index);
}
void reduced_backward(DT dt, void* dx, const double* grow, double gs, const void* x,
                      const int64_t* t, const double* lse, int64_t N, int64_t C, int64_t inner,
                      int64_t ignore_index, double eps) {
  for_rows<float>(N * inner, C, inner, [&](int64_t r, float*) {
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(2 * C));
    float *xr = buf.data(), *dr = xr + C;
    const int64_t start = row_start(r, C, inner);
    if (t[r] == ignore_index) {
      std::fill(dr, dr + C, 0.0f);
    } else {
      reduced::load_row(dt, xr, x, start, C, inner);
      backward_row(dr, xr, C, t[r], grow ? grow[r] : gs, lse[r], eps);
    }
    reduced::store_row(dt, dx, start, dr, C, inner);
  });
}
}  // namespace

void cross_entropy_forward(DT dt, double* loss, double* lse, const void* logits,
                           const int64_t* target, int64_t N, int64_t C, int64_t inner,
                           int64_t ignore_index, double label_smoothing, int64_t* count_host) {
  if (reduced::is(dt)) {
    *count_host =
        reduced_forward(dt, loss, lse, logits, target, N, C, inner, ignore_index, label_smoothing);
    return;
  }
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
  if (reduced::is(dt))
    return reduced_backward(dt, dlogits, grow, grow_scalar, logits, target, lse, N, C, inner,
                            ignore_index, label_smoothing);
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
