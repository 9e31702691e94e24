// ops/reduce/cpu/reduce.cpp — CPU kernels of the reductions over the middle dim of an (outer, r, inner)
// view (cpu::reduce_sum, reduce_extreme, argmax, reduce_var) and their backward spreads, with the
// raw faces of ops/kern/kernel_list.inc (dtype code, void*) that dispatch to them. The op
// bodies, the dim bookkeeping and the non-adjacent case (a permuted copy first) live in
// ops/reduce/reduce.cpp; sum_to (ops/binary/elementwise.cpp) can call reduce_sum.
//
// inner == 1: one contiguous row per output, reduced on xsimd batches (simd.hpp: xt::sum<double>
// and xt::amax reduce a row scalar-wise), sums two rows at a time. inner > 1: rows of inner
// elements are combined element by element into a block of outputs: sums by reduce_cols.hpp's
// column kernel (accumulators held in registers down the rows; an AVX-512 variant in the
// instruction-set table), max by plain loops that gcc vectorises, because xtensor widens one
// element at a time. Both are measured exceptions (docs/cpu-kernels.md has the figures).
// Elementwise spreads that read one dtype (max and var backward) are xtensor expressions over 1-D
// adaptors.
//
// Threads split the work into (outer row, block of up to kBlock inner outputs) tasks; each output
// is computed by the same code whatever the split, so results are bit-identical at any thread
// count. (A single long row, e.g. a full sum, runs on one thread: splitting r would make the
// order of its additions depend on the split.)
// Deliberately not here: softmax (softmax.cpp), layer norm statistics (norm.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/core/cpu/isa.hpp"
#include "ops/reduce/cpu/reduce_cols.hpp"
#include "ops/core/cpu/simd.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/cpu/xt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace tg::cpu {
using xtd::vec;

namespace {
// Outputs handled per block when inner > 1 (the accumulators live on the stack).
constexpr int64_t kBlock = 256;

// Calls f(o, lo, hi) for every outer row o and every slice [lo, hi) of [0, inner) with
// hi - lo <= kBlock, the (o, slice) tasks split across threads when the work is large.
template <typename F>
void for_blocks(int64_t outer, int64_t r, int64_t inner, F&& f) {
  const int64_t nb = (inner + kBlock - 1) / kBlock;  // blocks per row
  const int64_t tasks = outer * nb;
  auto run = [&](int64_t t) {
    const int64_t o = t / nb, lo = (t % nb) * kBlock;
    f(o, lo, std::min(inner, lo + kBlock));
  };
  const int64_t work = outer * std::max<int64_t>(r, 1) * inner;
  detail::parallel_for(tasks, work, run);
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// acc[i] += x[j·stride + i] for j < r, i < m, row after row (reduce_cols.hpp, through the
// instruction-set table).
inline void add_rows(double* acc, const float* x, int64_t r, int64_t stride, int64_t m) {
  isa::table().add_rows_f32(acc, x, r, stride, m);
}
inline void add_rows(double* acc, const double* x, int64_t r, int64_t stride, int64_t m) {
  isa::table().add_rows_f64(acc, x, r, stride, m);
}
}  // namespace

// ---- sum, mean ----
template <typename T>
void reduce_sum(T* out, const T* x, int64_t outer, int64_t r, int64_t inner, double divisor) {
  if constexpr (std::is_integral_v<T>) {  // int64: exact, in int64, divisor unused
    for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
      T* po = out + o * inner;
      for (int64_t i = lo; i < hi; ++i) po[i] = 0;
      for (int64_t j = 0; j < r; ++j) {
        const T* p = x + (o * r + j) * inner;
        for (int64_t i = lo; i < hi; ++i) po[i] += p[i];
      }
    });
  } else {
    if (inner == 1) {  // one row per output: rows in pairs (xtd::sum2), each in sum's order
      const int64_t pairs = (outer + 1) / 2;
      detail::parallel_for(pairs, outer * r, [&](int64_t k) {
        const int64_t o = 2 * k;
        if (o + 1 < outer) {
          double s0, s1;
          xtd::sum2(x + o * r, x + (o + 1) * r, r, s0, s1);
          out[o] = static_cast<T>(s0 / divisor);
          out[o + 1] = static_cast<T>(s1 / divisor);
        } else {
          out[o] = static_cast<T>(xtd::sum(x + o * r, r) / divisor);
        }
      });
      return;
    }
    for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
      const T* xo = x + o * r * inner;
      double acc[kBlock] = {};
      add_rows(acc, xo + lo, r, inner, hi - lo);
      for (int64_t i = lo; i < hi; ++i) out[o * inner + i] = static_cast<T>(acc[i - lo] / divisor);
    });
  }
}

