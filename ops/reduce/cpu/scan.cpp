// ops/reduce/cpu/scan.cpp — the running sums, products and extremes along one dim and their
// backward, over (outer, n, inner) lines, accumulated in double: cumsum (int64 for integers),
// cumprod, prod, cummax / cummin, logcumsumexp (ops/reduce/scan.cpp checks, allocates and records).
// Declared in ops/core/cpu/kernels.hpp; scan_forward / scan_backward are the kernel table's entries
// (ops/kern/kernel_list.inc), cuda/scan.cu their twin.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/core/detail.hpp"

#include <cmath>
#include <limits>
#include <type_traits>

namespace tg::cpu {

namespace {
// Calls f(at) with at(t) the offset of element t of every (outer, inner) line.
template <typename F>
void lines(int64_t outer, int64_t n, int64_t inner, F f) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) f([=](int64_t t) { return (o * n + t) * inner + i; });
}
}  // namespace

// The running sum (reverse: from the end), in double for floats and int64 for integers.
template <typename T, typename O>
void cumsum(O* out, const T* x, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      Acc s = 0;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = reverse ? n - 1 - t : t;
        const int64_t at = (o * n + j) * inner + i;
        s += static_cast<Acc>(x[at]);
        out[at] = static_cast<O>(s);
      }
    }
}

template <typename T>
void cumprod_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner) {
  lines(outer, n, inner, [&](auto at) {
    double p = 1;
    for (int64_t t = 0; t < n; ++t) y[at(t)] = static_cast<T>(p *= static_cast<double>(x[at(t)]));
  });
}

// dx_k = Σ_{i>=k} g_i · Π_{j<=i, j!=k} x_j: (Σ_{i>=k} g_i·y_i) / x_k on a line without zeros,
// else each k's sum directly (O(n²), exact with zeros, as PyTorch's).
template <typename T>
void cumprod_backward(T* dx, const T* g, const T* x, const T* y, int64_t outer, int64_t n,
                      int64_t inner) {
  lines(outer, n, inner, [&](auto at) {
    bool zero = false;
    for (int64_t t = 0; t < n && !zero; ++t) zero = x[at(t)] == T(0);
    if (!zero) {
      double s = 0;
      for (int64_t t = n; t-- > 0;) {
        s += static_cast<double>(g[at(t)]) * static_cast<double>(y[at(t)]);
        dx[at(t)] = static_cast<T>(s / static_cast<double>(x[at(t)]));
      }
      return;
    }
    double prefix = 1;  // Π_{j<k} x_j
    for (int64_t k = 0; k < n; ++k) {
      double run = prefix, acc = 0;
      for (int64_t i = k; i < n; ++i) {
        if (i > k) run *= static_cast<double>(x[at(i)]);
        acc += static_cast<double>(g[at(i)]) * run;
      }
      dx[at(k)] = static_cast<T>(acc);
      prefix *= static_cast<double>(x[at(k)]);
    }
  });
}

template <typename T>
void prod_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double p = 1;
      for (int64_t t = 0; t < n; ++t) p *= static_cast<double>(x[(o * n + t) * inner + i]);
      y[o * inner + i] = static_cast<T>(p);
    }
}

// dx_k = g · Π_{j<k} x_j · Π_{j>k} x_j (prefix and suffix products: exact with zeros).
template <typename T>
void prod_backward(T* dx, const T* g, const T* x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [=](int64_t t) { return (o * n + t) * inner + i; };
      const double go = static_cast<double>(g[o * inner + i]);
      double prefix = 1;
      for (int64_t t = 0; t < n; ++t) {
        dx[at(t)] = static_cast<T>(prefix);
        prefix *= static_cast<double>(x[at(t)]);
      }
      double suffix = 1;
      for (int64_t t = n; t-- > 0;) {
        dx[at(t)] = static_cast<T>(static_cast<double>(dx[at(t)]) * suffix * go);
        suffix *= static_cast<double>(x[at(t)]);
      }
    }
}

