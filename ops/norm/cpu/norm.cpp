// ops/norm/cpu/norm.cpp — CPU kernels of layer norm (cpu::layer_norm_forward, layer_norm_backward)
// and RMSNorm (rms_norm_forward/backward: the same rows with the mean fixed at 0, no bias, and no
// mean term in dx), llm.c's layernorm_forward / layernorm_backward per row of D elements. Row
// statistics (mean, variance; backward's two row means) accumulate in double on xsimd batches
// (simd.hpp); the per-element passes compute in T (float32 in float32, as PyTorch does), with x -
// mean taken as (x - float(mean)) - (mean - float(mean)) so a row far from 0 keeps its precision.
// The per-element passes are hand loops rather than xt::noalias(o) = (x - m)·rs·w + b over 1-D
// row adaptors: xtensor's per-row expression setup costs more than the row's arithmetic
// (docs/cpu-kernels.md, "The measured exceptions").
// Rows split across threads; dw/db sum fixed chunks of rows (kChunk, whatever the thread count)
// in double, then the chunks in order: the same bits at any thread count.
// bfloat16 / float16 rows are loaded as float32 and run the float32 rows, rounded once on the
// store; their weight, bias and its gradients are float32 (norm_reduced_forward / _backward).
// Deliberately not here: the ops, their checks and records (ops/norm/norm.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/cpu/simd.hpp"
#include "ops/core/cpu/xt.hpp"

#include <cmath>
#include <type_traits>
#include <vector>