template <typename T>
void reduce_sum_backward(T* dx, const T* dout, int64_t outer, int64_t r, int64_t inner,
                         double scale) {
  for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
    T g[kBlock];
    for (int64_t i = lo; i < hi; ++i)
      g[i - lo] = static_cast<T>(static_cast<double>(dout[o * inner + i]) * scale);
    for (int64_t j = 0; j < r; ++j) std::copy(g, g + (hi - lo), dx + (o * r + j) * inner + lo);
  });
}

// ---- max, min ----
template <typename T>
void reduce_extreme(RedOp op, T* out, const T* x, int64_t outer, int64_t r, int64_t inner) {
  const bool is_max = op == RedOp::Max;
  for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
    const T* xo = x + o * r * inner;
    T* po = out + o * inner;
    if constexpr (std::is_floating_point_v<T>) {
      if (inner == 1) {
        out[o] = xtd::extreme(xo, r, is_max);
        return;
      }
    }
    std::copy(xo + lo, xo + hi, po + lo);
    // Once NaN, an output stays NaN: v > NaN and v < NaN are false. (A loop: the header comment.)
    for (int64_t j = 1; j < r; ++j) {
      const T* p = xo + j * inner;
      if (is_max)
        for (int64_t i = lo; i < hi; ++i) po[i] = (p[i] > po[i] || p[i] != p[i]) ? p[i] : po[i];
      else
        for (int64_t i = lo; i < hi; ++i) po[i] = (p[i] < po[i] || p[i] != p[i]) ? p[i] : po[i];
    }
  });
}

template <typename T>
void reduce_extreme_backward(T* dx, const T* dout, const T* x, const T* m, int64_t outer, int64_t r,
                             int64_t inner) {
  const T zero(0);
  for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
    const int64_t n = hi - lo;
    const T* xo = x + o * r * inner + lo;
    T* dxo = dx + o * r * inner + lo;
    auto M = vec(m + o * inner + lo, n);
    // Ties per output, then the share each tied element gets (in double, rounded once).
    int64_t ties[kBlock] = {};
    for (int64_t j = 0; j < r; ++j)
      for (int64_t i = 0; i < n; ++i) ties[i] += xo[j * inner + i] == M(i);
    T w[kBlock];
    for (int64_t i = 0; i < n; ++i)
      w[i] = static_cast<T>(static_cast<double>(dout[o * inner + lo + i]) *
                            (1.0 / static_cast<double>(ties[i])));
    auto W = vec(static_cast<const T*>(w), n);
    for (int64_t j = 0; j < r; ++j) {
      auto X = vec(xo + j * inner, n);
      auto D = vec(dxo + j * inner, n);
      if (n == 1)
        D(0) = X(0) == M(0) ? W(0) : zero;
      else
        xt::noalias(D) = xt::where(xt::equal(X, M), W, zero);
    }
  });
}

// ---- argmax ----
// A loop: "first index of the maximum, the first NaN wins" has no xtensor reducer (xt::argmax
// skips NaN), and argmax is not hot (accuracy, decoding).
template <typename T>
void argmax(int64_t* out, const T* x, int64_t outer, int64_t r, int64_t inner) {
  for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
    const T* xo = x + o * r * inner;
    int64_t* po = out + o * inner;
    T best[kBlock];
    for (int64_t i = lo; i < hi; ++i) {
      best[i - lo] = xo[i];
      po[i] = 0;
    }
    for (int64_t j = 1; j < r; ++j) {
      const T* p = xo + j * inner;
      for (int64_t i = lo; i < hi; ++i) {
        const T v = p[i], b = best[i - lo];
        if (!is_nan(b) && (v > b || is_nan(v))) {
          best[i - lo] = v;
          po[i] = j;
        }
      }
    }
  });
}

