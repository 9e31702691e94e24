// cuda/scan.cu — the running scans and the product along one dim on the GPU (ops/reduce/scan.cpp is
// the spec, the CPU's ops/reduce/cpu/scan.cpp the twin, the same arithmetic in double): one thread
// per (outer, inner) line walks its n elements, as the CPU does. cumprod's backward is exact with
// zeros (each element's sum directly on a line holding one), prod's by prefix and suffix
// products; cummax / cummin keep a NaN once seen and give ties the later index; logcumsumexp is
// the stable recursion whose exponents are all <= 0.
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"

namespace tg::cuda {

namespace {

constexpr int kThreads = 128;

struct Line {
  int64_t outer, n, inner;
  __device__ int64_t at(int64_t line, int64_t t) const {
    const int64_t o = line / inner, i = line % inner;
    return (o * n + t) * inner + i;
  }
};

template <typename scalar_t>
__global__ void scan_forward_kernel(ScanOp op, scalar_t* y, int64_t* idx, const scalar_t* x,
                                    Line l) {
  const int64_t lines = l.outer * l.inner;
  const double inf = static_cast<double>(INFINITY);
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (op == ScanOp::Prod) {
      double p = 1;
      for (int64_t t = 0; t < l.n; ++t) p *= static_cast<double>(x[l.at(line, t)]);
      y[line] = static_cast<scalar_t>(p);  // (outer, inner): the line's own index
      continue;
    }
    if (op == ScanOp::Cumprod) {
      double p = 1;
      for (int64_t t = 0; t < l.n; ++t)
        y[l.at(line, t)] = static_cast<scalar_t>(p *= static_cast<double>(x[l.at(line, t)]));
    } else if (op == ScanOp::Logcumsumexp) {
      double s = -inf;
      for (int64_t t = 0; t < l.n; ++t) {
        const double v = static_cast<double>(x[l.at(line, t)]);
        const double m = s > v ? s : v, d = fabs(s - v);
        s = isinf(m) && (m < 0 || s == v) ? m : m + log1p(exp(-d));
        if (isnan(v)) s = v;
        y[l.at(line, t)] = static_cast<scalar_t>(s);
      }
    } else {  // cummax / cummin
      const bool mx = op == ScanOp::Cummax;
      scalar_t best = 0;
      int64_t bi = 0;
      for (int64_t t = 0; t < l.n; ++t) {
        const scalar_t v = x[l.at(line, t)];
        if (t == 0 || (!isnan(best) && (isnan(v) || (mx ? v >= best : v <= best))))
          best = v, bi = t;
        y[l.at(line, t)] = best;
        idx[l.at(line, t)] = bi;
      }
    }
  }
}

template <typename scalar_t>
__global__ void scan_backward_kernel(ScanOp op, scalar_t* dx, const scalar_t* g, const scalar_t* x,
                                     const scalar_t* y, const int64_t* idx, Line l) {
  const int64_t lines = l.outer * l.inner;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    auto X = [&](int64_t t) { return static_cast<double>(x[l.at(line, t)]); };
    auto G = [&](int64_t t) { return static_cast<double>(g[l.at(line, t)]); };
    if (op == ScanOp::Prod) {
      const double go = static_cast<double>(g[line]);
      double prefix = 1;
      for (int64_t t = 0; t < l.n; ++t) {
        dx[l.at(line, t)] = static_cast<scalar_t>(prefix);
        prefix *= X(t);
      }
      double suffix = 1;
      for (int64_t t = l.n; t-- > 0;) {
        dx[l.at(line, t)] =
            static_cast<scalar_t>(static_cast<double>(dx[l.at(line, t)]) * suffix * go);
        suffix *= X(t);
      }
    } else if (op == ScanOp::Cumprod) {
      bool zero = false;
      for (int64_t t = 0; t < l.n && !zero; ++t) zero = X(t) == 0;
      if (!zero) {
        double s = 0;
        for (int64_t t = l.n; t-- > 0;) {
          s += G(t) * static_cast<double>(y[l.at(line, t)]);
          dx[l.at(line, t)] = static_cast<scalar_t>(s / X(t));
        }
      } else {
        double prefix = 1;
        for (int64_t k = 0; k < l.n; ++k) {
          double run = prefix, acc = 0;
          for (int64_t i = k; i < l.n; ++i) {
            if (i > k) run *= X(i);
            acc += G(i) * run;
          }
          dx[l.at(line, k)] = static_cast<scalar_t>(acc);
          prefix *= X(k);
        }
      }
    } else if (op == ScanOp::Logcumsumexp) {
      double S = 0;
      for (int64_t t = l.n; t-- > 0;) {
        const double yt = static_cast<double>(y[l.at(line, t)]);
        if (t + 1 < l.n) {
          const double yn = static_cast<double>(y[l.at(line, t + 1)]);
          S *= isinf(yt) && yt < 0 ? 0.0 : exp(yt - yn);
        }
        S += G(t);
        const double xt = X(t);
        dx[l.at(line, t)] = static_cast<scalar_t>(isinf(xt) && xt < 0 ? 0.0 : exp(xt - yt) * S);
      }
    } else {  // cummax / cummin: g summed into the chosen positions
      for (int64_t t = 0; t < l.n; ++t) dx[l.at(line, t)] = 0;
      for (int64_t t = 0; t < l.n; ++t) dx[l.at(line, idx[l.at(line, t)])] += g[l.at(line, t)];
    }
  }
}

}  // namespace