namespace tg::cpu {

namespace {
// Rows per dw/db partial sum.
constexpr int64_t kChunk = 64;

// x - m, for x of dtype T and m in double: the high part of m in T, then the low part.
template <typename T>
struct Centre {
  T hi, lo;
  explicit Centre(double m)
      : hi(static_cast<T>(m)), lo(static_cast<T>(m - static_cast<double>(static_cast<T>(m)))) {}
  T operator()(T x) const { return (x - hi) - lo; }
};

// One row forward: out = (x - m)·rs·w + b, w and b optional.
template <typename T>
void forward_row(T* o, const T* x, const T* w, const T* b, int64_t D, double m, double rs) {
  const Centre<T> c(m);
  const T r = static_cast<T>(rs);
  if (w && b)
    for (int64_t i = 0; i < D; ++i) o[i] = c(x[i]) * r * w[i] + b[i];
  else if (w)
    for (int64_t i = 0; i < D; ++i) o[i] = c(x[i]) * r * w[i];
  else if (b)
    for (int64_t i = 0; i < D; ++i) o[i] = c(x[i]) * r + b[i];
  else
    for (int64_t i = 0; i < D; ++i) o[i] = c(x[i]) * r;
}

// One row backward. With norm = (x - m)·rs, dnorm = w·g (g when w is null), A = mean(dnorm),
// B = mean(dnorm·norm): dx = rs·(dnorm - A - norm·B) (dx may be null); pw += g·norm and
// pb += g (double, each may be null). Two passes over the row: both sums in one, then dx, pw and
// pb in one (docs/cpu-kernels.md, "Layer norm").
template <typename T, bool kHasW>
void backward_row(T* dx, double* pw, double* pb, const T* g, const T* x, const T* w, int64_t D,
                  double m, double rs, bool centred) {
  using xtd::dbatch;
  using xtd::load_d;
  const dbatch mb(m);
  // sa = Σ dnorm and sc = Σ dnorm·(x - m), in double, each in the order of one xtd::dsum.
  double sa, sc;
  xtd::dsum2(
      D, sa, sc,
      [&](int64_t i, dbatch& a, dbatch& c) {
        const dbatch gi = load_d(g + i), xi = load_d(x + i);
        if constexpr (kHasW) {
          const dbatch wi = load_d(w + i);
          a += wi * gi;
          c += wi * gi * (xi - mb);
        } else {
          a += gi;
          c += gi * (xi - mb);
        }
      },
      [&](int64_t i, double& a, double& c) {
        const double gi = static_cast<double>(g[i]), xi = static_cast<double>(x[i]);
        if constexpr (kHasW) {
          const double wi = static_cast<double>(w[i]);
          a += wi * gi;
          c += wi * gi * (xi - m);
        } else {
          a += gi;
          c += gi * (xi - m);
        }
      });
  const Centre<T> c(m);
  const T r = static_cast<T>(rs);
  const double n = static_cast<double>(D);
  const T ra = centred ? static_cast<T>(rs * sa / n) : T(0);  // rs·A (RMSNorm: no mean term)
  const T k = static_cast<T>(rs * rs * rs * sc / n);          // rs·norm·B = (x - m)·k
  for (int64_t i = 0; i < D; ++i) {
    const T cx = c(x[i]);
    if (dx) {
      if constexpr (kHasW)
        dx[i] = w[i] * g[i] * r - ra - cx * k;
      else
        dx[i] = g[i] * r - ra - cx * k;
    }
    if (pw) pw[i] += static_cast<double>(g[i] * (cx * r));
    if (pb) pb[i] += static_cast<double>(g[i]);
  }
}
}  // namespace

// One row of layer norm (RMSNorm where mean is null): its statistics, then out.
template <typename T>
void forward_row_stats(T* o, double* mean, double* rstd, const T* xr, const T* w, const T* b,
                       int64_t r, int64_t D, double eps) {
  const double n = static_cast<double>(D);
  const double m = mean ? xtd::sum(xr, D) / n : 0.0;
  const double rs = 1.0 / std::sqrt(xtd::sum_sq_dev(xr, D, m) / n + eps);
  forward_row(o, xr, w, b, D, m, rs);
  if (mean) mean[r] = m;
  rstd[r] = rs;
}

// Layer norm, or RMSNorm where mean is null (m = 0: rs = 1/sqrt(mean(x²) + eps), no bias).
template <typename T>
void norm_forward(T* out, double* mean, double* rstd, const T* x, const T* w, const T* b, int64_t N,
                  int64_t D, double eps) {
  detail::parallel_for(N, N * D, [&](int64_t r) {
    forward_row_stats(out + r * D, mean, rstd, x + r * D, w, b, r, D, eps);
  });
}

// Layer norm's backward, or RMSNorm's where mean is null (db then null too). each_row(r, f) calls
// f(dx row or null, dout row, x row) for row r: the rows themselves, or float32 copies of reduced
// ones (norm_reduced_backward).
template <typename T, typename EachRow>
void norm_backward_rows(T* dw, T* db, const T* w, const double* mean, const double* rstd, int64_t N,
                        int64_t D, EachRow&& each_row) {
  const int64_t chunks = (N + kChunk - 1) / kChunk;
  // Per chunk: D partial sums for dw, then D for db.
  std::vector<double> part((dw || db) ? chunks * 2 * D : 0, 0.0);
  detail::parallel_for(chunks, N * D, [&](int64_t ch) {
    double* pw = dw ? part.data() + ch * 2 * D : nullptr;
    double* pb = db ? part.data() + ch * 2 * D + D : nullptr;
    for (int64_t r = ch * kChunk; r < std::min(N, (ch + 1) * kChunk); ++r)
      each_row(r, [&](T* dxr, const T* gr, const T* xr) {
        (w ? backward_row<T, true> : backward_row<T, false>)(dxr, pw, pb, gr, xr, w, D,
                                                             mean ? mean[r] : 0.0, rstd[r],
                                                             mean != nullptr);
      });
  });
  for (int64_t i = 0; i < D && (dw || db); ++i) {
    double sw = 0, sb = 0;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      sw += part[ch * 2 * D + i];
      sb += part[ch * 2 * D + D + i];
    }
    if (dw) dw[i] = static_cast<T>(sw);
    if (db) db[i] = static_cast<T>(sb);
  }
}

template <typename T>
void norm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const double* mean,
                   const double* rstd, int64_t N, int64_t D) {
  norm_backward_rows(dw, db, w, mean, rstd, N, D, [&](int64_t r, auto&& f) {
    f(dx ? dx + r * D : nullptr, dout + r * D, x + r * D);
  });
}