// ---- var ----
template <typename T>
void reduce_var(T* out, double* mean, const T* x, int64_t outer, int64_t r, int64_t inner,
                double denom) {
  const double n = static_cast<double>(r);
  for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
    const T* xo = x + o * r * inner;
    if (inner == 1) {
      const double mu = xtd::sum(xo, r) / n;
      mean[o] = mu;
      out[o] = static_cast<T>(xtd::sum_sq_dev(xo, r, mu) / denom);
      return;
    }
    const int64_t m = hi - lo;
    double* mu = mean + o * inner + lo;
    double acc[kBlock] = {};
    add_rows(acc, xo + lo, r, inner, m);
    for (int64_t i = 0; i < m; ++i) {
      mu[i] = acc[i] / n;
      acc[i] = 0;
    }
    for (int64_t j = 0; j < r; ++j) {
      const T* p = xo + j * inner + lo;
      for (int64_t i = 0; i < m; ++i) {
        const double d = static_cast<double>(p[i]) - mu[i];
        acc[i] += d * d;
      }
    }
    for (int64_t i = 0; i < m; ++i) out[o * inner + lo + i] = static_cast<T>(acc[i] / denom);
  });
}

template <typename T>
void reduce_var_backward(T* dx, const T* dout, const T* x, const double* mean, int64_t outer,
                         int64_t r, int64_t inner, double denom) {
  for_blocks(outer, r, inner, [&](int64_t o, int64_t lo, int64_t hi) {
    const int64_t n = hi - lo;
    if (inner == 1) {  // the whole row against one mean
      const double mu = mean[o], c = 2.0 * static_cast<double>(dout[o]) / denom;
      xt::noalias(vec(dx + o * r, r)) = xt::cast<T>((xt::cast<double>(vec(x + o * r, r)) - mu) * c);
      return;
    }
    double c[kBlock];  // 2·dout/denom per output
    for (int64_t i = 0; i < n; ++i)
      c[i] = 2.0 * static_cast<double>(dout[o * inner + lo + i]) / denom;
    auto C = vec(static_cast<const double*>(c), n);
    auto MU = vec(mean + o * inner + lo, n);
    for (int64_t j = 0; j < r; ++j) {
      const int64_t off = (o * r + j) * inner + lo;
      xt::noalias(vec(dx + off, n)) = xt::cast<T>((xt::cast<double>(vec(x + off, n)) - MU) * C);
    }
  });
}

#define TG_REDUCE_FLOAT(T)                                                                      \
  template void reduce_sum_backward<T>(T*, const T*, int64_t, int64_t, int64_t, double);        \
  template void reduce_extreme_backward<T>(T*, const T*, const T*, const T*, int64_t, int64_t,  \
                                           int64_t);                                            \
  template void reduce_var<T>(T*, double*, const T*, int64_t, int64_t, int64_t, double);        \
  template void reduce_var_backward<T>(T*, const T*, const T*, const double*, int64_t, int64_t, \
                                       int64_t, double);
#define TG_REDUCE_ANY(T)                                                           \
  template void reduce_sum<T>(T*, const T*, int64_t, int64_t, int64_t, double);    \
  template void reduce_extreme<T>(RedOp, T*, const T*, int64_t, int64_t, int64_t); \
  template void argmax<T>(int64_t*, const T*, int64_t, int64_t, int64_t);
TG_REDUCE_FLOAT(float)
TG_REDUCE_FLOAT(double)
TG_REDUCE_ANY(float)
TG_REDUCE_ANY(double)
TG_REDUCE_ANY(int64_t)
#undef TG_REDUCE_FLOAT
#undef TG_REDUCE_ANY

namespace isa::native {
void fill_reduce(Table& t) {
  t.add_rows_f32 = cols::add_rows<xsimd::default_arch, float>;
  t.add_rows_f64 = cols::add_rows<xsimd::default_arch, double>;
}
}  // namespace isa::native

// ---- the raw faces (ops/kern/kernel_list.inc): the dtype dispatch ----
// bfloat16 / float16: the float32 kernel (its float32 or double accumulators) on float32 copies
// of the operands, each result rounded once (ops/core/cpu/reduced.hpp's whole-operand form).
namespace {
// Calls f(T{}) for T = float, double or int64_t (the forward kernels' dtypes; ops/ casts bool).
template <typename F>
void dispatch_numeric(DT dt, const char* name, F&& f) {
  if (dt == DT::I64) return f(int64_t{});
  detail::dispatch_float(static_cast<DType>(dt), name, f);
}
}  // namespace