using detail::F32Scratch;
using detail::is_reduced;

void scan_forward(ScanOp op, DT dt, void* y, int64_t* idx, const void* x, int64_t outer, int64_t n,
                  int64_t inner) {
  if (is_reduced(dt)) {  // cuda/reduced.cuh: the float32 kernel, rounded once
    const int64_t m = outer * n * inner, my = op == ScanOp::Prod ? outer * inner : m;
    F32Scratch xf(dt, x, m), yf(my);
    scan_forward(op, DT::F32, yf.get(), idx, xf.get(), outer, n, inner);
    return yf.store(dt, y);
  }
  const int64_t lines = outer * inner;
  if (lines <= 0) return;
  TG_DISPATCH_FLOAT(dt, "scan_forward", [&] {
    scan_forward_kernel<scalar_t>
        <<<detail::grid_for(lines, kThreads), kThreads, 0, detail::cur_stream()>>>(
            op, static_cast<scalar_t*>(y), idx, static_cast<const scalar_t*>(x),
            Line{outer, n, inner});
    TG_CUDA_LAUNCH_CHECK("scan_forward_kernel");
  });
}

void scan_backward(ScanOp op, DT dt, void* dx, const void* g, const void* x, const void* y,
                   const int64_t* idx, int64_t outer, int64_t n, int64_t inner) {
  if (is_reduced(dt)) {
    const int64_t m = outer * n * inner, my = op == ScanOp::Prod ? outer * inner : m;
    // cumprod and logcumsumexp read the float32 output again, not the stored (rounded) one, as
    // the CPU does (ops/reduce/cpu/scan.cpp)
    const bool again = y && x && (op == ScanOp::Cumprod || op == ScanOp::Logcumsumexp);
    F32Scratch gf(dt, g, my), xf(dt, x, m), yf(dt, again ? nullptr : y, my), y32(my, again), d(m);
    if (again) scan_forward(op, DT::F32, y32.get(), nullptr, xf.get(), outer, n, inner);
    scan_backward(op, DT::F32, d.get(), gf.get(), xf.get(), again ? y32.get() : yf.get(), idx,
                  outer, n, inner);
    return d.store(dt, dx);
  }
  const int64_t lines = outer * inner;
  if (lines <= 0) return;
  TG_DISPATCH_FLOAT(dt, "scan_backward", [&] {
    scan_backward_kernel<scalar_t>
        <<<detail::grid_for(lines, kThreads), kThreads, 0, detail::cur_stream()>>>(
            op, static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(g),
            static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(y), idx,
            Line{outer, n, inner});
    TG_CUDA_LAUNCH_CHECK("scan_backward_kernel");
  });
}

}  // namespace tg::cuda