// PyTorch's rule: a NaN, once seen, stays (with its index); ties take the later index.
template <typename T>
void cumext_forward(T* y, int64_t* idx, const T* x, int64_t outer, int64_t n, int64_t inner,
                    bool max) {
  lines(outer, n, inner, [&](auto at) {
    T best = T(0);
    int64_t bi = 0;
    for (int64_t t = 0; t < n; ++t) {
      const T v = x[at(t)];
      if (t == 0 || (!std::isnan(best) && (std::isnan(v) || (max ? v >= best : v <= best))))
        best = v, bi = t;
      y[at(t)] = best;
      idx[at(t)] = bi;
    }
  });
}

// dx = g summed into the positions idx names.
template <typename T>
void cumext_backward(T* dx, const T* g, const int64_t* idx, int64_t outer, int64_t n,
                     int64_t inner) {
  lines(outer, n, inner, [&](auto at) {
    for (int64_t t = 0; t < n; ++t) dx[at(t)] = T(0);
    for (int64_t t = 0; t < n; ++t) dx[at(idx[at(t)])] += g[at(t)];
  });
}

// y_t = log(e^{y_{t-1}} + e^{x_t}), stable (max + log1p(exp(-|difference|))); -inf + -inf = -inf.
template <typename T>
void logcumsumexp_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner) {
  const double inf = std::numeric_limits<double>::infinity();
  lines(outer, n, inner, [&](auto at) {
    double s = -inf;
    for (int64_t t = 0; t < n; ++t) {
      const double v = static_cast<double>(x[at(t)]);
      const double m = std::max(s, v), d = std::abs(s - v);
      s = std::isinf(m) && (m < 0 || s == v) ? m : m + std::log1p(std::exp(-d));
      if (std::isnan(v)) s = v;
      y[at(t)] = static_cast<T>(s);
    }
  });
}

// dx_k = Σ_{i>=k} g_i·exp(x_k - y_i) = exp(x_k - y_k)·S_k with S_k = g_k + exp(y_k -
// y_{k+1})·S_{k+1}: every exponent <= 0 (y grows along the line, x_k <= y_k), so nothing overflows.
template <typename T>
void logcumsumexp_backward(T* dx, const T* g, const T* x, const T* y, int64_t outer, int64_t n,
                           int64_t inner) {
  lines(outer, n, inner, [&](auto at) {
    double S = 0;
    for (int64_t t = n; t-- > 0;) {
      const double yt = static_cast<double>(y[at(t)]);
      if (t + 1 < n) {
        const double yn = static_cast<double>(y[at(t + 1)]);
        S *= std::isinf(yt) && yt < 0 ? 0.0 : std::exp(yt - yn);
      }
      S += static_cast<double>(g[at(t)]);
      const double xt = static_cast<double>(x[at(t)]);
      dx[at(t)] = static_cast<T>(std::isinf(xt) && xt < 0 ? 0.0 : std::exp(xt - yt) * S);
    }
  });
}

namespace {
// int64 prod (running: cumprod) of the lines, wrapping modulo 2^64 as PyTorch's integer
// products do (multiplied as uint64, where overflow is defined).
void int_prod_forward(int64_t* y, const int64_t* x, int64_t outer, int64_t n, int64_t inner,
                      bool running) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      uint64_t p = 1;
      for (int64_t t = 0; t < n; ++t) {
        p *= static_cast<uint64_t>(x[(o * n + t) * inner + i]);
        if (running) y[(o * n + t) * inner + i] = static_cast<int64_t>(p);
      }
      if (!running) y[o * inner + i] = static_cast<int64_t>(p);
    }
}
}  // namespace