void reduce_sum(DT dt, void* out, const void* x, int64_t outer, int64_t r, int64_t inner,
                double divisor) {
  if (reduced::is(dt)) {
    std::vector<float> o(outer * inner), xf = reduced::widen(dt, x, outer * r * inner);
    reduce_sum<float>(o.data(), xf.data(), outer, r, inner, divisor);
    return reduced::narrow(dt, out, o);
  }
  dispatch_numeric(dt, "reduce_sum", [&](auto tag) {
    using T = decltype(tag);
    reduce_sum<T>(static_cast<T*>(out), static_cast<const T*>(x), outer, r, inner, divisor);
  });
}
void reduce_sum_backward(DT dt, void* dx, const void* dout, int64_t outer, int64_t r, int64_t inner,
                         double scale) {
  if (reduced::is(dt)) {
    std::vector<float> d(outer * r * inner), g = reduced::widen(dt, dout, outer * inner);
    reduce_sum_backward<float>(d.data(), g.data(), outer, r, inner, scale);
    return reduced::narrow(dt, dx, d);
  }
  detail::dispatch_float(static_cast<DType>(dt), "reduce_sum_backward", [&](auto tag) {
    using T = decltype(tag);
    reduce_sum_backward<T>(static_cast<T*>(dx), static_cast<const T*>(dout), outer, r, inner,
                           scale);
  });
}
void reduce_extreme(RedOp op, DT dt, void* out, const void* x, int64_t outer, int64_t r,
                    int64_t inner) {
  if (reduced::is(dt)) {  // exact: the result is one of the values
    std::vector<float> o(outer * inner), xf = reduced::widen(dt, x, outer * r * inner);
    reduce_extreme<float>(op, o.data(), xf.data(), outer, r, inner);
    return reduced::narrow(dt, out, o);
  }
  dispatch_numeric(dt, "reduce_extreme", [&](auto tag) {
    using T = decltype(tag);
    reduce_extreme<T>(op, static_cast<T*>(out), static_cast<const T*>(x), outer, r, inner);
  });
}
void reduce_extreme_backward(DT dt, void* dx, const void* dout, const void* x, const void* m,
                             int64_t outer, int64_t r, int64_t inner) {
  if (reduced::is(dt)) {
    std::vector<float> d(outer * r * inner), g = reduced::widen(dt, dout, outer * inner),
                                             xf = reduced::widen(dt, x, outer * r * inner),
                                             mf = reduced::widen(dt, m, outer * inner);
    reduce_extreme_backward<float>(d.data(), g.data(), xf.data(), mf.data(), outer, r, inner);
    return reduced::narrow(dt, dx, d);
  }
  detail::dispatch_float(static_cast<DType>(dt), "reduce_extreme_backward", [&](auto tag) {
    using T = decltype(tag);
    reduce_extreme_backward<T>(static_cast<T*>(dx), static_cast<const T*>(dout),
                               static_cast<const T*>(x), static_cast<const T*>(m), outer, r, inner);
  });
}
void reduce_var(DT dt, void* out, double* mean, const void* x, int64_t outer, int64_t r,
                int64_t inner, double denom) {
  if (reduced::is(dt)) {
    std::vector<float> o(outer * inner), xf = reduced::widen(dt, x, outer * r * inner);
    reduce_var<float>(o.data(), mean, xf.data(), outer, r, inner, denom);
    return reduced::narrow(dt, out, o);
  }
  detail::dispatch_float(static_cast<DType>(dt), "reduce_var", [&](auto tag) {
    using T = decltype(tag);
    reduce_var<T>(static_cast<T*>(out), mean, static_cast<const T*>(x), outer, r, inner, denom);
  });
}
void reduce_var_backward(DT dt, void* dx, const void* dout, const void* x, const double* mean,
                         int64_t outer, int64_t r, int64_t inner, double denom) {
  if (reduced::is(dt)) {
    std::vector<float> d(outer * r * inner), g = reduced::widen(dt, dout, outer * inner),
                                             xf = reduced::widen(dt, x, outer * r * inner);
    reduce_var_backward<float>(d.data(), g.data(), xf.data(), mean, outer, r, inner, denom);
    return reduced::narrow(dt, dx, d);
  }
  detail::dispatch_float(static_cast<DType>(dt), "reduce_var_backward", [&](auto tag) {
    using T = decltype(tag);
    reduce_var_backward<T>(static_cast<T*>(dx), static_cast<const T*>(dout),
                           static_cast<const T*>(x), mean, outer, r, inner, denom);
  });
}
void argmax(DT dt, int64_t* out, const void* x, int64_t outer, int64_t r, int64_t inner) {
  if (reduced::is(dt)) {
    const std::vector<float> xf = reduced::widen(dt, x, outer * r * inner);
    return argmax<float>(out, xf.data(), outer, r, inner);
  }
  dispatch_numeric(dt, "argmax", [&](auto tag) {
    using T = decltype(tag);
    argmax<T>(out, static_cast<const T*>(x), outer, r, inner);
  });
}

}  // namespace tg::cpu