// bfloat16 / float16 x, dout and dx (dt): each row loaded as float32 (ops/core/cpu/reduced.hpp),
// the float32 row functions above, dx stored rounded once. w, b, dw and db are float32 (the op
// converts reduced parameters), the statistics float64 as always.
void norm_reduced_forward(DT dt, void* out, double* mean, double* rstd, const void* x,
                          const float* w, const float* b, int64_t N, int64_t D, double eps) {
  detail::parallel_for(N, N * D, [&](int64_t r) {
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(2 * D));
    float *xr = buf.data(), *o = xr + D;
    reduced::load(dt, xr, x, r * D, D);
    forward_row_stats(o, mean, rstd, xr, w, b, r, D, eps);
    reduced::store(dt, out, r * D, o, D);
  });
}
void norm_reduced_backward(DT dt, void* dx, float* dw, float* db, const void* dout, const void* x,
                           const float* w, const double* mean, const double* rstd, int64_t N,
                           int64_t D) {
  norm_backward_rows(dw, db, w, mean, rstd, N, D, [&](int64_t r, auto&& f) {
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(3 * D));
    float *gr = buf.data(), *xr = gr + D, *dxr = xr + D;
    reduced::load(dt, gr, dout, r * D, D);
    reduced::load(dt, xr, x, r * D, D);
    f(dx ? dxr : nullptr, gr, xr);
    if (dx) reduced::store(dt, dx, r * D, dxr, D);
  });
}

template <typename T>
void layer_norm_forward(T* out, double* mean, double* rstd, const T* x, const T* w, const T* b,
                        int64_t N, int64_t D, double eps) {
  norm_forward(out, mean, rstd, x, w, b, N, D, eps);
}
template <typename T>
void layer_norm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w,
                         const double* mean, const double* rstd, int64_t N, int64_t D) {
  norm_backward(dx, dw, db, dout, x, w, mean, rstd, N, D);
}

void layer_norm_forward(DT dt, void* y, double* mean, double* rstd, const void* x, const void* w,
                        const void* b, int64_t N, int64_t D, double eps) {
  if (reduced::is(dt))
    return norm_reduced_forward(dt, y, mean, rstd, x, static_cast<const float*>(w),
                                static_cast<const float*>(b), N, D, eps);
  detail::dispatch_float(static_cast<DType>(dt), "layer_norm_forward", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_forward<T>(static_cast<T*>(y), mean, rstd, static_cast<const T*>(x),
                          static_cast<const T*>(w), static_cast<const T*>(b), N, D, eps);
  });
}
void layer_norm_backward(DT dt, void* dx, void* dw, void* db, const void* dy, const void* x,
                         const void* w, const double* mean, const double* rstd, int64_t N,
                         int64_t D) {
  if (reduced::is(dt))
    return norm_reduced_backward(dt, dx, static_cast<float*>(dw), static_cast<float*>(db), dy, x,
                                 static_cast<const float*>(w), mean, rstd, N, D);
  detail::dispatch_float(static_cast<DType>(dt), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_backward<T>(static_cast<T*>(dx), static_cast<T*>(dw), static_cast<T*>(db),
                           static_cast<const T*>(dy), static_cast<const T*>(x),
                           static_cast<const T*>(w), mean, rstd, N, D);
  });
}

void rms_norm_forward(DT dt, void* y, double* rstd, const void* x, const void* w, int64_t N,
                      int64_t D, double eps) {
  if (reduced::is(dt))
    return norm_reduced_forward(dt, y, nullptr, rstd, x, static_cast<const float*>(w), nullptr, N,
                                D, eps);
  detail::dispatch_float(static_cast<DType>(dt), "rms_norm_forward", [&](auto tag) {
    using T = decltype(tag);
    norm_forward<T>(static_cast<T*>(y), nullptr, rstd, static_cast<const T*>(x),
                    static_cast<const T*>(w), nullptr, N, D, eps);
  });
}
void rms_norm_backward(DT dt, void* dx, void* dw, const void* dy, const void* x, const void* w,
                       const double* rstd, int64_t N, int64_t D) {
  if (reduced::is(dt))
    return norm_reduced_backward(dt, dx, static_cast<float*>(dw), nullptr, dy, x,
                                 static_cast<const float*>(w), nullptr, rstd, N, D);
  detail::dispatch_float(static_cast<DType>(dt), "rms_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    norm_backward<T>(static_cast<T*>(dx), static_cast<T*>(dw), nullptr, static_cast<const T*>(dy),
                     static_cast<const T*>(x), static_cast<const T*>(w), nullptr, rstd, N, D);
  });
}

template void layer_norm_forward<float>(float*, double*, double*, const float*, const float*,
                                        const float*, int64_t, int64_t, double);
template void layer_norm_forward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, int64_t, int64_t, double);
template void layer_norm_backward<float>(float*, float*, float*, const float*, const float*,
                                         const float*, const double*, const double*, int64_t,
                                         int64_t);
template void layer_norm_backward<double>(double*, double*, double*, const double*, const double*,
                                          const double*, const double*, const double*, int64_t,
                                          int64_t);

}  // namespace tg::cpu