// The table's entry (ops/kern/kernel_list.inc): y (outer, n, inner), or (outer, inner) for Prod;
// idx (cummax / cummin) int64 of y's shape; the backward reads what each op saves. Prod and Cumprod
// also take int64 (no backward).
void scan_forward(ScanOp op, DT dt, void* y, int64_t* idx, const void* x, int64_t outer, int64_t n,
                  int64_t inner) {
  if (dt == DT::I64 && (op == ScanOp::Prod || op == ScanOp::Cumprod))
    return int_prod_forward(static_cast<int64_t*>(y), static_cast<const int64_t*>(x), outer, n,
                            inner, op == ScanOp::Cumprod);
  if (reduced::is(dt)) {  // the float32 scan on a float32 copy, rounded once
    const int64_t nx = outer * n * inner, ny = op == ScanOp::Prod ? outer * inner : nx;
    std::vector<float> yf(ny), xf = reduced::widen(dt, x, nx);
    scan_forward(op, DT::F32, yf.data(), idx, xf.data(), outer, n, inner);
    return reduced::narrow(dt, y, yf);
  }
  detail::dispatch_float(static_cast<DType>(dt), "scan", [&](auto tag) {
    using T = decltype(tag);
    T* py = static_cast<T*>(y);
    const T* px = static_cast<const T*>(x);
    switch (op) {
      case ScanOp::Cumprod:
        return cumprod_forward<T>(py, px, outer, n, inner);
      case ScanOp::Prod:
        return prod_forward<T>(py, px, outer, n, inner);
      case ScanOp::Cummax:
        return cumext_forward<T>(py, idx, px, outer, n, inner, true);
      case ScanOp::Cummin:
        return cumext_forward<T>(py, idx, px, outer, n, inner, false);
      case ScanOp::Logcumsumexp:
        return logcumsumexp_forward<T>(py, px, outer, n, inner);
    }
  });
}
void scan_backward(ScanOp op, DT dt, void* dx, const void* g, const void* x, const void* y,
                   const int64_t* idx, int64_t outer, int64_t n, int64_t inner) {
  if (reduced::is(dt)) {
    const int64_t nx = outer * n * inner, ny = op == ScanOp::Prod ? outer * inner : nx;
    std::vector<float> d(nx), gf = reduced::widen(dt, g, ny), xf = reduced::widen(dt, x, nx), yf;
    if (y && x && (op == ScanOp::Cumprod || op == ScanOp::Logcumsumexp)) {
      yf.resize(ny);  // the float32 output again, not the stored (rounded) one: rounded once
      scan_forward(op, DT::F32, yf.data(), nullptr, xf.data(), outer, n, inner);
    } else {
      yf = reduced::widen(dt, y, ny);
    }
    scan_backward(op, DT::F32, d.data(), gf.data(), x ? xf.data() : nullptr,
                  y ? yf.data() : nullptr, idx, outer, n, inner);
    return reduced::narrow(dt, dx, d);
  }
  detail::dispatch_float(static_cast<DType>(dt), "scan backward", [&](auto tag) {
    using T = decltype(tag);
    T* d = static_cast<T*>(dx);
    const T *pg = static_cast<const T*>(g), *px = static_cast<const T*>(x),
            *py = static_cast<const T*>(y);
    switch (op) {
      case ScanOp::Cumprod:
        return cumprod_backward<T>(d, pg, px, py, outer, n, inner);
      case ScanOp::Prod:
        return prod_backward<T>(d, pg, px, outer, n, inner);
      case ScanOp::Cummax:
      case ScanOp::Cummin:
        return cumext_backward<T>(d, pg, idx, outer, n, inner);
      case ScanOp::Logcumsumexp:
        return logcumsumexp_backward<T>(d, pg, px, py, outer, n, inner);
    }
  });
}

#define TG_SCAN_INSTANTIATE(T)                                                                    \
  template void cumprod_forward<T>(T*, const T*, int64_t, int64_t, int64_t);                      \
  template void cumprod_backward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t); \
  template void prod_forward<T>(T*, const T*, int64_t, int64_t, int64_t);                         \
  template void prod_backward<T>(T*, const T*, const T*, int64_t, int64_t, int64_t);              \
  template void cumext_forward<T>(T*, int64_t*, const T*, int64_t, int64_t, int64_t, bool);       \
  template void cumext_backward<T>(T*, const T*, const int64_t*, int64_t, int64_t, int64_t);      \
  template void logcumsumexp_forward<T>(T*, const T*, int64_t, int64_t, int64_t);                 \
  template void logcumsumexp_backward<T>(T*, const T*, const T*, const T*, int64_t, int64_t,      \
                                         int64_t);
TG_SCAN_INSTANTIATE(float)
TG_SCAN_INSTANTIATE(double)
#undef TG_SCAN_INSTANTIATE

template void cumsum<float, float>(float*, const float*, int64_t, int64_t, int64_t, bool);
template void cumsum<double, double>(double*, const double*, int64_t, int64_t, int64_t, bool);
template void cumsum<int64_t, int64_t>(int64_t*, const int64_t*, int64_t, int64_t, int64_t, bool);
template void cumsum<bool, int64_t>(int64_t*, const bool*, int64_t, int64_t, int64_t, bool);

}  // namespace tg::cpu
